"""systemd: socket activation and the notify protocol, with real systemd tools.

Sockets are passed by systemd-socket-activate (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES); the
notifications go to a NOTIFY_SOCKET datagram socket that the test binds and reads, exactly as
systemd's manager would. No systemd as PID 1 is needed.
"""

import os
import re
import signal
import socket
import subprocess
import threading
import time

from lib.ops import run_lfhttpd, write_file
from lib.server import REPO, Server, T, free_port, get, req, wait_until
from lib.tls import TLSConn, the_pki


def _site(tmpdir, name, text):
    root = os.path.join(tmpdir, name)
    write_file(os.path.join(root, "index.html"), text)
    return root


def _listen_inode(port):
    """Inodes of the sockets listening on 127.0.0.1:port (from /proc/net/tcp)."""
    want = "0100007F:%04X" % port
    inodes = []
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if fields[1] == want and fields[3] == "0A":      # 0A: LISTEN
                inodes.append(int(fields[9]))
    return inodes


def _fd_inode(pid, fd):
    m = re.match(r"socket:\[(\d+)\]", os.readlink("/proc/%d/fd/%d" % (pid, fd)))
    return int(m.group(1)) if m else None


class Poke:
    """A client that connects before the server exists: systemd-socket-activate starts the
    program on the first connection, which waits in the passed socket's backlog meanwhile."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=T(20))
        self.sock.sendall(req("GET", "/", headers={"Connection": "close"}))

    def response(self):
        data = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
        self.sock.close()
        return data


def activator_cmd(sockets, env=None):
    """systemd-socket-activate passing one socket per (name, port) in `sockets` (127.0.0.1)."""
    cmd = ["systemd-socket-activate"]
    for _, port in sockets:
        cmd += ["-l", "127.0.0.1:%d" % port]
    if any(name for name, _ in sockets):
        cmd += ["--fdname=" + ":".join(name for name, _ in sockets)]
    # It passes only a few variables on: name the ones the server needs.
    for k, v in (env or {}).items():
        cmd += ["-E", "%s=%s" % (k, v)]
    for k, v in os.environ.items():
        if k.endswith("SAN_OPTIONS"):
            cmd += ["-E", "%s=%s" % (k, v)]
    return cmd


def first_client(port, box):
    """Connect (retrying while the activator is not listening yet) and send a request; the
    activator starts lfhttpd on this first connection, which waits in the backlog meanwhile."""
    deadline = time.monotonic() + T(20)
    while True:
        try:
            box["poke"] = Poke(port)
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


def activated(tmpdir, sockets, args=(), env=None, root=None):
    """lfhttpd started by systemd-socket-activate with `sockets`; returns the Server and the
    first client (a Poke)."""
    srv = Server(listen=(), args=list(args), root=root, start=False,
                 expect_listeners=len(sockets))
    srv.cmd = activator_cmd(sockets, env) + srv.cmd
    box = {}
    t = threading.Thread(target=first_client, args=(sockets[0][1], box), daemon=True)
    t.start()
    srv.start()
    t.join(T(20))
    assert "poke" in box, "could not connect to the activator"
    return srv, box["poke"]


def test_socket_activation_plain_and_tls_by_name(tmpdir):
    p = the_pki()
    hport, sport = free_port(), free_port()
    conf = os.path.join(tmpdir, "lfhttpd.conf")
    write_file(conf, "listen systemd:http\ntls_listen systemd:https\n"
               "tls_certificate %s %s\nroot %s\n" % (p.a_chain, p.a_key,
                                                      _site(tmpdir, "a", "site A")))
    srv, poke = activated(tmpdir, [("http", hport), ("https", sport)], ["--config", conf])
    try:
        first = poke.response()
        assert first.startswith(b"HTTP/1.1 200 ") and first.endswith(b"site A"), first[:200]
        assert ("http", "127.0.0.1", hport) in srv.listeners, srv.stderr
        assert ("https", "127.0.0.1", sport) in srv.listeners, srv.stderr
        assert get(("127.0.0.1", hport), "/").body == b"site A"
        c = TLSConn(("127.0.0.1", sport))
        c.send(req("GET", "/"))
        assert c.read_response().body == b"site A"
        c.close()
        # The listening sockets are the ones systemd passed (fds 3 and 4), not sockets of
        # lfhttpd's own: one socket listens on each port, and it is the inherited one.
        inherited = {_fd_inode(srv.proc.pid, 3), _fd_inode(srv.proc.pid, 4)}
        before = _listen_inode(hport) + _listen_inode(sport)
        assert len(before) == 2 and set(before) == inherited, (before, inherited)

        # A reload (another root) keeps both sockets: never closed, never bound again.
        write_file(conf, "listen systemd:http\ntls_listen systemd:https\n"
                   "tls_certificate %s %s\nroot %s\n" % (p.a_chain, p.a_key,
                                                          _site(tmpdir, "b", "site B")))
        srv.signal(signal.SIGHUP)
        wait_until(lambda: "generation 2" in srv.stderr, 10, what="the reload")
        assert get(("127.0.0.1", hport), "/").body == b"site B"
        c = TLSConn(("127.0.0.1", sport))
        c.send(req("GET", "/"))
        assert c.read_response().body == b"site B"
        c.close()
        assert _listen_inode(hport) + _listen_inode(sport) == before
        assert "stopped listening" not in srv.stderr, srv.stderr
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr


def test_socket_activation_by_address(tmpdir):
    """A configured address that systemd already bound is served from its socket (no
    EADDRINUSE): the same configuration works with and without the .socket unit."""
    port = free_port()
    conf = os.path.join(tmpdir, "lfhttpd.conf")
    write_file(conf, "listen 127.0.0.1:%d\nroot %s\n" % (port, _site(tmpdir, "a", "by address")))
    srv, poke = activated(tmpdir, [("", port)], ["--config", conf])
    try:
        assert poke.response().endswith(b"by address")
        assert _listen_inode(port) == [_fd_inode(srv.proc.pid, 3)]
        srv.signal(signal.SIGHUP)
        wait_until(lambda: "generation 2" in srv.stderr, 10, what="the reload")
        assert get(("127.0.0.1", port), "/").body == b"by address"
        assert _listen_inode(port) == [_fd_inode(srv.proc.pid, 3)]
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr


def test_socket_activation_without_a_listen(tmpdir):
    """No listener configured (neither `listen` nor --listen): the passed sockets are the
    listeners, instead of the default 0.0.0.0:8080, and stay so across a reload."""
    port, second = free_port(), free_port()
    root = _site(tmpdir, "a", "no listen")
    srv, poke = activated(tmpdir, [("", port), ("", second)], root=root)
    try:
        assert poke.response().endswith(b"no listen")
        assert ("http", "127.0.0.1", port) in srv.listeners, srv.stderr
        assert ("http", "127.0.0.1", second) in srv.listeners, srv.stderr
        assert "8080" not in srv.stderr, srv.stderr
        assert get(("127.0.0.1", second), "/").body == b"no listen"
        assert _listen_inode(port) == [_fd_inode(srv.proc.pid, 3)]
        srv.signal(signal.SIGHUP)
        wait_until(lambda: "generation 2" in srv.stderr, 10, "the reload")
        assert get(("127.0.0.1", port), "/").body == b"no listen"
        assert _listen_inode(port) == [_fd_inode(srv.proc.pid, 3)]
        assert "stopped listening" not in srv.stderr, srv.stderr
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr


def test_unclaimed_socket_is_refused(tmpdir):
    """A passed socket no listener uses would leave its clients waiting forever: start-up
    fails and names it; a reload that would leave one unused is refused."""
    port, other = free_port(), free_port()
    root = _site(tmpdir, "a", "claimed")
    srv = Server(listen=("127.0.0.1:%d" % other,), root=root, start=False)
    box = {}
    t = threading.Thread(target=first_client, args=(port, box), daemon=True)
    t.start()
    p = subprocess.run(activator_cmd([("http", port)]) + srv.cmd, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T(30))
    t.join(T(20))
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert "socket 'http' passed by systemd is used by no listener" in err, err
    assert "poke" in box and box["poke"].response() == b""    # closed, never answered

    conf = os.path.join(tmpdir, "lfhttpd.conf")
    write_file(conf, "listen systemd:http\nroot %s\n" % root)
    srv, poke = activated(tmpdir, [("http", port)], ["--config", conf])
    try:
        assert poke.response().endswith(b"claimed")
        write_file(conf, "listen 127.0.0.1:%d\nroot %s\n" % (other, root))
        srv.signal(signal.SIGHUP)
        wait_until(lambda: "keeping generation 1" in srv.stderr, 10, what="the refused reload")
        assert "socket 'http' passed by systemd would be used by no listener" in srv.stderr
        assert get(("127.0.0.1", port), "/").body == b"claimed"
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr


def test_named_socket_missing(tmpdir):
    rc, _, err = run_lfhttpd(["--listen", "systemd:web", "--threads", "1", tmpdir])
    assert rc == 2, err
    assert "listen systemd:web: systemd passed no socket named 'web'" in err, err
    rc, _, err = run_lfhttpd(["--listen", "systemd:", "-t", tmpdir])
    assert rc == 2 and "invalid listen address 'systemd:'" in err, err
    rc, _, err = run_lfhttpd(["--listen", "systemd:a b", "-t", tmpdir])
    assert rc == 2 and "invalid listen address" in err, err


class Notify:
    """The manager's end of the notify protocol: a datagram socket the server writes to."""

    def __init__(self, tmpdir):
        self.path = os.path.join(tmpdir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []          # [(CLOCK_MONOTONIC at receipt, {field: value})]

    def next(self, timeout=10):
        self.sock.settimeout(T(timeout))
        data = self.sock.recv(4096)
        fields = dict(l.split("=", 1) for l in data.decode().split("\n") if l)
        self.messages.append((time.clock_gettime(time.CLOCK_MONOTONIC), fields))
        return fields

    def until(self, key, timeout=10):
        """Messages up to and including the first with `key`."""
        deadline = time.monotonic() + T(timeout)
        got = []
        while True:
            got.append(self.next(max(0.1, deadline - time.monotonic())))
            if key in got[-1]:
                return got

    def close(self):
        self.sock.close()


def test_notify_ready_reloading_stopping(tmpdir):
    n = Notify(tmpdir)
    root = _site(tmpdir, "a", "notified")
    srv = Server(root=root, env=dict(os.environ, NOTIFY_SOCKET=n.path))
    try:
        ready = n.until("READY")[-1]
        assert ready["READY"] == "1"
        assert ready["STATUS"].startswith("serving: 0 connection(s), 0 request(s)"), ready
        for _ in range(3):
            assert get(srv, "/").body == b"notified"
        # STATUS from the timer tick follows what the server does.
        while "3 request(s)" not in n.next(T(10)).get("STATUS", ""):
            pass

        before = time.clock_gettime(time.CLOCK_MONOTONIC)
        srv.signal(signal.SIGHUP)
        msgs = n.until("READY")
        reloading = [m for m in msgs if "RELOADING" in m]
        assert len(reloading) == 1 and reloading[0]["RELOADING"] == "1", msgs
        # MONOTONIC_USEC: when the reload began, on the manager's clock.
        usec = int(reloading[0]["MONOTONIC_USEC"])
        assert before * 1e6 <= usec <= n.messages[-1][0] * 1e6, (before, usec)
        assert msgs.index(reloading[0]) < len(msgs) - 1     # READY=1 comes after it
        assert "configuration generation 2" in msgs[-1]["STATUS"], msgs[-1]
        assert get(srv, "/").body == b"notified"

        srv.signal(signal.SIGTERM)
        stopping = n.until("STOPPING")[-1]
        assert stopping["STOPPING"] == "1"
        assert stopping["STATUS"].startswith("draining:"), stopping
        srv.proc.wait(T(20))
    finally:
        srv.stop()
        n.close()
    assert srv.returncode == 0, srv.stderr
    order = [k for _, m in n.messages for k in ("READY", "RELOADING", "STOPPING") if k in m]
    assert order == ["READY", "RELOADING", "READY", "STOPPING"], order
    # Without WATCHDOG_USEC there is no watchdog.
    assert not any("WATCHDOG" in m for _, m in n.messages), n.messages


def test_notify_failed_reload_is_ready_again(tmpdir):
    """A configuration with an error keeps the running one; the manager still gets READY=1, or
    the unit would stay 'reloading'."""
    n = Notify(tmpdir)
    conf = os.path.join(tmpdir, "lfhttpd.conf")
    write_file(conf, "root %s\n" % _site(tmpdir, "a", "kept"))
    srv = Server(args=["--config", conf], env=dict(os.environ, NOTIFY_SOCKET=n.path))
    try:
        n.until("READY")
        write_file(conf, "root %s\nno_such_directive 1\n" % os.path.join(tmpdir, "a"))
        srv.signal(signal.SIGHUP)
        msgs = n.until("READY")
        assert any(m.get("RELOADING") == "1" for m in msgs), msgs
        assert "configuration generation 1" in msgs[-1]["STATUS"], msgs[-1]
        wait_until(lambda: "keeping generation 1" in srv.stderr, 10, what="the error line")
        assert get(srv, "/").body == b"kept"
    finally:
        srv.stop()
        n.close()


def test_watchdog_pings_from_the_timer(tmpdir):
    n = Notify(tmpdir)
    root = _site(tmpdir, "a", "watched")
    # WatchdogSec=1s: systemd sets WATCHDOG_USEC (and WATCHDOG_PID, left out here: then the
    # variable applies to the process that reads it).
    srv = Server(root=root, args=["--test-endpoints", "/_test/"],
                 env=dict(os.environ, NOTIFY_SOCKET=n.path, WATCHDOG_USEC="1000000"))
    try:
        n.until("READY")
        for _ in range(3):
            n.until("WATCHDOG")
        assert n.messages[-1][1]["WATCHDOG"] == "1"
        # It goes on while a drain waits for a response in flight (a slow drain must not get
        # the service killed): one byte a second for 10 s.
        with socket.create_connection((srv.host, srv.port)) as c:
            c.sendall(req("GET", "/_test/drip?numbytes=10&duration=10"))
            assert c.recv(1)                        # the response has started
            srv.signal(signal.SIGTERM)
            n.until("STOPPING")
            n.until("WATCHDOG")
    finally:
        srv.stop()
        n.close()


def test_watchdog_pid_of_another_process_is_ignored(tmpdir):
    n = Notify(tmpdir)
    srv = Server(root=_site(tmpdir, "a", "x"),
                 env=dict(os.environ, NOTIFY_SOCKET=n.path, WATCHDOG_USEC="250000",
                          WATCHDOG_PID="1"))
    try:
        n.until("READY")
        # The first STATUS= from the tick comes four ticks later; a watchdog for this process
        # would have pinged on each of them.
        while set(n.next()) != {"STATUS"}:
            pass
        srv.signal(signal.SIGTERM)
        n.until("STOPPING")
        srv.proc.wait(T(20))
    finally:
        srv.stop()
        n.close()
    assert not any("WATCHDOG" in m for _, m in n.messages), n.messages


def _caps(text):
    return {k: int(v, 16) for k, v in re.findall(r"^(Cap\w+):\s+([0-9a-f]+)$", text, re.M)}


def test_ambient_capability_stays_with_the_server(tmpdir):
    """lfhttpd.service runs as lfhttpd with AmbientCapabilities=CAP_NET_BIND_SERVICE: the
    server keeps the capability (listeners a reload adds may be on port 80) but a CGI script
    it runs must not get it."""
    net_bind_service = 1 << 10
    root = os.path.join(tmpdir, "www")
    write_file(os.path.join(root, "cgi-bin/caps"),
               "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\ngrep ^Cap /proc/self/status\n",
               mode=0o755)
    for d in (tmpdir, root, os.path.join(root, "cgi-bin")):
        os.chmod(d, 0o755)
    conf = write_file(os.path.join(tmpdir, "lfhttpd.conf"),
                      "root %s\nlocation /cgi-bin/ {\n    handler cgi\n}\n" % root)
    os.chmod(conf, 0o644)
    # As systemd would start it: another user, the capability inherited and ambient.
    srv = Server(args=["--config", conf], user=None, start=False)
    srv.cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
               "--inh-caps=+net_bind_service", "--ambient-caps=+net_bind_service"] + srv.cmd
    srv.start()
    try:
        own = _caps(open("/proc/%d/status" % srv.proc.pid).read())
        assert own["CapEff"] & net_bind_service, own
        assert own["CapAmb"] == 0, own
        r = get(srv, "/cgi-bin/caps")
        assert r.status == 200, r
        child = _caps(r.body.decode())
        assert child["CapEff"] == 0 and child["CapPrm"] == 0 and child["CapAmb"] == 0, child
    finally:
        srv.stop()


def _unit_setting(name):
    """The values of a setting in lfhttpd.service (the source the installed unit is made
    from)."""
    unit = open(os.path.join(REPO, "deploy/systemd/lfhttpd.service.in")).read()
    return re.search(r"^%s=(.*)$" % name, unit, re.M).group(1).split()


def _syscall_set(names):
    """The system calls a SystemCallFilter= list allows (groups expanded by systemd-analyze)."""
    out = subprocess.run(["systemd-analyze", "syscall-filter"], stdout=subprocess.PIPE,
                         check=True, timeout=T(30)).stdout.decode()
    groups, cur = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            cur = groups.setdefault(line.split()[0], set())
        elif cur is not None and line.strip() and not line.strip().startswith("#"):
            cur.add(line.strip())

    def expand(name):
        if not name.startswith("@"):
            return {name}
        return set().union(*(expand(x) for x in groups[name]))
    return set().union(*(expand(n) for n in names))


def test_the_server_stays_within_the_units_filters(tmpdir):
    """lfhttpd.service allows SystemCallFilter=@system-service and RestrictAddressFamilies=
    AF_INET AF_INET6 AF_UNIX. Traced with strace through start-up, plain, TLS and CGI
    requests, compression, a handler timer, a reload, a log reopen and the drain, the server
    (and the scripts it runs) makes no other system call and opens no other kind of
    socket."""
    allowed = _syscall_set(_unit_setting("SystemCallFilter"))
    families = set(_unit_setting("RestrictAddressFamilies"))
    assert "epoll_wait" in allowed and families == {"AF_INET", "AF_INET6", "AF_UNIX"}
    p = the_pki()
    root = os.path.join(tmpdir, "www")
    write_file(os.path.join(root, "index.html"), "traced")
    write_file(os.path.join(root, "big.css"), "body { color: black; }\n" * 400)
    write_file(os.path.join(root, "cgi-bin/hello"),
               "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nhello'\n", mode=0o755)
    log = os.path.join(tmpdir, "access.log")
    conf = write_file(os.path.join(tmpdir, "lfhttpd.conf"),
                      "tls_listen 127.0.0.1:0\ntls_certificate %s %s\naccess_log %s\n"
                      "root %s\nlocation /cgi-bin/ {\n    handler cgi\n}\n"
                      % (p.a_chain, p.a_key, log, root))
    trace = os.path.join(tmpdir, "strace.out")
    # LeakSanitizer cannot run under ptrace (ASan builds): the rest of the suite checks leaks.
    asan = os.environ.get("ASAN_OPTIONS", "")
    env = dict(os.environ, ASAN_OPTIONS=(asan + ":" if asan else "") + "detect_leaks=0")
    srv = Server(args=["--config", conf, "--test-endpoints", "/_test/"], start=False,
                 expect_listeners=2, env=env)
    srv.cmd = ["strace", "-f", "-qq", "-o", trace] + srv.cmd
    srv.start()
    try:
        pid = int(open("/proc/%d/task/%d/children" % (srv.proc.pid, srv.proc.pid))
                  .read().split()[0])
        http = next((h, port) for s, h, port in srv.listeners if s == "http")
        https = next((h, port) for s, h, port in srv.listeners if s == "https")
        assert get(http, "/").body == b"traced"
        assert get(http, "/cgi-bin/hello").body == b"hello"
        assert get(http, "/_test/delay/10").status == 200
        # Compression on the fly (on by default): its threads' calls count too.
        wait_until(lambda: get(http, "/big.css", headers={"Accept-Encoding": "br, gzip"})
                 .header("Content-Encoding") == "br", 30, what="a compressed answer")
        c = TLSConn(https)
        c.send(req("GET", "/"))
        assert c.read_response().body == b"traced"
        c.close()
        os.kill(pid, signal.SIGHUP)
        wait_until(lambda: "generation 2" in srv.stderr, 30, what="the reload")
        os.kill(pid, signal.SIGUSR1)
        wait_until(lambda: "log files reopened" in srv.stderr, 30, what="the reopen")
        os.kill(pid, signal.SIGTERM)
        srv.proc.wait(T(60))
    finally:
        srv.stop()
    used, opened = set(), set()
    for line in open(trace):
        m = re.match(r"^\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]", line)
        if m:
            used.add(m.group(1))
        m = re.match(r"^\d+\s+socket\((AF_\w+)", line)
        if m:
            opened.add(m.group(1))
    assert {"accept4", "epoll_wait", "signalfd4", "execve"} <= used, sorted(used)
    assert used <= allowed, "outside SystemCallFilter: %s" % sorted(used - allowed)
    assert opened <= families, "outside RestrictAddressFamilies: %s" % sorted(opened - families)
