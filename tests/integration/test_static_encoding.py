"""Precompressed representations (x.br, x.zst, x.gz beside x) chosen by Accept-Encoding
(RFC 9110 12.5.3): q-values, identity;q=0, 406, Vary, ETags per encoding, ranges and
conditionals on the chosen representation, stale variants, curl --compressed. (With `compress
off`: how siblings and on-the-fly variants meet is in test_compress.py.)"""

import gzip
import os
import tempfile

from lib.server import ConfServer, Conn, curl, get, req
from lib.static import OLD, make_root, set_mtime

CSS = b"body { color: #102030; margin: 0 auto; }\n" * 40
JS = b"export function f(x) { return x * 2; }\n" * 50
VARIANTS = {
    "br": b"BROTLI-" + b"b" * 37,     # fake: the server never decodes
    "zstd": b"ZSTD-" + b"z" * 50,
    "gzip": gzip.compress(CSS, mtime=0),
}
SUFFIX = {"br": ".br", "zstd": ".zst", "gzip": ".gz"}


def _tree(tmpdir):
    files = {"a.css": CSS, "b.js": JS, "b.js.gz": gzip.compress(JS, mtime=0),
             "c.txt": b"no variants\n", "d.css": CSS, "d.css.gz": VARIANTS["gzip"],
             "e.html": b"<p>e</p>\n", "e.html.br": b"fake br of e",
             "site/index.html": b"<!doctype html><p>index</p>\n",
             "site/index.html.gz": gzip.compress(b"<!doctype html><p>index</p>\n", mtime=0)}
    for enc, data in VARIANTS.items():
        files["a.css" + SUFFIX[enc]] = data
    root = make_root(os.path.join(tmpdir, "root"), files)
    # Variants are at least as new as their original; d.css.gz is older (stale).
    for rel in files:
        if rel.endswith((".gz", ".br", ".zst")):
            set_mtime(os.path.join(root, rel), OLD + 5)
    set_mtime(os.path.join(root, "d.css"), OLD + 10)
    return root


def _srv(tmpdir, extra=""):
    # The siblings alone: compression on the fly (test_compress.py) is off here, so that the
    # fake variants and the files without any stay what these tests expect.
    root = _tree(tmpdir)
    s = ConfServer(tmpdir, "file_cache_valid 0\ncompress off\n" + extra, root=root)
    s.rootdir = root
    return s


def ae(s, path, value, method="GET", extra=None):
    h = {} if value is None else {"Accept-Encoding": value}
    h.update(extra or {})
    return get(s, path, method, headers=h)


def check_rep(r, enc, original=CSS, ctype="text/css; charset=utf-8"):
    """The response carries representation `enc` (None: identity) of a file with variants."""
    assert r.status == 200, (r.status, r.headers)
    assert r.header("Vary") == "Accept-Encoding", ("Vary", r.headers)
    assert r.header("Content-Type") == ctype, r.header("Content-Type")
    if enc is None:
        assert r.header("Content-Encoding") is None, r.headers
        assert r.body == original
    else:
        assert r.header("Content-Encoding") == enc, (enc, r.headers)
        assert r.body == VARIANTS[enc], (enc, r.body[:30])
    assert r.header("Content-Length") == str(len(r.body))


def test_choice_by_q_values(tmpdir):
    s = _srv(tmpdir)
    cases = [
        (None, None),                      # no header: identity
        ("", None),
        ("identity", None),
        ("gzip", "gzip"),
        ("x-gzip", "gzip"),
        ("GZip", "gzip"),
        ("br", "br"),
        ("zstd", "zstd"),
        ("deflate", None),
        ("gzip, deflate, br", "br"),       # ties: br preferred
        ("gzip, deflate, br, zstd", "br"),
        ("zstd, gzip", "zstd"),
        ("gzip, zstd", "zstd"),
        ("gzip;q=1, br;q=0.5", "gzip"),
        ("gzip;q=0.5, identity", None),    # identity explicitly preferred
        ("gzip;q=0.5, identity;q=0.4", "gzip"),
        ("br;q=0, gzip", "gzip"),
        ("gzip, br;q=0", "gzip"),
        ("br;q=0, zstd;q=0, gzip;q=0", None),
        ("*", "br"),
        ("*;q=0.5, gzip", "gzip"),
        ("*;q=0, gzip", "gzip"),
        ("gzip, identity;q=0", "gzip"),    # identity excluded, a variant is acceptable
        ("br ; q=1.0 , gzip ; q=0.5", "br"),
    ]
    with Conn(s) as c:
        for value, enc in cases:
            h = {} if value is None else {"Accept-Encoding": value}
            c.send(req("GET", "/a.css", h))
            r = c.read_response()
            try:
                check_rep(r, enc)
            except AssertionError as e:
                raise AssertionError("Accept-Encoding %r: %s" % (value, e))


def test_q_below_one_beats_unlisted_identity(tmpdir):
    # identity has no implicit q=1 (RFC 9110 12.5.3: it is merely "acceptable unless
    # excluded"): a client that lists only codings with q < 1 still prefers them to identity,
    # and among them the highest q wins.
    s = _srv(tmpdir)
    for value, enc in [("gzip;q=0.8, br;q=0.9", "br"), ("gzip;q=0.5", "gzip"),
                       ("br;q=0.2, zstd;q=0.3, gzip;q=0.1", "zstd"), ("*;q=0.5", "br")]:
        r = ae(s, "/a.css", value)
        try:
            check_rep(r, enc)
        except AssertionError as e:
            raise AssertionError("Accept-Encoding %r: %s" % (value, e))


def test_not_acceptable_406(tmpdir):
    s = _srv(tmpdir)
    # Nothing acceptable: identity excluded and no acceptable variant.
    for path, value in [("/c.txt", "identity;q=0"), ("/c.txt", "*;q=0"),
                        ("/c.txt", "gzip, identity;q=0"), ("/a.css", "*;q=0"),
                        ("/a.css", "identity;q=0"), ("/a.css", "br;q=0, identity;q=0"),
                        ("/e.html", "gzip, identity;q=0")]:
        r = ae(s, path, value)
        assert r.status == 406, (path, value, r.status)
    # identity;q=0 with an acceptable variant: that variant.
    r = ae(s, "/e.html", "br, identity;q=0")
    assert r.status == 200 and r.header("Content-Encoding") == "br", r.headers
    assert r.body == b"fake br of e"


def test_identity_response_varies(tmpdir):
    s = _srv(tmpdir)
    for value in [None, "identity", "deflate"]:
        r = ae(s, "/a.css", value)
        check_rep(r, None)
    # HEAD: same headers, no body.
    for value, enc in [(None, None), ("gzip", "gzip"), ("br", "br")]:
        g = ae(s, "/a.css", value)
        h = ae(s, "/a.css", value, "HEAD")
        assert h.status == 200 and h.body == b"", (value, enc)
        for name in ("Content-Length", "Content-Encoding", "Content-Type", "ETag", "Vary"):
            assert h.header(name) == g.header(name), (value, name)


def test_etag_per_encoding(tmpdir):
    s = _srv(tmpdir)
    tags = {}
    for value in [None, "gzip", "br", "zstd"]:
        r = ae(s, "/a.css", value)
        tags[value] = r.header("ETag")
        assert tags[value] and not tags[value].startswith("W/"), tags
    assert len(set(tags.values())) == 4, tags
    # A conditional request matches only the representation it validates.
    r = ae(s, "/a.css", "gzip", extra={"If-None-Match": tags["gzip"]})
    assert r.status == 304 and r.header("ETag") == tags["gzip"], (r.status, r.headers)
    assert r.header("Vary") == "Accept-Encoding", r.headers
    r = ae(s, "/a.css", "gzip", extra={"If-None-Match": tags[None]})
    check_rep(r, "gzip")
    r = ae(s, "/a.css", None, extra={"If-None-Match": tags["gzip"]})
    check_rep(r, None)
    r = ae(s, "/a.css", "br", extra={"If-None-Match": "%s, %s" % (tags["gzip"], tags["br"])})
    assert r.status == 304 and r.header("ETag") == tags["br"]
    r = ae(s, "/a.css", "br", extra={"If-Match": tags[None]})
    assert r.status == 412, r.status
    r = ae(s, "/a.css", "br", extra={"If-Match": tags["br"]})
    check_rep(r, "br")


def test_ranges_on_chosen_representation(tmpdir):
    s = _srv(tmpdir)
    gz = VARIANTS["gzip"]
    r = ae(s, "/a.css", "gzip", extra={"Range": "bytes=0-9"})
    assert r.status == 206, r.status
    assert r.header("Content-Encoding") == "gzip"
    assert r.header("Content-Range") == "bytes 0-9/%d" % len(gz), r.header("Content-Range")
    assert r.body == gz[:10]
    r = ae(s, "/a.css", "gzip", extra={"Range": "bytes=-4"})
    assert r.body == gz[-4:] and r.header("Content-Range") == "bytes %d-%d/%d" % (
        len(gz) - 4, len(gz) - 1, len(gz))
    # 416 is about the representation's length, not the original's.
    r = ae(s, "/a.css", "gzip", extra={"Range": "bytes=%d-" % len(gz)})
    assert r.status == 416 and r.header("Content-Range") == "bytes */%d" % len(gz), r.headers
    # If-Range with the variant's ETag.
    etag = ae(s, "/a.css", "gzip").header("ETag")
    r = ae(s, "/a.css", "gzip", extra={"Range": "bytes=1-2", "If-Range": etag})
    assert r.status == 206 and r.body == gz[1:3]
    ident = ae(s, "/a.css", None).header("ETag")
    r = ae(s, "/a.css", "gzip", extra={"Range": "bytes=1-2", "If-Range": ident})
    check_rep(r, "gzip")


def test_stale_variant_ignored(tmpdir):
    s = _srv(tmpdir)
    # d.css.gz is older than d.css: it was not regenerated, so it must not be served.
    r = ae(s, "/d.css", "gzip")
    assert r.status == 200 and r.header("Content-Encoding") is None, r.headers
    assert r.body == CSS
    # Regenerated (newer than the original): served.
    set_mtime(os.path.join(s.rootdir, "d.css.gz"), OLD + 20)
    r = ae(s, "/d.css", "gzip")
    assert r.header("Content-Encoding") == "gzip" and r.body == VARIANTS["gzip"], r.headers


def test_variants_appear_and_disappear(tmpdir):
    s = _srv(tmpdir)
    p = os.path.join(s.rootdir, "c.txt.gz")
    assert ae(s, "/c.txt", "gzip").header("Content-Encoding") is None
    with open(p, "wb") as f:
        f.write(b"gz of c")
    set_mtime(p, OLD + 1)
    r = ae(s, "/c.txt", "gzip")
    assert r.header("Content-Encoding") == "gzip" and r.body == b"gz of c", r.headers
    assert r.header("Content-Type") == "text/plain; charset=utf-8"
    os.unlink(p)
    r = ae(s, "/c.txt", "gzip")
    assert r.header("Content-Encoding") is None and r.body == b"no variants\n", r.headers


def test_precompressed_off(tmpdir):
    s = _srv(tmpdir, "precompressed off\n")
    r = ae(s, "/a.css", "gzip, br, zstd")
    assert r.status == 200 and r.header("Content-Encoding") is None and r.body == CSS


def test_precompressed_off_per_location(tmpdir):
    s = _srv(tmpdir, "location /site/ {\n    precompressed off\n}\n")
    assert ae(s, "/a.css", "gzip").header("Content-Encoding") == "gzip"
    r = ae(s, "/site/index.html", "gzip")
    assert r.status == 200 and r.header("Content-Encoding") is None, r.headers


def test_variant_file_requested_directly(tmpdir):
    s = _srv(tmpdir)
    # /a.css.gz is a file of its own: a gzip archive, not a gzip-encoded CSS.
    r = ae(s, "/a.css.gz", "gzip")
    assert r.status == 200 and r.body == VARIANTS["gzip"]
    assert r.header("Content-Encoding") is None, r.headers
    assert r.header("Content-Type") == "application/gzip", r.header("Content-Type")


def test_precompressed_index_of_directory(tmpdir):
    # A directory URL serves its index file, precompressed variant included (as nginx's
    # gzip_static does for "/" -> index.html.gz).
    s = _srv(tmpdir)
    plain = b"<!doctype html><p>index</p>\n"
    r = ae(s, "/site/", "gzip")
    assert r.status == 200, r.status
    assert r.header("Content-Encoding") == "gzip", r.headers
    assert gzip.decompress(r.body) == plain
    assert r.header("Vary") == "Accept-Encoding"
    r = ae(s, "/site/", None)
    assert r.body == plain and r.header("Vary") == "Accept-Encoding", r.headers


def test_curl_compressed(tmpdir):
    s = _srv(tmpdir)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out")
        p = curl(["--compressed", "-o", out, "-w", "%{http_code} %{size_download}",
                  "-D", os.path.join(d, "h"), s.url + "/b.js"])
        assert p.returncode == 0, p.stderr
        code, size = p.stdout.decode().split()
        assert code == "200"
        # What travelled is the .gz file; what curl wrote is the decoded original.
        assert int(size) == len(gzip.compress(JS, mtime=0)), size
        assert open(out, "rb").read() == JS
        headers = open(os.path.join(d, "h"), "rb").read().decode("latin-1").lower()
        assert "content-encoding: gzip" in headers, headers
        assert "content-type: text/javascript" in headers, headers
        # Without --compressed: the original.
        p = curl(["-o", out, s.url + "/b.js"])
        assert p.returncode == 0 and open(out, "rb").read() == JS
