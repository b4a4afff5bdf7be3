"""GET/HEAD of static files: status, headers, bodies (raw sockets, http.client, curl)."""

import http.client
import os
import re
import tempfile
import time

from lib.server import (Conn, T, curl, get, imf, parse_imf, req, sha256)

FILES = ["/empty.txt", "/one.txt", "/small.html", "/kib.txt", "/big.bin",
         "/sub/file.css", "/noext", "/data.zzunknown"]

TYPES = {
    "/small.html": "text/html; charset=utf-8",
    "/sub/index.html": "text/html; charset=utf-8",
    "/sub/file.css": "text/css; charset=utf-8",
    "/kib.txt": "text/plain; charset=utf-8",
    "/one.txt": "text/plain; charset=utf-8",
    "/empty.txt": "text/plain; charset=utf-8",
    "/big.bin": "application/octet-stream",
    "/data.zzunknown": "application/octet-stream",
    "/noext": "application/octet-stream",
}


def norm_ct(v):
    return re.sub(r"\s*;\s*", "; ", (v or "").strip().lower())


def check_common_headers(r, path, files):
    assert r.status == 200, (path, r.status, r.reason)
    assert r.version == "HTTP/1.1", r.version
    assert r.header_all("Server") == ["lfhttpd"], r.header_all("Server")
    assert r.header_all("Content-Length") == [str(len(files[path]))], \
        (path, r.header_all("Content-Length"), len(files[path]))
    assert r.header("Transfer-Encoding") is None, r.headers
    assert norm_ct(r.header("Content-Type")) == TYPES[path], (path, r.header("Content-Type"))
    date = parse_imf(r.header("Date"))
    assert abs(date - time.time()) < 5 + T(5), (r.header("Date"), time.time())
    assert len(r.header_all("Date")) == 1
    assert r.header("Last-Modified") == imf(1700000000), (path, r.header("Last-Modified"))
    parse_imf(r.header("Last-Modified"))


def test_get_headers_all_types(srv):
    with Conn(srv) as c:
        for path in FILES:
            c.send(req("GET", path))
            r = c.read_response("GET")
            check_common_headers(r, path, srv.files)
            assert r.body == srv.files[path], path


def test_head_same_headers_no_body(srv):
    with Conn(srv) as c:
        for path in ["/small.html", "/big.bin", "/empty.txt", "/sub/file.css"]:
            c.send(req("GET", path))
            g = c.read_response("GET")
            c.send(req("HEAD", path))
            h = c.read_response("HEAD")
            check_common_headers(h, path, srv.files)
            for name in ("Content-Length", "Content-Type", "Last-Modified", "Server"):
                assert h.header(name) == g.header(name), (path, name, h.header(name), g.header(name))
        # If the server had sent a body after a HEAD response, this next response
        # would be misparsed: the stream must be exactly at a response boundary.
        c.send(req("GET", "/one.txt"))
        r = c.read_response("GET")
        assert r.status == 200 and r.body == b"1", r
        assert c.buf == b"", bytes(c.buf[:100])


def test_head_big_file_sends_no_body(srv):
    with Conn(srv) as c:
        c.send(req("HEAD", "/big.bin", {"Connection": "close"}))
        r = c.read_response("HEAD")
        assert r.status == 200
        assert r.header("Content-Length") == str(3 * 1024 * 1024)
        rest = c.read_all()
        assert rest == b"", "HEAD response followed by %d bytes" % len(rest)


def test_bodies_byte_for_byte_raw(srv):
    for path in ["/empty.txt", "/one.txt", "/kib.txt", "/big.bin"]:
        r = get(srv, path)
        assert r.status == 200, (path, r.status)
        assert len(r.body) == len(srv.files[path]), (path, len(r.body))
        assert sha256(r.body) == sha256(srv.files[path]), path
    assert len(srv.files["/kib.txt"]) == 1024 and len(srv.files["/one.txt"]) == 1


def test_bodies_byte_for_byte_curl(srv):
    with tempfile.TemporaryDirectory() as d:
        for path in ["/empty.txt", "/one.txt", "/kib.txt", "/big.bin"]:
            dest = os.path.join(d, "out")
            p = curl(["-o", dest, "-w", "%{http_code} %{size_download}", srv.url + path])
            assert p.returncode == 0, (path, p.stderr)
            code, size = p.stdout.decode().split()
            assert code == "200", (path, code)
            assert int(size) == len(srv.files[path]), (path, size)
            with open(dest, "rb") as f:
                assert sha256(f.read()) == sha256(srv.files[path]), path


def test_curl_head(srv):
    p = curl(["-I", srv.url + "/small.html"])
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode("latin-1")
    assert text.startswith("HTTP/1.1 200"), text
    assert re.search(r"(?im)^content-length: %d\r?$" % len(srv.files["/small.html"]), text), text
    assert re.search(r"(?im)^server: lfhttpd\r?$", text), text


def test_curl_keepalive_reuse(srv):
    # Two URLs in one curl invocation reuse the connection if the server keeps it open.
    p = curl(["-v", "-o", "/dev/null", "-o", "/dev/null",
              srv.url + "/small.html", srv.url + "/kib.txt"])
    assert p.returncode == 0, p.stderr
    err = p.stderr.decode("latin-1")
    assert re.search(r"Re-using existing connection|Reusing existing connection", err), err


def test_http_client_stdlib(srv):
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=T(10))
    try:
        for path in ["/small.html", "/big.bin", "/sub/file.css", "/small.html"]:
            c.request("GET", path)
            r = c.getresponse()
            body = r.read()
            assert r.status == 200, (path, r.status)
            assert body == srv.files[path], path
            assert r.getheader("Server") == "lfhttpd", path
            assert not r.will_close, "server wants to close an HTTP/1.1 keep-alive connection"
        c.request("GET", "/nope")
        r = c.getresponse()
        r.read()
        assert r.status == 404
    finally:
        c.close()


def test_last_modified_tracks_mtime(srv):
    p = srv.tree.path("one.txt")
    os.utime(p, (1234567890, 1234567890))
    r = get(srv, "/one.txt")
    assert r.status == 200
    assert r.header("Last-Modified") == "Fri, 13 Feb 2009 23:31:30 GMT", r.header("Last-Modified")


def test_index_html_headers(srv):
    r = get(srv, "/sub/")
    check_common_headers(r, "/sub/index.html", srv.files)
    assert r.body == srv.files["/sub/index.html"]


def test_error_response_well_formed(srv):
    r = get(srv, "/does-not-exist.html")
    assert r.status == 404, r.status
    assert r.header_all("Server") == ["lfhttpd"]
    parse_imf(r.header("Date"))
    # an error body must be framed (Content-Length or chunked) on a keep-alive connection
    assert r.header("Content-Length") is not None or r.header("Transfer-Encoding") is not None
