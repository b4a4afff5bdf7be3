"""Fault injection (tests/fault/fault.c, LD_PRELOAD): allocations, opens, accepts, pipes,
epoll registrations and process spawns that fail, at random or at a chosen call.

What every test here checks: the server never dies; each request gets either its correct
answer, a 500/503, a close before any byte (no response was possible), or a response cut
short whose framing shows it (and whose bytes so far are right) — never a wrong body, a
malformed response or a hang; once the calls succeed again, every request is answered
correctly at once; descriptors and threads return to their baseline and RSS stays flat
(leaks are LeakSanitizer's job at exit in the ASan build, which runs this file too)."""

import json
import os
import signal
import threading
import time

from lib.fault import ALLOC, Baseline, Faults, sanitizer_env
from lib.procs import write_script, zombies_of
from lib.server import ConfServer, Conn, T, fixture_tree, req, wait_until
from lib import tls as TLS

SH = "#!/bin/sh\n"
TLS_NAME = "b.test"
ECHO_BODY = bytes((i * 7 + 3) % 256 for i in range(5000))
CAT_BODY = bytes((i * 13 + 1) % 256 for i in range(20000))


def _add_site(root):
    """Beside the fixture tree: a listed directory and two CGI scripts."""
    os.makedirs(os.path.join(root, "list"))
    for i in range(40):
        with open(os.path.join(root, "list", "f%02d.txt" % i), "w") as f:
            f.write("x" * i)
    cgi = os.path.join(root, "cgi-bin")
    write_script(cgi, "hello", SH + "printf 'Content-Type: text/plain\\n\\nhello\\n'\n")
    write_script(cgi, "cat", SH + "printf 'Content-Type: application/octet-stream\\n\\n'\n"
                                  "exec cat\n")


CONF = ["test_endpoints /_test/", "location /cgi-bin/ {", "    handler cgi", "}",
        "location /list/ {", "    directory_listing on", "}"]


def _server(tmpdir, faults, tls=False, extra=()):
    env = sanitizer_env(faults.env())
    if tls:
        # The ECDSA certificate only: an allocation failure inside OpenSSL's RSA blinding
        # leaves the key signing wrongly for a while (known_bug_openssl_rsa_blinding_...).
        p = TLS.the_pki()
        srv = TLS.tls_server(tmpdir, plain=True, extra=list(CONF) + list(extra), start=False,
                             certs=["%s %s" % (p.b_chain, p.b_key)])
        _add_site(srv.tree.root)
        srv.env = env
        srv.start()
        TLS._find(srv)
    else:
        tree = fixture_tree(tmpdir)
        _add_site(tree.root)
        srv = ConfServer(tmpdir, list(CONF) + list(extra), name="faults.conf", root=tree,
                         env=env)
        srv.http = (srv.host, srv.port)
    return srv


# ---- reading whatever comes back ---------------------------------------------------------------

class Reply:
    """What one request on its own connection got: `status`, `headers`, `body`, `complete`
    (the framing was satisfied), or nothing at all (`status` None, `raw` empty)."""

    def __init__(self, raw, method):
        self.raw = raw
        self.status = None
        self.headers = {}
        self.body = b""
        self.complete = False
        end = raw.find(b"\r\n\r\n")
        if end < 0:
            return
        lines = raw[:end].split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        assert parts[0] in (b"HTTP/1.1", b"HTTP/1.0") and len(parts) >= 2 and \
            parts[1].isdigit() and len(parts[1]) == 3, "malformed status line: %r" % raw[:200]
        self.status = int(parts[1])
        for line in lines[1:]:
            k, sep, v = line.partition(b":")
            assert sep and k and k == k.strip(), "malformed header line %r" % line
            self.headers[k.decode().lower()] = v.strip().decode("latin-1")
        rest = raw[end + 4:]
        if method == "HEAD" or self.status in (204, 304):
            self.complete = True
        elif "content-length" in self.headers:
            n = int(self.headers["content-length"])
            self.body = rest[:n]
            self.complete = len(rest) >= n
        elif self.headers.get("transfer-encoding", "").lower() == "chunked":
            self.body, self.complete = _dechunk(rest)
        else:
            self.body = rest         # delimited by the close
            self.complete = True

    def __repr__(self):
        return "<Reply %s complete=%s body=%d raw=%r>" % (self.status, self.complete,
                                                          len(self.body), self.raw[:120])


def _dechunk(data):
    body = bytearray()
    pos = 0
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return bytes(body), False
        size = int(data[pos:eol].split(b";")[0], 16)
        if size == 0:
            return bytes(body), data.find(b"\r\n\r\n", eol) >= 0 or data[eol + 2:eol + 4] == b"\r\n"
        chunk = data[eol + 2:eol + 2 + size]
        body += chunk
        if len(chunk) < size:
            return bytes(body), False
        pos = eol + 2 + size + 2


def ask(addr, method, path, body=b"", tls=None):
    """One request with Connection: close; everything until the server closes. tls: the
    server name to ask for (SNI), or None for plain HTTP."""
    data = req(method, path, headers=[("Connection", "close")], body=body)
    conn = TLS.TLSConn(addr, name=tls, timeout=10) if tls else Conn(addr, timeout=10)
    with conn as c:
        try:
            c.send(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        gave_up = False
        try:
            while c._fill():
                pass
        except TimeoutError:
            gave_up = True    # the server kept the connection open after all
        except (ConnectionResetError, OSError):
            pass
        r = Reply(bytes(c.buf), method)
        r.gave_up = gave_up
        return r


# ---- the requests and what each must get -----------------------------------------------------

def kinds(srv):
    """(name, method, path, body, check(reply) -> bool for a complete normal answer)."""
    files = srv.files

    def is_file(rel):
        return lambda r: r.status == 200 and r.body == files[rel]

    def json_ok(r):
        try:
            json.loads(r.body)
            return r.status == 200
        except ValueError:
            return False

    def echoed(r):
        try:
            doc = json.loads(r.body)
        except ValueError:
            return False
        return r.status == 200 and doc.get("method") == "POST" and \
            doc.get("body") == ECHO_BODY.decode("latin-1")

    return [
        ("small file", "GET", "/kib.txt", b"", is_file("/kib.txt")),
        ("big file", "GET", "/big.bin", b"", is_file("/big.bin")),
        ("index", "GET", "/sub/", b"", is_file("/sub/index.html")),
        ("missing", "GET", "/nope", b"", lambda r: r.status == 404),
        ("listing", "GET", "/list/", b"", lambda r: r.status == 200 and b"f39.txt" in r.body),
        ("echo", "POST", "/_test/echo", ECHO_BODY, echoed),
        ("delay", "GET", "/_test/delay/5", b"",
         lambda r: r.status == 200 and json.loads(r.body or b"{}").get("delay_ms") == 5),
        ("stream", "GET", "/_test/stream/20", b"",
         lambda r: r.status == 200 and len(r.body.splitlines()) == 20),
        ("bytes", "GET", "/_test/bytes/100000", b"",
         lambda r: r.status == 200 and len(r.body) == 100000),
        ("status", "GET", "/server-status?json", b"", json_ok),
        ("metrics", "GET", "/metrics", b"",
         lambda r: r.status == 200 and b"lfhttpd_requests_total" in r.body),
        ("cgi", "GET", "/cgi-bin/hello", b"", lambda r: r.status == 200 and r.body == b"hello\n"),
        CGI_BODY,
    ]


# A script that reads its stdin: each of its file actions (the dup2 of stdin, stdout...)
# allocates, and one left out would run it on the server's own stdin or stdout.
CGI_BODY = ("cgi body", "POST", "/cgi-bin/cat", CAT_BODY,
            lambda r: r.status == 200 and r.body == CAT_BODY)


def judge(kind, r, errors, counts):
    """Is `r` an acceptable answer to `kind` while faults are injected? Records why not."""
    name, method, path, body, good = kind
    if r.status is None:
        what = "nothing" if not r.raw else None
        if what is None:
            errors.append("%s: bytes without a response head: %r" % (name, r.raw[:200]))
            return
    elif r.complete and good(r):
        what = "correct"
    elif r.complete and r.status in (500, 503):
        what = "5xx"
    elif not r.complete:
        # Cut short: the head must have been the right one and the bytes so far right.
        want = None
        if path in ("/kib.txt", "/big.bin"):
            want = kind_file_bytes(path)
        if r.status != 200 or (want is not None and not want.startswith(r.body)):
            errors.append("%s: an incomplete response that is not a prefix of the right one: "
                          "%r" % (name, r))
            return
        what = "cut"
    else:
        errors.append("%s: wrong answer %r" % (name, r))
        return
    counts[what] = counts.get(what, 0) + 1


_FILES = {}


def kind_file_bytes(path):
    return _FILES.get(path)


def run_load(srv, n, errors, counts, threads=3, tls=False):
    """n requests of every kind in turn, from `threads` clients at once."""
    ks = kinds(srv)
    _FILES.update({"/kib.txt": srv.files["/kib.txt"], "/big.bin": srv.files["/big.bin"]})
    addr = srv.https if tls else srv.http
    lock = threading.Lock()

    def client(start):
        for i in range(start, n, threads):
            kind = ks[i % len(ks)]
            try:
                r = ask(addr, kind[1], kind[2], kind[3], tls=TLS_NAME if tls else None)
            except Exception as e:        # a timeout, a reset during connect...
                if tls and not isinstance(e, TimeoutError):
                    r = Reply(b"", kind[1])   # a handshake the server could not complete
                else:
                    with lock:
                        errors.append("%s: %s: %s" % (kind[0], type(e).__name__, e))
                    continue
            with lock:
                try:
                    judge(kind, r, errors, counts)
                except AssertionError as e:
                    errors.append("%s: %s" % (kind[0], e))
    ts = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(T(120))
    assert not any(t.is_alive() for t in ts), "a client hung"


def all_correct(srv, tls=False):
    """Faults off: every kind answered correctly, at once."""
    addr = srv.https if tls else srv.http
    for kind in kinds(srv):
        r = ask(addr, kind[1], kind[2], kind[3], tls=TLS_NAME if tls else None)
        assert r.complete and kind[4](r), "%s after the faults: %r" % (kind[0], r)


# ---- the tests ------------------------------------------------------------------------------------

def test_allocations_failing_at_random(tmpdir):
    """5% of all allocations fail while a mixed load runs; three rounds, each followed by a
    round without faults that must be all correct, with descriptors, threads and RSS back."""
    f = Faults(tmpdir)
    srv = _server(tmpdir, f)
    all_correct(srv)                   # warm up: thread stacks, caches, carry buffers
    base = Baseline(srv)
    rss = []
    # How many allocations fail is a matter of chance (about 55 in 3 rounds under ASan, which
    # makes fewer calls the shim sees, 75 plain): rounds go on past the third until more than
    # 50 have failed, so that the proof never hangs on a throw of the dice.
    for rnd in range(8):
        if rnd >= 3 and f.failed_total(ALLOC) > 50:
            break
        errors, counts = [], {}
        f.random(ALLOC, ppm=50000)
        run_load(srv, 130, errors, counts)
        f.off()
        assert srv.alive(), "the server died in round %d" % rnd
        assert not errors, "round %d: %s" % (rnd, errors[:5])
        all_correct(srv)
        rss.append(base.check("after round %d (%s)" % (rnd, counts)))
        print("round %d: %s, %d of %d allocations failed, RSS %d KiB" %
              (rnd, counts, f.failed_total(ALLOC), sum(f.calls(p) for p in ALLOC), rss[-1]))
    assert f.failed_total(ALLOC) > 50, "too few failures to prove anything"
    assert rss[-1] - rss[0] < 6 * 1024, "RSS grew from round to round: %s KiB" % rss
    assert not zombies_of(srv.proc.pid)


def test_allocations_failing_at_random_over_tls(tmpdir):
    """The same over HTTPS: handshakes and records allocate all along."""
    f = Faults(tmpdir)
    srv = _server(tmpdir, f, tls=True)
    all_correct(srv, tls=True)
    base = Baseline(srv)
    rss = []
    for rnd in range(2):
        errors, counts = [], {}
        f.random(ALLOC, ppm=20000)
        run_load(srv, 60, errors, counts, tls=True)
        f.off()
        assert srv.alive(), "the server died in round %d" % rnd
        assert not errors, "round %d: %s" % (rnd, errors[:5])
        all_correct(srv, tls=True)
        rss.append(base.check("after round %d (%s)" % (rnd, counts)))
    assert f.failed_total(ALLOC) > 20, "too few failures to prove anything"
    assert rss[1] - rss[0] < 6 * 1024, "RSS grew from round to round: %s KiB" % rss


def _sweep(srv, f, kind, points, tls=False, limit=2000, min_size=0):
    """Fail the 1st, 2nd, 3rd... armed call made while serving `kind`, until the request
    makes fewer calls than that; after each, the next request must be answered correctly."""
    addr = srv.https if tls else srv.http
    errors, counts = [], {}
    n = 0
    for n in range(1, limit + 1):
        f.countdown(points, n, min_size=min_size)
        try:
            r = ask(addr, kind[1], kind[2], kind[3], tls=TLS_NAME if tls else None)
        except Exception:
            r = Reply(b"", kind[1])
            if not tls:
                raise
        fired = f.mode() == 0
        f.off()
        assert srv.alive(), "%s: the server died when allocation %d failed" % (kind[0], n)
        judge(kind, r, errors, counts)
        after = ask(addr, kind[1], kind[2], kind[3], tls=TLS_NAME if tls else None)
        assert after.complete and kind[4](after), \
            "%s: not recovered after call %d failed: %r" % (kind[0], n, after)
        if not fired:
            break
    assert not errors, errors[:5]
    assert n < limit, "%s: still failing at call %d: raise the limit" % (kind[0], limit)
    return n, counts


def test_allocation_failing_at_each_point_of_each_request(tmpdir):
    """Every allocation a request of each kind makes is failed in turn (the 1st, then the
    2nd...), each with a fresh request: whichever fails, the answer is acceptable and the next
    request is right."""
    f = Faults(tmpdir)
    srv = _server(tmpdir, f)
    all_correct(srv)
    base = Baseline(srv)
    seen = {}
    for kind in kinds(srv):
        n, counts = _sweep(srv, f, kind, ALLOC)
        seen[kind[0]] = n - 1
    print("allocations per request (failed one by one): %s" % seen)
    assert seen["cgi"] > 0 and seen["echo"] > 0, seen
    base.check("after the sweep")
    assert not zombies_of(srv.proc.pid)


def test_allocation_failing_at_each_point_of_a_tls_connection(tmpdir):
    """Every allocation of a TLS connection failed in turn, its handshake's included, with
    limit_conn_per_ip 2: a connection that could not be set up gives its client's slot back
    (one that leaked slots would have every later connection refused)."""
    f = Faults(tmpdir)
    srv = _server(tmpdir, f, tls=True, extra=["limit_conn_per_ip 2"])
    all_correct(srv, tls=True)
    base = Baseline(srv)
    kind = kinds(srv)[0]
    n, counts = _sweep(srv, f, kind, ALLOC, tls=True)
    assert n > 50, "a TLS connection made only %d allocations?" % n
    base.check("after the sweep")


def test_reload_while_allocations_fail(tmpdir):
    """SIGHUP while the n-th allocation of the reload fails, for every n: the server keeps
    serving under the configuration it has, says why the reload failed, and a reload with
    memory to spare then works."""
    f = Faults(tmpdir)
    srv = _server(tmpdir, f)
    all_correct(srv)
    base = Baseline(srv)
    small = kinds(srv)[0]
    def finished():
        return srv.stderr.count("SIGHUP: configuration reloaded") + \
            srv.stderr.count("configuration not reloaded")
    n = 0
    for n in range(1, 400):
        before = finished()
        f.countdown(ALLOC, n)
        srv.signal(signal.SIGHUP)
        assert wait_until(lambda: finished() > before, 10), "reload %d did not finish" % n
        fired = f.mode() == 0
        f.off()
        assert srv.alive(), "the server died when reload allocation %d failed" % n
        r = ask(srv.http, small[1], small[2])
        assert r.complete and small[4](r), "not serving after reload allocation %d: %r" % (n, r)
        if not fired:
            break
    assert n > 10, "a reload made only %d allocations?" % n
    assert "configuration not reloaded" in srv.stderr and "out of memory" in srv.stderr
    last = srv.stderr.split("SIGHUP received")[-1]
    assert "configuration reloaded" in last, last
    all_correct(srv)
    base.check("after the reloads")


def test_descriptor_shortage_opens_pipes_spawns(tmpdir):
    """open() failing (EMFILE) answers 503 for files not yet open and for scripts; pipe() and
    posix_spawn() failing answer 503 for scripts; and the moment they succeed again, so does
    every request: a failed open is never remembered by the open-file cache."""
    f = Faults(tmpdir)
    srv = _server(tmpdir, f)
    all_correct(srv)
    base = Baseline(srv)
    root = srv.tree.root
    ks = {k[0]: k for k in kinds(srv)}
    # Files not yet in the open-file cache (small: the cache keeps no descriptor for them).
    for i, (name, path, data) in enumerate((("small file", "/fresh.txt", b"fresh\n"),
                                            ("index", "/fresh/", b"<p>fresh index</p>\n"))):
        disk = os.path.join(root, path.strip("/"), "index.html" if path.endswith("/") else "")
        os.makedirs(os.path.dirname(disk.rstrip("/")), exist_ok=True)
        with open(disk.rstrip("/"), "wb") as fh:
            fh.write(data)
        f.always(["open"])
        r = ask(srv.http, "GET", path)
        f.off()
        assert r.complete and r.status == 503, "%s while open fails: %r" % (name, r)
        assert f.failed("open") >= i + 1
        r = ask(srv.http, "GET", path)
        assert r.complete and r.status == 200 and r.body == data, \
            "%s once open works again: %r" % (name, r)
    for point, k in (("open", ks["cgi"]), ("pipe", ks["cgi"]), ("spawn", ks["cgi"]),
                     ("pipe", CGI_BODY), ("spawn", CGI_BODY)):
        before = f.failed(point)
        f.always([point])
        r = ask(srv.http, k[1], k[2], k[3])
        f.off()
        assert r.complete and r.status == 503, "%s while %s fails: %r" % (k[0], point, r)
        assert f.failed(point) > before, point
        r = ask(srv.http, k[1], k[2], k[3])
        assert r.complete and k[4](r), "%s once %s works again: %r" % (k[0], point, r)
    all_correct(srv)
    base.check("after the shortages")
    assert not zombies_of(srv.proc.pid)


def test_accept_shortage_pauses_and_resumes(tmpdir):
    """accept() failing with EMFILE: the listener pauses (no spinning: a handful of retries,
    one log line), the waiting client is served once accept works again."""
    f = Faults(tmpdir)
    srv = _server(tmpdir, f)
    all_correct(srv)
    base = Baseline(srv)
    k = kinds(srv)[0]
    f.always(["accept"])
    got = {}
    t = threading.Thread(target=lambda: got.update(r=ask(srv.http, k[1], k[2])))
    t.start()
    assert wait_until(lambda: f.failed("accept") >= 2, 5), "accept was not retried"
    t.join(0.5)
    assert t.is_alive(), "answered while accept fails: %r" % got
    tries = f.failed("accept")
    f.off()
    t.join(T(10))
    assert not t.is_alive() and got["r"].complete and k[4](got["r"]), got
    assert srv.stderr.count("pausing accepts") == 1, srv.stderr
    # logged by the accepting thread once the connection is handed on, so possibly after
    # another thread has answered it (half-sync-half-async)
    again = "accepting on %s again" % ("http://%s:%d" % srv.http)
    assert wait_until(lambda: again in srv.stderr, T(10)), srv.stderr
    print("accept failed %d times before it worked again" % tries)
    base.check("after the shortage")


def test_registration_failures(tmpdir):
    """epoll_ctl(EPOLL_CTL_ADD) failing (the kernel's memory for a registration). The acceptor serves
    the first connection of its batch itself, so a connection is first registered when it waits
    for its next request: that failing, its answer is complete and it is closed (as an idle
    keep-alive connection may be), never left unwatched, and the next one is served. (The other
    connections of a batch are registered at once and get a 503 on the raw socket instead:
    conn_create.) Then each registration a CGI request makes fails in turn, once (the n-th) and
    for good (the n-th and every later one): its script's pipes, its exit, its timer, the
    connection's set of them in the shared set. Each time the answer is a complete 503 or the
    right one, the connection is closed as the answer says (the client never has to give up),
    the script is reaped, descriptors and threads are back, and the next request is served."""
    f = Faults(tmpdir)
    srv = _server(tmpdir, f)
    all_correct(srv)
    base = Baseline(srv)
    ks = {k[0]: k for k in kinds(srv)}
    k = ks["small file"]
    for rnd in range(3):
        f.countdown(["epoll_ctl"], 1)
        with Conn(srv.http, timeout=10) as c:
            c.send(req("GET", k[2]))
            r = c.read_response()
            assert k[4](r), r
            try:
                more = c._fill()
            except TimeoutError:
                more = True
            assert not more and not c.buf, "still open though it could not be watched"
        assert f.mode() == 0 and f.failed("epoll_ctl") == rnd + 1
        r = ask(srv.http, k[1], k[2])
        assert r.complete and k[4](r), r
    base.check("after connections could not be registered")
    k = ks["cgi"]
    for mode in ("once", "from then on"):
        seen = {}
        n = 0
        for n in range(1, 50):
            if mode == "once":
                f.countdown(["epoll_ctl"], n)
            else:
                f.starting_at(["epoll_ctl"], n)
            r = ask(srv.http, k[1], k[2])
            fired = f.mode() in (0, 1)    # countdown: back to off; starting_at: always
            f.off()
            what = "registration %d failing %s" % (n, mode)
            assert srv.alive(), "the server died: " + what
            assert r.complete and (r.status == 503 or k[4](r)), "%s: %r" % (what, r)
            assert not r.gave_up, "%s: %r, but the connection stayed open" % (what, r)
            if fired:
                seen[n] = r.status
            base.check("after " + what)
            # (a script killed with its exchange is reaped by a spawner thread, just after)
            assert wait_until(lambda: not zombies_of(srv.proc.pid), 5), \
                "%s: a zombie left" % what
            r = ask(srv.http, k[1], k[2])
            assert r.complete and k[4](r), "after %s: %r" % (what, r)
            # That connection gone too, so that the next count starts with the next request's.
            base.check("after the request that followed")
            if not fired:
                break
        print("%s: %s" % (mode, seen))
        assert n > 6, "a script made only %d registrations?" % (n - 1)
        assert 503 in seen.values(), seen


def known_bug_openssl_rsa_blinding_signs_wrongly_after_an_allocation_failure(tmpdir):
    """Known bug in OpenSSL 3.0 (Debian 12's libssl3), not in lfhttpd: BN_BLINDING_update
    re-creates an RSA key's blinding every 32 uses with BN_BLINDING_create_param, whose error
    path returns the existing blinding (it frees and returns NULL only a new one), so an
    allocation failure in there is reported as success with the blinding's A and Ai left
    inconsistent: until the next re-creation, the key's signatures are wrong and clients fail
    the handshake with BAD_SIGNATURE, though allocations succeed again. ECDSA keys are not
    affected (the fault tests use one). Not collected: it fails."""
    f = Faults(tmpdir)
    env = sanitizer_env(f.env())
    srv = TLS.tls_server(tmpdir, plain=True, start=False)
    srv.env = env
    srv.start()
    TLS._find(srv)
    kind = ("small file", "GET", "/kib.txt", b"", lambda r: r.status == 200)
    for n in range(1, 2000):
        f.countdown(ALLOC, n)
        try:
            ask(srv.https, "GET", "/kib.txt", tls="a.test")
        except Exception:
            pass
        fired = f.mode() == 0
        f.off()
        for _ in range(3):
            r = ask(srv.https, "GET", "/kib.txt", tls="a.test")
            assert r.complete and kind[4](r), "after allocation %d failed: %r" % (n, r)
        if not fired:
            break
