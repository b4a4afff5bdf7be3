"""Graceful shutdown on SIGTERM."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib.server import Conn, T, req, sha256  # noqa: E402


def test_sigterm_idle_exits_0_promptly(srv):
    t0 = time.monotonic()
    srv.signal(signal.SIGTERM)
    rc = srv.wait(T(5))
    assert rc is not None, "server still running %.1fs after SIGTERM" % (time.monotonic() - t0)
    assert rc == 0, "exit status %s; stderr:\n%s" % (rc, srv.stderr[-2000:])


def test_sigterm_with_idle_keepalive_connection(srv):
    with Conn(srv) as c:
        c.send(req("GET", "/small.html"))
        r = c.read_response()
        assert r.status == 200
        t0 = time.monotonic()
        srv.signal(signal.SIGTERM)
        rc = srv.wait(T(5))
        assert rc is not None, "an idle keep-alive connection kept the server alive after SIGTERM"
        assert rc == 0, rc
        assert c.wait_closed(5), "idle connection not closed at shutdown"
        assert time.monotonic() - t0 < T(5)


def test_sigterm_during_slow_download_completes(srv):
    want = srv.files["/big.bin"]
    with Conn(srv, timeout=30, rcvbuf=16384) as c:
        c.send(req("GET", "/big.bin"))
        # read the head and some of the body
        while b"\r\n\r\n" not in c.buf or len(c.buf) < 65536:
            assert c._fill(16384), "connection closed early"
        srv.signal(signal.SIGTERM)
        got_at_signal = len(c.buf)
        # keep reading slowly
        n = 0
        while True:
            more = c._fill(16384)
            if not more:
                break
            n += 1
            if n % 16 == 0:
                time.sleep(0.02)
        data = bytes(c.buf)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:100]
    assert len(body) == len(want), "got %d of %d body bytes (%d when SIGTERM was sent)" % (
        len(body), len(want), got_at_signal)
    assert sha256(body) == sha256(want)
    rc = srv.wait(T(10))
    assert rc == 0, "exit status %s after graceful shutdown" % rc


def test_sigterm_during_pipelined_requests(srv):
    # Requests already received before SIGTERM are answered (or the connection is closed
    # cleanly between responses) -- never a truncated response.
    with Conn(srv, timeout=30, rcvbuf=16384) as c:
        c.send(req("GET", "/big.bin") + req("GET", "/small.html"))
        while len(c.buf) < 32768:
            assert c._fill(16384)
        srv.signal(signal.SIGTERM)
        r = c.read_response()
        assert r.status == 200 and sha256(r.body) == sha256(srv.files["/big.bin"])
        try:
            r2 = c.read_response()
        except Exception:
            r2 = None
        if r2 is not None:
            assert r2.status == 200 and r2.body == srv.files["/small.html"]
    assert srv.wait(T(10)) == 0

