#!/usr/bin/env python3
"""lfhttpd test runner.

    python3 tests/run.py --build build [-k SUBSTRING] [-j N] [--timeout S]

1. Runs every unit-test binary BUILD/tests/test_* (TAP: each `ok`/`not ok`
   line is one passed/failed test; a non-zero exit without `not ok`, a
   crash, a timeout or a sanitizer report is one failure).
2. Runs tests/integration/test_*.py: every function test_* (file order).
   A parameter named `srv` gets a fresh server on a fresh fixture docroot,
   `tmpdir` a fresh temporary directory.  Each file runs in its own worker
   process (its own process group, so leftover servers are killed with
   it); files run N at a time (-j, default 2).  Each test has a timeout
   (default 60 s, x3 for sanitizer builds; a test whose own work needs
   longer, such as a whole make, says so with `test_x.timeout = SECONDS`,
   scaled the same way).  Every server a test started is stopped afterwards
   and its stderr checked for sanitizer reports.

The last line of output is always `N passed, N failed`; exit status 1 if
anything failed.
"""

import argparse
import concurrent.futures
import contextlib
import importlib.util
import inspect
import io
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
INTEGRATION = os.path.join(HERE, "integration")

_print_lock = threading.Lock()


_failures = []     # every FAIL block printed, repeated at the end of the run


def out(text):
    with _print_lock:
        if text.startswith("FAIL "):
            _failures.append(text)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()


def indent(text, prefix="    "):
    return "\n".join(prefix + l for l in text.rstrip("\n").splitlines())


def selected(k, name):
    """-k: SUBSTRING, or several separated by commas (any of them)."""
    return any(part and part in name for part in k.split(","))


def scale_for(build):
    b = os.path.basename(os.path.normpath(build)).lower()
    return 3.0 if ("tsan" in b or "asan" in b or "san" in b) else 1.0


def sanitizer_env(env):
    env = dict(env)
    # Keep going after the first report so all reports reach stderr; we grep them.
    env.setdefault("TSAN_OPTIONS", "halt_on_error=0:second_deadlock_stack=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
    return env


# ---------------------------------------------------------------------------
# Unit tests (TAP)

TAP_RE = re.compile(r"^(not ok|ok)\b\s*(\d*)\s*-?\s*(.*)$")


def run_unit(path, timeout, env):
    """Returns (passed, failed, lines_to_print)."""
    name = "unit/" + os.path.basename(path)
    t0 = time.monotonic()
    try:
        p = subprocess.run([path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, env=env,
                           cwd=REPO, start_new_session=True)
        stdout = p.stdout.decode("utf-8", "replace")
        stderr = p.stderr.decode("utf-8", "replace")
        rc = p.returncode
        timed_out = False
    except subprocess.TimeoutExpired as e:
        stdout = (e.stdout or b"").decode("utf-8", "replace")
        stderr = (e.stderr or b"").decode("utf-8", "replace")
        rc = None
        timed_out = True
    dur = time.monotonic() - t0
    passed = failed = 0
    lines = []
    for line in stdout.splitlines():
        m = TAP_RE.match(line.strip())
        if not m:
            continue
        desc = m.group(3)
        if m.group(1) == "ok":
            passed += 1
        elif "# TODO" in desc or "# todo" in desc:
            pass
        else:
            failed += 1
            lines.append("FAIL %s::%s %s" % (name, m.group(2), desc))
    problems = []
    if timed_out:
        problems.append("timed out after %.0fs" % timeout)
    elif rc < 0:
        problems.append("killed by signal %d" % -rc)
    elif rc != 0 and failed == 0:
        problems.append("exit status %d without a `not ok` line" % rc)
    from lib.server import sanitizer_report
    rep = sanitizer_report(stderr)
    if rep:
        problems.append("sanitizer report:\n" + indent(rep))
    if problems:
        failed += 1
        tail = "\n".join(stderr.rstrip().splitlines()[-15:])
        lines.append("FAIL %s: %s%s" % (name, "; ".join(problems),
                                         ("\n" + indent(tail)) if tail and not rep else ""))
    if failed == 0:
        lines.append("PASS %s (%d ok) (%.2fs)" % (name, passed, dur))
    return passed, failed, lines


# ---------------------------------------------------------------------------
# Worker: runs the tests of one integration file, reports on a pipe as JSON lines.

class TestTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise TestTimeout("test timed out (per-test timeout)")


def worker_main(args):
    sys.path.insert(0, HERE)
    from lib import server as S
    rfd = os.fdopen(args.result_fd, "w", buffering=1)

    def emit(**kw):
        rfd.write(json.dumps(kw) + "\n")
        rfd.flush()

    path = args.worker
    fname = os.path.basename(path)
    modname = "itest_" + os.path.splitext(fname)[0]
    try:
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        spec.loader.exec_module(mod)
    except BaseException:
        emit(ev="end", name="<import>", ok=False, dur=0.0,
             reason="import failed", detail=traceback.format_exc())
        os._exit(0)
    tests = [(n, f) for n, f in vars(mod).items()
             if n.startswith("test_") and inspect.isfunction(f) and f.__module__ == modname]
    tests.sort(key=lambda nf: nf[1].__code__.co_firstlineno)
    if args.k:
        tests = [(n, f) for n, f in tests if selected(args.k, "%s::%s" % (fname, n))]
    emit(ev="list", names=[n for n, _ in tests])
    signal.signal(signal.SIGALRM, _alarm)
    for idx, (name, fn) in enumerate(tests):
        if idx < args.skip:
            continue
        limit = max(args.timeout, S.T(getattr(fn, "timeout", 0)))
        emit(ev="start", name=name, timeout=limit)
        t0 = time.monotonic()
        tmpdirs = []
        fixture_srv = None
        ok, reason, detail = True, "", ""
        captured = io.StringIO()
        try:
            with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
                signal.setitimer(signal.ITIMER_REAL, limit)
                try:
                    kwargs = {}
                    for p in inspect.signature(fn).parameters:
                        if p == "srv":
                            d = tempfile.mkdtemp(prefix="lfhttpd-test-")
                            tmpdirs.append(d)
                            tree = S.fixture_tree(d)
                            fixture_srv = S.Server(root=tree.root)
                            fixture_srv.tree = tree
                            fixture_srv.files = tree.files
                            kwargs[p] = fixture_srv
                        elif p == "tmpdir":
                            d = tempfile.mkdtemp(prefix="lfhttpd-test-")
                            tmpdirs.append(d)
                            kwargs[p] = d
                        else:
                            raise TypeError("unknown fixture parameter %r" % p)
                    fn(**kwargs)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as e:
            ok = False
            reason = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            if len(reason) > 300:
                reason = reason[:300] + "..."
            tb = traceback.format_exc().rstrip().splitlines()
            detail = "\n".join(tb[-25:])
        # Stop every server started during the test; check for sanitizer reports.
        problems = []
        for s in S.take_created():
            try:
                was_alive = s.alive()
                rc = s.stop()
                if s is fixture_srv and ok:
                    if s.died_early:
                        problems.append("server died during the test (status %s)" % rc)
                    elif s.killed:
                        problems.append("server did not exit within %.0fs of SIGTERM "
                                        "(SIGKILLed)" % S.T(10))
                    elif was_alive and rc != 0:
                        problems.append("server exited with status %s after SIGTERM" % rc)
                elif rc is not None and rc < 0 and rc not in (-signal.SIGKILL, -signal.SIGTERM):
                    problems.append("server killed by signal %d" % -rc)
                rep = s.sanitizer_report()
                if rep:
                    problems.append("sanitizer report in server stderr:\n" + indent(rep))
            except Exception:
                problems.append("error stopping server: " + traceback.format_exc())
        if problems:
            problems.sort(key=lambda p: "sanitizer" not in p)   # sanitizer reports first
            if ok or "sanitizer" in problems[0]:
                reason = problems[0].splitlines()[0]
            ok = False
            detail = (detail + "\n" if detail else "") + "\n".join(problems)
        out_text = captured.getvalue()
        if not ok and out_text.strip():
            detail += "\n--- test output ---\n" + "\n".join(out_text.rstrip().splitlines()[-30:])
        if not ok and fixture_srv is not None and not any("sanitizer" in p for p in problems):
            tail = fixture_srv.stderr.rstrip().splitlines()[-10:]
            if tail:
                detail += "\n--- server stderr (tail) ---\n" + "\n".join(tail)
        for d in tmpdirs:
            shutil.rmtree(d, ignore_errors=True)
        emit(ev="end", name=name, ok=ok, dur=time.monotonic() - t0, reason=reason, detail=detail)
    rfd.close()
    sys.stdout.flush()
    os._exit(0)


# ---------------------------------------------------------------------------
# Parent side: run one file through (possibly several) workers.

class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.passed = 0
        self.failed = 0

    def add(self, p, f):
        with self.lock:
            self.passed += p
            self.failed += f


def report(fname, name, ok, dur, reason="", detail=""):
    if ok:
        out("PASS %s::%s (%.2fs)" % (fname, name, dur))
    else:
        msg = "FAIL %s::%s: %s (%.2fs)" % (fname, name, reason, dur)
        if detail:
            msg += "\n" + indent(detail)
        out(msg)


def run_file(path, args, env, counter):
    fname = os.path.basename(path)
    skip = 0
    def backstop(limit):    # if the in-worker alarm cannot fire
        return limit * 1.5 + 30
    while True:
        hard = backstop(args.timeout)
        r, w = os.pipe()
        log = tempfile.TemporaryFile()
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", path,
               "--build", args.build, "--timeout", str(args.timeout),
               "--result-fd", str(w), "--skip", str(skip)]
        if args.k:
            cmd += ["-k", args.k]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                pass_fds=(w,), env=env, cwd=REPO, start_new_session=True)
        os.close(w)
        with _live_lock:
            _live.add(proc)
        names = None
        current = None
        started = time.monotonic()
        done = 0
        hung = False
        buf = ""
        eof = False
        while not eof:
            ready, _, _ = select.select([r], [], [], 1.0)
            if ready:
                chunk = os.read(r, 1 << 20).decode("utf-8", "replace")
                if not chunk:
                    eof = True
                buf += chunk
                while "\n" in buf:
                    line, buf = buf.split("\n", 1)
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    if ev["ev"] == "list":
                        names = ev["names"]
                    elif ev["ev"] == "start":
                        current = ev["name"]
                        hard = backstop(ev.get("timeout", args.timeout))
                        started = time.monotonic()
                    elif ev["ev"] == "end":
                        counter.add(1 if ev["ok"] else 0, 0 if ev["ok"] else 1)
                        report(fname, ev["name"], ev["ok"], ev["dur"], ev.get("reason", ""),
                               ev.get("detail", ""))
                        current = None
                        hard = backstop(args.timeout)
                        done += 1
                        started = time.monotonic()
            if not eof and time.monotonic() - started > hard:
                hung = True
                break
        _killgroup(proc, wait_first=not hung)
        with _live_lock:
            _live.discard(proc)
        os.close(r)
        log.seek(0)
        logtext = log.read().decode("utf-8", "replace")
        log.close()
        logtail = "\n".join(logtext.rstrip().splitlines()[-20:])
        if _interrupted.is_set():
            return
        if names is None:
            if done == 0:
                counter.add(0, 1)
                report(fname, "<worker>", False, 0.0,
                       "worker produced no results (status %s)" % proc.returncode, logtail)
            return
        finished = skip + done
        if current is not None or hung:
            why = ("hard timeout (%.0fs), worker killed" % hard) if hung else \
                  ("worker died (status %s)" % proc.returncode)
            counter.add(0, 1)
            report(fname, current or "<worker>", False, time.monotonic() - started, why, logtail)
            finished += 1
        elif finished < len(names):
            counter.add(0, 1)
            report(fname, "<worker>", False, 0.0, "worker exited (status %s) before %s"
                   % (proc.returncode, names[finished]), logtail)
        if finished >= len(names) or _interrupted.is_set():
            return
        skip = finished     # restart a worker after the test that hung or crashed


_live = set()
_live_lock = threading.Lock()
_interrupted = threading.Event()


def _kill_all_workers():
    _interrupted.set()
    with _live_lock:
        procs = list(_live)
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _killgroup(proc, wait_first=True):
    if wait_first:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)   # worker + any leftover servers/curl
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _sigterm(signum, frame):
    raise KeyboardInterrupt()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="build directory (default: build)")
    ap.add_argument("-k", default=None,
                    help="only run tests whose name contains SUBSTRING (A,B: either)")
    ap.add_argument("-j", type=int, default=2, help="test files run in parallel (default 2)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="per-test timeout in seconds (default 60, x3 for sanitizer builds)")
    ap.add_argument("--no-unit", action="store_true", help="skip unit-test binaries")
    ap.add_argument("--concurrency", default=os.environ.get("LFHTTPD_TEST_CONCURRENCY", ""),
                    help="start every test server with --concurrency MODEL (default: the "
                         "server's default, leader-followers)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--result-fd", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--skip", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()

    build = args.build if os.path.isabs(args.build) else os.path.join(REPO, args.build)
    scale = scale_for(build)
    if args.timeout is None:
        args.timeout = 60.0 * scale
    os.environ["LFHTTPD_BUILD"] = build
    os.environ["LFHTTPD_SCALE"] = str(scale)
    os.environ["LFHTTPD_TEST_CONCURRENCY"] = args.concurrency
    if args.worker:
        return worker_main(args)

    sys.path.insert(0, HERE)
    signal.signal(signal.SIGTERM, _sigterm)
    env = sanitizer_env(os.environ)
    counter = Counter()
    t0 = time.monotonic()
    if args.concurrency:
        out("concurrency: %s (every test server is started with --concurrency %s)" %
            (args.concurrency, args.concurrency))
    try:
        if not os.path.exists(os.path.join(build, "lfhttpd")):
            out("FAIL setup: %s not found (run make)" % os.path.join(build, "lfhttpd"))
            counter.add(0, 1)
        jobs = max(1, args.j)
        units = []
        tdir = os.path.join(build, "tests")
        if not args.no_unit and os.path.isdir(tdir):
            for n in sorted(os.listdir(tdir)):
                p = os.path.join(tdir, n)
                if n.startswith("test_") and os.path.isfile(p) and os.access(p, os.X_OK):
                    if args.k and not selected(args.k, "unit/" + n):
                        continue
                    units.append(p)
        files = sorted(os.path.join(INTEGRATION, n) for n in os.listdir(INTEGRATION)
                       if n.startswith("test_") and n.endswith(".py")) \
            if os.path.isdir(INTEGRATION) else []
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
            futs = []
            for u in units:
                futs.append(ex.submit(run_unit, u, args.timeout, env))
            for fu in futs:
                p, f, lines = fu.result()
                counter.add(p, f)
                for l in lines:
                    out(l)
            futs = [ex.submit(run_file, f, args, env, counter) for f in files]
            try:
                for fu in futs:
                    fu.result()
            except KeyboardInterrupt:
                for fu in futs:
                    fu.cancel()
                _kill_all_workers()
                raise
    except KeyboardInterrupt:
        _kill_all_workers()
        out("interrupted")
        counter.add(0, 1)
    if _failures:
        # A long log is often read from its end (a CI page shows its tail): say what failed
        # there too, with the detail, so the reader never has to search for it.
        out("=== %d failure%s, repeated from above:" % (len(_failures),
                                                      "" if len(_failures) == 1 else "s"))
        for f in list(_failures):
            sys.stdout.write(f if f.endswith("\n") else f + "\n")
        sys.stdout.flush()
    out("(%.1fs)" % (time.monotonic() - t0))
    out("%d passed, %d failed" % (counter.passed, counter.failed))
    return 1 if counter.failed else 0


if __name__ == "__main__":
    sys.exit(main())
