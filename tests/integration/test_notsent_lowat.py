"""tcp_notsent_lowat: how many unsent bytes a connection's socket may hold while it sends a file.

Promised: by default (256k) a large file waits in the page cache, not in the kernel: while a
client does not read, the server's socket holds at most about 256 KiB it has not sent yet,
instead of the megabytes the kernel's buffer autotuning would let it queue; the directive sets
another bound or gives the socket back to the system's setting (`off`), and a reload changes it
for the responses that follow. A streamed response (CGI) is not held to it: a client that sends
a whole body before it reads the script's echo of it must not be left waiting on the script
while the script waits on the client.

The unsent bytes are read as the kernel reports them (`ss -tni`: notsent) for the server's side
of a connection whose client reads nothing. They stop changing once the server has written all
the socket takes (the wait is bounded from the request's last byte)."""

import os
import re
import signal
import socket
import subprocess
import time

from lib.ops import T, run_lfhttpd, write_file
from lib.procs import write_script
from lib.server import ConfServer, Conn, fixture_tree, req, wait_until

BIG = 16 * 1024 * 1024
SLACK = 256 * 1024  # what one write may add past the bound (the kernel checks it per segment)


def _start(tmpdir, extra):
    tree = fixture_tree(tmpdir)
    write_file(os.path.join(tree.root, "big.bin"), b"\0" * BIG)
    s = ConfServer(tmpdir, "root %s\n%s" % (tree.root, extra))
    s.tree = tree
    return s


def _notsent(server_port, client_port):
    """The unsent bytes of the server's side of the connection to client_port (0 if none)."""
    out = subprocess.run(["ss", "-tni", "state", "established", "sport", "= :%d" % server_port,
                          "dport", "= :%d" % client_port],
                         capture_output=True, text=True, check=True).stdout
    assert ":%d" % client_port in out, out
    m = re.search(r"\bnotsent:(\d+)", out)
    return int(m.group(1)) if m else 0


def _stalled_notsent(s):
    """Ask for the big file on a connection that never reads; the server's unsent bytes once
    they stop changing (three equal readings 100 ms apart, within 10 s of the request)."""
    host, port = s.addr()
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    c.connect((host, port))
    try:
        c.sendall(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        deadline = time.monotonic() + T(10)
        seen = []
        while True:
            seen.append(_notsent(port, c.getsockname()[1]))
            if len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3] and seen[-1] > 0:
                return seen[-1]
            assert time.monotonic() < deadline, "unsent bytes never settled: %s" % seen[-10:]
            time.sleep(0.1)
    finally:
        c.close()


def test_default_keeps_about_256k_unsent(tmpdir):
    s = _start(tmpdir, "")
    n = _stalled_notsent(s)
    assert n <= 256 * 1024 + SLACK, n
    assert s.stop() == 0


def test_off_leaves_the_kernel_to_queue_megabytes(tmpdir):
    """The control: without the bound the same client leaves far more unsent (autotuning)."""
    s = _start(tmpdir, "tcp_notsent_lowat off\n")
    n = _stalled_notsent(s)
    assert n > 1024 * 1024, n
    assert s.stop() == 0


def test_a_larger_bound_and_a_reload(tmpdir):
    """1m: more than the default, at most the bound; a reload to 64k applies to the next
    connection."""
    s = _start(tmpdir, "tcp_notsent_lowat 1m\n")
    n = _stalled_notsent(s)
    assert 256 * 1024 + SLACK < n <= 1024 * 1024 + SLACK, n
    write_file(s.conf_path, "root %s\ntcp_notsent_lowat 64k\n" % s.tree.root)
    s.signal(signal.SIGHUP)
    wait_until(lambda: "configuration reloaded" in s.stderr, what="the reload notice")
    n = _stalled_notsent(s)
    assert n <= 64 * 1024 + SLACK, n
    assert s.stop() == 0


def test_a_script_echoing_a_large_body_to_a_client_that_sends_it_all_first(tmpdir):
    """768 KiB through `cat`: the client reads nothing until it has sent the whole body, so the
    echo must wait in the server's socket (far more than 256 KiB of it) meanwhile."""
    tree = fixture_tree(tmpdir)
    write_script(os.path.join(tree.root, "cgi-bin"), "echo",
                 "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\n\\n'\nexec cat\n")
    s = ConfServer(tmpdir, "root %s\nlocation /cgi-bin/ {\n    handler cgi\n}\n" % tree.root)
    body = bytes(range(256)) * 3072
    with Conn(s, timeout=20) as c:
        c.send(req("POST", "/cgi-bin/echo", headers=[("Content-Length", str(len(body)))])
               + body)
        r = c.read_response()
    assert r.status == 200 and r.body == body, (r.status, len(r.body))
    assert s.stop() == 0


def test_bad_values_name_the_line(tmpdir):
    for bad in ("tcp_notsent_lowat 1k", "tcp_notsent_lowat 1g", "tcp_notsent_lowat lots",
                "tcp_notsent_lowat"):
        conf = write_file(os.path.join(tmpdir, "bad.conf"), "root /tmp\n%s\n" % bad)
        rc, _, err = run_lfhttpd(["-t", "--config", conf])
        assert rc != 0, bad
        assert "%s:2:" % conf in err and "tcp_notsent_lowat" in err, (bad, err)
