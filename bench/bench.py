#!/usr/bin/env python3
"""bench.py — lfhttpd's benchmark harness (`make bench`); docs/PERFORMANCE.md explains it.

Side by side on loopback, same docroot, same number of threads/workers: lfhttpd, nginx, h2o,
lighttpd and bench/ceiling (a fixed-response epoll program: the most this machine can do).

Phases (BENCH_PHASES, default all, in this order):
  throughput  wrk scenarios interleaved: per round, every scenario, every server (the server
              order rotates each round); median and min-max over rounds of req/s (MiB/s for the
              10 MiB file), p50/p99 latency, server CPU per request (utime+stime of the server's
              processes from /proc), context switches per request, lfhttpd's ratio to each.
  strace      syscalls per request by type: `strace -f -c` attached to the running servers
              during one wrk run (1 KiB, keep-alive, 64 connections).
  callgrind   user-space instructions per request (valgrind --tool=callgrind, one thread or
              process each, 16 keep-alive connections, a fixed number of requests counted after
              a warm-up), heap allocation calls per request, top functions by own cost.
  idle        user-space memory per idle keep-alive connection: RSS growth of the server's
              processes with BENCH_IDLE_CONNS connections that each made one request.
  rules       lfhttpd with site rules (2,000 exact and prefix redirects, 100 pattern rules, 20
              of them beginning with a wildcard; none matches the file) against lfhttpd without:
              req/s of the 1 KiB file (interleaved rounds; the ratio) and instructions per
              request by callgrind (the growth). Targets: ratio >= 0.97, growth < 5 %.
  strategies  lfhttpd alone, one instance per concurrency strategy (BENCH_STRATEGIES, default
              leader-followers, half-sync-half-async, reuseport, leader-followers-edge; same
              thread count), interleaved
              over rounds, under four loads (BENCH_STRATEGY_LOADS): short handlers (1 KiB file),
              long handlers (a CGI script that sleeps BENCH_CGI_MS), skewed (4 busy connections
              among BENCH_SKEW_IDLE idle keep-alive ones) and mixed (4 connections on the 1 KiB
              file while 16 others run the CGI script). Per run: req/s, p50/p99, context
              switches, heap allocation calls (bench/alloccount.c, LD_PRELOAD) and CPU time per
              request. A strategy this build of lfhttpd rejects is skipped with a note.

BENCH_LFHTTPD_CONF: configuration lines (separated by ';') appended to every lfhttpd's, to
measure a feature's cost: e.g. "compress_cache_dir /tmp/c;compress_dictionary /*.html".
BENCH_CALLGRIND_AE: an Accept-Encoding the callgrind phase's requests send ("browser": a
browser's; default none), so that negotiating a representation is counted too.

Writes build/bench/report.md and build/bench/results.json; prints a summary.
Python standard library only. Every server runs in the foreground as a child of this script, in
its own process group, and is stopped by that group's id; nothing is left running.
"""
import json
import os
import re
import resource
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "bench")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


QUICK = os.environ.get("BENCH_QUICK", "0") not in ("", "0")
OUT = os.path.abspath(os.environ.get("BENCH_OUT", os.path.join(REPO, "build", "bench")))
RUN = os.path.join(OUT, "run")
BUILD = os.path.abspath(os.environ.get("BENCH_BUILD", os.path.join(REPO, "build")))
ROUNDS = env_int("BENCH_ROUNDS", 1 if QUICK else 3)
DURATION = env_int("BENCH_DURATION", 1 if QUICK else 5)
THREADS = env_int("BENCH_THREADS", os.cpu_count() or 1)
WRK_THREADS = env_int("BENCH_WRK_THREADS", 1)
LOGS = os.environ.get("BENCH_LOGS", "0") not in ("", "0")
CG_REQUESTS = env_int("BENCH_CALLGRIND_REQUESTS", 1000 if QUICK else 20000)
CG_SERVERS = os.environ.get("BENCH_CALLGRIND_SERVERS", "lfhttpd" if QUICK else "")  # "": all
STRACE_SECONDS = env_int("BENCH_STRACE_SECONDS", 1 if QUICK else 3)
IDLE_CONNS = env_int("BENCH_IDLE_CONNS", 500 if QUICK else 10000)
TLS_MODE = os.environ.get("BENCH_TLS", "auto")  # auto | 0 | peers (peers even without lfhttpd TLS)
# lfhttpd variants run as extra servers "lfhttpd-NAME" with configuration lines appended:
# BENCH_VARIANTS="batch1:leader_batch 1;hsha:concurrency half-sync-half-async|leader_batch 1"
VARIANTS = {"lfhttpd-" + v.split(":", 1)[0].strip(): v.split(":", 1)[1].split("|")
            for v in os.environ.get("BENCH_VARIANTS", "").split(";") if ":" in v}
LFHTTPD_EXTRA = []  # configuration lines this build needs (see main)
PHASES = [p for p in os.environ.get("BENCH_PHASES",
                                    "throughput,strace,callgrind,idle,rules,strategies")
          .split(",") if p]
# the strategies phase: lfhttpd's concurrency strategies side by side
STRATEGIES = [s.strip() for s in os.environ.get(
    "BENCH_STRATEGIES", "leader-followers,half-sync-half-async,reuseport,leader-followers-edge")
    .split(",") if s.strip()]
STRATEGY_LOADS = [s.strip() for s in os.environ.get(
    "BENCH_STRATEGY_LOADS", "short,long,skewed,mixed").split(",") if s.strip()]
STRATEGY_ROUNDS = env_int("BENCH_STRATEGY_ROUNDS", ROUNDS)
STRATEGY_DURATION = env_int("BENCH_STRATEGY_DURATION", DURATION)
SKEW_IDLE = env_int("BENCH_SKEW_IDLE", 200 if QUICK else 2000)
CGI_MS = env_int("BENCH_CGI_MS", 20)
# configuration lines added to every strategy's instance, `|`-separated: "leader_batch 1"
STRATEGY_CONF = [x.strip() for x in os.environ.get("BENCH_STRATEGY_CONF", "").split("|") if x.strip()]


T_START = time.monotonic()


def log(msg):
    if msg.startswith("=="):
        msg = f"{msg}   [{time.monotonic() - T_START:.0f} s]"
    print(msg, flush=True)


# ---- children: started in their own process group, stopped by that id --------------------------

CHILDREN = []  # Popen objects still to be reaped


def spawn(argv, **kw):
    p = subprocess.Popen(argv, start_new_session=True, **kw)
    CHILDREN.append(p)
    return p


def exited(p):
    """True once p has exited. Never reaps it: until p.wait(), its pid (and so the id of the
    process group it leads) cannot be given to another process, so signalling the group stays
    safe."""
    if p.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def stop(p, sig=signal.SIGTERM, grace=10.0):
    """Signal p's process group, wait up to `grace` s, SIGKILL what is left of the group (the
    workers of a master, say), then reap p."""
    if p.returncode is None:  # not reaped yet: the group id is still ours
        if not exited(p):
            os.killpg(p.pid, sig)
            deadline = time.monotonic() + grace
            while not exited(p) and time.monotonic() < deadline:
                time.sleep(0.05)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            log(f"bench: pid {p.pid} did not exit after SIGKILL")
    if p in CHILDREN:
        CHILDREN.remove(p)


def stop_all(*_):
    for p in list(CHILDREN):
        stop(p, grace=3.0)


def on_signal(sig, _frame):
    stop_all()
    sys.exit(128 + sig)


# ---- /proc sampling ---------------------------------------------------------------------------

def tree_pids(root):
    """root and all its descendants (nginx and lighttpd workers)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def cpu_ticks(pids, user_only=False):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        total += int(fields[11]) + (0 if user_only else int(fields[12]))  # utime, stime
    return total


def status_sum(pids, keys, per_thread=False):
    total = 0
    for pid in pids:
        paths = [f"/proc/{pid}/status"]
        if per_thread:
            try:
                paths = [f"/proc/{pid}/task/{t}/status" for t in os.listdir(f"/proc/{pid}/task")]
            except OSError:
                continue
        for path in paths:
            try:
                with open(path) as f:
                    for line in f:
                        k, _, v = line.partition(":")
                        if k in keys:
                            total += int(v.split()[0])
            except OSError:
                pass
    return total


def ctx_switches(pids):
    return status_sum(pids, ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"), True)


def rss_kib(pids):
    return status_sum(pids, ("VmRSS",))


def system_busy_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6]  # user nice system irq softirq (not idle, iowait, steal)


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


# ---- fixtures, certificates, ports --------------------------------------------------------------

FIXTURES = {"1k.html": 1024, "256k.bin": 256 * 1024, "10m.bin": 10 * 1024 * 1024}


# The compression scenarios: a real ~90 KiB HTML page and a ~283 KiB JavaScript
# bundle, from Debian's packages of the bench set (valgrind's manual, libjs-jquery).
COMPRESS_FIXTURES = {"page.html": "/usr/share/doc/valgrind/html/manual-core-adv.html",
                     "bundle.js": "/usr/share/javascript/jquery/jquery.js"}
BROWSER_AE = "Accept-Encoding: gzip, deflate, br, zstd"
# The compression fixtures the selected scenarios use: the only ones each server is warmed on.
WARM_FIXTURES = list(COMPRESS_FIXTURES)


def make_root(root):
    os.makedirs(root, exist_ok=True)
    for name, src in COMPRESS_FIXTURES.items():
        path = os.path.join(root, name)
        if os.path.exists(src) and not os.path.exists(path):
            shutil.copyfile(src, path)
            os.utime(path, (1700000000, 1700000000))
    for name, size in FIXTURES.items():
        path = os.path.join(root, name)
        if os.path.exists(path) and os.path.getsize(path) == size:
            continue
        block = bytes((i * 7 + 13) % 251 for i in range(4096))  # fixed, not compressible to 0
        with open(path, "wb") as f:
            left = size
            while left:
                n = min(left, len(block))
                f.write(block[:n])
                left -= n
    os.chmod(root, 0o755)


def make_cert(d):
    os.makedirs(d, exist_ok=True)
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=localhost"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.chmod(key, 0o644)  # h2o and nginx workers read it as nobody in some setups
    return cert, key


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(port, path, timeout=2.0):
    """One HTTP/1.1 GET with Connection: close; returns (status, body length)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return status, len(body)


def http_coding(port, path, timeout=10.0):
    """GET with a browser's Accept-Encoding; returns the Content-Encoding (None: identity)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n{BROWSER_AE}\r\n"
                  f"Connection: close\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    m = re.search(rb"(?im)^content-encoding:\s*(\S+)\s*$", data.partition(b"\r\n\r\n")[0])
    return m.group(1).decode() if m else None


# ---- servers ----------------------------------------------------------------------------------

def fill(template, values):
    with open(os.path.join(BENCH, "conf", template)) as f:
        text = f.read()
    for k, v in values.items():
        text = text.replace(f"@{k}@", str(v))
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise SystemExit(f"bench: {template}: unfilled {left}")
    return text


class Server:
    """One configured instance: its argv, and after start() its process and ports."""

    def __init__(self, name, workers, logs=False, tls=None, single=False, extra_conf=()):
        self.name, self.workers, self.logs, self.tls, self.single = name, workers, logs, tls, single
        self.extra_conf = list(extra_conf)  # lfhttpd only: configuration lines appended
        self.port = free_port()
        self.tls_port = free_port() if tls else None
        self.dir = os.path.join(RUN, f"{name}-{self.port}")
        os.makedirs(self.dir, exist_ok=True)
        self.proc = None
        self.access_log = None
        self.argv = getattr(self, "_argv_" + name.split("-")[0])()

    @property
    def pid(self):
        return self.proc.pid

    def pids(self):
        return tree_pids(self.proc.pid)

    def _write(self, fname, text):
        path = os.path.join(self.dir, fname)
        with open(path, "w") as f:
            f.write(text)
        return path

    def _argv_lfhttpd(self):
        log_line = ""
        if self.logs and LFHTTPD_ACCESS_LOG:
            self.access_log = os.path.join(self.dir, "access.log")
            log_line = f"{LFHTTPD_ACCESS_LOG} {self.access_log}"
        conf = self._write("lfhttpd.conf", fill("lfhttpd.conf.in", {
            "PORT": self.port, "ROOT": ROOT, "WORKERS": self.workers, "MAXCONN": MAXCONN,
            "ACCESS_LOG": log_line}) + "\n".join(LFHTTPD_EXTRA + VARIANTS.get(self.name, [])
                                               + self.extra_conf) + "\n")
        argv = [os.path.join(BUILD, "lfhttpd"), "--config", conf]
        if self.tls:
            argv += ["--tls-listen", f"127.0.0.1:{self.tls_port}", "--cert", self.tls[0],
                     "--key", self.tls[1]]
        return argv

    def _argv_ceiling(self):
        return [os.path.join(BUILD, "ceiling"), "--listen", f"127.0.0.1:{self.port}",
                "--threads", str(self.workers)]

    def _argv_nginx(self):
        tls = ""
        if self.tls:
            tls = (f"listen 127.0.0.1:{self.tls_port} ssl backlog=4096;\n"
                   f"        ssl_certificate {self.tls[0]};\n"
                   f"        ssl_certificate_key {self.tls[1]};\n"
                   f"        ssl_protocols TLSv1.2 TLSv1.3;\n"
                   f"        ssl_session_cache shared:SSL:10m;")
        if self.logs:
            self.access_log = os.path.join(self.dir, "access.log")
        conf = self._write("nginx.conf", fill("nginx.conf.in", {
            "MASTER": "off" if self.single else "on", "WORKERS": self.workers,
            "NOFILE": NOFILE, "DIR": self.dir, "MAXCONN": MAXCONN, "PORT": self.port,
            "ROOT": ROOT, "TLS_LISTEN": tls,
            "ACCESS_LOG": f"{self.access_log} combined" if self.logs else "off"}))
        return ["nginx", "-p", self.dir + "/", "-c", conf, "-e", os.path.join(self.dir, "error.log")]

    def _argv_h2o(self):
        # h2o takes one `listen` per level: the plain one globally, the TLS one on the host
        host_listen = ""
        if self.tls:
            host_listen = (f"    listen:\n      host: 127.0.0.1\n      port: {self.tls_port}\n"
                           f"      ssl:\n        certificate-file: {self.tls[0]}\n"
                           f"        key-file: {self.tls[1]}\n        minimum-version: TLSv1.2")
        if self.logs:
            self.access_log = os.path.join(self.dir, "access.log")
        conf = self._write("h2o.conf", fill("h2o.conf.in", {
            "WORKERS": self.workers, "MAXCONN": MAXCONN, "DIR": self.dir, "PORT": self.port,
            "HOST_LISTEN": host_listen, "ROOT": ROOT,
            "ACCESS_LOG": f"access-log: {self.access_log}" if self.logs else ""}))
        return ["h2o", "-c", conf]

    def _argv_lighttpd(self):
        modules = []
        extra_log = ""
        if self.logs:
            self.access_log = os.path.join(self.dir, "access.log")
            modules.append('"mod_accesslog"')
            extra_log = f'accesslog.filename = "{self.access_log}"'
        tls = ""
        if self.tls:
            modules.append('"mod_openssl"')
            tls = (f'$SERVER["socket"] == "127.0.0.1:{self.tls_port}" {{\n'
                   f'    ssl.engine = "enable"\n    ssl.pemfile = "{self.tls[0]}"\n'
                   f'    ssl.privkey = "{self.tls[1]}"\n}}')
        modules.append('"mod_deflate"')   # the compression scenarios
        os.makedirs(os.path.join(self.dir, "deflate-cache"), exist_ok=True)
        conf = self._write("lighttpd.conf", fill("lighttpd.conf.in", {
            "ROOT": ROOT, "PORT": self.port, "WORKERS": 0 if self.single else self.workers,
            "NOFILE": NOFILE, "MAXCONN": MAXCONN, "DIR": self.dir,
            "MODULES": ", ".join(modules), "ACCESS_LOG": extra_log, "TLS_LISTEN": tls}))
        return ["lighttpd", "-D", "-f", conf]

    def start(self, wrapper=(), ready_timeout=20.0, env=None):
        self.stderr = open(os.path.join(self.dir, "stderr.log"), "wb")
        self.proc = spawn(list(wrapper) + self.argv, stdin=subprocess.DEVNULL,
                          stdout=self.stderr, stderr=subprocess.STDOUT, cwd=self.dir, env=env)
        deadline = time.monotonic() + ready_timeout
        while True:
            if exited(self.proc):
                stop(self.proc)
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n"
                                   + self.tail())
            try:
                status, n = http_get(self.port, "/1k.html", timeout=5.0)
                if status == 200 and n == 1024:
                    break
                raise RuntimeError(f"{self.name}: GET /1k.html gave {status} with {n} bytes")
            except OSError:
                pass
            if time.monotonic() > deadline:
                stop(self.proc)
                raise RuntimeError(f"{self.name} did not answer within {ready_timeout}s:\n"
                                   + self.tail())
            time.sleep(0.1)
        return self

    def check(self):
        """The same answers from every server (the ceiling only serves its fixed 1 KiB)."""
        if self.name == "ceiling":
            return
        for path, want in (("/256k.bin", (200, FIXTURES["256k.bin"])),
                           ("/10m.bin", (200, FIXTURES["10m.bin"]))):
            got = http_get(self.port, path, timeout=10.0)
            if got != want:
                raise RuntimeError(f"{self.name}: GET {path} gave {got}, want {want}")
        status, _ = http_get(self.port, "/missing.html")
        if status != 404:
            raise RuntimeError(f"{self.name}: GET /missing.html gave {status}, want 404")
        self.warm_compressed()

    def warm_compressed(self, limit=120.0):
        """The compression scenarios measure the steady state: each server has answered the
        page and the bundle compressed before (lfhttpd makes Brotli 11 once, in the
        background; lighttpd fills its deflate.cache-dir on the first request)."""
        for name in WARM_FIXTURES:
            deadline = time.monotonic() + limit
            while True:
                coding = http_coding(self.port, "/" + name)
                if coding or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            if not coding:
                raise RuntimeError(f"{self.name}: /{name} never came compressed")
            if self.name.startswith("lfhttpd"):   # br is the last to be ready: wait for it
                while coding != "br" and time.monotonic() < deadline:
                    time.sleep(0.2)
                    coding = http_coding(self.port, "/" + name)
            log(f"  {self.name:9} /{name}: {coding}")

    def tail(self):
        try:
            with open(os.path.join(self.dir, "stderr.log"), "rb") as f:
                return f.read()[-2000:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self, grace=10.0):
        if self.proc:
            stop(self.proc, grace=grace)
            self.proc = None
        if getattr(self, "stderr", None):
            self.stderr.close()
            self.stderr = None

    def truncate_log(self):
        if self.access_log and os.path.exists(self.access_log):
            os.truncate(self.access_log, 0)


# ---- wrk ----------------------------------------------------------------------------------------

UNITS = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4}
TIME_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def parse_wrk(out):
    r = {"raw": out}
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+),", out)
    r["requests"] = int(m.group(1)) if m else 0
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    r["rps"] = float(m.group(1)) if m else 0.0
    m = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", out)
    r["mibps"] = float(m.group(1)) * UNITS.get(m.group(2), 1) / 1024 ** 2 if m else 0.0
    for pct in ("50", "99"):
        m = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s|m)\s*$" % pct, out, re.M)
        # wrk prints 0.00us for a high percentile when it has few samples (pipelining records
        # one latency per batch): unknown, not zero
        v = float(m.group(1)) * TIME_UNITS[m.group(2)] if m else 0.0
        r[f"p{pct}_ms"] = v if v > 0 else None
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    r["errors"] = dict(zip(("connect", "read", "write", "timeout"), map(int, m.groups()))) if m else {}
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    r["non2xx"] = int(m.group(1)) if m else 0
    return r


def wrk(url, conns, duration, script=None, headers=(), env=None, marker=None, timeout=None):
    """Run wrk; returns its parsed summary plus its own CPU time (from wait4).

    With `marker`, wrk is interrupted (SIGINT: it prints its summary at once) as soon as the
    file appears (bench/wrk/counted.lua creates it after BENCH_COUNT responses)."""
    argv = ["wrk", f"-t{WRK_THREADS}", f"-c{conns}", f"-d{duration}s", "--timeout", "5s", "--latency"]
    for h in headers:
        argv += ["-H", h]
    if script:
        argv += ["-s", os.path.join(BENCH, "wrk", script)]
    argv.append(url)
    e = dict(os.environ)
    e.update(env or {})
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=e)
    limit = time.monotonic() + (timeout or duration + 30)
    if marker:
        while not exited(p) and not os.path.exists(marker) and time.monotonic() < limit:
            time.sleep(0.05)
        if not exited(p):
            p.send_signal(signal.SIGINT)
    lock = threading.Lock()

    def overdue():  # wrk hangs: kill it, unless it has been reaped meanwhile
        with lock:
            if p.returncode is None:
                os.killpg(p.pid, signal.SIGKILL)

    timer = threading.Timer(max(1.0, limit - time.monotonic() + 10), overdue)
    timer.start()
    out = p.stdout.read().decode(errors="replace")
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
    with lock:
        timer.cancel()
        _, status, ru = os.wait4(p.pid, 0)  # reap, with wrk's own CPU time
        p.returncode = os.waitstatus_to_exitcode(status)
    if p in CHILDREN:
        CHILDREN.remove(p)
    r = parse_wrk(out)
    r["client_cpu_s"] = ru.ru_utime + ru.ru_stime
    r["exit"] = p.returncode
    return r


# ---- scenarios ----------------------------------------------------------------------------------

class Scenario:
    def __init__(self, key, title, path, conns, script=None, headers=(), metric="rps",
                 tls=False, ceiling=True, expect_404=False):
        self.key, self.title, self.path, self.conns = key, title, path, conns
        self.script, self.headers, self.metric, self.tls = script, headers, metric, tls
        self.ceiling, self.expect_404 = ceiling, expect_404


SCENARIOS = [
    Scenario("1k", "1 KiB file, keep-alive, 64 connections", "/1k.html", 64),
    Scenario("pipeline", "1 KiB file, 16-deep pipelining, 64 connections", "/1k.html", 64,
             script="pipeline.lua"),
    Scenario("256k", "256 KiB file, keep-alive, 64 connections", "/256k.bin", 64,
             metric="mibps", ceiling=False),
    Scenario("10m", "10 MiB file, keep-alive, 16 connections", "/10m.bin", 16,
             metric="mibps", ceiling=False),
    Scenario("404", "404 (missing file), keep-alive, 64 connections", "/missing.html", 64,
             ceiling=False, expect_404=True),
    Scenario("close", "1 KiB file, Connection: close (a connection per request), 64 clients",
             "/1k.html", 64, headers=("Connection: close",)),
    Scenario("c1000", "1 KiB file, keep-alive, 1,000 connections", "/1k.html", 1000),
    Scenario("https", "HTTPS 1 KiB file, keep-alive, 64 connections", "/1k.html", 64,
             tls=True, ceiling=False),
    Scenario("https-new", "HTTPS 1 KiB file, a new TLS session per connection, 64 clients",
             "/1k.html", 64, headers=("Connection: close",), tls=True, ceiling=False),
    # compression: a browser's Accept-Encoding; nginx `gzip on` (level 1, per
    # request), h2o `compress: ON`, lighttpd mod_deflate with deflate.cache-dir, lfhttpd's
    # defaults (made once, br 11). bytes/resp in the table.
    Scenario("gz-page", "~90 KiB HTML page, Accept-Encoding of a browser, 64 connections",
             "/page.html", 64, headers=(BROWSER_AE,), ceiling=False),
    Scenario("gz-bundle", "~283 KiB JavaScript bundle, Accept-Encoding of a browser, "
             "64 connections", "/bundle.js", 64, headers=(BROWSER_AE,), ceiling=False),
]


QUIET_BUDGET = [env_int("BENCH_QUIET_BUDGET", 5 if QUICK else 60)]  # seconds, whole run


def wait_quiet(limit=10.0, threshold=0.3):
    """Other engineers' jobs share this machine: before a run, wait (up to `limit` s, and up to
    BENCH_QUIET_BUDGET s over the whole run) until less than `threshold` cores are busy while
    our servers idle. Returns the busy cores seen last."""
    t_end = time.monotonic() + min(limit, QUIET_BUDGET[0])
    while True:
        b0, t0 = system_busy_ticks(), time.monotonic()
        time.sleep(0.3)
        busy = (system_busy_ticks() - b0) / CLK_TCK / (time.monotonic() - t0)
        QUIET_BUDGET[0] = max(0.0, QUIET_BUDGET[0] - (time.monotonic() - t0))
        if busy < threshold or time.monotonic() >= t_end:
            return busy


# strace runs: the 1 KiB keep-alive scenario (the key figure) and pipelining
STRACE_SCENARIOS = [("strace", SCENARIOS[0]), ("strace_pipeline", SCENARIOS[1])]


def measured_run(srv, sc, duration):
    pre_busy = wait_quiet()
    pids = srv.pids()
    port = srv.tls_port if sc.tls else srv.port
    url = f"{'https' if sc.tls else 'http'}://127.0.0.1:{port}{sc.path}"
    t0, c0, x0, b0 = time.monotonic(), cpu_ticks(pids), ctx_switches(pids), system_busy_ticks()
    u0 = cpu_ticks(pids, user_only=True)
    load = loadavg()
    r = wrk(url, sc.conns, duration, script=sc.script, headers=sc.headers)
    t1, c1, x1, b1 = time.monotonic(), cpu_ticks(pids), ctx_switches(pids), system_busy_ticks()
    u1 = cpu_ticks(pids, user_only=True)
    srv.truncate_log()
    n = max(r["requests"], 1)
    server_cpu = (c1 - c0) / CLK_TCK
    r["server_cpu_s"] = server_cpu
    r["cpu_us_per_req"] = server_cpu / n * 1e6
    r["user_us_per_req"] = (u1 - u0) / CLK_TCK / n * 1e6  # the server's own code (and libc)
    r["ctx_per_req"] = (x1 - x0) / n
    r["bytes_per_req"] = r["mibps"] * 1024 ** 2 / r["rps"] if r["rps"] else 0.0
    r["elapsed_s"] = t1 - t0
    # CPU used by anything else on the machine during the run, in cores
    r["foreign_cores"] = max(0.0, ((b1 - b0) / CLK_TCK - server_cpu - r["client_cpu_s"]) / (t1 - t0))
    r["loadavg"] = load
    r["busy_before"] = pre_busy
    bad = {k: v for k, v in r["errors"].items() if v}
    if sc.expect_404:
        if r["non2xx"] < r["requests"]:
            bad["2xx-on-404"] = r["requests"] - r["non2xx"]
    elif r["non2xx"]:
        bad["non-2xx"] = r["non2xx"]
    r["bad"] = bad
    if r["requests"] == 0:
        r["bad"]["no-output"] = r["raw"][-300:]
    with open(os.path.join(srv.dir, f"wrk-{sc.key}.txt"), "a") as f:
        f.write(r.pop("raw") + "\n")
    return r


def throughput(servers_by_name, scenarios, rounds, duration, label):
    """Interleaved rounds. Returns {scenario: {server: [run, ...]}}."""
    results = {sc.key: {} for sc in scenarios}
    names = list(servers_by_name)
    for rnd in range(rounds):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for sc in scenarios:
            for name in order:
                if name == "ceiling" and not sc.ceiling:
                    continue
                srv = servers_by_name[name]
                if sc.tls and not srv.tls:
                    continue
                r = measured_run(srv, sc, duration)
                results[sc.key].setdefault(name, []).append(r)
                val = r[sc.metric]
                unit = "MiB/s" if sc.metric == "mibps" else "req/s"
                flag = f"  !! {r['bad']}" if r["bad"] else ""
                log(f"  [{label} round {rnd + 1}/{rounds}] {sc.key:9} {name:9} {val:12,.0f} {unit}"
                    f"  cpu {r['cpu_us_per_req']:7.2f} us/req  other load {r['foreign_cores']:.2f}{flag}")
    return results


def summarize(runs, metric):
    vals = [r[metric] for r in runs]
    med = lambda k: statistics.median([r[k] for r in runs if r.get(k) is not None]) \
        if any(r.get(k) is not None for r in runs) else None
    bad = {}
    for r in runs:
        for k, v in r["bad"].items():
            if isinstance(v, int):
                bad[k] = bad.get(k, 0) + v
            else:
                bad[k] = v
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals),
            "p50_ms": med("p50_ms"), "p99_ms": med("p99_ms"),
            "cpu_us_per_req": med("cpu_us_per_req"), "ctx_per_req": med("ctx_per_req"),
            "user_us_per_req": med("user_us_per_req"),
            "foreign_cores": med("foreign_cores"), "bytes_per_req": med("bytes_per_req"),
            "bad": bad}


# ---- strace: syscalls per request --------------------------------------------------------------

def parse_strace_c(text):
    calls = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
            try:
                calls[f[-1]] = int(f[3])
            except ValueError:
                pass
    return calls


def strace_run(srv, seconds, sc):
    out = os.path.join(srv.dir, f"strace-{sc.key}.txt")
    argv = ["strace", "-f", "-c", "-q", "-o", out]
    for pid in srv.pids():
        argv += ["-p", str(pid)]
    st = spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # let strace attach to every thread
    r = wrk(f"http://127.0.0.1:{srv.port}{sc.path}", sc.conns, seconds, script=sc.script,
            headers=sc.headers)
    time.sleep(0.2)
    stop(st, sig=signal.SIGINT, grace=20)  # on SIGINT strace detaches and writes its summary
    with open(out) as f:
        calls = parse_strace_c(f.read())
    n = max(r["requests"], 1)
    return {"requests": r["requests"], "rps_traced": r["rps"],
            "per_req": {k: v / n for k, v in sorted(calls.items(), key=lambda kv: -kv[1])},
            "total_per_req": sum(calls.values()) / n}


# ---- callgrind: instructions, allocations, top functions ---------------------------------------

ALLOC_FNS = ("malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign",
             "valloc", "pvalloc", "reallocarray")


def parse_callgrind(path, exe):
    """Own cost per function and call counts of the allocation functions (by caller)."""
    names, objs = {}, {}
    fn_obj, self_cost, incl_cost, alloc_calls, alloc_callers = {}, {}, {}, {}, {}
    cur_fn, cur_ob, callee, call_cost_next = None, None, None, False
    totals = None

    def resolve(spec, table):
        spec = spec.strip()
        if spec.startswith("("):
            i = spec.index(")")
            ident, rest = spec[1:i], spec[i + 1:].strip()
            if rest:
                table[ident] = rest
            return table.get(ident, ident)
        return spec

    with open(path, errors="replace") as f:
        for line in f:
            if not line or line == "\n":
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 and cur_fn is not None else 0
                if call_cost_next:  # the inclusive cost of the call just named
                    call_cost_next = False
                    if callee != cur_fn:
                        incl_cost[cur_fn] = incl_cost.get(cur_fn, 0) + ir
                    continue
                self_cost[cur_fn] = self_cost.get(cur_fn, 0) + ir
                incl_cost[cur_fn] = incl_cost.get(cur_fn, 0) + ir
            elif line.startswith("fn="):
                cur_fn = resolve(line[3:], names)
                fn_obj.setdefault(cur_fn, cur_ob)
            elif line.startswith("ob="):
                cur_ob = resolve(line[3:], objs)
            elif line.startswith("cob="):
                resolve(line[4:], objs)
            elif line.startswith("cfn="):
                callee = resolve(line[4:], names)
            elif line.startswith("calls="):
                count = int(line[6:].split()[0])
                call_cost_next = True
                if callee in ALLOC_FNS:
                    alloc_calls[callee] = alloc_calls.get(callee, 0) + count
                    key = (callee, cur_fn)
                    alloc_callers[key] = alloc_callers.get(key, 0) + count
            elif line.startswith("totals:") or line.startswith("summary:"):
                v = int(line.split()[1])
                if v:
                    totals = v
    total = totals if totals is not None else sum(self_cost.values())
    top = sorted(self_cost.items(), key=lambda kv: -kv[1])[:15]
    obj = lambda fn: os.path.basename(fn_obj.get(fn) or "?")
    # inclusive: only the program's own functions (the libraries' just repeat their callers)
    top_incl = sorted(((f, c) for f, c in incl_cost.items() if obj(f) == exe),
                      key=lambda kv: -kv[1])[:25]
    return {"total_ir": total,
            "top": [(fn, obj(fn), ir, incl_cost.get(fn, ir)) for fn, ir in top],
            "top_inclusive": [(fn, ir) for fn, ir in top_incl],
            "alloc_calls": alloc_calls,
            "alloc_callers": sorted(((f"{a} <- {b}", n) for (a, b), n in alloc_callers.items()),
                                    key=lambda kv: -kv[1])[:5]}


# What the callgrind phase measures (BENCH_CALLGRIND_WORKLOADS, default all three for lfhttpd,
# keep-alive only for the peers): the 1 KiB file over 16 keep-alive connections, the same with
# 16 requests pipelined per write, and over HTTPS keep-alive. Results: results["callgrind"]
# (keep-alive), results["callgrind_pipelined"], results["callgrind_https"].
CG_WORKLOADS = [w for w in os.environ.get("BENCH_CALLGRIND_WORKLOADS",
                                          "keepalive,pipelined,https").split(",") if w]
# BENCH_CALLGRIND_AE: an Accept-Encoding the counted requests send (default: none), e.g. a
# browser's, to count what negotiating a representation costs; "browser" stands for BROWSER_AE.
CG_AE = os.environ.get("BENCH_CALLGRIND_AE", "")
CG_HEADERS = ((BROWSER_AE if CG_AE == "browser" else "Accept-Encoding: " + CG_AE),) \
    if CG_AE else ()


def callgrind_run(name, requests, workload="keepalive", tls=None):
    srv = Server(name, 1, single=True, tls=tls if workload == "https" else None)
    out = os.path.join(srv.dir, "callgrind.out")
    wrapper = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    srv.start(wrapper, ready_timeout=90.0)
    try:
        if workload == "https":
            url = f"https://127.0.0.1:{srv.tls_port}/1k.html"
        else:
            url = f"http://127.0.0.1:{srv.port}/1k.html"
        script = "pipeline.lua" if workload == "pipelined" else None
        # warm-up, not instrumented: caches, lazy init, faults, the variants made
        wrk(url, 16, 1, script=script, headers=CG_HEADERS)
        subprocess.run(["callgrind_control", "-i", "on", str(srv.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        marker = os.path.join(srv.dir, "done")
        r = wrk(url, 16, 600, script="counted.lua", marker=marker, timeout=600,
                env={"BENCH_COUNT": str(requests), "BENCH_MARKER": marker},
                headers=CG_HEADERS) \
            if workload != "pipelined" else \
            wrk(url, 16, 600, script="pipeline_counted.lua", marker=marker, timeout=600,
                env={"BENCH_COUNT": str(requests), "BENCH_MARKER": marker},
                headers=CG_HEADERS)
        # Stop counting and write the profile now (out.1), while the server still runs: a
        # server that does not exit cleanly under valgrind would otherwise lose it.
        for cmd in (["-i", "off"], ["-d"]):
            subprocess.run(["callgrind_control"] + cmd + [str(srv.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        time.sleep(0.5)
    finally:
        srv.stop(grace=30.0)
    dumps = [os.path.join(srv.dir, f) for f in sorted(os.listdir(srv.dir))
             if f.startswith("callgrind.out") and os.path.getsize(os.path.join(srv.dir, f))]
    if not dumps:
        raise RuntimeError(f"{name}: callgrind wrote no profile:\n{srv.tail()}")
    profs = [parse_callgrind(d, os.path.basename(srv.argv[0])) for d in dumps]
    prof = max(profs, key=lambda pr: pr["total_ir"])  # the dump; the exit dump counts nothing
    out = dumps[profs.index(prof)]
    n = max(r["requests"], 1)
    prof["requests"] = r["requests"]
    prof["ir_per_req"] = prof["total_ir"] / n
    prof["alloc_per_req"] = sum(prof["alloc_calls"].values()) / n
    prof["file"] = out
    return prof


# ---- site rules: a site with the rule engine's full load against the same site without ------------

RULES_ROUNDS = env_int("BENCH_RULES_ROUNDS", ROUNDS)


def rules_lines():
    """2,000 exact and prefix redirects and 100 pattern rules (the bounds of one set): 80
    placeholders under a literal first segment, 20 beginning with `**` (the rules every path
    is tried against). None matches /1k.html: the cost is what every other request pays."""
    lines = [f"redirect /old/page-{i}.html /new/page-{i}.html" for i in range(1500)]
    lines += [f"redirect /legacy-{i}/* /archive/{i}/:splat 302" for i in range(500)]
    lines += [f"redirect /blog-{i}/:year/:slug /posts/{i}/:year-:slug 302" for i in range(80)]
    lines += [f'redirect "/**/retired-{i}.php" /gone/{i} 302' for i in range(20)]
    return lines


def rules_phase():
    VARIANTS["lfhttpd-rules"] = rules_lines()
    names = ("lfhttpd", "lfhttpd-rules")
    servers = {}
    try:
        for n in names:
            servers[n] = Server(n, THREADS).start()
        for path, want in (("/old/page-7.html", 301), ("/legacy-9/a/b", 302),
                           ("/blog-3/2024/x", 302), ("/a/b/retired-5.php", 302)):
            got = http_get(servers["lfhttpd-rules"].port, path)[0]
            if got != want:
                raise RuntimeError(f"lfhttpd-rules: GET {path} gave {got}, want {want}")
        raw = throughput(servers, [SCENARIOS[0]], RULES_ROUNDS, DURATION, "rules")
    finally:
        for srv in servers.values():
            srv.stop()
    summ = {n: summarize(rs, "rps") for n, rs in raw[SCENARIOS[0].key].items()}
    # Each round runs both, one after the other: their ratio within a round is the figure (the
    # machine's throughput drifts between rounds more than the rules' effect).
    runs = raw[SCENARIOS[0].key]
    per_round = [b["rps"] / a["rps"] for a, b in zip(runs["lfhttpd"], runs["lfhttpd-rules"])
                 if a["rps"]]
    out = {"throughput": summ,
           "ratio": statistics.median(per_round) if per_round else 0.0,
           "ratio_range": (min(per_round), max(per_round)) if per_round else (0.0, 0.0),
           "ratio_of_medians": summ["lfhttpd-rules"]["median"] / summ["lfhttpd"]["median"],
           "callgrind": {}}
    for n in names:
        out["callgrind"][n] = callgrind_run(n, CG_REQUESTS)
        log(f"  {n:14} {out['callgrind'][n]['ir_per_req']:9,.0f} instr/req  "
            f"{out['callgrind'][n]['alloc_per_req']:.3f} allocs/req")
    cg = out["callgrind"]
    out["ir_growth"] = cg["lfhttpd-rules"]["ir_per_req"] / cg["lfhttpd"]["ir_per_req"] - 1
    for n in names:
        log(f"  {n:14} CPU {summ[n]['cpu_us_per_req']:.2f} us/req, of which user space "
            f"{summ[n]['user_us_per_req']:.2f}")
    lo, hi = out["ratio_range"]
    log(f"  rules: req/s ratio, median of per-round ratios {out['ratio']:.3f} ({lo:.2f}-{hi:.2f}; "
        f"target >= 0.97; ratio of medians {out['ratio_of_medians']:.3f}), instructions "
        f"{out['ir_growth'] * 100:+.2f} % (target < 5 %)")
    return out


def table_rules(r):
    th, cg = r["throughput"], r["callgrind"]
    L = ["## Site rules: 2,000 exact/prefix and 100 pattern redirects vs none", "",
         "The 1 KiB file, keep-alive, 64 connections; no rule matches it.", "",
         "| | req/s (median, min – max) | CPU µs/req (user) | other load (cores) | instr/req "
         "| allocs/req |",
         "|---|---|---|---|---|---|"]
    for n in ("lfhttpd", "lfhttpd-rules"):
        t, c = th[n], cg.get(n, {})
        L.append(f"| {n} | {t['median']:,.0f} ({t['min']:,.0f} – {t['max']:,.0f}) | "
                 f"{t['cpu_us_per_req']:.2f} ({t.get('user_us_per_req') or 0:.2f}) | "
                 f"{t['foreign_cores']:.2f} | {c.get('ir_per_req', 0):,.0f} | "
                 f"{c.get('alloc_per_req', 0):.3f} |")
    lo, hi = r.get("ratio_range", (0.0, 0.0))
    L += ["", f"req/s ratio, median of per-round ratios {r['ratio']:.3f} ({lo:.2f} – {hi:.2f}; "
          f"target >= 0.97; ratio of the medians {r.get('ratio_of_medians', 0.0):.3f}); "
          f"instructions per request {r['ir_growth'] * 100:+.2f} % (target < 5 %)."]
    return L


# ---- idle connections ---------------------------------------------------------------------------

def open_idle(port, count, batch=1000, timeout=60.0):
    """Open `count` connections that each make one keep-alive request and read the answer, then
    stay open. Returns (sockets, number answered)."""
    req = b"GET /1k.html HTTP/1.1\r\nHost: localhost\r\n\r\n"
    sel = selectors.DefaultSelector()
    socks, answered, started = [], 0, 0
    state = {}
    deadline = time.monotonic() + timeout
    while (answered < count and time.monotonic() < deadline) and (started < count or state):
        while started < count and len(state) < batch:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            socks.append(s)
            state[s] = b""
            sel.register(s, selectors.EVENT_WRITE)
            started += 1
        for key, ev in sel.select(timeout=1.0):
            s = key.fileobj
            if ev & selectors.EVENT_WRITE:
                try:
                    s.send(req)
                except OSError:
                    sel.unregister(s)
                    del state[s]
                    continue
                sel.modify(s, selectors.EVENT_READ)
                continue
            try:
                chunk = s.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                sel.unregister(s)
                del state[s]
                continue
            buf = state[s] + chunk
            head, sep, body = buf.partition(b"\r\n\r\n")
            m = re.search(rb"(?i)content-length:\s*(\d+)", head) if sep else None
            if m and len(body) >= int(m.group(1)):
                sel.unregister(s)
                del state[s]
                answered += 1
            else:
                state[s] = buf
    sel.close()
    return socks, answered


def idle_run(name, count):
    srv = Server(name, THREADS).start()
    try:
        wrk(f"http://127.0.0.1:{srv.port}/1k.html", 16, 1)  # warm-up
        time.sleep(0.5)
        before = rss_kib(srv.pids())
        socks, answered = open_idle(srv.port, count)
        time.sleep(1.0)
        after = rss_kib(srv.pids())
        for s in socks:
            s.close()
    finally:
        srv.stop()
    return {"conns": answered, "asked": count, "rss_before_kib": before, "rss_after_kib": after,
            "bytes_per_conn": (after - before) * 1024 / max(answered, 1)}


# ---- strategies: lfhttpd's concurrency strategies side by side ------------------------------

STRATEGY_SHORT = {"leader-followers": "lf", "half-sync-half-async": "hsha", "reuseport": "reuseport",
                  "leader-followers-edge": "lf-edge"}
# load key -> title; the wrk parameters are in strategy_run()
STRATEGY_LOAD_TITLES = {
    "short": "short handlers: 1 KiB file, keep-alive, 64 connections",
    "long": f"long handlers: a CGI script that sleeps {CGI_MS} ms, keep-alive, 16 connections",
    "skewed": "skewed: 4 busy keep-alive connections on the 1 KiB file among "
              f"{SKEW_IDLE:,} idle keep-alive connections",
    "mixed": "mixed: 4 connections on the 1 KiB file while 16 others run the "
             f"{CGI_MS} ms CGI script",
}
CGI_PATH = "/cgi-bin/work"
CGI_BODY = b"work done\n"
CGI_CONF = ["location /cgi-bin/ {", "    handler cgi", "}", "cgi_max 256"]


def make_cgi(root):
    """ROOT/cgi-bin/work: prints its answer, then becomes `sleep` (one spawn, two execs); the
    response ends when its stdout closes, i.e. after the sleep."""
    d = os.path.join(root, "cgi-bin")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    path = os.path.join(d, "work")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n# written by bench/bench.py (strategies phase): a long handler\n"
                "printf 'Content-Type: text/plain\\n\\nwork done\\n'\n"
                f"exec sleep {CGI_MS / 1000:.3f}\n")
    os.chmod(path, 0o755)


def alloccount_lib():
    """bench/alloccount.c as a shared object: BUILD/alloccount.so (make bench builds it), or
    compiled here into OUT. None when neither works (allocations are then not counted)."""
    for path in (os.path.join(BUILD, "alloccount.so"), os.path.join(OUT, "alloccount.so")):
        if os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(
                os.path.join(BENCH, "alloccount.c")):
            return path
    path = os.path.join(OUT, "alloccount.so")
    cc = os.environ.get("CC", "cc")
    r = subprocess.run([cc, "-std=gnu11", "-O2", "-fPIC", "-shared", "-o", path,
                        os.path.join(BENCH, "alloccount.c")], capture_output=True, text=True)
    if r.returncode:
        log(f"bench: cannot build alloccount.so: {r.stderr.strip()[:300]}")
        return None
    return path


ALLOC_MAGIC = 0x616c6c6f63636e74


def alloc_counts(path):
    """(allocation calls, free calls) from an alloccount file, or None if unusable."""
    try:
        with open(path, "rb") as f:
            data = f.read(24)
    except OSError:
        return None
    if len(data) < 24 or int.from_bytes(data[16:24], "little") != ALLOC_MAGIC:
        return None
    return int.from_bytes(data[0:8], "little"), int.from_bytes(data[8:16], "little")


def proc_sample(srv):
    """The lfhttpd process alone (its CGI scripts are separate processes): CPU ticks of all its
    threads, CPU ticks of its reaped children (the scripts), context switches summed over its
    threads (read each time: threads started meanwhile count from zero), allocation calls."""
    with open(f"/proc/{srv.pid}/stat") as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    return {"cpu": int(fields[11]) + int(fields[12]), "child_cpu": int(fields[13]) + int(fields[14]),
            "ctx": ctx_switches([srv.pid]), "allocs": alloc_counts(srv.alloc_file),
            "vctx": status_sum([srv.pid], ("voluntary_ctxt_switches",), True),
            "t": time.monotonic(), "busy": system_busy_ticks()}


def worker_requests(srv):
    """Requests served by each of lfhttpd's pool threads so far (/server-status?json), or None.
    Shows how evenly a strategy spreads the work (the HS/HA reactor serves none itself)."""
    try:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5.0)
        try:
            s.sendall(b"GET /server-status?json HTTP/1.1\r\nHost: localhost\r\n"
                      b"Connection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
        finally:
            s.close()
        body = data.partition(b"\r\n\r\n")[2]
        return [int(w.get("requests", 0)) for w in json.loads(body)["workers"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def busiest_share(w0, w1):
    """The busiest thread's share of the requests served between two worker_requests()."""
    if not w0 or not w1 or len(w0) != len(w1):
        return None
    d = [b - a for a, b in zip(w0, w1)]
    return max(d) / sum(d) if sum(d) > 0 else None


def strategy_servers(strategies, notes, alloc_lib):
    """{strategy: Server (not started)} for the strategies this build accepts."""
    out = {}
    accepted = {s: lfhttpd_accepts(f"concurrency {s}") for s in strategies}
    for s in strategies:
        extra = list(CGI_CONF) + STRATEGY_CONF
        if accepted[s]:
            extra.append(f"concurrency {s}")
        elif s == "leader-followers" and not any(accepted.values()):
            # a build from before the strategies: Leader/Followers is all it has, and its default
            notes.append("strategies: this lfhttpd has no `concurrency` directive; "
                         "leader-followers measured as the build's only strategy, "
                         "the others skipped")
        else:
            notes.append(f"strategies: {s}: skipped, `lfhttpd -t` rejects `concurrency {s}`")
            log(f"  {s}: skipped (this lfhttpd rejects `concurrency {s}`)")
            continue
        srv = Server("lfhttpd-" + STRATEGY_SHORT.get(s, s), THREADS, extra_conf=extra)
        srv.strategy = s
        srv.alloc_file = os.path.join(srv.dir, "alloccount")
        srv.env = None
        if alloc_lib:
            srv.env = dict(os.environ, LD_PRELOAD=alloc_lib, ALLOCCOUNT_FILE=srv.alloc_file)
        out[s] = srv
    return out


def strategy_run(srv, load, duration):
    """One measured run of `load` against one strategy's instance."""
    base = f"http://127.0.0.1:{srv.port}"
    pre_busy = wait_quiet()
    idle, answered, side, side_r = [], 0, None, {}
    try:
        if load == "skewed":
            idle, answered = open_idle(srv.port, SKEW_IDLE)
            time.sleep(0.2)
        w0 = worker_requests(srv)
        s0 = proc_sample(srv)
        if load == "mixed":
            side = threading.Thread(target=lambda: side_r.update(
                wrk(base + CGI_PATH, 16, duration)))
            side.start()
        if load == "long":
            r = wrk(base + CGI_PATH, 16, duration)
        else:
            r = wrk(base + "/1k.html", 64 if load == "short" else 4, duration)
        if side:
            side.join()
        s1 = proc_sample(srv)
        w1 = worker_requests(srv)
        alive = sum(1 for s in idle if s.fileno() >= 0 and not _closed_by_peer(s))
    finally:
        for s in idle:
            s.close()
    n = r["requests"] + side_r.get("requests", 0)
    nn = max(n, 1)
    server_cpu = (s1["cpu"] - s0["cpu"]) / CLK_TCK
    client_cpu = r["client_cpu_s"] + side_r.get("client_cpu_s", 0.0)
    child_cpu = (s1["child_cpu"] - s0["child_cpu"]) / CLK_TCK
    out = {"rps": r["rps"], "requests": r["requests"], "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"],
           "cpu_us_per_req": server_cpu / nn * 1e6,
           "script_cpu_us_per_req": child_cpu / nn * 1e6,
           "ctx_per_req": (s1["ctx"] - s0["ctx"]) / nn,
           "vctx_per_req": (s1["vctx"] - s0["vctx"]) / nn,
           "alloc_per_req": ((s1["allocs"][0] - s0["allocs"][0]) / nn
                             if s0["allocs"] and s1["allocs"] else None),
           "foreign_cores": max(0.0, ((s1["busy"] - s0["busy"]) / CLK_TCK - server_cpu - child_cpu
                                      - client_cpu) / max(s1["t"] - s0["t"], 1e-3)),
           "busiest_thread": busiest_share(w0, w1),
           "busy_before": pre_busy, "loadavg": loadavg()}
    if side_r:
        out.update({"slow_rps": side_r["rps"], "slow_requests": side_r["requests"],
                    "slow_p50_ms": side_r["p50_ms"], "slow_p99_ms": side_r["p99_ms"]})
    if load == "skewed":
        out["idle_answered"], out["idle_alive"] = answered, alive
    bad = {k: v for k, v in r["errors"].items() if v}
    for k, v in side_r.get("errors", {}).items():
        if v:
            bad["cgi " + k] = bad.get("cgi " + k, 0) + v
    if r["non2xx"]:
        bad["non-2xx"] = r["non2xx"]
    if side_r.get("non2xx"):
        bad["cgi non-2xx"] = side_r["non2xx"]
    if r["requests"] == 0:
        bad["no-output"] = r["raw"][-300:]
    if load == "skewed" and answered < SKEW_IDLE:
        bad["idle not answered"] = SKEW_IDLE - answered
    if load == "skewed" and alive < answered:
        bad["idle closed by server"] = answered - alive
    out["bad"] = bad
    with open(os.path.join(srv.dir, f"wrk-{load}.txt"), "a") as f:
        f.write(r["raw"] + "\n" + side_r.get("raw", "") + "\n")
    return out


def _closed_by_peer(s):
    """True when the server has closed this idle connection (EOF readable)."""
    try:
        s.setblocking(False)
        return s.recv(1, socket.MSG_PEEK) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True


def strategies_phase(notes):
    """Returns ({load: {strategy: summary}}, {load: {strategy: [run, ...]}})."""
    make_cgi(ROOT)
    alloc_lib = alloccount_lib()
    if not alloc_lib:
        notes.append("strategies: allocations not counted (bench/alloccount.c did not build)")
    servers = strategy_servers(STRATEGIES, notes, alloc_lib)
    loads = [ld for ld in STRATEGY_LOADS if ld in STRATEGY_LOAD_TITLES]
    raw = {ld: {} for ld in loads}
    if not servers:
        return {}, raw
    log(f"== strategies: {len(loads)} loads × {len(servers)} strategies × {STRATEGY_ROUNDS} rounds "
        f"× {STRATEGY_DURATION} s ({THREADS} threads each)")
    try:
        for srv in servers.values():
            srv.start(env=srv.env)
            status, n = http_get(srv.port, CGI_PATH, timeout=10.0)
            if status != 200 or n < len(CGI_BODY):  # chunked: the body and its framing
                raise RuntimeError(f"{srv.strategy}: GET {CGI_PATH} gave {status} with {n} bytes:\n"
                                   + srv.tail())
            if srv.env and not alloc_counts(srv.alloc_file):
                notes.append(f"strategies: {srv.strategy}: the allocation counter did not load")
        names = list(servers)
        for rnd in range(STRATEGY_ROUNDS):
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            for ld in loads:
                for s in order:
                    r = strategy_run(servers[s], ld, STRATEGY_DURATION)
                    raw[ld].setdefault(s, []).append(r)
                    flag = f"  !! {r['bad']}" if r["bad"] else ""
                    extra = f"  cgi {r['slow_rps']:,.0f} req/s" if "slow_rps" in r else ""
                    allocs = f"{r['alloc_per_req']:.3f}" if r["alloc_per_req"] is not None else "–"
                    log(f"  [strategies round {rnd + 1}/{STRATEGY_ROUNDS}] {ld:6} {s:21} "
                        f"{r['rps']:9,.0f} req/s{extra}  p99 {fmt_ms(r['p99_ms'])}  "
                        f"ctx {r['ctx_per_req']:.2f} ({r['vctx_per_req']:.2f} vol)  allocs {allocs}  "
                        f"busiest {fmt_pct(r['busiest_thread'])}  "
                        f"cpu {r['cpu_us_per_req']:.1f} us/req  other load {r['foreign_cores']:.2f}"
                        f"{flag}")
    finally:
        for srv in servers.values():
            srv.stop()
    summ = {}
    for ld, per in raw.items():
        summ[ld] = {}
        for s, runs in per.items():
            x = summarize(runs, "rps")
            for k in ("alloc_per_req", "script_cpu_us_per_req", "slow_rps", "slow_p50_ms",
                      "slow_p99_ms", "busiest_thread", "vctx_per_req"):
                vals = [r[k] for r in runs if r.get(k) is not None]
                x[k] = statistics.median(vals) if vals else None
            summ[ld][s] = x
        # paired per round: the machine's speed drifts between rounds (other jobs, the host),
        # the order within a round is what the interleaving makes comparable
        base = per.get("leader-followers")
        for s, runs in per.items():
            ratios = [r["rps"] / b["rps"] for r, b in zip(runs, base or []) if b["rps"] > 0]
            summ[ld][s]["vs_lf"] = (statistics.median(ratios), min(ratios), max(ratios)) \
                if ratios and s != "leader-followers" else None
    return summ, raw


def table_strategies(summ):
    """One table per load, one row per strategy; then a compact table over all loads."""
    L = []
    for ld, per in summ.items():
        if not per:
            continue
        cgi = ld in ("long", "mixed")
        L += [f"### {STRATEGY_LOAD_TITLES[ld][0].upper()}{STRATEGY_LOAD_TITLES[ld][1:]}", ""]
        head = ("| strategy | req/s median | min – max | p50 | p99 | ctx sw/req (voluntary) "
                "| allocations/req "
                "| server CPU µs/req | busiest thread | req/s ÷ leader-followers |")
        sep = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        if cgi:
            head += " script CPU µs/req |"
            sep += "---:|"
        if ld == "mixed":
            head += " CGI req/s | CGI p99 |"
            sep += "---:|---:|"
        L += [head + " notes |", sep + "---|"]
        for s, x in per.items():
            row = (f"| {s} | {fmt_n(x['median'])} | {fmt_n(x['min'])} – {fmt_n(x['max'])} "
                   f"| {fmt_ms(x['p50_ms'])} | {fmt_ms(x['p99_ms'])} | {fmt_n(x['ctx_per_req'], 2)} "
                   f"({fmt_n(x['vctx_per_req'], 2)}) "
                   f"| {fmt_n(x['alloc_per_req'], 3)} | {fmt_n(x['cpu_us_per_req'], 1)} "
                   f"| {fmt_pct(x['busiest_thread'])} | {fmt_ratio(x.get('vs_lf'))} |")
            if cgi:
                row += f" {fmt_n(x['script_cpu_us_per_req'], 0)} |"
            if ld == "mixed":
                row += f" {fmt_n(x['slow_rps'])} | {fmt_ms(x['slow_p99_ms'])} |"
            row += " " + ", ".join(f"{k} {v}" for k, v in x["bad"].items()) + " |"
            L.append(row)
        fl = [x["foreign_cores"] for x in per.values() if x["foreign_cores"] is not None]
        L += ["", f"Other load during these runs: median {statistics.median(fl):.2f} cores." if fl
              else "", ""]
    strategies = []
    for per in summ.values():
        strategies += [s for s in per if s not in strategies]
    if strategies:
        L += ["### All loads: req/s / p99 / context switches per request / allocations per request "
              "/ server CPU µs per request", "",
              "| load | " + " | ".join(strategies) + " |", "|---|" + "---:|" * len(strategies)]
        for ld, per in summ.items():
            cells = []
            for s in strategies:
                x = per.get(s)
                cells.append("–" if not x else
                             f"{fmt_n(x['median'])} / {fmt_ms(x['p99_ms'])} / "
                             f"{fmt_n(x['ctx_per_req'], 2)} / {fmt_n(x['alloc_per_req'], 3)} / "
                             f"{fmt_n(x['cpu_us_per_req'], 1)}")
            L.append(f"| {ld} | " + " | ".join(cells) + " |")
        L.append("")
    return L


# ---- report -------------------------------------------------------------------------------------

def fmt_n(v, digits=0):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}"


def fmt_ratio(v):
    """(median, min, max) of per-round ratios."""
    return "" if not v else f"{v[0]:.2f}× ({v[1]:.2f}–{v[2]:.2f})"


def fmt_pct(v):
    return "–" if v is None else f"{100 * v:.0f}%"


def fmt_ms(v):
    if v is None:
        return "–"
    return f"{v * 1000:.0f} µs" if v < 1 else f"{v:.2f} ms"


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return ""


def machine_info():
    model = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
    mem = sh("free -g | awk '/^Mem:/{print $2}'")
    commit = sh(f"git -C {REPO} rev-parse --short HEAD")
    if sh(f"git -C {REPO} status --porcelain --untracked-files=no"):
        commit += " (with uncommitted changes)"
    # what lfhttpd was built from: the last commit that touched its sources
    server = sh(f"git -C {REPO} log -1 --format='%h %s' -- server handlers")
    if BUILD != os.path.join(REPO, "build"):
        server = f"{BUILD}/lfhttpd (BENCH_BUILD)"
    commit += f"; lfhttpd sources at {server}"
    versions = {
        "lfhttpd": sh(f"{BUILD}/lfhttpd --version"),
        "nginx": sh("nginx -v 2>&1").replace("nginx version: ", ""),
        "h2o": sh("h2o --version | head -1"),
        "lighttpd": sh("lighttpd -v | cut -d' ' -f1"),
        "wrk": sh("wrk -v 2>&1 | head -1 | cut -d' ' -f1,2"),
        "valgrind": sh("valgrind --version"),
        "strace": sh("strace -V | head -1"),
    }
    return {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "cpu": model, "cores": os.cpu_count(),
            "mem_gib": mem, "kernel": os.uname().release, "commit": commit,
            "versions": versions, "uptime_before": sh("uptime")}


def table_throughput(sc, summ):
    unit = "MiB/s" if sc.metric == "mibps" else "req/s"
    coded = sc.key.startswith("gz-")   # compression: bytes per response matter too
    lines = [f"### {sc.title}", "",
             f"| server | {unit} median | min – max | p50 | p99 | server CPU µs/req | ctx sw/req "
             + ("| bytes/resp " if coded else "") + "| lfhttpd ÷ this | notes |",
             "|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if coded else "") + "---:|---|"]
    lf = summ.get("lfhttpd")
    for name, s in summ.items():
        ratio = f"{lf['median'] / s['median']:.2f}×" if lf and s["median"] and name != "lfhttpd" else ""
        notes = ", ".join(f"{k} {v}" for k, v in s["bad"].items())
        size = f"| {fmt_n(s.get('bytes_per_req'))} " if coded else ""
        lines.append(f"| {name} | {fmt_n(s['median'])} | {fmt_n(s['min'])} – {fmt_n(s['max'])} "
                     f"| {fmt_ms(s['p50_ms'])} | {fmt_ms(s['p99_ms'])} "
                     f"| {fmt_n(s['cpu_us_per_req'], 1)} | {fmt_n(s['ctx_per_req'], 3)} "
                     f"{size}| {ratio} | {notes} |")
    fl = [s["foreign_cores"] for s in summ.values() if s["foreign_cores"] is not None]
    if fl:
        lines += ["", f"Other load during these runs (CPU of processes that were neither the server "
                      f"nor wrk): median {statistics.median(fl):.2f} cores."]
    return lines


PEERS = ("nginx", "h2o", "lighttpd")


def round_ratios(runs, metric):
    """{server: [run, ...]} of interleaved rounds: lfhttpd ÷ the best peer of each round."""
    lf = runs.get("lfhttpd") or []
    out = []
    for i, r in enumerate(lf):
        vals = [rs[i][metric] for n, rs in runs.items() if n in PEERS and len(rs) > i]
        vals = [v for v in vals if v]
        if vals:
            out.append(r[metric] / max(vals))
    return out


def ratio_rows(summaries, raw=None):
    """One row per scenario of {scenario: {server: summary}}: lfhttpd against the best peer
    (the highest median of nginx, h2o and lighttpd). With the rounds' runs (`raw`, as
    throughput() returns them), the ratio is the median of each round's ratio to that round's
    best peer (the rounds drift; within one they compare), with its min and max; without, the
    ratio of the medians. Each row is a dict; a scenario lfhttpd did not run is left out, one no
    peer ran has best None."""
    rows = []
    for sc in SCENARIOS:
        summ = summaries.get(sc.key) or {}
        lf = summ.get("lfhttpd")
        if not lf:
            continue
        peers = {n: s for n, s in summ.items() if n in PEERS and s["median"]}
        best = max(peers, key=lambda n: peers[n]["median"]) if peers else None
        cpus = [s["cpu_us_per_req"] for s in peers.values() if s["cpu_us_per_req"] is not None]
        per_round = round_ratios((raw or {}).get(sc.key) or {}, sc.metric) if best else []
        rows.append({
            "key": sc.key, "unit": "MiB/s" if sc.metric == "mibps" else "req/s",
            "lfhttpd": lf["median"], "best": best,
            "best_value": peers[best]["median"] if best else None,
            "ratio": statistics.median(per_round) if per_round else
            (lf["median"] / peers[best]["median"] if best else None),
            "ratio_range": (min(per_round), max(per_round)) if len(per_round) > 1 else None,
            "p99": lf["p99_ms"], "best_p99": peers[best]["p99_ms"] if best else None,
            "cpu": lf["cpu_us_per_req"], "lowest_cpu": min(cpus) if cpus else None,
            "other_load": statistics.median([s["foreign_cores"] for s in summ.values()
                                             if s["foreign_cores"] is not None] or [0.0])})
    return rows


def ratio_table(summaries, raw=None):
    """The ratio table (make bench-quick; the form the target is stated in): markdown lines."""
    L = ["| scenario | lfhttpd | best peer | ÷ best | p99: lfhttpd / best peer's "
         "| CPU µs/req: lfhttpd / lowest peer's | other load (cores) |",
         "|---|---:|---|---:|---:|---:|---:|"]
    for r in ratio_rows(summaries, raw):
        best = f"{r['best']} {fmt_n(r['best_value'])}" if r["best"] else "– (no peer ran)"
        ratio = f"{r['ratio']:.2f}×" if r["ratio"] is not None else "–"
        if r["ratio_range"]:
            ratio += f" ({r['ratio_range'][0]:.2f}–{r['ratio_range'][1]:.2f})"
        L.append(f"| {r['key']} | {fmt_n(r['lfhttpd'])} {r['unit']} | {best} | {ratio} "
                 f"| {fmt_ms(r['p99'])} / {fmt_ms(r['best_p99'])} "
                 f"| {fmt_n(r['cpu'], 1)} / {fmt_n(r['lowest_cpu'], 1)} "
                 f"| {r['other_load']:.2f} |")
    return L


def key_figures(results):
    """One row per server: the figures the targets are stated in."""
    th = results.get("throughput", {})
    names = []
    for part in (th.get("1k", {}), results.get("callgrind", {}), results.get("strace", {}),
                 results.get("idle", {})):
        names += [n for n in part if n not in names]
    if not names:
        return []
    L = ["## Key figures (1 KiB file, keep-alive)", "",
         "| server | req/s (64 conns) | lfhttpd ÷ this | server CPU µs/req | ctx sw/req "
         "| instructions/req (callgrind) | syscalls/req (strace) | allocation calls/req "
         "| bytes per idle connection |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lf = th.get("1k", {}).get("lfhttpd")
    for n in names:
        t = th.get("1k", {}).get(n)
        cg = results.get("callgrind", {}).get(n)
        st = results.get("strace", {}).get(n)
        idle = results.get("idle", {}).get(n)
        ratio = f"{lf['median'] / t['median']:.2f}×" if lf and t and n != "lfhttpd" else ""
        L.append(f"| {n} | {fmt_n(t['median']) if t else '–'} | {ratio} "
                 f"| {fmt_n(t['cpu_us_per_req'], 1) if t else '–'} "
                 f"| {fmt_n(t['ctx_per_req'], 3) if t else '–'} "
                 f"| {fmt_n(cg['ir_per_req']) if cg else '–'} "
                 f"| {fmt_n(st['total_per_req'], 2) if st else '–'} "
                 f"| {fmt_n(cg['alloc_per_req'], 3) if cg else '–'} "
                 f"| {fmt_n(idle['bytes_per_conn']) if idle else '–'} |")
    return L


def strategies_section(info, summ):
    added = f" Configuration added to each: `{' | '.join(STRATEGY_CONF)}`." if STRATEGY_CONF else ""
    return [f"## Concurrency strategies (lfhttpd alone, {THREADS} threads each)", "",
            f"{info['date']}, commit {info['commit']}; {STRATEGY_ROUNDS} rounds × "
            f"{STRATEGY_DURATION} s per load and strategy, interleaved (the order of the "
            "strategies rotates each round); medians (min – max over rounds). wrk -t"
            f"{WRK_THREADS}.{added} Context switches: voluntary + involuntary, summed over the "
            "server's threads (/proc/PID/task/*/status), the voluntary ones (a thread that "
            "waited: for a lock, a condition, epoll) in brackets — the rest are preemptions, which "
            "other load on the machine drives up; allocations: calls of malloc, calloc, "
            "realloc and the memalign family (bench/alloccount.c preloaded); CPU: utime + stime of "
            "the server process; script CPU: its reaped CGI children. All per request answered (in "
            "the mixed load: file and CGI requests together; req/s, p50 and p99 are the file's). "
            "req/s ÷ leader-followers: the median (min–max) over rounds of each round's ratio, "
            "run a few seconds apart (the machine's speed drifts more between rounds than within "
            "one). Busiest thread: the largest share of the requests one pool thread served "
            f"(/server-status; {100 / max(THREADS, 1):.0f}% is an even spread; the HS/HA reactor "
            "serves none).", ""] + table_strategies(summ)


def write_report(info, results, notes):
    L = ["# lfhttpd benchmark report", "",
         f"- date: {info['date']}; commit {info['commit']}",
         f"- machine: {info['cpu']}, {info['cores']} cores, {info['mem_gib']} GiB, "
         f"Linux {info['kernel']}; loopback",
         f"- load before: `{info['uptime_before']}`; after: `{info.get('uptime_after', '')}`",
         "- versions: " + "; ".join(v for v in info["versions"].values() if v),
         f"- {THREADS} threads/workers per server; wrk -t{WRK_THREADS}; {ROUNDS} rounds × "
         f"{DURATION} s per scenario and server, interleaved; medians (min – max over rounds)",
         ""]
    L += [f"- {n}" for n in notes]
    L.append("")
    L += key_figures(results) + [""]
    for label, key in (("access logs off", "throughput"), ("access logs on", "throughput_logs")):
        if key not in results:
            continue
        L += [f"## Throughput, {label}", "", "lfhttpd ÷ the best peer, scenario by scenario:",
              ""] + ratio_table(results[key], results.get(key + "_raw")) + [""]
        for sc in SCENARIOS:
            summ = results[key].get(sc.key)
            if summ:
                L += table_throughput(sc, summ) + [""]
    if "rules" in results:
        L += table_rules(results["rules"]) + [""]
    for key, sc in STRACE_SCENARIOS:
        if key not in results:
            continue
        L += [f"## System calls per request (strace -f -c): {sc.title}", "",
              f"Attached to the running servers ({THREADS} threads/workers) for one {STRACE_SECONDS} s "
              "wrk run; ptrace slows the server several times, which lets more events gather per "
              "epoll_wait than in the untraced runs, so wait/futex counts are lower bounds.", ""]
        allcalls = []
        for name, st in results[key].items():
            for k in st["per_req"]:
                if k not in allcalls:
                    allcalls.append(k)
        shown = [k for k in allcalls if any(st["per_req"].get(k, 0) >= 0.005
                                            for st in results[key].values())]
        L.append("| server | total/req | " + " | ".join(shown) + " |")
        L.append("|---|---:|" + "---:|" * len(shown))
        for name, st in results[key].items():
            L.append(f"| {name} | {st['total_per_req']:.2f} | "
                     + " | ".join(f"{st['per_req'].get(k, 0):.2f}" for k in shown) + " |")
        L.append("")
    if "callgrind" in results:
        L += ["## Work per request (callgrind, user space, one thread/process, 16 keep-alive "
              "connections, 1 KiB file)", "",
              "| server | requests | instructions/req | lfhttpd ÷ this | allocation calls/req | "
              "top allocation callers |", "|---|---:|---:|---:|---:|---|"]
        lf = results["callgrind"].get("lfhttpd")
        for name, p in results["callgrind"].items():
            ratio = f"{lf['ir_per_req'] / p['ir_per_req']:.2f}×" \
                if lf and p["ir_per_req"] and name != "lfhttpd" else ""
            callers = "; ".join(f"{k} ({v / max(p['requests'], 1):.2f}/req)"
                                for k, v in p["alloc_callers"][:3])
            L.append(f"| {name} | {p['requests']:,} | {p['ir_per_req']:,.0f} | {ratio} | "
                     f"{p['alloc_per_req']:.3f} | {callers} |")
        L.append("")
        for name, p in results["callgrind"].items():
            n = max(p["requests"], 1)
            L += [f"<details><summary>{name}: top functions by own instructions</summary>", "",
                  "| function | object | own instructions/req | share | inclusive/req |",
                  "|---|---|---:|---:|---:|"]
            for fn, ob, ir, incl in p["top"][:12]:
                L.append(f"| `{fn}` | {ob} | {ir / n:,.0f} | {100 * ir / max(p['total_ir'], 1):.1f}% "
                         f"| {incl / n:,.0f} |")
            L += ["", "</details>", ""]
        lf = results["callgrind"].get("lfhttpd")
        if lf:
            n = max(lf["requests"], 1)
            L += ["<details><summary>lfhttpd: its own functions by inclusive instructions "
                  "(callees included)</summary>", "",
                  "| function | inclusive instructions/req |", "|---|---:|"]
            L += [f"| `{fn}` | {ir / n:,.0f} |" for fn, ir in lf["top_inclusive"]]
            L += ["", "</details>", ""]
    if "idle" in results:
        L += [f"## Memory per idle keep-alive connection ({IDLE_CONNS:,} connections, one request "
              "each, then idle; RSS of all the server's processes)", "",
              "| server | connections answered | RSS before | RSS after | bytes per connection |",
              "|---|---:|---:|---:|---:|"]
        for name, m in results["idle"].items():
            L.append(f"| {name} | {m['conns']:,} | {m['rss_before_kib']:,} KiB | "
                     f"{m['rss_after_kib']:,} KiB | {m['bytes_per_conn']:,.0f} |")
        L.append("")
    if results.get("strategies"):
        S = strategies_section(info, results["strategies"])
        with open(os.path.join(OUT, "strategies.md"), "w") as f:
            f.write("\n".join(S))
        L += S
    if results.get("errors"):
        L += ["## Errors", ""] + [f"- {e}" for e in results["errors"]] + [""]
    path = os.path.join(OUT, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(L))
    return path


def print_summary(results):
    for key, label in (("throughput", "access logs off"), ("throughput_logs", "access logs on")):
        if results.get(key):
            log(f"\n==== lfhttpd ÷ the best peer ({label}; medians; ÷ best: of the rounds' "
                f"ratios) ====")
            for line in ratio_table(results[key], results.get(key + "_raw")):
                log(line)
    log("\n==== summary (medians; lfhttpd ÷ peer) ====")
    th = results.get("throughput", {})
    for sc in SCENARIOS:
        summ = th.get(sc.key)
        if not summ or "lfhttpd" not in summ:
            continue
        lf = summ["lfhttpd"]
        parts = [f"lfhttpd {lf['median']:,.0f}"]
        for name, s in summ.items():
            if name != "lfhttpd" and s["median"]:
                parts.append(f"{name} {lf['median'] / s['median']:.2f}×")
        log(f"  {sc.key:9} " + "  ".join(parts) + f"   cpu {lf['cpu_us_per_req']:.1f} us/req")
    for name, p in results.get("callgrind", {}).items():
        log(f"  callgrind {name:9} {p['ir_per_req']:8,.0f} instr/req  {p['alloc_per_req']:.3f} allocs/req")
    for name, s in results.get("strace", {}).items():
        top = ", ".join(f"{k} {v:.2f}" for k, v in list(s["per_req"].items())[:6])
        log(f"  strace    {name:9} {s['total_per_req']:5.2f} syscalls/req ({top})")
    for name, m in results.get("idle", {}).items():
        log(f"  idle      {name:9} {m['bytes_per_conn']:8,.0f} bytes/conn ({m['conns']:,} conns)")
    for ld, per in results.get("strategies", {}).items():
        for s, x in per.items():
            allocs = fmt_n(x["alloc_per_req"], 3)
            log(f"  strategy  {ld:6} {s:21} {x['median']:9,.0f} req/s  p99 {fmt_ms(x['p99_ms'])}"
                f"  ctx {x['ctx_per_req']:.2f}/req  allocs {allocs}/req"
                f"  cpu {x['cpu_us_per_req']:.1f} us/req")


# ---- main ---------------------------------------------------------------------------------------

def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def lfhttpd_accepts(line):
    """Whether this build of lfhttpd knows a configuration line (checked with `lfhttpd -t`)."""
    d = os.path.join(RUN, "probe")
    os.makedirs(d, exist_ok=True)
    conf = os.path.join(d, "probe.conf")
    with open(conf, "w") as f:
        f.write(f"listen 127.0.0.1:0\nroot {ROOT}\n{line}\n")
    r = subprocess.run([os.path.join(BUILD, "lfhttpd"), "-t", "-c", conf], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0


def lfhttpd_help():
    return subprocess.run([os.path.join(BUILD, "lfhttpd"), "--help"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True).stdout


def main():
    global ROOT, NOFILE, MAXCONN, LFHTTPD_ACCESS_LOG
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    NOFILE = raise_nofile()
    MAXCONN = max(1024, min(max(IDLE_CONNS, SKEW_IDLE) + 2000, NOFILE - 1000))
    shutil.rmtree(RUN, ignore_errors=True)
    os.makedirs(RUN)
    ROOT = os.path.join(OUT, "root")
    make_root(ROOT)
    notes, errors = [], []
    info = machine_info()
    log(f"bench: {info['cpu']}, {info['cores']} cores; load: {info['uptime_before']}")
    if NOFILE < max(IDLE_CONNS, SKEW_IDLE) + 1000:
        notes.append(f"open-file limit {NOFILE}: idle-connection test limited by it")

    help_text = lfhttpd_help()
    lf_tls = "tls-listen" in help_text
    LFHTTPD_ACCESS_LOG = os.environ.get("BENCH_LFHTTPD_ACCESS_LOG", "")
    if not LFHTTPD_ACCESS_LOG and lfhttpd_accepts("access_log off"):
        LFHTTPD_ACCESS_LOG = "access_log"
    # Started as root, a newer lfhttpd becomes `nobody`; under valgrind the profile (opened as
    # root) could then not be written. Stay root, as h2o and lighttpd do here.
    LFHTTPD_EXTRA[:] = ["user root"] if lfhttpd_accepts("user root") else []
    LFHTTPD_EXTRA.extend(l.strip() for l in os.environ.get("BENCH_LFHTTPD_CONF", "").split(";")
                         if l.strip())
    tls = None
    scenarios = [sc for sc in SCENARIOS if not sc.tls]
    if TLS_MODE == "0":
        notes.append("HTTPS scenarios: skipped (BENCH_TLS=0)")
    elif lf_tls or TLS_MODE == "peers":
        tls = make_cert(os.path.join(OUT, "tls"))
        scenarios = list(SCENARIOS)
        if not lf_tls:
            notes.append("HTTPS scenarios: lfhttpd has no TLS yet; peers only (BENCH_TLS=peers)")
    else:
        log("skipped: lfhttpd has no TLS yet")
        notes.append("HTTPS scenarios: skipped: lfhttpd has no TLS yet "
                     "(`build/lfhttpd --help` has no --tls-listen)")
    only = os.environ.get("BENCH_SCENARIOS")
    if only:
        scenarios = [sc for sc in scenarios if sc.key in only.split(",")]
    for name, src in COMPRESS_FIXTURES.items():
        if not os.path.exists(src):   # its package is not installed: its scenario cannot run
            notes.append(f"/{name}: {src} missing (tools/deps.sh bench): its scenario left out")
            scenarios = [sc for sc in scenarios if sc.path != "/" + name]
    WARM_FIXTURES[:] = [sc.path[1:] for sc in scenarios if sc.path[1:] in COMPRESS_FIXTURES]
    names = ["lfhttpd"] + list(VARIANTS) + ["nginx", "h2o", "lighttpd", "ceiling"]
    only = os.environ.get("BENCH_SERVERS")
    if only:
        names = [n for n in names if n in only.split(",")]
    tools = {"nginx": "nginx", "h2o": "h2o", "lighttpd": "lighttpd"}
    for n in list(names):
        if n in tools and not shutil.which(tools[n]):
            notes.append(f"{n}: not installed, left out (run tools/deps.sh bench)")
            names.remove(n)
    if tls and not os.path.exists("/usr/lib/lighttpd/mod_openssl.so"):
        notes.append("lighttpd: mod_openssl missing (lighttpd-mod-openssl), HTTPS without lighttpd")

    results = {"info": info, "errors": errors}
    passes = []
    if "throughput" in PHASES or "strace" in PHASES:
        passes.append(("throughput", False))
    if LOGS and "throughput" in PHASES:
        passes.append(("throughput_logs", True))
        if not LFHTTPD_ACCESS_LOG:
            notes.append("access logs on: lfhttpd has no access log yet, so it runs without one "
                         "in that pass (set BENCH_LFHTTPD_ACCESS_LOG to its directive once it "
                         "exists)")
    running = {}
    try:
        for key, logs in passes:
            running = {}
            for n in names:
                srv_tls = tls if tls and n != "ceiling" and (not n.startswith("lfhttpd") or lf_tls) and (
                    n != "lighttpd" or os.path.exists("/usr/lib/lighttpd/mod_openssl.so")) else None
                running[n] = Server(n, THREADS, logs=logs, tls=srv_tls).start()
                running[n].check()
            if "throughput" in PHASES:
                log(f"== throughput ({'access logs on' if logs else 'access logs off'}): "
                    f"{len(scenarios)} scenarios × {len(running)} servers × {ROUNDS} rounds × "
                    f"{DURATION} s")
                raw = throughput(running, scenarios, ROUNDS, DURATION, "logs" if logs else "run")
                metric = {sc.key: sc.metric for sc in SCENARIOS}
                results[key] = {sc: {n: summarize(rs, metric[sc]) for n, rs in per.items()}
                                for sc, per in raw.items()}
                results[key + "_raw"] = raw
            for skey, sc in (STRACE_SCENARIOS if not logs and "strace" in PHASES else ()):
                log(f"== strace: syscalls per request, {sc.key} ({STRACE_SECONDS} s per server)")
                results[skey] = {}
                for n, srv in running.items():
                    try:
                        results[skey][n] = strace_run(srv, STRACE_SECONDS, sc)
                        log(f"  {n:9} {results[skey][n]['total_per_req']:.2f} syscalls/req")
                    except Exception as e:  # keep going: report what worked
                        errors.append(f"strace {sc.key} {n}: {e}")
            for srv in running.values():
                srv.stop()
            running = {}
        def per_server(phase, servers, run, line):
            """Run one phase per server; a failure is reported and the others still run."""
            results[phase] = {}
            for n in servers:
                try:
                    results[phase][n] = run(n)
                    log(f"  {n:9} " + line(results[phase][n]))
                except Exception as e:
                    errors.append(f"{phase} {n}: {e}")
                    log(f"  {n}: FAILED: {e}")

        if "callgrind" in PHASES:
            log(f"== callgrind: instructions per request ({CG_REQUESTS:,} requests, one thread each)")
            cg_names = [n for n in names if not CG_SERVERS or n in CG_SERVERS.split(",")]
            for wl in CG_WORKLOADS:
                key = "callgrind" if wl == "keepalive" else "callgrind_" + wl
                wl_names = cg_names if wl == "keepalive" else \
                    [n for n in cg_names if n.startswith("lfhttpd") and (wl != "https" or tls)]
                if not wl_names:
                    continue
                log(f"   workload: {wl}")
                per_server(key, wl_names,
                           lambda n, wl=wl: callgrind_run(n, CG_REQUESTS, wl, tls),
                           lambda p: f"{p['ir_per_req']:9,.0f} instr/req  "
                                     f"{p['alloc_per_req']:.3f} allocs/req")
        if "idle" in PHASES:
            log(f"== idle keep-alive connections ({IDLE_CONNS:,} per server)")
            per_server("idle", names, lambda n: idle_run(n, IDLE_CONNS),
                       lambda m: f"{m['bytes_per_conn']:8,.0f} bytes/conn ({m['conns']:,} answered)")
        if "rules" in PHASES:
            log(f"== site rules: 2,100 rules vs none ({RULES_ROUNDS} rounds × {DURATION} s, "
                f"callgrind {CG_REQUESTS:,} requests)")
            try:
                results["rules"] = rules_phase()
            except Exception as e:  # keep what the other phases measured
                errors.append(f"rules: {e}")
                log(f"  rules: FAILED: {e}")
        if "strategies" in PHASES:
            try:
                results["strategies"], results["strategies_raw"] = strategies_phase(notes)
            except Exception as e:  # keep what the other phases measured
                errors.append(f"strategies: {e}")
                log(f"  strategies: FAILED: {e}")
    finally:
        for srv in running.values():
            srv.stop()
        stop_all()
    info["uptime_after"] = sh("uptime")
    path = write_report(info, results, notes)
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    print_summary(results)
    for n in notes:
        log(f"note: {n}")
    for e in errors:
        log(f"error: {e}")
    log(f"report: {os.path.relpath(path, REPO)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
