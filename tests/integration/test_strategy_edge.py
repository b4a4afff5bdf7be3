"""leader-followers-edge: the Leader/Followers pool with edge-triggered handles and an ownership
word in place of EPOLLONESHOT. The whole suite can run under it too (`make test
CONCURRENCY=leader-followers-edge`, under ThreadSanitizer in .ci/run);
these tests aim at what is new: no
epoll_ctl for a keep-alive request, events that come while a handle is owned ("more"), input
left in the socket after a read that filled the buffer, interest changes (a request that comes
while a response is being written), the send budget, and the sweep and the drain. Every server
here is started with the strategy explicitly (it overrides the suite's --concurrency)."""

import os
import re
import signal
import socket
import subprocess
import threading
import time

from lib.ops import run_lfhttpd, write_file
from lib.procs import status_json
from lib.static import make_root
from lib.server import ConfServer, Conn, Server, T, get, req, wait_until

EDGE = "leader-followers-edge"
BIG = 16 * 1024 * 1024   # > the 4 MiB send budget of one event


def _root(tmpdir):
    return make_root(os.path.join(tmpdir, "root"),
                     {"small.txt": b"small\n", "big.bin": bytes(range(256)) * (BIG // 256)},
                     mtime=None)


def _edge(tmpdir, threads=2, conf_lines=()):
    root = _root(tmpdir)
    if conf_lines:
        return ConfServer(tmpdir, "root %s\n%s\n" % (root, "\n".join(conf_lines)),
                          threads=threads, args=["--concurrency", EDGE])
    return Server(root=root, threads=threads, args=["--concurrency", EDGE])


def test_edge_is_accepted_and_named(tmpdir):
    root = _root(tmpdir)
    rc, _, err = run_lfhttpd(["-t", "--concurrency", EDGE, "--root", root])
    assert rc == 0, err
    conf = write_file(os.path.join(tmpdir, "c.conf"), "concurrency %s\n" % EDGE)
    rc, _, err = run_lfhttpd(["-t", "-c", conf, "--root", root])
    assert rc == 0, err
    srv = Server(root=root, threads=3, args=["--concurrency", EDGE])
    wait_until(lambda: "(%s;" % EDGE in srv.stderr, what="the start-up line naming it")
    assert get(srv, "/small.txt").body == b"small\n"
    st = status_json(srv)
    assert st["pool"]["concurrency"] == EDGE and st["pool"]["threads"] == 3
    metrics = get(srv, "/metrics").body.decode()
    assert 'lfhttpd_concurrency_info{concurrency="%s"} 1' % EDGE in metrics
    assert _epoll_instances(srv.proc.pid) == 1   # one shared handle set, as leader-followers


def _epoll_instances(pid):
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[eventpoll]"
        except OSError:
            pass   # closed meanwhile
    return n


def _epoll_ctl_during(srv, n):
    """epoll_ctl calls the server makes while one open connection sends `n` keep-alive
    requests, one after the other (strace attached to every thread first)."""
    with Conn(srv) as c:
        c.send(req("GET", "/small.txt"))
        assert c.read_response().status == 200
        threads = len(os.listdir("/proc/%d/task" % srv.proc.pid))
        tracer = subprocess.Popen(["strace", "-f", "-e", "trace=epoll_ctl", "-p",
                                   str(srv.proc.pid)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
        seen, buf = 0, b""
        deadline = time.monotonic() + T(20)
        while seen < threads and time.monotonic() < deadline:
            line = tracer.stderr.readline()
            buf += line
            m = re.search(rb"attached with (\d+) threads", line)
            seen += int(m.group(1)) if m else b"attached" in line
        assert seen >= threads, buf[:300]
        for _ in range(n):
            c.send(req("GET", "/small.txt"))
            r = c.read_response()
            assert r.status == 200 and r.body == b"small\n"
        tracer.send_signal(signal.SIGINT)
        out = tracer.communicate(timeout=T(20))[1]
    return len(re.findall(rb"epoll_ctl\(", out))


def test_keepalive_requests_make_no_epoll_ctl(tmpdir):
    root = _root(tmpdir)
    n = 100
    # The measurement is real: with EPOLLONESHOT every request re-arms its handle (the last
    # re-arm may come after the client has its response and the tracer has gone).
    oneshot = Server(root=root, threads=2, args=["--concurrency", "leader-followers"])
    assert _epoll_ctl_during(oneshot, n) >= n - 1
    oneshot.stop()
    edge = Server(root=root, threads=2, args=["--concurrency", EDGE])
    assert _epoll_ctl_during(edge, n) == 0


def test_pipelined_requests_larger_than_the_read_buffer(tmpdir):
    srv = _edge(tmpdir)
    n = 6000   # about 240 KiB of requests: several reads that fill the 64 KiB buffer
    batch = b"".join(req("GET", "/small.txt") for _ in range(n))
    assert len(batch) > 3 * 64 * 1024
    with Conn(srv, timeout=T(30)) as c:
        sender = threading.Thread(target=c.send, args=(batch,))
        sender.start()
        for _ in range(n):
            r = c.read_response()
            assert r.status == 200 and r.body == b"small\n"
        sender.join()
        c.send(req("GET", "/small.txt"))
        assert c.read_response().body == b"small\n"


def test_next_request_sent_while_a_response_is_being_written(tmpdir):
    srv = _edge(tmpdir)
    with Conn(srv, timeout=T(30), rcvbuf=64 * 1024) as c:
        c.send(req("GET", "/big.bin"))
        # The server fills the socket and waits to write (EPOLLOUT); the next request comes
        # meanwhile, while its handle does not wait for input.
        head = c.sock.recv(1024)
        assert head.startswith(b"HTTP/1.1 200 "), head
        c.send(req("GET", "/small.txt"))
        c.buf[0:0] = head
        r = c.read_response()
        assert r.status == 200 and len(r.body) == BIG
        assert r.body[:512] == bytes(range(256)) * 2
        r = c.read_response()
        assert r.status == 200 and r.body == b"small\n"


def test_a_file_larger_than_the_send_budget_with_a_fast_reader(tmpdir):
    srv = _edge(tmpdir)
    with Conn(srv, timeout=T(30)) as c:
        for _ in range(3):
            c.send(req("GET", "/big.bin"))
            r = c.read_response()
            assert r.status == 200 and len(r.body) == BIG


def test_burst_of_small_requests_on_many_connections_batch_64(tmpdir):
    """Handles that become ready while their owner still runs them: their events are the
    owner's "more". A lost one leaves a client waiting for its response."""
    srv = _edge(tmpdir, threads=2, conf_lines=["leader_batch 64"])
    conns, rounds, depth = 40, 25, 3
    errors = []

    def client():
        try:
            with Conn(srv, timeout=T(20)) as c:
                for _ in range(rounds):
                    # a few pipelined at once, the next only once they are answered
                    c.send(b"".join(req("GET", "/small.txt") for _ in range(depth)))
                    for _ in range(depth):
                        r = c.read_response()
                        assert r.status == 200 and r.body == b"small\n"
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(repr(e))

    ts = [threading.Thread(target=client) for _ in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(T(120))
    assert not any(t.is_alive() for t in ts), "clients still waiting"
    assert not errors, errors[:3]
    assert status_json(srv)["requests"] >= conns * rounds * depth


def test_sweep_closes_an_idle_keepalive_connection(tmpdir):
    srv = _edge(tmpdir, conf_lines=["timeout_keepalive 1s"])
    with Conn(srv, timeout=T(10)) as c:
        c.send(req("GET", "/small.txt"))
        assert c.read_response().status == 200
        assert c.wait_closed(T(10))
    assert get(srv, "/small.txt").status == 200


def test_drain_ends_idle_connections_and_finishes_the_one_in_flight(tmpdir):
    srv = _edge(tmpdir)
    idle = [Conn(srv, timeout=T(10)) for _ in range(5)]
    for c in idle:
        c.send(req("GET", "/small.txt"))
        assert c.read_response().status == 200
    busy = Conn(srv, timeout=T(30), rcvbuf=64 * 1024)
    busy.send(req("GET", "/big.bin"))
    head = busy.sock.recv(1024)
    assert head.startswith(b"HTTP/1.1 200 ")
    srv.signal(signal.SIGTERM)
    for c in idle:
        assert c.wait_closed(T(10))
    busy.buf[0:0] = head
    r = busy.read_response()
    assert r.status == 200 and len(r.body) == BIG
    assert srv.wait(T(20)) == 0
    for c in idle + [busy]:
        c.close()


def test_cgi_echo_of_uploads_larger_than_its_pipes(tmpdir):
    """A CGI that echoes a 250 KiB upload: the body goes to the script's stdin while its
    stdout comes back, both pipes fill, and the socket and the pipes sit in the exchange's
    private set, whose one edge in the shared set can stand for several of their events. When
    a step of the set hands on before the set is empty (the body read takes over), no new
    edge comes for what is left in it: the owner must run it again. It did not, and the echo
    stalled until cgi_timeout (within a few uploads, plain or under TSan). Each response is
    awaited for at most 20 s from the request's last byte."""
    srv = _edge(tmpdir, conf_lines=["location /cgi-bin/ {", "    handler cgi", "}"])
    write_file(os.path.join(tmpdir, "root", "cgi-bin", "echo"),
               "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\n\\n'\nexec cat\n",
               mode=0o755)
    body = bytes(range(256)) * 1000
    for i in range(40):
        with Conn(srv, timeout=20) as c:
            c.send(req("POST", "/cgi-bin/echo", {"Content-Length": str(len(body))}) + body)
            r = c.read_response()
            assert r.status == 200 and r.body == body, "upload %d: %d bytes back" % (
                i, len(r.body))
