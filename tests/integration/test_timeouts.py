"""Per-phase timeouts (timer sweep every 250 ms): request head (slowloris, counted from the
first byte, extended while the client keeps a minimum rate, up to a maximum), body (the same
from its start), keep-alive idle, and send (a client that stops reading)."""

import os
import select
import socket
import time

from lib.server import ConfServer, Conn, T, fixture_tree, req, wait_until
from lib.probe import fd_count

TICK = 0.25   # the server's timer period
SLACK = 1.0   # scheduling slack on a shared machine (scaled by T() for sanitizer builds)


def _closed(c, wait):
    """True if the server closed within `wait` s (any data it sends first is kept in c.buf)."""
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        r, _, _ = select.select([c.sock], [], [], left)
        if r:
            try:
                chunk = c.sock.recv(65536)
            except ConnectionResetError:
                return True
            if not chunk:
                return True
            c.buf += chunk


def _assert_closed_between(c, t0, lo, hi, what):
    """Wait until the server closes `c`; the close must come between t0+lo and t0+hi."""
    ok = _closed(c, max(0.0, t0 + hi - time.monotonic()))
    elapsed = time.monotonic() - t0
    assert ok, "%s: still open after %.2f s" % (what, elapsed)
    assert elapsed >= lo, "%s: closed after %.2f s, before its timeout (%.2f s)" % (
        what, elapsed, lo)
    return elapsed


def test_slowloris_head_closed_at_timeout_header_from_first_byte(tmpdir):
    srv = ConfServer(tmpdir, {"timeout_header": "1500ms"}, root=fixture_tree(tmpdir))
    with Conn(srv) as c:
        time.sleep(0.8)   # idle before the first byte does not count (nor extend the limit)
        t0 = time.monotonic()
        head = b"GET /one.txt HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
        i = 0
        while True:
            try:
                c.sock.send(head[i:i + 1])
            except OSError:
                break
            i += 1
            if _closed(c, 0.5):
                break
            assert time.monotonic() - t0 < 1.5 + TICK + T(SLACK) + 1, "slowloris never closed"
        elapsed = time.monotonic() - t0
        assert elapsed >= 1.5 - 0.05, "closed after %.2f s, before timeout_header" % elapsed
        assert elapsed <= 1.5 + TICK + T(SLACK), "closed only after %.2f s" % elapsed
        assert bytes(c.buf) == b"", "a response to an incomplete head: %r" % bytes(c.buf[:80])


def test_slow_but_complete_head_is_served(tmpdir):
    srv = ConfServer(tmpdir, {"timeout_header": "2s"}, root=fixture_tree(tmpdir))
    with Conn(srv) as c:
        c.send_slowly(req("GET", "/one.txt"), chunk=4, pause=0.02)
        r = c.read_response()
        assert r.status == 200 and r.body == b"1"


def test_header_timeout_on_keepalive_connection(tmpdir):
    # The second request's head is timed from its own first byte.
    srv = ConfServer(tmpdir, {"timeout_header": "1s", "timeout_keepalive": "10s"}, root=fixture_tree(tmpdir))
    with Conn(srv) as c:
        c.send(req("GET", "/one.txt"))
        assert c.read_response().status == 200
        time.sleep(1.2)   # idle keep-alive: longer than timeout_header, within keepalive
        t0 = time.monotonic()
        c.send(b"GET /one.txt HTTP/1.1\r\n")
        _assert_closed_between(c, t0, 1.0 - 0.05, 1.0 + TICK + T(SLACK), "second head")


def _send_paced(c, data, piece, interval):
    """Send `data` in pieces of `piece` bytes, one every `interval` s on a fixed schedule (a
    sleep stretched by a loaded machine is caught up, so the rate holds on average)."""
    start = time.monotonic()
    for i in range(0, len(data), piece):
        delay = start + (i // piece) * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        c.send(data[i:i + piece])


def test_body_trickle_closed_at_timeout_body(tmpdir):
    srv = ConfServer(tmpdir, {"timeout_body": "1s", "timeout_body_min_rate": "500"}, root=fixture_tree(tmpdir))
    with Conn(srv) as c:
        t0 = time.monotonic()   # the body's time starts when the server has read the head
        c.send(req("POST", "/one.txt", {"Content-Length": "100000"}) + b"x" * 10)
        r = c.read_response("POST")
        assert r.status == 405
        # a byte every 0.2 s earns 2 ms each: far below the minimum rate
        sent = 10
        while _closed(c, 0.2) is False:
            assert time.monotonic() - t0 < 1.0 + TICK + T(SLACK) + 1, "trickling body never cut"
            c.send(b"x")
            sent += 1
        elapsed = time.monotonic() - t0
        assert elapsed >= 1.0 - 0.05, "body cut after %.2f s, before timeout_body" % elapsed
        assert elapsed <= 1.0 + sent * 0.002 + TICK + T(SLACK), "cut only after %.2f s" % elapsed


def test_body_at_the_minimum_rate_is_not_cut(tmpdir):
    # 6,000 bytes at about 2,000 B/s take 3 s; timeout_body 1s alone would cut it, the rate of
    # 500 B/s earns a second per 500 bytes. After the body the connection serves a request.
    srv = ConfServer(tmpdir, {"timeout_body": "1s", "timeout_body_min_rate": "500"}, root=fixture_tree(tmpdir))
    with Conn(srv) as c:
        c.send(req("POST", "/one.txt", {"Content-Length": "6000"}))
        assert c.read_response("POST").status == 405
        _send_paced(c, b"y" * 6000, 500, 0.25)
        c.send(req("GET", "/one.txt"))
        r = c.read_response()
        assert r.status == 200 and r.body == b"1"


def test_head_at_the_minimum_rate_is_not_cut(tmpdir):
    # An honest client on a slow link: a 4 KiB head at about 1,000 B/s (4 s). timeout_header 1s
    # alone would cut it; every 500 bytes earn a second, up to timeout_header_max.
    srv = ConfServer(tmpdir, {"timeout_header": "1s", "timeout_header_max": "30s",
                              "timeout_header_min_rate": "500"}, root=fixture_tree(tmpdir))
    head = req("GET", "/one.txt", {"X-Pad": "p" * 4000})
    with Conn(srv) as c:
        _send_paced(c, head, 250, 0.25)
        r = c.read_response()
        assert r.status == 200 and r.body == b"1"


def test_head_extension_stops_at_timeout_header_max(tmpdir):
    # Fast enough to keep earning time, but the head never ends: cut at the maximum.
    srv = ConfServer(tmpdir, {"timeout_header": "1s", "timeout_header_max": "2s",
                              "timeout_header_min_rate": "500", "max_request_head": "64k"}, root=fixture_tree(tmpdir))
    with Conn(srv) as c:
        t0 = time.monotonic()
        c.send(b"GET /one.txt HTTP/1.1\r\nHost: x\r\nX-Long: ")
        while _closed(c, 0.1) is False:
            assert time.monotonic() - t0 < 2.0 + TICK + T(SLACK) + 1, "never cut at the maximum"
            c.send(b"z" * 200)   # ~2,000 B/s: 4 s earned per second, capped at 2 s
        elapsed = time.monotonic() - t0
        assert 2.0 - 0.05 <= elapsed <= 2.0 + TICK + T(SLACK), "cut after %.2f s" % elapsed


def test_default_head_deadline_cuts_a_trickle_at_20s(srv):
    # The defaults protect users who never read the documentation: 20 s from the first byte,
    # extended by a second per 500 bytes (a byte a second earns nothing worth having).
    head = b"GET /one.txt HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    with Conn(srv) as c:
        t0 = time.monotonic()
        i = 0
        while i == 0 or _closed(c, 1.0) is False:
            assert time.monotonic() - t0 < 40 + T(SLACK) + 1, "a trickle held its connection"
            c.send(head[i:i + 1])
            i += 1
        elapsed = time.monotonic() - t0
        assert bytes(c.buf) == b"", "a response to an incomplete head: %r" % bytes(c.buf[:80])
        assert 20 - 0.05 <= elapsed <= 20.2 + TICK + T(SLACK), "cut after %.2f s" % elapsed


def test_default_keeps_an_honest_slow_head(srv):
    # The case the default must not break: a 4 KiB head at 600 B/s (7 s).
    head = req("GET", "/one.txt", {"X-Pad": "p" * 4000})
    with Conn(srv) as c:
        _send_paced(c, head, 150, 0.25)
        r = c.read_response()
        assert r.status == 200 and r.body == b"1"


def test_keepalive_idle_timeout(tmpdir):
    srv = ConfServer(tmpdir, {"timeout_keepalive": "1s"}, root=fixture_tree(tmpdir))
    with Conn(srv) as c:
        for _ in range(3):   # activity restarts the idle timer
            t0 = time.monotonic()   # the server goes idle after answering, so after t0
            c.send(req("GET", "/one.txt"))
            assert c.read_response().status == 200
            time.sleep(0.6)
            if _ < 2:
                assert c.is_open(0.01), "closed while requests kept arriving"
        _assert_closed_between(c, t0, 1.0 - 0.05, 1.0 + TICK + T(SLACK), "idle keep-alive")


def test_send_timeout_client_stops_reading(tmpdir):
    # A client requests 50 MiB and reads nothing: once the socket buffers are full the server
    # makes no progress and closes the connection after timeout_send, without blocking a
    # thread meanwhile (another client is served while it waits).
    srv = ConfServer(tmpdir, {"timeout_send": "1s"}, root=fixture_tree(tmpdir))
    size = 50 * 1024 * 1024
    with open(os.path.join(srv.tree.root, "huge.bin"), "wb") as f:
        f.truncate(size)
    pid = srv.proc.pid
    with Conn(srv) as warm:  # the open-file cache keeps a served large file open: warm it first
        for method, path in (("HEAD", "/huge.bin"), ("GET", "/one.txt")):
            warm.send(req(method, path))
            warm.read_response(method)
    # let the warm-up connection's close land before taking the baseline
    counts = [fd_count(pid)]

    def steady():   # the same count 0.1 s apart
        time.sleep(0.1)
        counts.append(fd_count(pid))
        return counts[-1] == counts[-2]
    wait_until(steady, 3, step=0)
    base = counts[-1]
    c = Conn(srv, rcvbuf=4096)
    try:
        c.send(req("GET", "/huge.bin"))
        t0 = time.monotonic()
        assert wait_until(lambda: fd_count(pid) > base, 2)   # socket + file open
        with Conn(srv) as other:
            other.send(req("GET", "/one.txt"))
            assert other.read_response().status == 200
        assert wait_until(lambda: fd_count(pid) <= base, 1.0 + TICK + T(SLACK) + 1), \
            "the stalled response was not abandoned"
        elapsed = time.monotonic() - t0
        assert elapsed >= 1.0 - 0.05, "gave up after %.2f s" % elapsed
        # what the client can still read is a truncated response, then the end
        got = 0
        c.sock.settimeout(T(5))
        try:
            while True:
                chunk = c.sock.recv(1 << 20)
                if not chunk:
                    break
                got += len(chunk)
        except (ConnectionResetError, socket.timeout):
            pass
        assert got < size, "the whole file arrived: the connection was not closed"
    finally:
        c.close()
