"""A CGI script dying at every stage: before it could be started (no such interpreter, not an
executable format, posix_spawn failing), before its first byte, in the middle of its header,
after the header, in the middle of a body with and without Content-Length, with its stdin
half written, and scripts that close their stdout but live on, or die leaving a child that
holds it.

Each time the client gets a clean 502/504 (500 for a script that cannot be executed at all),
or a response whose framing is either complete or visibly cut (the connection closes before
the announced end); a keep-alive connection after a complete response still works. Afterwards
no process of the script is left, none is a zombie, and descriptors and threads are back to
their baseline."""

import os
import signal
import time

from lib.fault import Baseline, Faults, sanitizer_env
from lib.procs import group_members, status_json, write_script, zombies_of
from lib.server import ConfServer, Conn, ConnectionClosed, T, fixture_tree, req, wait_until

SH = "#!/bin/sh\n"
CT = "printf 'Content-Type: text/plain\\n\\n'\n"


def _scripts(tmpdir):
    pid = "echo $$ > %s/%%s.pid\n" % tmpdir
    return {
        "dies-first": SH + pid % "dies-first" + "kill -KILL $$\n",
        "dies-in-head": SH + pid % "dies-in-head" + "printf 'Content-Type: text/pl'\n"
                                                    "kill -KILL $$\n",
        "dies-after-head": SH + pid % "dies-after-head" + CT + "kill -KILL $$\n",
        "dies-mid-body": SH + pid % "dies-mid-body" + CT + "printf 'partial body'\n"
                                                           "sleep 0.2\nkill -KILL $$\n",
        "dies-mid-length": SH + pid % "dies-mid-length" +
                           "printf 'Content-Length: 100\\n\\n0123456789'\nsleep 0.2\n"
                           "kill -KILL $$\n",
        "dies-reading": SH + pid % "dies-reading" + "head -c 1000 >/dev/null\nkill -KILL $$\n",
        "answers-unread": SH + pid % "answers-unread" + "head -c 1000 >/dev/null\n" + CT +
                          "printf 'read 1000\\n'\n",
        "closes-stdout": SH + pid % "closes-stdout" + "exec >&-\nexec sleep 30\n",
        "leaves-child": SH + pid % "leaves-child" + "sleep 30 &\nkill -KILL $$\n",
        "dies-in-big-output": SH + pid % "dies-in-big-output" + CT +
                              "head -c 2000000 /dev/zero | tr '\\0' x\nkill -KILL $$\n",
        "no-interpreter": "#!/nonexistent/interpreter\necho never\n",
        "not-executable-format": "\x7fELF this is not a program\n",
    }


def _server(tmpdir, faults=None, conf=()):
    tree = fixture_tree(tmpdir)
    cgi = os.path.join(tree.root, "cgi-bin")
    for name, text in _scripts(tmpdir).items():
        write_script(cgi, name, text)
    env = sanitizer_env(faults.env() if faults else dict(os.environ))
    srv = ConfServer(tmpdir, ["root %s" % tree.root, "location /cgi-bin/ {", "    handler cgi", "}",
                                              "cgi_timeout 2s"] + list(conf), root=tree.root, env=env)
    srv.tree = tree
    srv.files = tree.files
    return srv


def _script_gone(tmpdir, name):
    """The script's process group has no live member left (and it had one)."""
    path = os.path.join(tmpdir, name + ".pid")
    if not os.path.exists(path):
        return True          # never started (or died before writing it)
    text = open(path).read().strip()
    if not text:
        return True
    pid = int(text)
    return wait_until(lambda: not group_members(pid), 5) is True


def _next_request_works(c):
    """On a connection left open after a complete response: the next request is answered."""
    c.send(req("GET", "/kib.txt"))
    r = c.read_response()
    return r.status == 200 and len(r.body) == 1024


class LoggedConn(Conn):
    """A Conn that keeps every byte received, head included, for responses cut short."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.log = bytearray()

    def _fill(self, n=65536):
        before = len(self.buf)
        more = super()._fill(n)
        self.log += self.buf[before:]
        return more


def _exchange(srv, name, method="GET", body=b"", pipelined=False):
    """Send one request for the script (and, pipelined, a GET behind it); return what came
    back: ('response', Response, conn), or ('cut', every byte received, why) when the
    connection closed inside a response, or ('closed', b"", why) before any byte."""
    c = LoggedConn(srv, timeout=T(15))
    data = req(method, "/cgi-bin/" + name, body=body)
    if pipelined:
        data += req("GET", "/kib.txt")
    try:
        c.sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    try:
        r = c.read_response(method)
    except ConnectionClosed as e:
        got = bytes(c.log)
        c.close()
        return ("cut" if got else "closed", got, str(e))
    except ConnectionResetError:
        c.close()
        return ("closed", b"", "reset")
    return ("response", r, c)


def _check_after(srv, tmpdir, name, base):
    assert srv.alive(), "the server died on %s" % name
    assert _script_gone(tmpdir, name), "%s: its process group is still alive" % name
    assert wait_until(lambda: not zombies_of(srv.proc.pid), 5), "%s left a zombie" % name
    assert wait_until(lambda: status_json(srv)["cgi"]["running"] == 0, 5), \
        "%s: still counted as running" % name
    base.check("after %s" % name)


def _baseline(srv):
    r = Conn(srv).__enter__()
    try:
        r.send(req("GET", "/kib.txt"))
        r.read_response()
    finally:
        r.close()
    status_json(srv)
    return Baseline(srv)


def test_script_dies_before_any_output(tmpdir):
    srv = _server(tmpdir)
    base = _baseline(srv)
    for name in ("dies-first", "dies-in-head"):
        kind, r, extra = _exchange(srv, name)
        assert kind == "response" and r.status == 502, (name, kind, r)
        if not r.has_token("Connection", "close"):
            assert _next_request_works(extra), name
        extra.close() if kind == "response" else None
        _check_after(srv, tmpdir, name, base)


def test_script_dies_after_its_header(tmpdir):
    """The header is out: the response is already a 200; it ends correctly (chunked, with
    its last chunk) or the connection closes before its end, which the client sees."""
    srv = _server(tmpdir)
    base = _baseline(srv)
    for name, partial in (("dies-after-head", b""), ("dies-mid-body", b"partial body"),
                          ("dies-in-big-output", b"x" * 2000000)):
        kind, r, extra = _exchange(srv, name, pipelined=True)
        if kind == "response":
            assert r.status == 200 and r.body == partial, (name, r)
            # a complete chunked response: the pipelined request behind it is answered
            r2 = extra.read_response()
            assert r2.status == 200 and len(r2.body) == 1024, (name, r2)
            extra.close()
        else:
            assert kind == "cut" and r.startswith(b"HTTP/1.1 200 "), (name, kind, r[:200])
            assert b"Transfer-Encoding: chunked" in r or b"Content-Length" in r, r[:300]
        _check_after(srv, tmpdir, name, base)


def test_script_dies_short_of_its_content_length(tmpdir):
    """10 of the 100 bytes it announced: the client gets those 10 and the connection closes
    (it cannot be completed, and a keep-alive would desynchronise the client)."""
    srv = _server(tmpdir)
    base = _baseline(srv)
    kind, got, why = _exchange(srv, "dies-mid-length", pipelined=True)
    assert kind == "cut", (kind, got, why)
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and b"Content-Length: 100" in head, head
    assert body == b"0123456789", body
    _check_after(srv, tmpdir, "dies-mid-length", base)


def test_script_dies_with_its_stdin_half_written(tmpdir):
    """A 4 MiB body; the script reads 1000 bytes and dies: 502 (it wrote nothing), the rest of
    the body does not wedge the connection. One that reads 1000 bytes and answers: its answer,
    and then either the connection still works or it is closed."""
    srv = _server(tmpdir, conf=["max_body_size 8m"])
    base = _baseline(srv)
    body = bytes(i % 251 for i in range(4 * 1024 * 1024))
    kind, r, extra = _exchange(srv, "dies-reading", "POST", body)
    if kind == "response":
        assert r.status == 502, r
        extra.close()
    else:
        assert kind == "closed", (kind, r)   # the server may close while the body still comes
    _check_after(srv, tmpdir, "dies-reading", base)

    kind, r, extra = _exchange(srv, "answers-unread", "POST", body)
    assert kind == "response" and r.status == 200 and r.body == b"read 1000\n", (kind, r)
    try:
        assert _next_request_works(extra)
    except (ConnectionClosed, ConnectionResetError, BrokenPipeError):
        pass                                  # closed: also correct
    extra.close()
    _check_after(srv, tmpdir, "answers-unread", base)


def test_script_closes_stdout_or_leaves_a_child_holding_it(tmpdir):
    """Stdout closed with nothing written while the script lives on: 502 at once and the
    script is killed. Dead, with a child that keeps its stdout open: the script's exit kills
    what is left of its process group, which ends the output: 502 at once too, the child
    gone. (A child that leaves the process group, setsid, outlives the script: its output
    ends only at cgi_timeout, 504, and it cannot be killed; docs/RELIABILITY.md.)"""
    srv = _server(tmpdir)
    base = _baseline(srv)
    kind, r, extra = _exchange(srv, "closes-stdout")
    assert kind == "response" and r.status == 502, (kind, r)
    extra.close()
    _check_after(srv, tmpdir, "closes-stdout", base)
    kind, r, extra = _exchange(srv, "leaves-child")
    assert kind == "response" and r.status == 502, (kind, r)
    extra.close()
    _check_after(srv, tmpdir, "leaves-child", base)


def test_script_cannot_be_started(tmpdir):
    """No such interpreter, not an executable format (exec fails inside posix_spawn), or
    posix_spawn itself failing (EAGAIN, from the fault injector): a server error at once,
    nothing started, nothing left."""
    f = Faults(tmpdir)
    srv = _server(tmpdir, faults=f)
    base = _baseline(srv)
    for name in ("no-interpreter", "not-executable-format"):
        kind, r, extra = _exchange(srv, name)
        assert kind == "response" and r.status in (500, 502), (name, kind, r)
        assert b"never" not in r.body
        extra.close()
        _check_after(srv, tmpdir, name, base)
    f.always(["spawn"])
    kind, r, extra = _exchange(srv, "dies-first")
    f.off()
    assert kind == "response" and r.status == 503, (kind, r)
    assert f.failed("spawn") == 1
    extra.close()
    _check_after(srv, tmpdir, "dies-first", base)
    assert "cannot start" in srv.stderr


def test_every_death_at_once(tmpdir):
    """All of them at the same time, three times over, while the server is reloaded: the
    same answers, and nothing left afterwards."""
    import threading
    srv = _server(tmpdir)
    base = _baseline(srv)
    names = ["dies-first", "dies-in-head", "dies-after-head", "dies-mid-body",
             "dies-mid-length", "closes-stdout", "no-interpreter", "dies-in-big-output"]
    errors = []

    def one(name):
        try:
            kind, r, extra = _exchange(srv, name)
            if kind == "response":
                extra.close()
                ok = r.status in (200, 500, 502, 504)
            else:
                ok = kind == "cut" and r.startswith(b"HTTP/1.1 200 ")
                r = r[:200]
            if not ok:
                errors.append((name, kind, r))
        except Exception as e:
            errors.append((name, repr(e)))
    for rnd in range(3):
        ts = [threading.Thread(target=one, args=(n,)) for n in names]
        for t in ts:
            t.start()
        srv.signal(signal.SIGHUP)
        for t in ts:
            t.join(T(30))
        assert not any(t.is_alive() for t in ts), "a client hung"
    assert not errors, errors[:5]
    for name in names:
        _check_after(srv, tmpdir, name, base)


def test_cgi_script_directory_on_descriptor_3_after_a_reload(tmpdir):
    """Descriptor 3 is the first runtime's root at start-up; once a reload has freed it, the
    descriptor of a script's directory (opened per request) can be 3, the number the script
    itself is put on for its exec. The script must still start in its directory: every CGI
    request through 100 reloads is a 200. (When the fchdir came after the dup2 onto 3, it
    failed with ENOTDIR for about 5% of them: a 500, "cannot start: Not a directory".)"""
    import threading
    srv = _server(tmpdir)
    write_script(os.path.join(srv.tree.root, "cgi-bin"), "hello",
                 SH + CT + "printf 'hello\\n'\n")
    statuses = {}
    stop = threading.Event()

    def client():
        while not stop.is_set():
            with Conn(srv) as c:
                for _ in range(10):
                    c.send(req("GET", "/cgi-bin/hello"))
                    r = c.read_response()
                    statuses[r.status] = statuses.get(r.status, 0) + 1
    ts = [threading.Thread(target=client) for _ in range(3)]
    for t in ts:
        t.start()
    for _ in range(100):
        srv.signal(signal.SIGHUP)
        time.sleep(0.05)
    stop.set()
    for t in ts:
        t.join(T(30))
    assert set(statuses) == {200}, statuses
    assert "Not a directory" not in srv.stderr, srv.stderr[-2000:]
