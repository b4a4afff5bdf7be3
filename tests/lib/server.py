"""Fixtures and raw-HTTP helpers for lfhttpd integration tests.

Standard library only.  Main pieces:

  Server(binary=None, args=(), root=None, listen=('127.0.0.1:0',), threads=2)
      starts BUILD/lfhttpd --listen ... --threads N --root ROOT [args...],
      waits for the "listening on http://HOST:PORT" line(s) on stderr and
      keeps draining stdout/stderr in background threads.  stop() sends
      SIGTERM, waits, records returncode, SIGKILLs if needed.

  ConfServer(tmpdir, conf, ...)
                       a Server started with --config: `conf` (text, lines or a dict of
                       directive -> value) written to tmpdir/lfhttpd.conf by write_config;
                       root= a directory or a Tree (then .tree, .files)
  fixture_server(tmpdir, conf, **kw)
                       a ConfServer on a fresh fixture tree (tmpdir/root): `root` and conf
  write_config(dir, conf, name)   the one configuration-file writer; returns its path
  wait_until(pred, timeout, what=None)
                       poll pred() until true or T(timeout) passes; returns its last value
                       (with what=: an AssertionError naming it on timeout)
  free_port()          a loopback port outside the ephemeral range, for a test that names it

  Conn(srv)            a raw client socket with a receive buffer and an
                       HTTP/1.x response parser (Content-Length, chunked,
                       HEAD, 1xx/204/304, read-until-close).
  raw(srv, data)       send raw bytes on a fresh connection, parse one response.
  raw_bytes(srv, data) send raw bytes, return everything until close/timeout.
  req(method, path, headers, version)  build a request head.
  fixture_tree(dir)    create the fixture document root.

Timeouts are multiplied by SCALE (set by tests/conftest.py from --build: 3 for sanitizer
builds).  Use T(seconds) in tests.
"""

import calendar
import email.utils
import hashlib
import os
import random
import re
import select
import signal
import socket
import subprocess
import threading
import time

BUILD = os.environ.get("LFHTTPD_BUILD", "build")
SCALE = float(os.environ.get("LFHTTPD_SCALE", "1"))

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SANITIZER_PATTERNS = (
    "WARNING: ThreadSanitizer",
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "LeakSanitizer",
    "runtime error:",
    "ERROR: UndefinedBehaviorSanitizer",
)


def T(seconds):
    """A timeout scaled for slow (sanitizer) builds."""
    return seconds * SCALE


def _port_pool():
    """Ports outside the kernel's ephemeral range: [lo, hi) to draw from, or None."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        return None
    if lo >= 12000:
        return lo - 11000, lo
    if hi <= 54000:
        return hi + 1, hi + 11001
    return None


def free_port():
    """A loopback TCP port that no socket holds now, for a test that must name its port.

    Drawn from below the ephemeral range: a port got from bind(0) and closed again is free
    for the kernel to give to the next client socket's connect() (or to another test's
    bind(0)) before the server binds it, and then the server fails to start with 'address
    in use' -- rarely, but in a suite that makes tens of thousands of connections, now and
    then. No autobind takes a port outside that range."""
    pool = _port_pool()
    for _ in range(200 if pool else 0):
        port = random.randrange(*pool)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        return port
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def binary():
    b = BUILD if os.path.isabs(BUILD) else os.path.join(REPO, BUILD)
    return os.path.join(b, "lfhttpd")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def sanitizer_report(text):
    """Return the part of text starting at the first sanitizer report, or None."""
    best = None
    for pat in SANITIZER_PATTERNS:
        i = text.find(pat)
        if i >= 0 and (best is None or i < best):
            best = i
    if best is None:
        return None
    start = text.rfind("\n", 0, best) + 1
    # include the "=====" banner line that precedes ASan/TSan reports
    prev = text.rfind("\n", 0, max(start - 1, 0)) + 1
    if start > 0 and text[prev:start].startswith("=="):
        start = prev
    lines = text[start:].splitlines()
    if len(lines) > 80:
        lines = lines[:80] + ["... (%d more lines)" % (len(lines) - 80)]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Server process fixture

_registry_lock = threading.Lock()
_created = []   # every Server started since the last take_created()


def take_created(since=0):
    """Return (and forget) the servers created since the last call (tests/conftest.py), or
    only those after the first `since` of them (created_mark())."""
    with _registry_lock:
        out = list(_created[since:])
        del _created[since:]
    return out


def created_mark():
    """How many servers take_created() would return now: a mark for take_created(since)."""
    with _registry_lock:
        return len(_created)


# The concurrency strategy every server is started with ("" = the default, leader-followers).
CONCURRENCY = os.environ.get("LFHTTPD_TEST_CONCURRENCY", "")


def concurrency():
    return CONCURRENCY or "leader-followers"


class ServerError(Exception):
    pass


LISTEN_RE = re.compile(rb"listening on (https?)://(\[[0-9A-Fa-f:.]+\]|[^\s:/]+):(\d+)")


class Server:
    def __init__(self, binary_path=None, args=(), root=None, listen=("127.0.0.1:0",),
                 threads=2, cwd=None, env=None, expect_listeners=None, start=True,
                 start_timeout=10.0, user="root", concurrency=None):
        self.binary = binary_path or binary()
        self.cmd = [self.binary]
        # Tests run as root (CI) with 0700 temp dirs; a server started as root drops to
        # `nobody` by default, so keep root unless a test checks the drop (user=None/"nobody").
        if user is not None and os.geteuid() == 0:
            self.cmd += ["--user", user]
        for l in listen or ():
            self.cmd += ["--listen", l]
        if threads is not None:
            self.cmd += ["--threads", str(threads)]
        if root is not None:
            self.cmd += ["--root", str(root)]
        # The suite under another strategy (pytest --concurrency) passes its flag, unless the
        # test chooses the strategy another way (concurrency=False: LFHTTPD_CONCURRENCY, say).
        if concurrency is None:
            concurrency = CONCURRENCY
        if concurrency:
            self.cmd += ["--concurrency", concurrency]
        self.cmd += [str(a) for a in args]
        self.root = root
        self.cwd = cwd
        self.env = env
        self.expect_listeners = expect_listeners or max(1, len(listen or ()))
        self.start_timeout = start_timeout
        self.proc = None
        self.listeners = []          # [(scheme, host, port)]
        self.host = None
        self.port = None
        self.returncode = None
        self.killed = False          # needed SIGKILL in stop()
        self.died_early = False      # was already dead when stop() was called
        self.stop_seconds = None
        self._err = bytearray()
        self._out = bytearray()
        self._cond = threading.Condition()
        self._threads = []
        if start:
            self.start()

    # -- lifecycle --
    def start(self):
        with _registry_lock:
            _created.append(self)
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=self.cwd, env=self.env)
        for stream, buf in ((self.proc.stderr, self._err), (self.proc.stdout, self._out)):
            t = threading.Thread(target=self._drain, args=(stream, buf), daemon=True)
            t.start()
            self._threads.append(t)
        deadline = time.monotonic() + T(self.start_timeout)
        with self._cond:
            while True:
                self._scan_listeners()
                if len(self.listeners) >= self.expect_listeners:
                    break
                if self.proc.poll() is not None and self._drained():
                    self._scan_listeners()
                    if len(self.listeners) >= self.expect_listeners:
                        break
                    raise ServerError("server exited with status %s before listening; "
                                      "cmd=%r stderr:\n%s" % (self.proc.returncode, self.cmd,
                                                              self.stderr))
                left = deadline - time.monotonic()
                if left <= 0:
                    self.kill()
                    raise ServerError("no 'listening on' line after %.0fs; cmd=%r stderr:\n%s"
                                      % (T(self.start_timeout), self.cmd, self.stderr))
                self._cond.wait(min(left, 0.05))
        scheme, self.host, self.port = self.listeners[0]
        return self

    def _drained(self):
        return all(not t.is_alive() for t in self._threads)

    def _scan_listeners(self):
        self.listeners = []
        for m in LISTEN_RE.finditer(bytes(self._err)):
            host = m.group(2).decode()
            if host.startswith("["):
                host = host[1:-1]
            self.listeners.append((m.group(1).decode(), host, int(m.group(3))))

    def _drain(self, stream, buf):
        try:
            while True:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not chunk:
                    break
                with self._cond:
                    buf += chunk
                    self._cond.notify_all()
        except (OSError, ValueError):
            pass
        finally:
            with self._cond:
                self._cond.notify_all()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def wait(self, timeout):
        """Wait for exit; return the exit status or None on timeout."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self.returncode = rc
        return rc

    def stop(self, timeout=10.0):
        """SIGTERM, wait up to timeout (scaled), SIGKILL if needed.  Returns the exit status."""
        if self.proc is None:
            return None
        if self.returncode is not None and not self.alive():
            self._join()
            return self.returncode
        if self.proc.poll() is not None:
            self.died_early = True
        else:
            t0 = time.monotonic()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=T(timeout))
            except subprocess.TimeoutExpired:
                self.killed = True
                self.proc.kill()
                self.proc.wait()
            self.stop_seconds = time.monotonic() - t0
        self.returncode = self.proc.returncode
        self._join()
        return self.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.killed = True
            self.proc.kill()
            self.proc.wait()
        if self.proc is not None:
            self.returncode = self.proc.returncode
        self._join()

    def _join(self):
        for t in self._threads:
            t.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # -- output --
    @property
    def stderr(self):
        with self._cond:
            return bytes(self._err).decode("utf-8", "replace")

    @property
    def stdout(self):
        with self._cond:
            return bytes(self._out).decode("utf-8", "replace")

    def sanitizer_report(self):
        return sanitizer_report(self.stderr)

    @property
    def url(self):
        h = self.host
        if ":" in h:
            h = "[%s]" % h
        return "http://%s:%d" % (h, self.port)

    def addr(self, i=0):
        _, h, p = self.listeners[i]
        return h, p


def write_config(directory, conf, name="lfhttpd.conf"):
    """Write a configuration file: `conf` is its text (str or bytes), its lines (a list) or
    {directive: value}. Returns the path."""
    if isinstance(conf, dict):
        conf = "".join("%s %s\n" % kv for kv in conf.items())
    elif isinstance(conf, (list, tuple)):
        conf = "".join("%s\n" % line for line in conf)
    path = os.path.join(directory, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(conf.encode() if isinstance(conf, str) else conf)
    return path


def port_is_free(port, host="127.0.0.1"):
    s = socket.socket()
    try:
        s.settimeout(1)
        return s.connect_ex((host, port)) != 0
    finally:
        s.close()


class ConfServer(Server):
    """A Server configured by a file (write_config(tmpdir, conf, name)). Listeners come from
    the command line unless listen=() is given (then from the file; pass expect_listeners).
    root: a directory (--root) or a Tree (also .tree and .files). When the file sends the error
    log to a file, pass error_log=PATH so start-up finds the "listening on" lines there;
    known_port=P: no such line is expected, start-up waits for P to accept instead."""

    def __init__(self, tmpdir, conf, name="lfhttpd.conf", error_log=None, args=(),
                 known_port=None, root=None, **kw):
        self.conf_path = write_config(tmpdir, conf, name)
        self.error_log_path = error_log
        self.known_port = known_port
        if isinstance(root, Tree):
            self.tree, self.files = root, root.files
            root = root.root
        kw.setdefault("threads", 2)
        super().__init__(args=["--config", self.conf_path] + list(args), root=root, **kw)

    def _scan_listeners(self):
        super()._scan_listeners()
        if self.known_port and not self.listeners and self.proc.poll() is None:
            if not port_is_free(self.known_port):
                self.listeners = [("http", "127.0.0.1", self.known_port)]
            return
        if self.error_log_path and not self.listeners:
            try:
                with open(self.error_log_path, "rb") as f:
                    data = f.read()
            except OSError:
                return
            for m in LISTEN_RE.finditer(data):
                host = m.group(2).decode()
                if host.startswith("["):
                    host = host[1:-1]
                self.listeners.append((m.group(1).decode(), host, int(m.group(3))))


def fixture_server(tmpdir, conf="", **kw):
    """A ConfServer on a fresh fixture tree (tmpdir/root; .tree, .files): the configuration
    is `root` and then the text conf."""
    tree = fixture_tree(tmpdir)
    s = ConfServer(tmpdir, "root %s\n%s" % (tree.root, conf), **kw)
    s.tree, s.files = tree, tree.files
    return s


def wait_until(pred, timeout=5.0, what=None, step=0.02):
    """Poll pred() until it is true or T(timeout) passes (from now); returns its last value.
    With `what`, a timeout is an AssertionError that names it."""
    deadline = time.monotonic() + T(timeout)
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            break
        time.sleep(step)
    if not v and what is not None:
        raise AssertionError("timed out after %.1fs waiting for %s" % (T(timeout), what))
    return v


# --------------------------------------------------------------------------
# Raw HTTP client

class ConnectionClosed(Exception):
    """The peer closed the connection before a (complete) response arrived."""


class Response:
    def __init__(self, version, status, reason, headers, body, head_bytes):
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers          # list of (name, value) as received
        self.body = body
        self.head_bytes = head_bytes

    def header(self, name, default=None):
        n = name.lower()
        for k, v in self.headers:
            if k.lower() == n:
                return v
        return default

    def header_all(self, name):
        n = name.lower()
        return [v for k, v in self.headers if k.lower() == n]

    def has_token(self, name, token):
        """True if a comma-separated header (e.g. Connection) contains token."""
        toks = []
        for v in self.header_all(name):
            toks += [t.strip().lower() for t in v.split(",")]
        return token.lower() in toks

    def __repr__(self):
        return "<Response %s %s %r body=%d bytes>" % (self.status, self.reason,
                                                      self.headers, len(self.body))


def req(method="GET", path="/", headers=None, version="HTTP/1.1", host="localhost", body=b""):
    """Build a request.  headers: dict or list of pairs; Host added unless given/None."""
    lines = ["%s %s %s" % (method, path, version)]
    hs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    if host is not None and not any(k.lower() == "host" for k, _ in hs):
        hs.insert(0, ("Host", host))
    if body and not any(k.lower() == "content-length" for k, _ in hs):
        hs.append(("Content-Length", str(len(body))))
    for k, v in hs:
        lines.append("%s: %s" % (k, v))
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    if isinstance(path, bytes):
        raise TypeError("path must be str")
    return data + (body or b"")


def _addr_of(target):
    if isinstance(target, Server):
        return target.host, target.port
    return target


class Conn:
    """A client socket with a buffer and an HTTP/1.x response reader."""

    def __init__(self, target, timeout=10.0, rcvbuf=None, nodelay=True, source=None):
        host, port = _addr_of(target)
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(fam, socket.SOCK_STREAM)
        if source:   # the client's own address (e.g. 127.0.0.2: another client on loopback)
            self.sock.bind((source, 0))
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if nodelay:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = T(timeout)
        self.sock.settimeout(self.timeout)
        self.sock.connect((host, port))
        self.buf = bytearray()
        self.eof = False

    def send(self, data):
        self.sock.sendall(data)

    def send_slowly(self, data, chunk=1, pause=0.0):
        for i in range(0, len(data), chunk):
            self.sock.sendall(data[i:i + chunk])
            if pause:
                time.sleep(pause)

    def _fill(self, n=65536):
        """Read more into buf.  Returns False at EOF."""
        if self.eof:
            return False
        try:
            chunk = self.sock.recv(n)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def _take(self, n):
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def _read_line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                return self._take(i + 2)[:-2]
            if not self._fill():
                raise ConnectionClosed("EOF while reading a line; have %r" % bytes(self.buf[:200]))

    def _read_exact(self, n):
        while len(self.buf) < n:
            if not self._fill(max(65536, n - len(self.buf))):
                raise ConnectionClosed("EOF after %d of %d body bytes" % (len(self.buf), n))
        return self._take(n)

    def read_response(self, method="GET"):
        """Read one response.  method=HEAD means no body.  Skips nothing (1xx returned)."""
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                break
            if not self._fill():
                if self.buf:
                    raise ConnectionClosed("EOF inside response head: %r" % bytes(self.buf[:300]))
                raise ConnectionClosed("connection closed before any response byte")
        head = self._take(i + 4)
        lines = head[:-4].split(b"\r\n")
        m = re.match(rb"^(HTTP/\d\.\d) (\d{3})(?: (.*))?$", lines[0])
        if not m:
            raise AssertionError("malformed status line: %r" % lines[0])
        version = m.group(1).decode()
        status = int(m.group(2))
        reason = (m.group(3) or b"").decode("latin-1")
        headers = []
        for line in lines[1:]:
            if b":" not in line:
                raise AssertionError("malformed header line: %r" % line)
            k, v = line.split(b":", 1)
            if k != k.strip() or not k:
                raise AssertionError("malformed header name: %r" % line)
            headers.append((k.decode("latin-1"), v.strip().decode("latin-1")))
        r = Response(version, status, reason, headers, b"", head)
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return r
        te = r.header("Transfer-Encoding")
        cl = r.header_all("Content-Length")
        if te is not None and "chunked" in te.lower():
            r.body = self._read_chunked()
        elif cl:
            if len(set(cl)) != 1 or not cl[0].isdigit():
                raise AssertionError("bad Content-Length: %r" % cl)
            r.body = self._read_exact(int(cl[0]))
        else:
            while self._fill():
                pass
            r.body = self._take(len(self.buf))
        return r

    def _read_chunked(self):
        body = bytearray()
        while True:
            line = self._read_line()
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while self._read_line() != b"":   # trailers
                    pass
                return bytes(body)
            body += self._read_exact(size)
            if self._read_exact(2) != b"\r\n":
                raise AssertionError("chunk not followed by CRLF")

    def read_responses(self, methods):
        """Read len(methods) pipelined responses (methods: list of method names or int)."""
        if isinstance(methods, int):
            methods = ["GET"] * methods
        return [self.read_response(m) for m in methods]

    def wait_closed(self, timeout=5.0):
        """True if the server closes within timeout (extra data is an error), False if open."""
        deadline = time.monotonic() + T(timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return False
            before = len(self.buf)
            if not self._fill():
                return True
            if len(self.buf) > before:
                raise AssertionError("unexpected extra bytes from server: %r"
                                     % bytes(self.buf[before:before + 200]))

    def is_open(self, wait=0.3):
        """True if the connection is still open after `wait` seconds with no data."""
        return not self.wait_closed(wait)

    def read_all(self):
        """Everything until EOF (or timeout)."""
        try:
            while self._fill():
                pass
        except socket.timeout:
            pass
        return self._take(len(self.buf))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _method_of(data):
    return data.split(b" ", 1)[0].decode("latin-1", "replace")


def raw(target, data, timeout=10.0, method=None):
    """Send raw bytes on a fresh connection and parse one response."""
    with Conn(target, timeout) as c:
        c.send(data)
        return c.read_response(method or _method_of(data))


def raw_bytes(target, data, timeout=10.0):
    """Send raw bytes; return everything received until the server closes (or timeout)."""
    with Conn(target, timeout) as c:
        try:
            c.send(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return c.read_all()


def get(target, path, method="GET", headers=None, version="HTTP/1.1", timeout=10.0):
    return raw(target, req(method, path, headers, version), timeout, method)


def curl(args, timeout=30.0):
    """Run curl with proxies disabled; returns CompletedProcess (bytes output)."""
    env = dict(os.environ)
    for k in list(env):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            del env[k]
    return subprocess.run(["curl", "--noproxy", "*", "-sS", "--max-time", str(int(T(timeout)))]
                          + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, timeout=T(timeout) + 10)


# --------------------------------------------------------------------------
# Dates

IMF_RE = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d\d) "
                    r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d{4}) "
                    r"(\d\d):(\d\d):(\d\d) GMT$")


def parse_imf(value):
    """Parse a strict IMF-fixdate; returns a POSIX timestamp; raises AssertionError."""
    if value is None or not IMF_RE.match(value):
        raise AssertionError("not an IMF-fixdate: %r" % (value,))
    tm = time.strptime(value, "%a, %d %b %Y %H:%M:%S GMT")
    ts = calendar.timegm(tm)
    # weekday must be consistent
    if time.strftime("%a", time.gmtime(ts)) != value[:3]:
        raise AssertionError("wrong weekday in %r" % value)
    return ts


def imf(ts):
    return email.utils.formatdate(int(ts), usegmt=True)


# --------------------------------------------------------------------------
# Fixture document root

BIG_SIZE = 3 * 1024 * 1024


class Tree:
    def __init__(self, root):
        self.root = root
        self.files = {}   # URL path (decoded, leading /) -> bytes

    def path(self, rel):
        return os.path.join(self.root, rel.lstrip("/"))

    def mtime(self, rel):
        return os.stat(self.path(rel)).st_mtime


_big_cache = None


def big_content():
    global _big_cache
    if _big_cache is None:
        _big_cache = random.Random(20240501).randbytes(BIG_SIZE)
    return _big_cache


def fixture_tree(tmpdir):
    """Create the fixture docroot at tmpdir/root; returns a Tree."""
    root = os.path.join(tmpdir, "root")
    os.makedirs(root)
    t = Tree(root)

    def put(rel, data):
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        t.files["/" + rel] = data

    put("empty.txt", b"")
    put("one.txt", b"1")
    put("small.html", b"<!doctype html>\n<title>small</title>\n<p>small page</p>\n")
    put("kib.txt", bytes((i * 7 + 13) % 26 + 97 for i in range(1024)))
    put("big.bin", big_content())
    put("noext", b"no extension\n")
    put("data.zzunknown", b"unknown extension\n")
    put("sub/index.html", b"<!doctype html>\n<title>sub</title>\n<p>sub index</p>\n")
    put("sub/file.css", b"body { color: #123456; }\n")
    put("h\u00e9llo w\u00f6rld.txt", "h\u00e9llo w\u00f6rld\n".encode())
    put("100%.txt", b"one hundred percent\n")
    os.makedirs(os.path.join(root, "emptydir"))
    # Unreadable file: chmod 000 does not stop root (tests usually run as root),
    # so tests only check it when os.geteuid() != 0.
    put("secret.txt", b"secret\n")
    os.chmod(os.path.join(root, "secret.txt"), 0)
    # A FIFO: not a regular file; a server must not block opening/reading it.
    os.mkfifo(os.path.join(root, "fifo"))
    # Symlinks: outside the root (file and directory) and inside.
    os.symlink("/etc/passwd", os.path.join(root, "passwd-link"))
    os.symlink("/etc", os.path.join(root, "etc-link"))
    os.symlink("small.html", os.path.join(root, "link-small.html"))
    t.files["/link-small.html"] = t.files["/small.html"]
    os.symlink("sub", os.path.join(root, "link-sub"))
    # Give every file a fixed, old mtime (whole seconds) so Last-Modified is checkable.
    for dirpath, dirnames, filenames in os.walk(root):
        for n in filenames:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                os.utime(p, (1700000000, 1700000000))
    return t
