"""Persistent connections, HTTP/1.0, pipelining, requests split across segments."""

import time

from lib.server import Conn, T, req, sha256


def test_http11_keepalive_default(srv):
    with Conn(srv) as c:
        for i, path in enumerate(["/small.html", "/kib.txt", "/one.txt", "/big.bin",
                                  "/empty.txt", "/sub/"]):
            c.send(req("GET", path))
            r = c.read_response()
            assert r.status == 200, (i, path, r.status)
            want = srv.files["/sub/index.html" if path == "/sub/" else path]
            assert r.body == want, path
            assert not r.has_token("Connection", "close"), (path, r.headers)
        assert c.is_open(0.3), "server closed an idle HTTP/1.1 connection immediately"


def test_connection_close_http11(srv):
    with Conn(srv) as c:
        c.send(req("GET", "/small.html", {"Connection": "close"}))
        r = c.read_response()
        assert r.status == 200 and r.body == srv.files["/small.html"]
        assert r.has_token("Connection", "close"), r.headers
        assert c.wait_closed(5), "server did not close after Connection: close"


def test_connection_close_on_error_response(srv):
    with Conn(srv) as c:
        c.send(req("GET", "/missing", {"Connection": "close"}))
        r = c.read_response()
        assert r.status == 404
        assert r.has_token("Connection", "close"), r.headers
        assert c.wait_closed(5)


def test_connection_close_ignores_following_requests(srv):
    # Requests pipelined after one with Connection: close must not be answered.
    with Conn(srv) as c:
        c.send(req("GET", "/one.txt", {"Connection": "close"}) + req("GET", "/kib.txt"))
        r = c.read_response()
        assert r.status == 200 and r.body == b"1"
        assert c.wait_closed(5)


# ---- the Connection field as a token list (RFC 9110 7.6.1: OWS, case, several lines) ------

def _head(version, *fields):
    return (b"GET /one.txt " + version + b"\r\nHost: x\r\n" +
            b"".join(f + b"\r\n" for f in fields) + b"\r\n")


def _answered_then_closed(srv, data):
    with Conn(srv) as c:
        c.send(data)
        r = c.read_response()
        assert r.status == 200 and r.body == b"1", r.status
        assert r.has_token("Connection", "close"), r.headers
        assert c.wait_closed(5), "the connection stayed open after %r" % data


def _answered_then_reused(srv, data):
    with Conn(srv) as c:
        c.send(data)
        r = c.read_response()
        assert r.status == 200 and r.body == b"1", r.status
        assert not r.has_token("Connection", "close"), r.headers
        c.send(req("GET", "/kib.txt"))
        r = c.read_response()
        assert r.status == 200 and r.body == srv.files["/kib.txt"], "not reused after %r" % data


def test_connection_close_with_ows_around_the_token(srv):
    _answered_then_closed(srv, _head(b"HTTP/1.1", b"Connection: \t close \t"))


def test_connection_close_after_keep_alive_in_one_list(srv):
    _answered_then_closed(srv, _head(b"HTTP/1.1", b"Connection: keep-alive, close"))


def test_connection_close_capitalised(srv):
    _answered_then_closed(srv, _head(b"HTTP/1.1", b"Connection: Close"))


def test_connection_close_without_space(srv):
    _answered_then_closed(srv, _head(b"HTTP/1.1", b"Connection:close"))


def test_connection_close_on_a_second_field_line(srv):
    _answered_then_closed(srv, _head(b"HTTP/1.1", b"Connection: keep-alive",
                                     b"Connection: close"))


def test_connection_close_among_other_tokens(srv):
    _answered_then_closed(srv, _head(b"HTTP/1.1", b"Connection: x-trace,\tclose ,te"))


def test_connection_tokens_that_only_contain_close_keep_the_connection(srv):
    _answered_then_reused(srv, _head(b"HTTP/1.1", b"Connection: closed, xclose, close-later"))


def test_http10_keep_alive_with_ows_and_case(srv):
    _answered_then_reused(srv, _head(b"HTTP/1.0", b"Connection: \t Keep-Alive \t"))


def test_http10_keep_alive_without_space(srv):
    _answered_then_reused(srv, _head(b"HTTP/1.0", b"Connection:keep-alive"))


def test_http10_keep_alive_on_a_second_field_line(srv):
    _answered_then_reused(srv, _head(b"HTTP/1.0", b"Connection: x-trace",
                                     b"Connection: keep-alive"))


def test_http10_keep_alive_and_close_closes(srv):
    _answered_then_closed(srv, _head(b"HTTP/1.0", b"Connection: keep-alive, close"))


def test_http10_closes_by_default(srv):
    with Conn(srv) as c:
        c.send(req("GET", "/small.html", version="HTTP/1.0", host=None))
        r = c.read_response()
        assert r.status == 200, r.status
        assert r.body == srv.files["/small.html"]
        assert r.version in ("HTTP/1.1", "HTTP/1.0"), r.version
        assert not r.has_token("Connection", "keep-alive"), r.headers
        assert c.wait_closed(5), "server kept an HTTP/1.0 connection open"


def test_http10_keepalive(srv):
    with Conn(srv) as c:
        c.send(req("GET", "/small.html", {"Connection": "keep-alive"}, version="HTTP/1.0"))
        r = c.read_response()
        assert r.status == 200 and r.body == srv.files["/small.html"]
        assert r.has_token("Connection", "keep-alive"), r.headers
        assert r.header("Content-Length") == str(len(srv.files["/small.html"]))
        assert c.is_open(0.3), "server closed an HTTP/1.0 keep-alive connection"
        c.send(req("GET", "/kib.txt", {"Connection": "keep-alive"}, version="HTTP/1.0"))
        r = c.read_response()
        assert r.status == 200 and r.body == srv.files["/kib.txt"]
        assert r.has_token("Connection", "keep-alive"), r.headers
        # and a final plain HTTP/1.0 request closes it
        c.send(req("GET", "/one.txt", version="HTTP/1.0"))
        r = c.read_response()
        assert r.body == b"1"
        assert c.wait_closed(5)


def _mix(files):
    """20 (method, path, expected_status, expected_body) tuples."""
    base = [
        ("GET", "/small.html", 200, files["/small.html"]),
        ("GET", "/nope", 404, None),
        ("HEAD", "/kib.txt", 200, b""),
        ("GET", "/kib.txt", 200, files["/kib.txt"]),
        ("GET", "/empty.txt", 200, b""),
        ("HEAD", "/missing.css", 404, b""),
        ("GET", "/sub/file.css", 200, files["/sub/file.css"]),
        ("GET", "/one.txt", 200, b"1"),
        ("HEAD", "/big.bin", 200, b""),
        ("GET", "/sub/", 200, files["/sub/index.html"]),
    ]
    return base + base[::-1]


def _check(rs, mix):
    assert len(rs) == len(mix)
    for i, (r, (m, path, st, body)) in enumerate(zip(rs, mix)):
        assert r.status == st, (i, m, path, r.status)
        if body is not None:
            assert r.body == body, (i, m, path, len(r.body))
        if m == "HEAD" and st == 200:
            assert r.header("Content-Length") is not None


def test_pipelining_20_in_one_send(srv):
    mix = _mix(srv.files)
    data = b"".join(req(m, p) for m, p, _, _ in mix)
    with Conn(srv) as c:
        c.send(data)
        rs = c.read_responses([m for m, _, _, _ in mix])
        _check(rs, mix)
        assert c.buf == b""
        assert c.is_open(0.2)


def test_pipelining_with_big_file_in_between(srv):
    mix = [("GET", "/one.txt", 200, b"1"), ("GET", "/big.bin", 200, srv.files["/big.bin"]),
           ("GET", "/small.html", 200, srv.files["/small.html"]),
           ("GET", "/big.bin", 200, srv.files["/big.bin"]), ("GET", "/kib.txt", 200,
                                                             srv.files["/kib.txt"])]
    with Conn(srv) as c:
        c.send(b"".join(req(m, p) for m, p, _, _ in mix))
        rs = c.read_responses([m for m, _, _, _ in mix])
        _check(rs, mix)


def test_pipelining_awkward_boundaries(srv):
    mix = _mix(srv.files)[:8]
    data = b"".join(req(m, p) for m, p, _, _ in mix)
    with Conn(srv) as c:
        # first two requests byte by byte, then the rest split in the middle of
        # "\r\n\r\n" and in the middle of a header name.
        n2 = len(req(mix[0][0], mix[0][1])) + len(req(mix[1][0], mix[1][1]))
        c.send_slowly(data[:n2], chunk=1, pause=0.002)
        rest = data[n2:]
        cuts = sorted({rest.find(b"\r\n\r\n") + 2, rest.find(b"Host") + 2, len(rest) - 1})
        prev = 0
        for cut in cuts + [len(rest)]:
            c.send(rest[prev:cut])
            time.sleep(0.05)
            prev = cut
        rs = c.read_responses([m for m, _, _, _ in mix])
        _check(rs, mix)


def test_slow_client_split_head(srv):
    data = req("GET", "/kib.txt", {"User-Agent": "slow-test", "Accept": "*/*"})
    pieces = [data[:3], data[3:9], data[9:20], data[20:-3], data[-3:-1], data[-1:]]
    with Conn(srv) as c:
        for p in pieces:
            c.send(p)
            time.sleep(0.25)
        r = c.read_response()
        assert r.status == 200, r.status
        assert sha256(r.body) == sha256(srv.files["/kib.txt"])


def test_request_line_split_and_second_request(srv):
    with Conn(srv) as c:
        d = req("GET", "/small.html")
        c.send(d[:5])
        time.sleep(0.3)
        c.send(d[5:])
        r = c.read_response()
        assert r.status == 200 and r.body == srv.files["/small.html"]
        c.send(req("GET", "/one.txt"))
        assert c.read_response().body == b"1"


def test_many_requests_one_connection(srv):
    with Conn(srv) as c:
        for i in range(200):
            path = ["/one.txt", "/small.html", "/empty.txt", "/kib.txt"][i % 4]
            c.send(req("GET", path))
            r = c.read_response()
            assert r.status == 200 and r.body == srv.files[path], (i, path)


def test_idle_keepalive_connection_does_not_block_others(srv):
    # srv runs with --threads 2: idle keep-alive connections must not pin worker threads.
    idle = []
    try:
        for _ in range(4):
            c = Conn(srv)
            c.send(req("GET", "/one.txt"))
            assert c.read_response().status == 200
            idle.append(c)
        t0 = time.monotonic()
        with Conn(srv, timeout=5) as c:
            c.send(req("GET", "/small.html"))
            r = c.read_response()
            assert r.status == 200
        assert time.monotonic() - t0 < T(3)
    finally:
        for c in idle:
            c.close()
