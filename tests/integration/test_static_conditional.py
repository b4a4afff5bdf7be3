"""Validators and conditional requests (RFC 9110 8.8, 13): ETag, Last-Modified, If-None-Match,
If-Modified-Since, If-Match, If-Unmodified-Since, their precedence, and curl -z."""

import os
import tempfile
import time

from lib.server import ConfServer, Conn, curl, get, imf, parse_imf, req
from lib.static import OLD, make_root, set_mtime

BODY = b"conditional body\n" * 8


def _srv(tmpdir, extra=""):
    """A server on a small root, revalidating files on every request (file_cache_valid 0)."""
    root = make_root(os.path.join(tmpdir, "root"), {"f.txt": BODY, "g.css": b"a{}\n"})
    s = ConfServer(tmpdir, "file_cache_valid 0\n" + extra, root=root)
    s.rootdir = root
    return s


def _validators(s, path="/f.txt"):
    r = get(s, path)
    assert r.status == 200, r
    return r.header("ETag"), r.header("Last-Modified")


def _is_304(r, etag=None):
    assert r.status == 304, (r.status, r.headers)
    assert r.body == b""
    assert r.header("Content-Length") in (None, str(len(BODY))), r.headers
    if etag is not None:
        assert r.header("ETag") == etag, (r.header("ETag"), etag)


def test_validators_present_and_strong(srv):
    r = get(srv, "/kib.txt")
    assert r.status == 200
    etag = r.header("ETag")
    assert etag and etag.startswith('"') and etag.endswith('"') and len(etag) > 2, etag
    assert not etag.startswith("W/"), "file ETags must be strong: %r" % etag
    assert r.header("Last-Modified") == imf(OLD), r.header("Last-Modified")
    # Stable across requests, distinct across files.
    assert get(srv, "/kib.txt").header("ETag") == etag
    assert get(srv, "/one.txt").header("ETag") != etag
    # HEAD carries the same validators.
    h = get(srv, "/kib.txt", "HEAD")
    assert h.header("ETag") == etag and h.header("Last-Modified") == imf(OLD)


def test_etag_changes_with_content_and_mtime(tmpdir):
    s = _srv(tmpdir)
    p = os.path.join(s.rootdir, "f.txt")
    e0, lm0 = _validators(s)
    # Only the mtime changes (touch): a small file's ETag follows its bytes, which did not
    # change (so a cache keeps its copy: If-None-Match still matches); Last-Modified moves.
    set_mtime(p, OLD + 100)
    e1, lm1 = _validators(s)
    assert e1 == e0, "a touch changed the ETag of unchanged content"
    assert lm1 == imf(OLD + 100) and lm1 != lm0, lm1
    _is_304(get(s, "/f.txt", headers={"If-None-Match": e0}), e0)
    # Same size, different content, a new mtime.
    with open(p, "r+b") as f:
        f.write(b"C")
    set_mtime(p, OLD + 200)
    r = get(s, "/f.txt")
    assert r.body == b"C" + BODY[1:], r.body[:40]
    assert r.header("ETag") != e0
    # Replaced by another file with the same size and mtime but other bytes: new ETag.
    e2 = r.header("ETag")
    tmp = p + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"D" + BODY[1:])
    set_mtime(tmp, OLD + 200)
    os.rename(tmp, p)
    r = get(s, "/f.txt")
    assert r.body == b"D" + BODY[1:]
    assert r.header("ETag") != e2, "ETag unchanged after the file was replaced"
    # The old validators no longer produce a 304.
    r = get(s, "/f.txt", headers={"If-None-Match": e0})
    assert r.status == 200 and r.body == b"D" + BODY[1:]


def test_large_file_etag_changes_with_mtime(tmpdir):
    # A file too large to be held in memory is tagged by size and mtime (to the nanosecond).
    big = b"L" * (64 * 1024)
    root = make_root(os.path.join(tmpdir, "root"), {"big.bin": big})
    s = ConfServer(tmpdir, "file_cache_valid 0\n", root=root)
    p = os.path.join(root, "big.bin")
    e0, _ = _validators(s, "/big.bin")
    os.utime(p, ns=(OLD * 10**9, OLD * 10**9 + 1))   # one nanosecond later
    e1, _ = _validators(s, "/big.bin")
    assert e1 != e0, "a large file's ETag missed a change of its mtime"
    with open(p, "r+b") as f:
        f.write(b"M")
    os.utime(p, ns=(OLD * 10**9, OLD * 10**9 + 1))   # same size, same mtime, new bytes
    r = get(s, "/big.bin")
    assert r.body[:1] == b"M"
    assert r.header("ETag") == e1   # documented: size + mtime cannot see this one


def _replica(tmpdir, name, files):
    """A copy of the same site (other inodes, same bytes and mtimes), served by its own
    server, as two replicas of one image or one ConfigMap are."""
    root = make_root(os.path.join(tmpdir, name), files)
    os.makedirs(os.path.join(tmpdir, name + "-srv"))
    return ConfServer(os.path.join(tmpdir, name + "-srv"), "", root=root)


def test_etags_are_the_same_on_replicas_and_across_restarts(tmpdir):
    files = {"small.txt": BODY, "big.bin": bytes(range(256)) * 400, "page.html": b"<p>x</p>\n"}
    a = _replica(tmpdir, "a", files)
    b = _replica(tmpdir, "b", files)
    for path in ("/small.txt", "/big.bin", "/page.html"):
        ra, rb = get(a, path), get(b, path)
        assert ra.status == rb.status == 200, path
        ea = ra.header("ETag")
        assert ea and ea == rb.header("ETag"), (path, ea, rb.header("ETag"))
        st = os.stat(os.path.join(tmpdir, "a", path.lstrip("/")))
        assert ("%x" % st.st_ino) not in ea.strip('"').split("-"), (path, ea, st.st_ino)
        # revalidation against the other replica succeeds
        r = get(b, path, headers={"If-None-Match": ea})
        assert r.status == 304 and r.header("ETag") == ea, (path, r.status)
    a.stop()
    os.makedirs(os.path.join(tmpdir, "a-again"))
    a2 = ConfServer(os.path.join(tmpdir, "a-again"), "", root=os.path.join(tmpdir, "a"))
    assert get(a2, "/big.bin").header("ETag") == get(b, "/big.bin").header("ETag")


def test_if_none_match_forms(tmpdir):
    s = _srv(tmpdir)
    etag, _ = _validators(s)
    weak = "W/" + etag
    for v in [etag, '"nope", ' + etag, etag + ', "nope"', '"a","b" ,  ' + etag, "*", weak,
              '"x", ' + weak]:
        _is_304(get(s, "/f.txt", headers={"If-None-Match": v}), etag)
        _is_304(get(s, "/f.txt", "HEAD", headers={"If-None-Match": v}), etag)
    for v in ['"nope"', '"nope", W/"other"', etag[:-1] + 'x"', etag.strip('"')]:
        r = get(s, "/f.txt", headers={"If-None-Match": v})
        assert r.status == 200 and r.body == BODY, (v, r.status)


def test_304_has_no_body_on_keepalive(tmpdir):
    s = _srv(tmpdir)
    etag, lm = _validators(s)
    with Conn(s) as c:
        # Pipelined: a body after a 304 would corrupt the next response.
        c.send(req("GET", "/f.txt", {"If-None-Match": etag}) +
               req("GET", "/f.txt", {"If-Modified-Since": lm}) + req("GET", "/g.css"))
        a, b, d = c.read_responses(3)
        _is_304(a, etag)
        _is_304(b, etag)
        assert d.status == 200 and d.body == b"a{}\n", d
        assert c.buf == b""
        assert a.header("Last-Modified") == lm


def test_if_modified_since(tmpdir):
    s = _srv(tmpdir)
    p = os.path.join(s.rootdir, "f.txt")
    _is_304(get(s, "/f.txt", headers={"If-Modified-Since": imf(OLD)}))
    _is_304(get(s, "/f.txt", headers={"If-Modified-Since": imf(OLD + 3600)}))
    for v in [imf(OLD - 1), imf(OLD - 86400 * 365), "not a date", ""]:
        r = get(s, "/f.txt", headers={"If-Modified-Since": v})
        assert r.status == 200 and r.body == BODY, (v, r.status)
    # The obsolete date formats are accepted too (RFC 9110 5.6.7).
    for v in ["Tuesday, 14-Nov-23 22:13:20 GMT", "Tue Nov 14 22:13:20 2023"]:
        _is_304(get(s, "/f.txt", headers={"If-Modified-Since": v}))
    # The file becomes newer than the client's copy: 200 again.
    set_mtime(p, OLD + 10)
    r = get(s, "/f.txt", headers={"If-Modified-Since": imf(OLD)})
    assert r.status == 200 and r.body == BODY, r.status
    assert r.header("Last-Modified") == imf(OLD + 10)


def test_if_match(tmpdir):
    s = _srv(tmpdir)
    etag, _ = _validators(s)
    for v in [etag, "*", '"x", ' + etag]:
        r = get(s, "/f.txt", headers={"If-Match": v})
        assert r.status == 200 and r.body == BODY, (v, r.status)
    # Mismatch, and a weak tag (If-Match uses the strong comparison): 412.
    for v in ['"nope"', "W/" + etag, '"a", "b"']:
        r = get(s, "/f.txt", headers={"If-Match": v})
        assert r.status == 412, (v, r.status)
    r = get(s, "/f.txt", "HEAD", headers={"If-Match": '"nope"'})
    assert r.status == 412


def test_if_unmodified_since(tmpdir):
    s = _srv(tmpdir)
    r = get(s, "/f.txt", headers={"If-Unmodified-Since": imf(OLD - 1)})
    assert r.status == 412, r.status
    for v in [imf(OLD), imf(OLD + 3600), "garbage"]:
        r = get(s, "/f.txt", headers={"If-Unmodified-Since": v})
        assert r.status == 200 and r.body == BODY, (v, r.status)


def test_precedence(tmpdir):
    s = _srv(tmpdir)
    etag, lm = _validators(s)
    # If-None-Match present: If-Modified-Since is ignored (RFC 9110 13.2.2 step 4).
    r = get(s, "/f.txt", headers={"If-None-Match": '"other"', "If-Modified-Since": lm})
    assert r.status == 200 and r.body == BODY, r.status
    _is_304(get(s, "/f.txt", headers={"If-None-Match": etag,
                                      "If-Modified-Since": imf(OLD - 86400)}), etag)
    # If-Match present: If-Unmodified-Since is ignored (step 2).
    r = get(s, "/f.txt", headers={"If-Match": etag, "If-Unmodified-Since": imf(OLD - 86400)})
    assert r.status == 200, r.status
    r = get(s, "/f.txt", headers={"If-Match": '"other"', "If-Unmodified-Since": imf(OLD + 10)})
    assert r.status == 412, r.status
    # If-Match is evaluated before If-None-Match: a failed If-Match is 412 even when
    # If-None-Match would give 304.
    r = get(s, "/f.txt", headers={"If-Match": '"other"', "If-None-Match": etag})
    assert r.status == 412, r.status
    # If-Unmodified-Since failing beats If-None-Match matching.
    r = get(s, "/f.txt", headers={"If-Unmodified-Since": imf(OLD - 1), "If-None-Match": etag})
    assert r.status == 412, r.status


def test_conditionals_on_missing_file_are_404(tmpdir):
    s = _srv(tmpdir)
    for h in [{"If-None-Match": "*"}, {"If-Match": "*"},
              {"If-Modified-Since": imf(time.time())}]:
        r = get(s, "/missing.txt", headers=h)
        assert r.status == 404, (h, r.status)


def test_304_carries_caching_headers(tmpdir):
    s = _srv(tmpdir, 'cache_control "public, max-age=60"\nexpires 1h\n'
                     'add_header X-Frame-Options "DENY"\n')
    # g.css has a precompressed sibling: its responses vary on Accept-Encoding.
    with open(os.path.join(s.rootdir, "g.css.gz"), "wb") as f:
        f.write(b"fake gzip bytes")
    set_mtime(os.path.join(s.rootdir, "g.css.gz"), OLD + 1)
    r = get(s, "/g.css")
    assert r.status == 200 and r.header("Vary") == "Accept-Encoding", r.headers
    etag, lm = r.header("ETag"), r.header("Last-Modified")
    for h in [{"If-None-Match": etag}, {"If-Modified-Since": lm}]:
        n = get(s, "/g.css", headers=h)
        assert n.status == 304, (h, n.status)
        assert n.header("ETag") == etag, h
        assert n.header("Last-Modified") == lm, h
        assert n.header("Cache-Control") == "public, max-age=60", (h, n.headers)
        assert n.header("Vary") == "Accept-Encoding", (h, n.headers)
        assert n.header("X-Frame-Options") == "DENY", (h, n.headers)
        exp = parse_imf(n.header("Expires"))
        assert abs(exp - (time.time() + 3600)) < 60, (h, n.header("Expires"))


def test_etag_off(tmpdir):
    s = _srv(tmpdir, "etag off\n")
    r = get(s, "/f.txt")
    assert r.status == 200 and r.header("ETag") is None, r.headers
    assert r.header("Last-Modified") == imf(OLD)
    _is_304(get(s, "/f.txt", headers={"If-Modified-Since": imf(OLD)}))


def test_curl_z_file_and_date(tmpdir):
    s = _srv(tmpdir)
    url = s.url + "/f.txt"
    with tempfile.TemporaryDirectory() as d:
        ref = os.path.join(d, "ref")
        out = os.path.join(d, "out")
        open(ref, "w").close()
        # Local copy as new as the server's file: If-Modified-Since -> 304, nothing written.
        set_mtime(ref, OLD)
        p = curl(["-z", ref, "-o", out, "-w", "%{http_code}", url])
        assert p.returncode == 0, p.stderr
        assert p.stdout == b"304", p.stdout
        assert not os.path.exists(out) or os.path.getsize(out) == 0
        # Local copy older: the whole file.
        set_mtime(ref, OLD - 3600)
        p = curl(["-z", ref, "-o", out, "-w", "%{http_code}", url])
        assert p.stdout == b"200", p.stdout
        assert open(out, "rb").read() == BODY
        # -z DATE, and -z -DATE (If-Unmodified-Since).
        p = curl(["-z", imf(OLD + 60), "-o", "/dev/null", "-w", "%{http_code}", url])
        assert p.stdout == b"304", p.stdout
        p = curl(["-z", imf(OLD - 60), "-o", "/dev/null", "-w", "%{http_code}", url])
        assert p.stdout == b"200", p.stdout
        p = curl(["-z", "-" + imf(OLD - 60), "-o", "/dev/null", "-w", "%{http_code}", url])
        assert p.stdout == b"412", p.stdout
        p = curl(["-z", "-" + imf(OLD + 60), "-o", "/dev/null", "-w", "%{http_code}", url])
        assert p.stdout == b"200", p.stdout
