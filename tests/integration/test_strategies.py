"""Concurrency strategies (`--concurrency`, `concurrency`): leader-followers (one shared handle
set), half-sync-half-async (a reactor thread, a queue, workers) and reuseport (one handle set
and one SO_REUSEPORT listener per thread). The whole suite also runs under each strategy
(`make test CONCURRENCY=...`, .ci/run); these tests check that each strategy is what it says."""

import os
import signal
import socket

import pytest

from lib.ops import one_error_line, run_lfhttpd, write_file
from lib.procs import status_json
from lib.static import make_root
from lib.server import ConfServer, Conn, Server, free_port, get, req, wait_until

THREADS = 3
STRATEGIES = ("leader-followers", "half-sync-half-async", "reuseport", "leader-followers-edge")


def _root(tmpdir):
    return make_root(os.path.join(tmpdir, "root"), {"index.html": b"<p>hello</p>\n"}, mtime=None)


def _epoll_instances(pid):
    d = "/proc/%d/fd" % pid
    n = 0
    for fd in os.listdir(d):
        try:
            if os.readlink(os.path.join(d, fd)) == "anon_inode:[eventpoll]":
                n += 1
        except OSError:
            pass
    return n


def _listening_sockets(pid, port):
    """How many of the process's sockets listen on `port` (IPv4)."""
    inodes = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
                inodes.add(fields[9])
    d = "/proc/%d/fd" % pid
    n = 0
    for fd in os.listdir(d):
        try:
            link = os.readlink(os.path.join(d, fd))
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            n += 1
    return n


def _thread_names(pid):
    names = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_cli_and_directive_accept_the_strategy(tmpdir, strategy):
    root = _root(tmpdir)
    rc, _, err = run_lfhttpd(["-t", "--concurrency", strategy, "--root", root])
    assert rc == 0, err
    conf = write_file(os.path.join(tmpdir, "c.conf"), "concurrency %s\n" % strategy)
    rc, _, err = run_lfhttpd(["-t", "-c", conf, "--root", root])
    assert rc == 0, err


def test_cli_and_directive_refuse_an_unknown_strategy(tmpdir):
    root = _root(tmpdir)
    rc, _, err = run_lfhttpd(["-t", "--concurrency", "thread-per-request", "--root", root])
    assert rc == 2
    assert "invalid concurrency 'thread-per-request'" in one_error_line(err)
    conf = write_file(os.path.join(tmpdir, "bad.conf"), "# strategies\nconcurrency fast\n")
    rc, _, err = run_lfhttpd(["-t", "-c", conf, "--root", root])
    assert rc == 2
    line = one_error_line(err)
    assert line.startswith(conf + ":2: ") and "invalid concurrency 'fast'" in line, line


def _serve_on_fresh_connections(srv, n):
    for _ in range(n):
        r = get(srv, "/index.html")
        assert r.status == 200 and r.body == b"<p>hello</p>\n"


def test_leader_followers_one_shared_handle_set(tmpdir):
    srv = Server(root=_root(tmpdir), threads=THREADS, args=["--concurrency", "leader-followers"])
    pid = srv.proc.pid
    _serve_on_fresh_connections(srv, 20)
    assert _epoll_instances(pid) == 1
    assert _listening_sockets(pid, srv.port) == 1
    st = status_json(srv)
    assert st["pool"]["concurrency"] == "leader-followers"
    assert st["pool"]["threads"] == THREADS and len(st["workers"]) == THREADS
    # no thread is anything but a pool member: every one of them has led (waited) or followed
    assert st["pool"]["waits"] >= 1 and st["pool"]["events"] >= 20


def test_half_sync_half_async_reactor_only_queues(tmpdir):
    srv = Server(root=_root(tmpdir), threads=THREADS,
                 args=["--concurrency", "half-sync-half-async"])
    pid = srv.proc.pid
    _serve_on_fresh_connections(srv, 30)
    with Conn(srv) as c:   # keep-alive requests too
        for _ in range(10):
            c.send(req("GET", "/index.html"))
            assert c.read_response().status == 200
    assert _epoll_instances(pid) == 1
    assert _listening_sockets(pid, srv.port) == 1
    assert "lfhttpd-reactor" in _thread_names(pid)
    st = status_json(srv)
    assert st["pool"]["concurrency"] == "half-sync-half-async"
    # THREADS workers plus the reactor, which is listed last
    assert st["pool"]["threads"] == THREADS + 1 and len(st["workers"]) == THREADS + 1
    reactor, workers = st["workers"][-1], st["workers"][:-1]
    assert reactor["events"] == 0 and reactor["requests"] == 0, reactor
    assert sum(w["requests"] for w in workers) >= 40
    # every event detected by the reactor was handed to a worker through the queue
    assert st["pool"]["promotions"] + st["pool"]["no_follower"] >= st["pool"]["events"] - 1


def test_reuseport_one_handle_set_and_listener_per_thread(tmpdir):
    srv = Server(root=_root(tmpdir), threads=THREADS, args=["--concurrency", "reuseport"])
    pid = srv.proc.pid
    assert _epoll_instances(pid) == THREADS
    assert _listening_sockets(pid, srv.port) == THREADS
    # the kernel spreads new connections over the listeners: every thread gets some of 90
    _serve_on_fresh_connections(srv, 90)
    st = status_json(srv)
    assert st["pool"]["concurrency"] == "reuseport"
    per_thread = [w["requests"] for w in st["workers"]]
    assert len(per_thread) == THREADS and all(n > 0 for n in per_thread), per_thread
    # a thread leads its own set and never has a follower to promote
    assert st["pool"]["promotions"] == 0 and st["pool"]["no_follower"] >= 1


def test_reuseport_reload_opens_and_closes_one_socket_per_thread(tmpdir):
    root = _root(tmpdir)
    p1, p2 = free_port(), free_port()
    conf = "concurrency reuseport\nroot %s\nlisten 127.0.0.1:%%d\n" % root
    # also on the command line: it overrides the file, and the suite's --concurrency adds its own
    srv = ConfServer(tmpdir, conf % p1, listen=(), threads=THREADS,
                     args=["--concurrency", "reuseport"])
    pid = srv.proc.pid
    assert _listening_sockets(pid, p1) == THREADS
    write_file(srv.conf_path, conf % p1 + "listen 127.0.0.1:%d\n" % p2)
    os.kill(pid, signal.SIGHUP)
    wait_until(lambda: _listening_sockets(pid, p2) == THREADS, what="the new listener's sockets")
    for port in (p1, p2):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(b"<p>hello</p>\n"), (port, data)
    write_file(srv.conf_path, conf % p2)
    os.kill(pid, signal.SIGHUP)
    wait_until(lambda: _listening_sockets(pid, p1) == 0, what="the old listener's sockets closed")
    assert _listening_sockets(pid, p2) == THREADS
