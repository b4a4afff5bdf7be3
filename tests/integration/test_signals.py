"""SIGTERM and SIGINT: graceful shutdown. Idle and keep-alive connections do not hold the
server; a download and pipelined requests under way complete; the drain deadline
(drain_timeout) closes a stalled client; no new connection is accepted while draining."""

import os
import signal
import socket
import time

from lib.server import ConfServer, Conn, T, req, sha256
from lib.ops import write_file

HUGE = 512 * 1024 * 1024      # sparse: far more than any socket buffers hold


def _start(tmpdir, drain):
    root = os.path.join(tmpdir, "root")
    write_file(os.path.join(root, "small.txt"), "small\n")
    with open(os.path.join(root, "huge.bin"), "wb") as f:
        f.truncate(HUGE)
    return ConfServer(tmpdir, "root %s\ndrain_timeout %s\n" % (root, drain))


def _stalled_download(s):
    """A client that starts a huge download, then stops reading."""
    c = Conn(s, timeout=30, rcvbuf=4096)
    c.send(req("GET", "/huge.bin"))
    while b"\r\n\r\n" not in c.buf:
        assert c._fill(4096), "closed before the response head"
    assert c.buf.startswith(b"HTTP/1.1 200"), bytes(c.buf[:100])
    time.sleep(0.3)      # let the server fill the socket buffers and wait for EPOLLOUT
    return c


def _drain_all(c, limit=HUGE):
    """Read until EOF; returns the number of bytes received (bounded by time)."""
    n = len(c.buf)
    c.sock.settimeout(T(10))
    try:
        while True:
            chunk = c.sock.recv(1 << 20)
            if not chunk:
                break
            n += len(chunk)
            if n > limit:
                break
    except (ConnectionResetError, socket.timeout):
        pass
    return n


def test_drain_deadline_closes_stalled_client(tmpdir):
    s = _start(tmpdir, "2s")
    c = _stalled_download(s)
    t0 = time.monotonic()
    s.signal(signal.SIGTERM)
    time.sleep(1.0)
    assert s.alive(), "exited %.1fs after SIGTERM, before drain_timeout (2s), with a response " \
                      "in flight" % (time.monotonic() - t0)
    rc = s.wait(T(2) + 3)
    took = time.monotonic() - t0
    assert rc is not None, "still running %.1fs after SIGTERM with drain_timeout 2s" % took
    assert rc == 0, "exit status %s" % rc
    assert took >= 1.9, "exited after %.2fs, before the 2s deadline" % took
    got = _drain_all(c)
    assert got < HUGE, "the stalled response was not cut at the deadline"
    c.sock.close()


def test_drain_timeout_zero_exits_at_once(tmpdir):
    s = _start(tmpdir, "0")
    c = _stalled_download(s)
    t0 = time.monotonic()
    s.signal(signal.SIGTERM)
    rc = s.wait(T(2) + 1)
    assert rc == 0, (rc, time.monotonic() - t0)
    c.sock.close()


def test_drain_waits_for_slow_reader_within_deadline(tmpdir):
    # A slow reader that finishes before the deadline gets the whole response.
    root = os.path.join(tmpdir, "root")
    size = 8 * 1024 * 1024
    write_file(os.path.join(root, "mid.bin"), bytes(range(256)) * (size // 256))
    s = ConfServer(tmpdir, "root %s\ndrain_timeout 20s\n" % root)
    c = Conn(s, timeout=30, rcvbuf=8192)
    c.send(req("GET", "/mid.bin"))
    while len(c.buf) < 100000:
        assert c._fill(8192)
    s.signal(signal.SIGTERM)
    time.sleep(0.5)       # stalled for a while
    r = c.read_response()
    assert r.status == 200 and len(r.body) == size and r.body == bytes(range(256)) * (size // 256)
    c.sock.close()
    assert s.wait(T(10)) == 0


def test_sigint_drains_like_sigterm(tmpdir):
    s = _start(tmpdir, "30s")
    with Conn(s) as c:
        c.send(req("GET", "/small.txt"))
        assert c.read_response().status == 200
        s.signal(signal.SIGINT)
        assert s.wait(T(5)) == 0
        assert c.wait_closed(5)
    assert "SIGINT" in s.stderr, s.stderr


def test_no_new_connections_while_draining(tmpdir):
    s = _start(tmpdir, "3s")
    c = _stalled_download(s)
    s.signal(signal.SIGTERM)
    time.sleep(0.3)
    assert s.alive()
    # New connections are refused (or closed without an answer) while the drain goes on.
    answered = False
    try:
        with Conn(s, timeout=3) as n:
            n.send(req("GET", "/small.txt"))
            try:
                n.read_response()
                answered = True
            except Exception:
                pass
    except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError, socket.timeout):
        pass
    assert not answered, "a new connection was served during the drain"
    assert s.wait(T(3) + 3) == 0
    c.sock.close()


# ---- shutdown with the fixture server -------------------------------------------------------

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

