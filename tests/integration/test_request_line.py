"""Request line and Host (RFC 9112 sections 3 and 3.2, RFC 9110 section 9): targets, versions,
methods, the HTTP/2 preface."""


import pytest

from lib.server import Conn, raw_bytes, req
from lib.probe import answer_then_keepalive, closed_without_response, error_then_close


def _allow(r):
    return [t.strip().upper() for t in (r.header("Allow") or "").split(",") if t.strip()]


# ---- request targets -------------------------------------------------------------------------

def test_origin_form(srv):
    answer_then_keepalive(srv, b"GET /one.txt?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", 200)


def test_absolute_form_host_taken_from_target(srv):
    # RFC 9112 3.2.2: the authority of an absolute-form target wins; the Host field is ignored
    # (so an invalid Host value does not matter here, while it is a 400 with origin-form).
    r = answer_then_keepalive(srv, b"GET http://example.com:8080/one.txt HTTP/1.1\r\n"
                              b"Host: bad host/\r\n\r\n", 200)
    assert r.body == b"1"
    r = answer_then_keepalive(srv, b"GET HTTPS://Example.COM/sub/file.css?v=1 HTTP/1.1\r\n"
                              b"Host: x\r\n\r\n", 200)
    assert r.body == srv.files["/sub/file.css"]
    # No path: it is "/" (the fixture root has no index file: 403).
    answer_then_keepalive(srv, b"GET http://example.com HTTP/1.1\r\nHost: x\r\n\r\n", 403)
    r = answer_then_keepalive(srv, b"GET http://example.com?x=1 HTTP/1.1\r\nHost: x\r\n\r\n",
                              403)
    error_then_close(srv, b"GET /one.txt HTTP/1.1\r\nHost: bad host/\r\n\r\n", 400)


def test_absolute_form_bad_authority_400(srv):
    for t in (b"ftp://h/one.txt", b"http:///one.txt", b"http://u@h/one.txt",
              b"http://h:x/one.txt", b"http://[::1/one.txt"):
        error_then_close(srv, b"GET " + t + b" HTTP/1.1\r\nHost: h\r\n\r\n", 400)


def test_absolute_form_still_needs_one_host_field(srv):
    # RFC 9112 3.2: 400 for any HTTP/1.1 request without Host or with several.
    error_then_close(srv, b"GET http://h/one.txt HTTP/1.1\r\n\r\n", 400)
    error_then_close(srv, b"GET http://h/one.txt HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n", 400)


def test_options_asterisk(srv):
    r = answer_then_keepalive(srv, b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 204)
    assert "GET" in _allow(r) and "HEAD" in _allow(r) and "OPTIONS" in _allow(r), r.headers
    assert "TRACE" not in _allow(r)


def test_asterisk_form_only_for_options_400(srv):
    for m in (b"GET", b"HEAD", b"POST", b"DELETE"):
        error_then_close(srv, m + b" * HTTP/1.1\r\nHost: x\r\n\r\n", 400,
                         method=m.decode())


def test_connect_authority_form_501(srv):
    r = error_then_close(srv, b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
                         b"\r\n", 501)
    assert "CONNECT" not in _allow(r)


def test_authority_form_without_connect_400(srv):
    error_then_close(srv, b"GET example.com:80 HTTP/1.1\r\nHost: x\r\n\r\n", 400)
    error_then_close(srv, b"OPTIONS example.com:80 HTTP/1.1\r\nHost: x\r\n\r\n", 400)


def test_fragment_or_bad_bytes_in_target_400(srv):
    for t in (b"/one.txt#frag", b"/a\tb", b"/caf\xc3\xa9", b"/a\x7fb", b"/a\x01b"):
        error_then_close(srv, b"GET " + t + b" HTTP/1.1\r\nHost: x\r\n\r\n", 400)


# ---- Host --------------------------------------------------------------------------------------

def test_host_missing_or_repeated_400(srv):
    error_then_close(srv, b"GET /one.txt HTTP/1.1\r\n\r\n", 400)
    error_then_close(srv, b"GET /one.txt HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400)
    error_then_close(srv, b"GET /one.txt HTTP/1.1\r\nHost: a\r\nhOST: b\r\n\r\n", 400)
    error_then_close(srv, b"GET /one.txt HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400)


def test_host_values(srv):
    for v in (b"example.com", b"example.com:8080", b"127.0.0.1:1", b"[::1]:80", b"[::1]",
              b"xn--bcher-kva.example", b"a_b.local", b"%41", b""):
        answer_then_keepalive(srv, b"GET /one.txt HTTP/1.1\r\nHost: " + v + b"\r\n\r\n", 200)
    for v in (b"a b", b"a/b", b"a@b", b"a:b:c", b"a:8x", b"[::1", b"::1", b"a\\b", b"a?b",
              b"a#b", b"[::1]x", b"a:80:"):
        error_then_close(srv, b"GET /one.txt HTTP/1.1\r\nHost: " + v + b"\r\n\r\n", 400)


# ---- versions ----------------------------------------------------------------------------------

def test_http10_and_http11(srv):
    with Conn(srv) as c:
        c.send(b"GET /one.txt HTTP/1.0\r\n\r\n")
        r = c.read_response()
        assert r.status == 200 and r.body == b"1"
    answer_then_keepalive(srv, b"GET /one.txt HTTP/1.1\r\nHost: x\r\n\r\n", 200)


def test_other_major_versions_505_close(srv):
    for v in (b"HTTP/2.0", b"HTTP/3.0", b"HTTP/0.9", b"HTTP/9.9", b"HTTP/2.1"):
        error_then_close(srv, b"GET /one.txt " + v + b"\r\nHost: x\r\n\r\n", 505)


def test_higher_minor_versions_answered_as_http11(srv):
    # RFC 9110 2.5: HTTP/1.2 (or 1.9) is treated as the highest 1.x we support, HTTP/1.1: an
    # HTTP/1.1 answer, and the connection stays open as HTTP/1.1's does.
    for v in (b"HTTP/1.2", b"HTTP/1.9"):
        with Conn(srv) as c:
            c.send(b"GET /one.txt " + v + b"\r\nHost: x\r\n\r\n")
            r = c.read_response()
            assert r.status == 200 and r.body == b"1", (v, r.status)
            assert r.version == "HTTP/1.1", (v, r.version)
            assert not r.has_token("Connection", "close"), (v, r.headers)
            c.send(b"GET /one.txt " + v + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
            r = c.read_response()
            assert r.status == 200 and r.has_token("Connection", "close"), (v, r.headers)
            assert c.wait_closed(5), v


def test_malformed_version_400_close(srv):
    for v in (b"HTTP/11.1", b"HTTP/1.1 ", b"HTTP/1", b"HTTP/1.", b"http/1.1", b"HTTX/1.1",
              b"HTTP/1.x", b"HTTP/ 1.1"):
        error_then_close(srv, b"GET /one.txt " + v + b"\r\nHost: x\r\n\r\n", 400)


def test_http09_request_line_400_close(srv):
    # No HTTP-version at all: an HTTP/0.9-style request is not served.
    error_then_close(srv, b"GET /one.txt\r\n\r\n", 400)


def test_http2_preface_clean_close(srv):
    # The client speaks HTTP/2 with prior knowledge; we do not, so we close quietly (FIN, no
    # HTTP/1.1 response for it to misread), even when its SETTINGS frame follows at once.
    assert closed_without_response(srv, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") == b""
    settings = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64"
    assert closed_without_response(srv, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + settings) == b""


def test_h2c_upgrade_ignored(srv):
    # An Upgrade we do not take is ignored (RFC 9110 7.8): the request is answered in HTTP/1.1.
    answer_then_keepalive(srv, b"GET /one.txt HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, "
                          b"HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__"
                          b"\r\n\r\n", 200)
    answer_then_keepalive(srv, b"GET /one.txt HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                          b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", 200)


# ---- methods -----------------------------------------------------------------------------------

@pytest.mark.parametrize("m", [b"FOO", b"get", b"BREW", b"GETT"])
def test_unknown_method_501_close(shared_srv, m):
    error_then_close(shared_srv, m + b" /one.txt HTTP/1.1\r\nHost: x\r\n\r\n", 501)


@pytest.mark.parametrize("m", ["POST", "PUT", "DELETE", "PATCH", "PROPFIND", "MKCOL", "LOCK",
                               "PURGE"])
def test_known_methods_not_allowed_405_allow_keepalive(shared_srv, m):
    r = answer_then_keepalive(shared_srv, req(m, "/one.txt", body=b"x=1"), 405, method=m)
    assert _allow(r) == ["GET", "HEAD", "OPTIONS"], (m, r.headers)


def test_trace_disabled_405(srv):
    r = answer_then_keepalive(srv, req("TRACE", "/one.txt", {"X-Secret": "s"}), 405,
                              method="TRACE")
    assert "TRACE" not in _allow(r)
    assert b"X-Secret" not in r.body


def test_404_keeps_connection(srv):
    r = answer_then_keepalive(srv, req("GET", "/missing"), 404)
    assert r.header("Content-Type", "").startswith("text/html")


def test_garbage_line_400_close(srv):
    error_then_close(srv, b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 40, 400)
    data = raw_bytes(srv, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\x00garbage\r\n\r\n")
    assert data.count(b"HTTP/1.1 ") == 2 and b"HTTP/1.1 400" in data, data[:300]
