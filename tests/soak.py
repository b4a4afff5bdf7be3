#!/usr/bin/env python3
"""lfhttpd soak: a bounded run of mixed, checked traffic, reloads and log rotations.

    PYTHONPATH=tests python3 tests/soak.py --build build --seconds 600 [--out DIR]  (make soak)

One server (plain and TLS listeners, test endpoints, CGI, compression, an access log) gets,
for --seconds:
  - keep-alive clients: files of every size, HEAD, 404, ranges, conditionals (304),
    compressed responses, test endpoints (bytes, stream, delay, echo), CGI (a script, a body
    through a script, a slow streamed script); every body checked by hash;
  - pipelining clients: batches of those requests in one write, answers checked in order;
  - HTTPS clients with session resumption (TLS 1.2, a saved session offered each time) and
    without (TLS 1.3, a full handshake each time);
  - slow clients: a request sent a few bytes at a time, a response read slowly through a
    small receive buffer;
  - abandoning clients (not checked): a head left half-sent, a response or a CGI script left
    half-read, a body cut short, a TLS handshake dropped, a connection opened and closed;
  - SIGHUP every 3 s (the configuration alternates between two versions), and every 10 s the
    access log renamed and SIGUSR1.
Every 2 s it samples the server's RSS, descriptors, threads, the requests it served and its
error-log lines.

It fails on: any error a well-behaved client sees (wrong status, body or framing, a closed
connection, a timeout); the server dying or not exiting 0 on SIGTERM; growth — the RSS of the
second half of the run (after a warm-up) above the first half's by more than the margin, or,
once the load stops and the same files are fetched again, descriptors or threads not back to
what they were after the warm-up; error-log lines at level error other than the ones the
abandoning clients cause. The machine is shared, so nothing is judged by speed.

Output: the samples (CSV) and a summary (JSON) in --out, a table on stdout, and last the line
"N passed, N failed" (one per check).
"""

import argparse
import csv
import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import zlib


RSS_MARGIN_KIB = 8 * 1024       # growth allowed between the halves of the run (after warm-up)
SAMPLE_EVERY = 2.0
HUP_EVERY = 3.0
ROTATE_EVERY = 10.0
# error-log lines (level error) that abandoning clients legitimately cause: a script killed
# with its client, and what its stderr said
EXPECTED_ERRORS = (
    re.compile(r"cgi /cgi-bin/\S+: (?!cannot start|the script could not be started)"),
)


def sha(b):
    return hashlib.sha256(b).hexdigest()


class Stop(Exception):
    pass


class Soak:
    def __init__(self, args):
        self.args = args
        self.deadline = None
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.errors = []           # what well-behaved clients saw
        self.counts = {}           # requests by client kind
        self.samples = []
        self.resumed = 0
        self.resume_tries = 0

    # ---- bookkeeping ------------------------------------------------------------------------

    def count(self, kind, n=1):
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + n

    def error(self, kind, what):
        with self.lock:
            if len(self.errors) < 200:
                self.errors.append("%.1fs %s: %s" % (time.monotonic() - self.t0, kind, what))
        print("ERROR %s: %s" % (kind, what), flush=True)

    def running(self):
        return not self.stop.is_set() and time.monotonic() < self.deadline

    # ---- the server ---------------------------------------------------------------------------

    def setup(self):
        from lib import server as S
        from lib.procs import write_script
        from lib.tls import the_pki
        self.S = S
        self.tmp = tempfile.mkdtemp(prefix="lfhttpd-soak-")
        tree = S.fixture_tree(self.tmp)
        root = tree.root
        rng = random.Random(7)
        files = dict(tree.files)
        for name, size in (("t-16k.html", 16 * 1024), ("t-64k.css", 64 * 1024),
                           ("t-300k.js", 300 * 1024)):
            words = [b"alpha", b"beta", b"gamma", b"delta", b"<div>", b"</div>", b"\n"]
            data = b" ".join(rng.choice(words) for _ in range(size // 5))[:size]
            with open(os.path.join(root, name), "wb") as f:
                f.write(data)
            files["/" + name] = data
        files = {p: d for p, d in files.items()
                 if os.path.isfile(os.path.join(root, p.lstrip("/"))) and
                 not os.path.islink(os.path.join(root, p.lstrip("/"))) and "secret" not in p}
        self.files = files
        cgi = os.path.join(root, "cgi-bin")
        write_script(cgi, "hello", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n"
                                   "hello from cgi\\n'\n")
        write_script(cgi, "cat", "#!/bin/sh\nprintf 'Content-Type: application/octet-stream"
                                 "\\n\\n'\nexec cat\n")
        write_script(cgi, "slow", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\n"
                                  "i=0\nwhile [ $i -lt 20 ]; do echo \"line $i\"; i=$((i+1)); "
                                  "sleep 0.02; done\n")
        p = the_pki()
        self.pki = p
        self.access_log = os.path.join(self.tmp, "access.log")
        self.conf = os.path.join(self.tmp, "soak.conf")
        self.conf_version = 0
        self.write_conf()
        env = dict(os.environ)
        srv = S.Server(root=root, listen=("127.0.0.1:0",), threads=self.args.threads,
                       args=["--config", self.conf], expect_listeners=2, env=env)
        self.srv = srv
        self.http = next((h, port) for s, h, port in srv.listeners if s == "http")
        self.https = next((h, port) for s, h, port in srv.listeners if s == "https")
        self.pid = srv.proc.pid

    def write_conf(self):
        p = self.pki
        tag = "A" if self.conf_version % 2 == 0 else "B"
        lines = [
            "tls_listen 127.0.0.1:0",
            "tls_certificate %s %s" % (p.a_chain, p.a_key),
            "test_endpoints /_test/",
            "access_log %s" % self.access_log,
            "cgi_timeout 10s",
            "add_header X-Soak-Generation %s" % tag,
            "location /cgi-bin/ {",
            "    handler cgi",
            "}",
        ]
        with open(self.conf + ".new", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(self.conf + ".new", self.conf)
        self.conf_version += 1

    # ---- requests and what they must get ------------------------------------------------------

    def catalogue(self):
        """(name, request bytes, method, check(Response) -> None or a complaint)."""
        from lib.server import req
        files = self.files
        out = []

        def body_is(data, status=200):
            def check(r):
                if r.status != status:
                    return "status %d, want %d" % (r.status, status)
                if sha(r.body) != sha(data):
                    return "body of %d bytes differs from the %d expected" % (len(r.body), len(data))
            return check
        for path, data in sorted(files.items()):
            out.append(("GET " + path, req("GET", urllib.parse.quote(path)), "GET",
                        body_is(data)))
        big = "/big.bin"
        data = files[big]
        out.append(("HEAD big", req("HEAD", big), "HEAD",
                    lambda r: None if r.status == 200 and r.header("Content-Length") ==
                    str(len(data)) else "HEAD: %r" % r))
        out.append(("404", req("GET", "/no/such/file"), "GET",
                    lambda r: None if r.status == 404 else "status %d" % r.status))
        out.append(("range", req("GET", big, headers=[("Range", "bytes=1000-1999")]), "GET",
                    body_is(data[1000:2000], 206)))
        out.append(("suffix range", req("GET", big, headers=[("Range", "bytes=-500")]), "GET",
                    body_is(data[-500:], 206)))
        out.append(("multirange", req("GET", "/kib.txt", headers=[("Range", "bytes=0-9,20-29")]),
                    "GET", lambda r: None if r.status == 206 and r.header("Content-Type", "")
                    .startswith("multipart/byteranges") and files["/kib.txt"][:10] in r.body and
                    files["/kib.txt"][20:30] in r.body else "multirange: %r" % r))
        etag = self.etag("/small.html")
        out.append(("304 etag", req("GET", "/small.html", headers=[("If-None-Match", etag)]),
                    "GET", lambda r: None if r.status == 304 else "status %d" % r.status))
        out.append(("304 date", req("GET", "/kib.txt", headers=[
            ("If-Modified-Since", self.last_modified("/kib.txt"))]), "GET",
            lambda r: None if r.status == 304 else "status %d" % r.status))
        for path in ("/t-16k.html", "/t-300k.js"):
            want = files[path]

            def gz(r, want=want):
                if r.status != 200:
                    return "status %d" % r.status
                body = r.body
                if r.header("Content-Encoding") == "gzip":
                    body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
                elif r.header("Content-Encoding") not in (None, "identity"):
                    return "coding %r" % r.header("Content-Encoding")
                return None if sha(body) == sha(want) else "decoded body differs"
            out.append(("gzip " + path, req("GET", path, headers=[("Accept-Encoding", "gzip")]),
                        "GET", gz))
        ref = self.reference("/_test/bytes/100000")
        out.append(("bytes", req("GET", "/_test/bytes/100000"), "GET", body_is(ref)))
        out.append(("stream", req("GET", "/_test/stream/25"), "GET",
                    lambda r: None if r.status == 200 and len(r.body.splitlines()) == 25 else
                    "stream: %r" % r))
        out.append(("delay", req("GET", "/_test/delay/30"), "GET",
                    lambda r: None if r.status == 200 and json.loads(r.body) == {"delay_ms": 30}
                    else "delay: %r" % r))
        echo = bytes(range(256)) * 20

        def echoed(r):
            if r.status != 200:
                return "status %d" % r.status
            return None if json.loads(r.body).get("body") == echo.decode("latin-1") else \
                "echo body differs"
        out.append(("echo", req("POST", "/_test/echo", body=echo), "POST", echoed))
        out.append(("cgi", req("GET", "/cgi-bin/hello"), "GET", body_is(b"hello from cgi\n")))
        post = bytes((i * 31) % 256 for i in range(50000))
        out.append(("cgi body", req("POST", "/cgi-bin/cat", body=post), "POST", body_is(post)))
        slow = b"".join(b"line %d\n" % i for i in range(20))
        out.append(("cgi stream", req("GET", "/cgi-bin/slow"), "GET", body_is(slow)))
        return out

    def etag(self, path):
        from lib.server import get
        return get(self.http, path).header("ETag")

    def last_modified(self, path):
        from lib.server import get
        return get(self.http, path).header("Last-Modified")

    def reference(self, path):
        from lib.server import get
        r = get(self.http, path)
        assert r.status == 200, r
        return r.body

    # ---- well-behaved clients -------------------------------------------------------------------

    def keepalive_client(self, seed):
        from lib.server import Conn
        rng = random.Random(seed)
        cat = self.catalogue_list
        while self.running():
            try:
                with Conn(self.http, timeout=30) as c:
                    for _ in range(rng.randint(5, 40)):
                        if not self.running():
                            break
                        name, data, method, check = rng.choice(cat)
                        c.send(data)
                        r = c.read_response(method)
                        bad = check(r)
                        if bad:
                            self.error("keep-alive " + name, bad)
                        self.count("keep-alive")
            except Exception as e:
                self.error("keep-alive", "%s: %s" % (type(e).__name__, e))
                time.sleep(0.1)

    def pipeline_client(self, seed):
        from lib.server import Conn
        rng = random.Random(seed)
        cat = self.catalogue_list
        while self.running():
            batch = [rng.choice(cat) for _ in range(rng.randint(2, 10))]
            try:
                with Conn(self.http, timeout=30) as c:
                    c.send(b"".join(b[1] for b in batch))
                    for name, data, method, check in batch:
                        r = c.read_response(method)
                        bad = check(r)
                        if bad:
                            self.error("pipelined " + name, bad)
                    self.count("pipelined", len(batch))
            except Exception as e:
                self.error("pipelined", "%s: %s" % (type(e).__name__, e))
                time.sleep(0.1)

    def tls_client(self, seed, resume):
        from lib.server import Conn
        from lib.tls import TLSConn, client_ctx
        rng = random.Random(seed)
        small = [c for c in self.catalogue_list if "cgi" not in c[0] and "big" not in c[0]]
        ctx = client_ctx(maxv=ssl.TLSVersion.TLSv1_2) if resume else \
            client_ctx(minv=ssl.TLSVersion.TLSv1_3)
        session = None
        while self.running():
            try:
                c = Conn(self.https, timeout=30)
                s = ctx.wrap_socket(c.sock, server_hostname="a.test",
                                    session=session if resume else None)
                c.sock = s
                try:
                    for _ in range(rng.randint(1, 5)):
                        name, data, method, check = rng.choice(small)
                        c.send(data)
                        r = c.read_response(method)
                        bad = check(r)
                        if bad:
                            self.error("https " + name, bad)
                        self.count("https resumed" if resume else "https full")
                    if resume:
                        with self.lock:
                            self.resume_tries += session is not None
                            self.resumed += s.session_reused
                        session = s.session
                finally:
                    c.close()
            except Exception as e:
                self.error("https", "%s: %s" % (type(e).__name__, e))
                time.sleep(0.1)

    def slow_client(self, seed):
        from lib.server import Conn, req
        rng = random.Random(seed)
        want = self.files["/t-300k.js"]
        while self.running():
            try:
                with Conn(self.http, timeout=60, rcvbuf=4096) as c:
                    c.send_slowly(req("GET", "/t-300k.js"), chunk=7, pause=0.02)
                    got = bytearray()
                    head = b""
                    while b"\r\n\r\n" not in head:
                        chunk = c.sock.recv(1024)
                        if not chunk:
                            raise ConnectionError("closed in the head")
                        head += chunk
                    h, _, rest = head.partition(b"\r\n\r\n")
                    got += rest
                    m = re.search(rb"Content-Length: (\d+)", h)
                    if not h.startswith(b"HTTP/1.1 200") or not m:
                        self.error("slow", "head %r" % h[:200])
                        continue
                    n = int(m.group(1))
                    while len(got) < n and self.running():
                        chunk = c.sock.recv(2048)
                        if not chunk:
                            raise ConnectionError("closed after %d of %d bytes" % (len(got), n))
                        got += chunk
                        time.sleep(rng.choice((0, 0.001, 0.005)))
                    if len(got) == n and sha(bytes(got)) != sha(want):
                        self.error("slow", "body differs")
                    self.count("slow")
            except Exception as e:
                self.error("slow", "%s: %s" % (type(e).__name__, e))
                time.sleep(0.1)

    # ---- abandoning clients (not checked) ---------------------------------------------------

    def abandoning_client(self, seed):
        from lib.server import req
        from lib.tls import client_hello
        rng = random.Random(seed)
        hello = client_hello()
        acts = [
            lambda s: s.sendall(b"GET /kib.txt HTTP/1.1\r\nHost: x\r\nX-Half: "),
            lambda s: (s.sendall(req("GET", "/big.bin")), s.recv(10000)),
            lambda s: (s.sendall(req("GET", "/cgi-bin/slow")), s.recv(100)),
            lambda s: s.sendall(req("POST", "/cgi-bin/cat", headers=[
                ("Content-Length", "1000000")]) + b"x" * 1000),
            lambda s: (s.sendall(req("GET", "/_test/drip?numbytes=100&duration=2")),
                       s.recv(200)),
            lambda s: None,
        ]
        while self.running():
            tls = rng.random() < 0.15
            try:
                s = socket.create_connection(self.https if tls else self.http, timeout=10)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                if tls:
                    s.sendall(hello[:rng.randint(1, len(hello))])
                else:
                    rng.choice(acts)(s)
                if rng.random() < 0.3:     # an abrupt close: RST
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                s.close()
                self.count("abandoned")
            except OSError:
                pass
            time.sleep(rng.choice((0.01, 0.05, 0.1)))

    # ---- signals and samples --------------------------------------------------------------------

    def signaller(self):
        next_hup = time.monotonic() + HUP_EVERY
        next_rotate = time.monotonic() + ROTATE_EVERY
        while self.running():
            now = time.monotonic()
            if now >= next_hup:
                self.write_conf()
                self.srv.signal(signal.SIGHUP)
                self.count("SIGHUP")
                next_hup = now + HUP_EVERY
            if now >= next_rotate:
                rotated = self.access_log + ".1"
                if os.path.exists(self.access_log):
                    os.replace(self.access_log, rotated)
                self.srv.signal(signal.SIGUSR1)
                self.count("SIGUSR1")
                time.sleep(0.5)
                if os.path.exists(rotated):
                    self.check_log(rotated)
                    os.unlink(rotated)     # keep the disk bounded
                next_rotate = now + ROTATE_EVERY
            time.sleep(0.1)

    def check_log(self, path):
        with open(path, "rb") as f:
            data = f.read()
        if data and not data.endswith(b"\n"):
            self.error("access log", "a torn last line in the rotated log")
        self.count("log lines", data.count(b"\n"))

    def sample(self):
        from lib.probe import fd_count
        from lib.procs import rss_kib
        from lib.fault import task_count
        try:
            m = self.metrics()
        except Exception as e:
            m = {}
            self.error("metrics", "%s: %s" % (type(e).__name__, e))
        err = self.srv.stderr
        row = {
            "t": round(time.monotonic() - self.t0, 1),
            "rss_kib": rss_kib(self.pid),
            "fds": fd_count(self.pid),
            "threads": task_count(self.pid),
            "requests": int(m.get("lfhttpd_requests_total", 0)),
            "connections": int(sum(v for k, v in m.items() if k.startswith("lfhttpd_connections{"))),
            "cgi_running": int(m.get("lfhttpd_cgi_running", 0)),
            "error_lines": err.count("[error]"),
            "reloads": err.count("configuration reloaded"),
        }
        self.samples.append(row)
        print("%(t)7.1fs  rss %(rss_kib)7d KiB  fds %(fds)4d  threads %(threads)3d  "
              "requests %(requests)8d  conns %(connections)4d  cgi %(cgi_running)2d  "
              "errors %(error_lines)3d  reloads %(reloads)4d" % row, flush=True)

    def metrics(self):
        from lib.server import get
        r = get(self.http, "/metrics")
        out = {}
        for line in r.body.decode().splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                try:
                    out[k] = float(v)
                except ValueError:
                    pass
        return out

    def warm(self):
        """Fetch everything once (what the open-file cache keeps open), then settle."""
        from lib.server import Conn
        with Conn(self.http, timeout=30) as c:
            for name, data, method, check in self.catalogue_list:
                c.send(data)
                r = c.read_response(method)
                bad = check(r)
                if bad:
                    self.error("warm-up " + name, bad)
        # Compressed variants of the larger files are made in the background and kept open
        # (memfds) with their file's entry: wait for them, so that the descriptors compared
        # are the same set.
        from lib.server import get
        for path in ("/t-16k.html", "/t-300k.js"):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and get(self.http, path, headers={
                    "Accept-Encoding": "gzip"}).header("Content-Encoding") != "gzip":
                time.sleep(0.1)
        from lib.fault import settle
        settle(self.srv)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:        # connections of the warm-up gone
            if int(sum(v for k, v in self.metrics().items()
                       if k.startswith("lfhttpd_connections{"))) <= 1:
                break
            time.sleep(0.1)

    # ---- the run -----------------------------------------------------------------------------------

    def run(self):
        from lib.probe import fd_count
        from lib.fault import task_count
        self.setup()
        self.t0 = time.monotonic()
        self.catalogue_list = self.catalogue()
        self.warm()
        base_fds, base_threads = fd_count(self.pid), task_count(self.pid)
        print("soak: %d s, server pid %d, %d request kinds, baseline %d descriptors, %d threads"
              % (self.args.seconds, self.pid, len(self.catalogue_list), base_fds, base_threads),
              flush=True)
        self.deadline = time.monotonic() + self.args.seconds
        workers = []
        for i in range(2):
            workers.append(threading.Thread(target=self.keepalive_client, args=(i,)))
        workers.append(threading.Thread(target=self.pipeline_client, args=(10,)))
        workers.append(threading.Thread(target=self.tls_client, args=(20, True)))
        workers.append(threading.Thread(target=self.tls_client, args=(21, False)))
        workers.append(threading.Thread(target=self.slow_client, args=(30,)))
        for i in range(2):
            workers.append(threading.Thread(target=self.abandoning_client, args=(40 + i,)))
        workers.append(threading.Thread(target=self.signaller))
        for w in workers:
            w.daemon = True
            w.start()
        next_sample = time.monotonic()
        while time.monotonic() < self.deadline:
            if not self.srv.alive():
                self.error("server", "died (status %s)" % self.srv.proc.poll())
                break
            if time.monotonic() >= next_sample:
                self.sample()
                next_sample += SAMPLE_EVERY
            time.sleep(0.05)
        self.stop.set()
        for w in workers:
            w.join(90)
        hung = [w.name for w in workers if w.is_alive()]
        if hung:
            self.error("clients", "did not finish: %s" % hung)

        checks = []
        alive = self.srv.alive()
        checks.append(("the server ran to the end", alive, ""))
        # Quiet again: the same fetch as the warm-up, then descriptors and threads as then.
        end_fds = end_threads = None
        if alive:
            self.warm()
            self.sample()
            end_fds, end_threads = fd_count(self.pid), task_count(self.pid)
            # The warm-up's last connection (and the memfd a /metrics answer is sent from) may
            # still be closing on the server's side: a leak stays, a closing descriptor goes.
            # Bounded from the last response received.
            settle_until = time.monotonic() + 10
            while end_fds > base_fds and time.monotonic() < settle_until:
                time.sleep(0.1)
                end_fds = fd_count(self.pid)
        # (fewer is no leak: the baseline may have caught a descriptor on its way out)
        checks.append(("descriptors back to the baseline", end_fds is not None and
                       end_fds <= base_fds,
                       "%s, baseline %d" % (end_fds, base_fds)))
        checks.append(("threads back to the baseline", end_threads == base_threads,
                       "%s, baseline %d" % (end_threads, base_threads)))
        rss = [s["rss_kib"] for s in self.samples]
        warm = max(1, len(rss) * 3 // 10)          # the first 30%: caches and arenas filling
        late = rss[warm:]
        half = len(late) // 2
        if half >= 2:
            first, second = statistics.median(late[:half]), statistics.median(late[half:])
            checks.append(("RSS flat after the warm-up", second - first <= RSS_MARGIN_KIB,
                           "median %d KiB, then %d KiB (margin %d)" % (first, second,
                                                                       RSS_MARGIN_KIB)))
        else:
            checks.append(("RSS flat after the warm-up", False, "too few samples"))
        checks.append(("no error a well-behaved client saw", not self.errors,
                       "%d: %s" % (len(self.errors), self.errors[:5])))
        unexpected = [l for l in self.srv.stderr.splitlines() if "[error]" in l and
                      not any(p.search(l) for p in EXPECTED_ERRORS)]
        checks.append(("no unexpected error-log line", not unexpected, "%s" % unexpected[:5]))
        checks.append(("TLS sessions resumed", self.resumed > 0,
                       "%d of %d offered" % (self.resumed, self.resume_tries)))
        # (two signals close together are one reload: signals coalesce)
        reloads = self.srv.stderr.count("SIGHUP: configuration reloaded")
        failed_reloads = self.srv.stderr.count("configuration not reloaded")
        checks.append(("reloads all succeeded", reloads > 0 and failed_reloads == 0,
                       "%d reloads for %d signals, %d failed" % (
                           reloads, self.counts.get("SIGHUP", 0), failed_reloads)))
        rc = self.srv.stop(timeout=60) if alive else None
        checks.append(("SIGTERM: exit status 0", rc == 0, "status %s" % rc))
        rep = self.srv.sanitizer_report()
        checks.append(("no sanitizer report", rep is None, (rep or "")[:2000]))
        self.report(checks)
        return checks

    def report(self, checks):
        out = self.args.out
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "samples.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(self.samples[0].keys()))
            w.writeheader()
            w.writerows(self.samples)
        rss = [s["rss_kib"] for s in self.samples]
        summary = {
            "seconds": self.args.seconds,
            "threads": self.args.threads,
            "requests": self.counts,
            "tls_resumed": [self.resumed, self.resume_tries],
            "rss_kib": {"min": min(rss), "max": max(rss), "first": rss[0], "last": rss[-1]},
            "fds": [s["fds"] for s in self.samples][-1],
            "checks": [{"check": n, "ok": ok, "detail": d} for n, ok, d in checks],
            "errors": self.errors[:50],
            "error_log_errors": [l for l in self.srv.stderr.splitlines() if "[error]" in l][:50],
        }
        with open(os.path.join(out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        print("requests by client: %s" % json.dumps(self.counts, sort_keys=True))
        print("TLS: %d of %d offered sessions resumed" % (self.resumed, self.resume_tries))
        lines = [l for l in self.srv.stderr.splitlines() if "[error]" in l]
        kinds = {}
        for l in lines:
            k = re.sub(r"^\S+ \[error\] ", "", l)
            k = re.sub(r"\d+", "N", k)
            kinds[k] = kinds.get(k, 0) + 1
        for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
            print("error log: %4d x %s" % (n, k))
        print("RSS: first %d KiB, min %d, max %d, last %d" % (rss[0], min(rss), max(rss), rss[-1]))
        for name, ok, detail in checks:
            print("%s %s%s" % ("PASS" if ok else "FAIL", name, (" (%s)" % detail) if detail else ""))
        print("samples and summary in %s" % out)
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    os.environ["LFHTTPD_BUILD"] = args.build
    if args.out is None:
        args.out = os.path.join(args.build, "soak")
    soak = Soak(args)
    try:
        checks = soak.run()
    except Exception as e:
        import traceback
        traceback.print_exc()
        checks = [("the soak ran", False, "%s: %s" % (type(e).__name__, e))]
        try:
            soak.srv.kill()
        except Exception:
            pass
    passed = sum(1 for c in checks if c[1])
    failed = len(checks) - passed
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
