"""Helpers for the strict-HTTP, limits, timeouts and hostile-client tests.

  error_then_close(srv, data, status)
        send raw bytes on a fresh connection; assert one response with `status` and
        `Connection: close`, then that the server closes the connection.
  answer_then_keepalive(srv, data, status)
        the same, but the connection must stay usable: a following GET /one.txt is answered.
  cpu_seconds(pid), fd_count(pid)
        /proc readings of the server process.
"""

import os
import time

from lib.server import Conn, ConnectionClosed, T, req


def _status_line(data):
    return data.split(b"\r\n", 1)[0]


def error_then_close(srv, data, status, method="GET", timeout=10):
    """One response with `status` and Connection: close, then the server closes."""
    with Conn(srv, timeout) as c:
        try:
            c.send(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        r = c.read_response(method)
        assert r.status == status, "sent %r: got %r, want %d" % (data[:120], r, status)
        assert r.has_token("Connection", "close"), \
            "sent %r: %d without Connection: close: %r" % (data[:120], status, r.headers)
        assert c.wait_closed(5), "sent %r: server kept the connection open" % data[:120]
        return r


def answer_then_keepalive(srv, data, status, method="GET", timeout=10):
    """One response with `status`, no Connection: close, and the connection still works."""
    with Conn(srv, timeout) as c:
        c.send(data)
        r = c.read_response(method)
        assert r.status == status, "sent %r: got %r, want %d" % (data[:120], r, status)
        assert not r.has_token("Connection", "close"), \
            "sent %r: %d closed the connection: %r" % (data[:120], status, r.headers)
        c.send(req("GET", "/one.txt"))
        try:
            r2 = c.read_response()
        except ConnectionClosed:
            raise AssertionError("sent %r: connection closed after %d" % (data[:120], status))
        assert r2.status == 200 and r2.body == b"1", (data[:120], r2)
        return r


def closed_without_response(srv, data, timeout=5):
    """The server closes the connection cleanly (FIN, not a reset) and sends nothing."""
    with Conn(srv, timeout) as c:
        c.send(data)
        got = bytearray()
        deadline = time.monotonic() + T(timeout)
        while time.monotonic() < deadline:
            chunk = c.sock.recv(65536)   # a reset raises ConnectionResetError: not clean
            if not chunk:
                return bytes(got)
            got += chunk
        raise AssertionError("server neither answered nor closed; got %r" % bytes(got[:100]))


def _stat_fields(pid):
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    return s[s.rindex(")") + 2:].split()


def cpu_seconds(pid):
    """User + system CPU time of the process so far, in seconds."""
    f = _stat_fields(pid)
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))
