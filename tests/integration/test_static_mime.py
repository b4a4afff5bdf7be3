"""Content-Type: conf/mime.types (mime_types), the built-in fallback, charset=utf-8 on text
types, modern types out of the box, default_type."""

import os

from lib.server import ConfServer, Conn, req
from lib.static import MIME_TYPES, check_config, make_root

EXPECTED = {
    "a.html": "text/html; charset=utf-8",
    "a.htm": "text/html; charset=utf-8",
    "a.css": "text/css; charset=utf-8",
    "a.js": "text/javascript; charset=utf-8",
    "a.mjs": "text/javascript; charset=utf-8",
    "a.json": "application/json; charset=utf-8",
    "a.txt": "text/plain; charset=utf-8",
    "a.svg": "image/svg+xml; charset=utf-8",
    "a.xml": "application/xml; charset=utf-8",
    "a.wasm": "application/wasm",
    "a.avif": "image/avif",
    "a.webp": "image/webp",
    "a.png": "image/png",
    "a.jpg": "image/jpeg",
    "a.woff2": "font/woff2",
    "a.mp4": "video/mp4",
    "a.pdf": "application/pdf",
    "a.webmanifest": "application/manifest+json; charset=utf-8",
    "UPPER.PNG": "image/png",
    "Mixed.Css": "text/css; charset=utf-8",
    "a.tar.gz": "application/gzip",
    "a.zzunknown": "application/octet-stream",
    "noext": "application/octet-stream",
    "dir.d/noext": "application/octet-stream",
}


def _root(tmpdir):
    return make_root(os.path.join(tmpdir, "root"), {n: b"x" for n in EXPECTED})


def _types(s, names):
    out = {}
    with Conn(s) as c:
        for n in names:
            c.send(req("GET", "/" + n))
            r = c.read_response()
            assert r.status == 200, (n, r.status)
            out[n] = r.header("Content-Type")
    return out


def _check(s, expected):
    got = _types(s, expected)
    bad = {n: (got[n], want) for n, want in expected.items() if got[n] != want}
    assert not bad, "Content-Type (got, want): %r" % bad


def test_mime_types_file(tmpdir):
    s = ConfServer(tmpdir, "mime_types %s\n" % MIME_TYPES, root=_root(tmpdir))
    _check(s, EXPECTED)


def test_builtin_fallback_without_file(tmpdir):
    s = ConfServer(tmpdir, "# no mime_types\n", root=_root(tmpdir))
    _check(s, EXPECTED)


def test_custom_mime_file_overrides_and_adds(tmpdir):
    types = os.path.join(tmpdir, "my.types")
    with open(types, "w") as f:
        f.write("# custom\n"
                "application/x-thing   thing things\n"
                "text/x-fancy          fancy\n"
                "application/x-html-override html\n"
                "\n"
                "image/png             png  # trailing comment\n")
    root = make_root(os.path.join(tmpdir, "root"),
                     {"a.thing": b"1", "b.things": b"1", "c.fancy": b"1", "d.html": b"1",
                      "e.css": b"1", "f.png": b"1"})
    s = ConfServer(tmpdir, "mime_types %s\n" % types, root=root)
    _check(s, {"a.thing": "application/x-thing", "b.things": "application/x-thing",
               "c.fancy": "text/x-fancy; charset=utf-8",        # text/* gets the charset
               "d.html": "application/x-html-override",          # the file wins
               "e.css": "text/css; charset=utf-8",               # built-in still there
               "f.png": "image/png"})


def test_default_type(tmpdir):
    root = _root(tmpdir)
    s = ConfServer(tmpdir, "default_type text/plain\n"
                            "location /dir.d/ {\n    default_type application/x-unknown\n}\n", root=root)
    _check(s, {"a.zzunknown": "text/plain", "noext": "text/plain",
               "dir.d/noext": "application/x-unknown", "a.png": "image/png"})


def test_bad_mime_types_file(tmpdir):
    # A missing file, and a file with a malformed line: exit 2, one line naming the file.
    root = "root %s\n" % tmpdir
    rc, err, _ = check_config(tmpdir, root + "mime_types %s\n" % os.path.join(tmpdir, "missing.types"))
    assert rc == 2, (rc, err)
    assert len(err.splitlines()) == 1 and "missing.types" in err, err
    bad = os.path.join(tmpdir, "bad.types")
    with open(bad, "w") as f:
        f.write("text/plain txt\nnot-a-type foo\n")
    rc, err, _ = check_config(tmpdir, root + "mime_types %s\n" % bad)
    assert rc == 2, (rc, err)
    assert len(err.splitlines()) == 1 and "bad.types:2" in err, err
    rc, err, _ = check_config(tmpdir, root + "mime_types %s\n" % MIME_TYPES)
    assert rc == 0, err
