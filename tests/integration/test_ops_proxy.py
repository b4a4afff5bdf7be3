"""The real client address: X-Forwarded-For / Forwarded from trusted proxies only, and the
PROXY protocol (v1 and v2) on listeners configured for it. Checked in the access log."""

import os
import socket
import struct
import time

from lib.server import Conn, T, get, raw, req
from lib.ops import logged_server, parse_clf, parse_json_line


def _client_of(s, log, headers, n_before):
    """Send one request with `headers` (a list of pairs); return the logged client address."""
    r = raw(s, req("GET", "/one.txt", headers))
    assert r.status == 200, r
    lines = log.wait_lines(n_before + 1)
    return parse_clf(lines[n_before])["addr"]


# ---- X-Forwarded-For / Forwarded ---------------------------------------------------------------

def test_xff_from_trusted_peer(tmpdir):
    s, log = logged_server(tmpdir, "trusted_proxies 127.0.0.0/8 10.0.0.0/8 2001:db8:ffff::/48\n")
    cases = [
        ([("X-Forwarded-For", "203.0.113.9")], "203.0.113.9"),
        # rightmost untrusted: the proxies' own addresses are skipped, the spoofable left
        # part is ignored
        ([("X-Forwarded-For", "6.6.6.6, 203.0.113.9, 10.1.2.3")], "203.0.113.9"),
        ([("X-Forwarded-For", "1.1.1.1,2.2.2.2,10.0.0.1,10.0.0.2")], "2.2.2.2"),
        ([("X-Forwarded-For", "  198.51.100.7 ,10.9.9.9  ")], "198.51.100.7"),
        ([("X-Forwarded-For", "6.6.6.6, 2001:db8::42")], "2001:db8::42"),
        ([("X-Forwarded-For", "6.6.6.6, 2001:db8::42, 2001:db8:ffff::1")], "2001:db8::42"),
        # every hop trusted: the leftmost one
        ([("X-Forwarded-For", "10.0.0.7, 10.0.0.8")], "10.0.0.7"),
        # no header: the peer
        ([], "127.0.0.1"),
    ]
    for i, (headers, want) in enumerate(cases):
        got = _client_of(s, log, headers, i)
        assert got == want, (headers, got, want)


def test_xff_spoofed_values_ignored(tmpdir):
    s, log = logged_server(tmpdir, "trusted_proxies 127.0.0.1\n")
    # garbage in the header never becomes the client address
    cases = [
        ([("X-Forwarded-For", "not-an-address")], "127.0.0.1"),
        ([("X-Forwarded-For", "")], "127.0.0.1"),
        ([("X-Forwarded-For", "999.1.1.1")], "127.0.0.1"),
        ([("X-Forwarded-For", "203.0.113.9, <script>")], "127.0.0.1"),
    ]
    for i, (headers, want) in enumerate(cases):
        got = _client_of(s, log, headers, i)
        assert got == want, (headers, got, want)


def test_xff_several_header_lines(tmpdir):
    # A proxy may append its own X-Forwarded-For line instead of extending the client's (as
    # HAProxy's `option forwardfor` does): the lines form one list (RFC 9110 5.3), so the
    # last line's rightmost untrusted entry is the client, never the client-sent first line.
    s, log = logged_server(tmpdir, "trusted_proxies 127.0.0.1\n")
    got = _client_of(s, log, [("X-Forwarded-For", "6.6.6.6"),
                              ("X-Forwarded-For", "203.0.113.9")], 0)
    assert got == "203.0.113.9", "spoofed first X-Forwarded-For line used: %s" % got


def test_forwarded_for_forms(tmpdir):
    s, log = logged_server(tmpdir,
                           "trusted_proxies 127.0.0.1 10.0.0.0/8\nreal_ip_header Forwarded\n")
    cases = [
        ("for=192.0.2.60", "192.0.2.60"),
        ('for="192.0.2.60:4711"', "192.0.2.60"),
        ('For="[2001:db8:cafe::17]:4711"', "2001:db8:cafe::17"),
        ('for="[2001:db8:cafe::17]"', "2001:db8:cafe::17"),
        ("for=192.0.2.43;proto=https;by=203.0.113.43", "192.0.2.43"),
        ("proto=http; for=192.0.2.44", "192.0.2.44"),
        ("for=6.6.6.6, for=198.51.100.17;proto=https, for=10.0.0.3", "198.51.100.17"),
        ("for=6.6.6.6,for=198.51.100.18", "198.51.100.18"),
    ]
    for i, (value, want) in enumerate(cases):
        got = _client_of(s, log, [("Forwarded", value)], i)
        assert got == want, (value, got, want)


def test_forwarded_ignored_unless_configured(tmpdir):
    # Behind a proxy that only appends X-Forwarded-For, a client-sent Forwarded header must
    # not be believed: by default only X-Forwarded-For is (and vice versa when configured).
    s, log = logged_server(tmpdir, "trusted_proxies 127.0.0.1\n")
    got = _client_of(s, log, [("Forwarded", "for=1.2.3.4"), ("X-Forwarded-For", "203.0.113.5")], 0)
    assert got == "203.0.113.5", got
    got = _client_of(s, log, [("Forwarded", "for=1.2.3.4")], 1)
    assert got == "127.0.0.1", got
    sub = os.path.join(tmpdir, "second")
    os.makedirs(sub)
    s2, log2 = logged_server(sub, "trusted_proxies 127.0.0.1\nreal_ip_header Forwarded\n")
    got = _client_of(s2, log2, [("Forwarded", "for=1.2.3.4"), ("X-Forwarded-For", "6.6.6.6")], 0)
    assert got == "1.2.3.4", got


def test_forwarded_obfuscated_or_unknown(tmpdir):
    # for=unknown / for=_hidden do not name an address: the client address is not invented
    # from them (the nearest known hop or the peer is used).
    s, log = logged_server(tmpdir, "trusted_proxies 127.0.0.1\nreal_ip_header Forwarded\n")
    for i, value in enumerate(["for=unknown", 'for="_hidden"', "for=", "by=1.2.3.4"]):
        got = _client_of(s, log, [("Forwarded", value)], i)
        assert got == "127.0.0.1", (value, got)


def test_untrusted_peer_headers_ignored(tmpdir):
    s, log = logged_server(tmpdir, "trusted_proxies 10.0.0.0/8 192.168.0.1\n")
    for i, headers in enumerate([[("X-Forwarded-For", "203.0.113.9")],
                                 [("Forwarded", "for=203.0.113.9")],
                                 [("X-Forwarded-For", "10.0.0.1")]]):
        assert _client_of(s, log, headers, i) == "127.0.0.1", headers


def test_no_trusted_proxies_headers_ignored(tmpdir):
    s, log = logged_server(tmpdir, "")
    assert _client_of(s, log, [("X-Forwarded-For", "203.0.113.9")], 0) == "127.0.0.1"
    assert _client_of(s, log, [("Forwarded", "for=203.0.113.9")], 1) == "127.0.0.1"


def test_real_client_in_json_log(tmpdir):
    s, log = logged_server(tmpdir, "trusted_proxies 127.0.0.1\n", fmt="json")
    assert get(s, "/one.txt", headers={"X-Forwarded-For": "6.6.6.6, 203.0.113.77"}).status == 200
    o = parse_json_line(log.wait_lines(1)[0])
    assert o["remote_addr"] == "203.0.113.77", o


# ---- PROXY protocol -----------------------------------------------------------------------------

V2_SIG = b"\r\n\r\n\x00\r\nQUIT\n"


def v2_header(src, dst, sport, dport, tlvs=b"", command=1):
    if ":" in src:
        fam, addrs = 0x21, socket.inet_pton(socket.AF_INET6, src) + \
            socket.inet_pton(socket.AF_INET6, dst)
    else:
        fam, addrs = 0x11, socket.inet_pton(socket.AF_INET, src) + \
            socket.inet_pton(socket.AF_INET, dst)
    body = addrs + struct.pack("!HH", sport, dport) + tlvs
    return V2_SIG + bytes([0x20 | command, fam]) + struct.pack("!H", len(body)) + body


def _pp(tmpdir, extra="", json_log=False):
    """Two listeners from the file: [0] with proxy_protocol, [1] plain."""
    s, log = logged_server(tmpdir, "listen 127.0.0.1:0 proxy_protocol\nlisten 127.0.0.1:0\n" + extra,
                           listen=(), expect_listeners=2)
    return s, log


def _via_proxy(s, header, n_before, log, request=None, chunks=None):
    with Conn(s.addr(0)) as c:
        data = header + (request or req("GET", "/one.txt"))
        if chunks:
            pos = 0
            for n in chunks:
                c.send(data[pos:pos + n])
                pos += n
                time.sleep(0.05)
            c.send(data[pos:])
        else:
            c.send(data)
        r = c.read_response()
    assert r.status == 200 and r.body == b"1", r
    return parse_clf(log.wait_lines(n_before + 1)[n_before])["addr"]


def test_proxy_v1(tmpdir):
    s, log = _pp(tmpdir)
    assert _via_proxy(s, b"PROXY TCP4 203.0.113.7 127.0.0.1 51234 80\r\n", 0, log) == "203.0.113.7"
    assert _via_proxy(s, b"PROXY TCP6 2001:db8::7 ::1 51234 443\r\n", 1, log) == "2001:db8::7"
    # UNKNOWN: the connection's own address is kept
    assert _via_proxy(s, b"PROXY UNKNOWN\r\n", 2, log) == "127.0.0.1"
    assert _via_proxy(s, b"PROXY UNKNOWN ffff:f::1 ffff:f::2 1 2\r\n", 3, log) == "127.0.0.1"


def test_proxy_v2(tmpdir):
    s, log = _pp(tmpdir)
    # TCP over IPv4 with a TLV (PP2_TYPE_AUTHORITY "example.test") and a NOOP TLV
    tlvs = b"\x02" + struct.pack("!H", 12) + b"example.test" + b"\x04\x00\x03abc"
    h = v2_header("198.51.100.20", "127.0.0.1", 40000, 80, tlvs)
    assert _via_proxy(s, h, 0, log) == "198.51.100.20"
    h = v2_header("2001:db8::20", "::1", 40000, 80)
    assert _via_proxy(s, h, 1, log) == "2001:db8::20"
    # LOCAL (a health check by the proxy itself): the connection's address
    h = v2_header("198.51.100.21", "127.0.0.1", 1, 2, command=0)
    assert _via_proxy(s, h, 2, log) == "127.0.0.1"
    # UNSPEC family, no addresses
    h = V2_SIG + b"\x21\x00\x00\x00"
    assert _via_proxy(s, h, 3, log) == "127.0.0.1"


def test_proxy_header_split_across_sends(tmpdir):
    s, log = _pp(tmpdir)
    h1 = b"PROXY TCP4 203.0.113.8 127.0.0.1 51234 80\r\n"
    assert _via_proxy(s, h1, 0, log, chunks=[1, 5, 10, 20]) == "203.0.113.8"
    assert _via_proxy(s, h1, 1, log, chunks=[len(h1) - 1]) == "203.0.113.8"   # CR | LF
    h2 = v2_header("198.51.100.30", "127.0.0.1", 40000, 80, b"\x04\x00\x05hello")
    assert _via_proxy(s, h2, 2, log, chunks=[3, 9, 2, 2, 5]) == "198.51.100.30"
    assert _via_proxy(s, h2, 3, log, chunks=[len(h2)]) == "198.51.100.30"  # request separate


def test_proxy_keepalive_keeps_address_and_header_only_once(tmpdir):
    s, log = _pp(tmpdir)
    with Conn(s.addr(0)) as c:
        c.send(b"PROXY TCP4 203.0.113.9 127.0.0.1 5000 80\r\n" + req("GET", "/one.txt"))
        assert c.read_response().status == 200
        c.send(req("GET", "/small.html"))
        assert c.read_response().status == 200
        # A second PROXY line is not a header any more: it is a bad request.
        c.send(b"PROXY TCP4 6.6.6.6 127.0.0.1 5000 80\r\n" + req("GET", "/one.txt"))
        try:
            r = c.read_response()
            assert r.status >= 400, r
        except Exception:
            pass
    lines = log.wait_lines(2, settle=0.1)
    assert [parse_clf(l)["addr"] for l in lines[:2]] == ["203.0.113.9"] * 2, lines
    assert "6.6.6.6" not in "".join(lines)


def _closed_without_response(addr, data, timeout=5):
    with Conn(addr, timeout=timeout) as c:
        try:
            c.send(data)
        except (BrokenPipeError, ConnectionResetError):
            return True
        c.sock.settimeout(T(timeout))
        got = b""
        try:
            while True:
                chunk = c.sock.recv(65536)
                if not chunk:
                    break
                got += chunk
        except ConnectionResetError:
            pass
        except socket.timeout:
            raise AssertionError("connection still open after %ss" % T(timeout))
        assert got == b"", "a response was sent: %r" % got[:200]
    return True


def test_proxy_listener_without_header_closes(tmpdir):
    s, log = _pp(tmpdir)
    _closed_without_response(s.addr(0), req("GET", "/one.txt"))
    _closed_without_response(s.addr(0), b"PROXY TCP4 nonsense\r\n" + req("GET", "/one.txt"))
    _closed_without_response(s.addr(0), b"PROXY TCP4 203.0.113.1 127.0.0.1 99999 80\r\n")
    _closed_without_response(s.addr(0), b"PROXY TCP4 2001:db8::1 127.0.0.1 1 80\r\n")
    _closed_without_response(s.addr(0), b"PROXY TCP4 " + b"1" * 120 + b"\r\n")   # > 107 bytes
    _closed_without_response(s.addr(0), b"PROXY TCP4 203.0.113.1 127.0.0.1 1 80\n")  # bare LF
    _closed_without_response(s.addr(0), V2_SIG + b"\x31\x11\x00\x0c" + b"\x00" * 12)  # version 3
    _closed_without_response(s.addr(0), V2_SIG + b"\x21\x11\x00\x04" + b"\x00" * 4)   # short
    # the server is fine afterwards, and nothing was logged for these connections
    assert _via_proxy(s, b"PROXY TCP4 203.0.113.2 127.0.0.1 1 80\r\n", 0, log) == "203.0.113.2"
    time.sleep(0.1)
    assert len(log.lines()) == 1, log.lines()


def test_plain_listener_beside_proxy_listener(tmpdir):
    s, log = _pp(tmpdir)
    r = get(s.addr(1), "/one.txt")
    assert r.status == 200 and r.body == b"1"
    assert parse_clf(log.wait_lines(1)[0])["addr"] == "127.0.0.1"
    # A PROXY header on the plain listener is not honoured: a bad request, never an address.
    with Conn(s.addr(1)) as c:
        c.send(b"PROXY TCP4 203.0.113.3 127.0.0.1 1 80\r\n" + req("GET", "/one.txt"))
        r = c.read_response()
    assert r.status == 400 or r.status == 501, r
    lines = log.wait_lines(2)
    assert "203.0.113.3" not in "".join(lines)


def test_proxy_protocol_with_trusted_proxies(tmpdir):
    # The address from the PROXY header is the peer that trusted_proxies is checked against.
    s, log = _pp(tmpdir, "trusted_proxies 10.0.0.0/8\n")
    h = b"PROXY TCP4 10.1.1.1 127.0.0.1 1 80\r\n"
    got = _via_proxy(s, h, 0, log, request=req("GET", "/one.txt",
                                               {"X-Forwarded-For": "6.6.6.6, 203.0.113.50"}))
    assert got == "203.0.113.50", got
    h = b"PROXY TCP4 198.51.100.1 127.0.0.1 1 80\r\n"
    got = _via_proxy(s, h, 1, log, request=req("GET", "/one.txt",
                                               {"X-Forwarded-For": "203.0.113.51"}))
    assert got == "198.51.100.1", got


def test_proxy_listener_timeout_without_data(tmpdir):
    # A connection that never sends its header is closed by timeout_header, like any other.
    s, log = _pp(tmpdir, "timeout_header 1s\n")
    with Conn(s.addr(0), timeout=10) as c:
        c.send(b"PROXY TCP4 203.0.1")
        assert c.wait_closed(T(1) + 3), "incomplete PROXY header kept the connection open"
