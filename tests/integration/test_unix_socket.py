"""Unix-domain-socket listeners: `listen unix:/PATH [proxy_protocol] [mode=M] [user=U]
[group=G]` and `--listen unix:/PATH`. Requests and keep-alive over the socket (raw and curl
--unix-socket), the log line `listening on unix:/PATH`, the client shown as `unix:` (access
log, CGI's REMOTE_ADDR), PROXY protocol v1 over the socket, a stale socket file replaced, a
live one and a file that is not a socket refused, the mode and owner applied, the file
removed at exit, Unix-domain peers outside the per-client limits, and a Unix-domain socket
passed by systemd-socket-activate, unnamed and by name (`listen systemd:NAME`)."""

import grp
import os
import pwd
import socket
import stat
import subprocess
import threading

from lib.ops import LogFile, run_lfhttpd, write_file
from lib.procs import write_script
from lib.server import ConfServer, Server, T, curl, req, wait_until


def _site(tmpdir):
    root = os.path.join(tmpdir, "www")
    write_file(os.path.join(root, "v.txt"), "over the socket")
    return root


class UConn:
    """A raw HTTP/1.1 connection over a Unix-domain socket."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(T(10))
        self.sock.connect(path)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def response(self):
        """One response with a Content-Length body: (head, body)."""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            assert chunk, "closed before a response: %r" % self.buf
            self.buf += chunk
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
                  if l.lower().startswith(b"content-length:")][0]
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            assert chunk, "closed in a body"
            rest += chunk
        self.buf = rest[length:]
        return head.decode("latin-1"), rest[:length]

    def close(self):
        self.sock.close()


def test_get_and_keep_alive_over_a_unix_socket(tmpdir):
    path = os.path.join(tmpdir, "lf.sock")
    log = os.path.join(tmpdir, "access.log")
    srv = ConfServer(tmpdir, "root %s\naccess_log %s\n" % (_site(tmpdir), log),
                     listen=("unix:" + path, "127.0.0.1:0"), expect_listeners=1)
    try:
        # (its line comes before the TCP one the start-up waits for)
        assert "listening on unix:%s" % path in srv.stderr, srv.stderr
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
        c = UConn(path)
        for _ in range(2):   # two requests on one connection
            c.send(req("GET", "/v.txt"))
            head, body = c.response()
            assert head.startswith("HTTP/1.1 200 ") and body == b"over the socket", head
        c.close()
        p = curl(["-s", "--unix-socket", path, "http://localhost/v.txt"])
        assert p.stdout == b"over the socket", p
        lines = LogFile(log).wait_lines(3)
        assert all(l.startswith("unix: - - [") for l in lines), lines
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr
    assert not os.path.exists(path)   # our socket file goes with us


def test_proxy_protocol_over_a_unix_socket(tmpdir):
    path = os.path.join(tmpdir, "lf.sock")
    log = os.path.join(tmpdir, "access.log")
    srv = ConfServer(tmpdir, "listen 127.0.0.1:0\nlisten unix:%s proxy_protocol\nroot %s\n"
                     "access_log %s\n" % (path, _site(tmpdir), log), listen=(),
                     expect_listeners=1)
    try:
        c = UConn(path)
        c.send(b"PROXY TCP4 203.0.113.7 192.0.2.1 40000 80\r\n" + req("GET", "/v.txt"))
        head, body = c.response()
        assert head.startswith("HTTP/1.1 200 ") and body == b"over the socket", head
        c.close()
        c = UConn(path)   # without the header: closed, never served
        c.send(req("GET", "/v.txt"))
        assert c.sock.recv(100) == b""
        c.close()
        lines = LogFile(log).wait_lines(1)
        assert lines[0].startswith("203.0.113.7 - - ["), lines
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr


def test_a_stale_socket_is_replaced_a_live_one_and_a_file_are_refused(tmpdir):
    root = _site(tmpdir)
    path = os.path.join(tmpdir, "lf.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()                     # the file stays; nobody accepts on it
    srv = Server(listen=("127.0.0.1:0", "unix:" + path), root=root, expect_listeners=1)
    try:
        p = curl(["-s", "--unix-socket", path, "http://localhost/v.txt"])
        assert p.stdout == b"over the socket", p
        # A second server on the same path: the first one accepts there, so it is refused.
        rc, _, err = run_lfhttpd(["--user", "root", "--listen", "unix:" + path, "--root", root])
        assert rc == 2 and err.strip().endswith(
            "listen unix:%s: another server accepts on this socket" % path), err
        assert curl(["-s", "--unix-socket", path, "http://localhost/v.txt"]).stdout == \
            b"over the socket"
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr
    # A file that is not a socket: refused at its line, and left alone.
    plain = write_file(os.path.join(tmpdir, "not-a-socket"), "data")
    conf = write_file(os.path.join(tmpdir, "t.conf"),
                      "root %s\nlisten unix:%s\n" % (root, plain))
    rc, _, err = run_lfhttpd(["-t", "-c", conf])
    assert rc == 2 and err.strip() == \
        "%s:2: listen unix:%s: the file exists and is not a socket" % (conf, plain), err
    assert open(plain).read() == "data"
    rc, _, err = run_lfhttpd(["-t", "--listen", "unix:relative.sock", "--root", root])
    assert rc == 2 and "invalid listen address 'unix:relative.sock'" in err, err


def test_mode_owner_and_group_of_the_socket_file(tmpdir):
    path = os.path.join(tmpdir, "lf.sock")
    nobody = pwd.getpwnam("nobody")
    group = grp.getgrgid(nobody.pw_gid).gr_name
    srv = ConfServer(tmpdir, "listen 127.0.0.1:0\nlisten unix:%s mode=0660 user=nobody "
                     "group=%s\nroot %s\n" % (path, group, _site(tmpdir)), listen=(),
                     expect_listeners=1)
    try:
        st = os.lstat(path)
        assert stat.S_IMODE(st.st_mode) == 0o660, oct(st.st_mode)
        assert (st.st_uid, st.st_gid) == (nobody.pw_uid, nobody.pw_gid), st
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr
    for opt, msg in (("mode=999", "invalid listen mode '999'"),
                     ("user=no-such-user-x", "user 'no-such-user-x' does not exist"),
                     ("backlog=5", "unknown listen option 'backlog=5'")):
        conf = write_file(os.path.join(tmpdir, "t.conf"), "root /\nlisten unix:%s %s\n"
                          % (path, opt))
        rc, _, err = run_lfhttpd(["-t", "-c", conf])
        assert rc == 2 and err.startswith("%s:2: " % conf) and msg in err, err
    conf = write_file(os.path.join(tmpdir, "t.conf"), "root /\nlisten 127.0.0.1:0 mode=0600\n")
    rc, _, err = run_lfhttpd(["-t", "-c", conf])
    assert rc == 2 and "unknown listen option 'mode=0600' (proxy_protocol)" in err, err


def test_cgi_sees_a_unix_peer_as_unix(tmpdir):
    path = os.path.join(tmpdir, "lf.sock")
    root = _site(tmpdir)
    write_script(os.path.join(root, "cgi-bin"), "env",
                 "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nenv\n")
    srv = ConfServer(tmpdir, "root %s\nlocation /cgi-bin/ {\n    handler cgi\n}\n" % root,
                     listen=("127.0.0.1:0", "unix:" + path), expect_listeners=1)
    try:
        p = curl(["-s", "--unix-socket", path, "http://localhost/cgi-bin/env"])
        env = dict(l.split("=", 1) for l in p.stdout.decode().splitlines() if "=" in l)
        assert env["REMOTE_ADDR"] == "unix:" and env["REMOTE_PORT"] == "0", env
        assert env["SERVER_ADDR"] == "unix:" and env["SERVER_NAME"] == "localhost", env
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr


def test_unix_peers_are_outside_the_per_client_limits(tmpdir):
    """Every Unix-domain peer has the same (no) address: counting them as one client would
    throttle a local reverse proxy as if it were one visitor."""
    path = os.path.join(tmpdir, "lf.sock")
    srv = ConfServer(tmpdir, "root %s\nlimit_conn_per_ip 1\n" % _site(tmpdir),
                     listen=("127.0.0.1:0", "unix:" + path), expect_listeners=1)
    try:
        conns = [UConn(path) for _ in range(3)]   # three open at once, from "one" address
        for c in conns:
            c.send(req("GET", "/v.txt"))
        for c in conns:
            head, body = c.response()
            assert head.startswith("HTTP/1.1 200 "), head
            c.close()
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr


def test_a_unix_socket_passed_by_systemd(tmpdir):
    path = os.path.join(tmpdir, "act.sock")
    srv = Server(listen=(), root=_site(tmpdir), start=False, expect_listeners=0)
    cmd = ["systemd-socket-activate", "-l", path] + srv.cmd
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        box = {}

        def first():
            import time
            deadline = time.monotonic() + T(20)
            while not os.path.exists(path) and time.monotonic() < deadline:
                time.sleep(0.02)
            box["p"] = curl(["-s", "--unix-socket", path, "http://localhost/v.txt"])
        t = threading.Thread(target=first, daemon=True)
        t.start()
        t.join(T(30))
        assert "p" in box and box["p"].stdout == b"over the socket", box
        # The same socket, now served: a second request.
        assert curl(["-s", "--unix-socket", path, "http://localhost/v.txt"]).stdout == \
            b"over the socket"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=T(20))
    assert b"listening on unix:%s" % path.encode() in err, err


def test_a_unix_socket_passed_by_systemd_by_name(tmpdir):
    """systemd-socket-activate --fdname=web -l PATH and `listen systemd:web`: the named socket
    is the one listener (no default address), served over curl --unix-socket."""
    path = os.path.join(tmpdir, "named.sock")
    conf = write_file(os.path.join(tmpdir, "lfhttpd.conf"),
                      "listen systemd:web\nroot %s\n" % _site(tmpdir))
    srv = Server(listen=(), args=["--config", conf], start=False, expect_listeners=0)
    cmd = ["systemd-socket-activate", "--fdname=web", "-l", path] + srv.cmd
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        # The activator makes the socket, then starts lfhttpd at the first connection.
        assert wait_until(lambda: os.path.exists(path) or proc.poll() is not None, 20)
        first = curl(["-s", "--unix-socket", path, "http://localhost/v.txt"])
        assert first.stdout == b"over the socket", first
        again = curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", path,
                      "http://localhost/v.txt"])
        assert again.stdout == b"200", again
    finally:
        proc.terminate()  # by its PID: the activator, which exec'd lfhttpd
        _, err = proc.communicate(timeout=T(20))
    listening = [l for l in err.decode().splitlines() if "listening on" in l]
    assert len(listening) == 1 and listening[0].endswith("listening on unix:%s" % path), err
    assert proc.returncode == 0, err
