"""What the lfhttpd suite adds to pytest: its options, its fixtures, and the checks after each
test (docs/TESTING.md).

Options (write them --build=DIR: with no test path after it, `--build DIR` has pytest take DIR
for the tests to run before it knows the option):
  --build=DIR          the build directory whose lfhttpd every test starts (default: build);
                       a sanitizer build (its name has "san": build-tsan, build-asan) scales
                       every timeout by 3
  --concurrency=MODEL  start every test server with --concurrency MODEL (default: the
                       server's own, leader-followers)

Fixtures:
  srv          a fresh server on a fresh fixture document root (lib.server.fixture_tree):
               srv.tree, srv.files (URL path -> bytes)
  tmpdir       a fresh temporary directory (a str), removed after the test
  test_timeout the per-test timeout pytest-timeout applies to the test (seconds, scaled)
  tmp_path     the same, as a pathlib.Path
  fixture_root a fresh fixture document root (a lib.server.Tree), no server
  shared_server  shared_server(make): make(directory) run once for a module's tests, the
               servers it starts shared by them (a parametrized test's cases ask one server)
  shared_srv   like srv, one server shared by the module's tests that take it

After each test, every server it started (lib.server.Server, however made) is stopped and its
stderr searched for sanitizer reports: a report fails the test, and so does the fixture
server's dying during the test or not exiting on SIGTERM. Then every process the test started
and left running is killed: pytest's process (each xdist worker) is the subreaper of its
descendants, so an orphan of a test is still found under it; where that is refused, the
worker's process group (it leads one of its own) is searched instead.

The per-test timeout (pytest-timeout) is 60 s, x3 for a sanitizer build; a test that needs
longer says so with @pytest.mark.timeout(SECONDS), scaled the same way.
"""

import os
import shutil
import signal
import tempfile
import time

import pytest

DEFAULT_TIMEOUT = 60.0
_SUBREAPER = False


def pytest_addoption(parser):
    g = parser.getgroup("lfhttpd")
    g.addoption("--build", default="build",
                help="build directory of the lfhttpd under test (default: build)")
    g.addoption("--concurrency", default=os.environ.get("LFHTTPD_TEST_CONCURRENCY", ""),
                help="start every test server with --concurrency MODEL")


def _scale_for(build):
    return 3.0 if "san" in os.path.basename(os.path.normpath(build)).lower() else 1.0


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Before any test module (or pytest-timeout) reads them: the build, the scale, the
    strategy and the sanitizers' options, in the environment every server inherits too."""
    repo = str(config.rootpath)
    build = config.getoption("build")
    build = build if os.path.isabs(build) else os.path.join(repo, build)
    scale = _scale_for(build)
    os.environ["LFHTTPD_BUILD"] = build
    os.environ["LFHTTPD_SCALE"] = str(scale)
    os.environ["LFHTTPD_TEST_CONCURRENCY"] = config.getoption("concurrency")
    # keep going after the first report so that all of them reach stderr, where they are read
    os.environ.setdefault("TSAN_OPTIONS", "halt_on_error=0:second_deadlock_stack=1")
    os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
    from lib import server
    server.BUILD, server.SCALE = build, scale
    server.CONCURRENCY = config.getoption("concurrency")
    config._lfhttpd_scale = scale
    if (config.pluginmanager.hasplugin("timeout") and config.getoption("timeout") is None
            and not os.environ.get("PYTEST_TIMEOUT") and not config.getini("timeout")):
        config.option.timeout = DEFAULT_TIMEOUT * scale
    # What a test leaves running is found after it: this process is the "subreaper" of its
    # descendants (an orphan is given to it rather than to init), and a worker leads a process
    # group of its own (what its tests start, if not in a session of its own, is in it).
    global _SUBREAPER
    try:
        import ctypes
        _SUBREAPER = ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # CHILD_SUBREAPER
    except (OSError, AttributeError):
        _SUBREAPER = False
    if os.environ.get("PYTEST_XDIST_WORKER"):
        try:
            os.setpgrp()
        except OSError:
            pass


def pytest_report_header(config):
    lines = ["lfhttpd: %s (timeouts x%g)" % (os.environ["LFHTTPD_BUILD"],
                                            config._lfhttpd_scale)]
    if config.getoption("concurrency"):
        lines.append("concurrency: %s (every test server is started with --concurrency %s)"
                     % ((config.getoption("concurrency"),) * 2))
    return lines


def pytest_collection_modifyitems(config, items):
    """A test's own @pytest.mark.timeout(S) is scaled like the default (never below the
    timeout of the run)."""
    scale = config._lfhttpd_scale
    run = float(getattr(config.option, "timeout", None) or 0)
    for item in items:
        m = item.get_closest_marker("timeout")
        if m is not None and m.args and not getattr(item, "_lfhttpd_scaled", False):
            own = max(float(m.args[0]) * scale, run)
            item.add_marker(pytest.mark.timeout(own), append=False)
            item._lfhttpd_scaled = True


# ---- fixtures ---------------------------------------------------------------------------------

def _fresh_dir():
    return tempfile.mkdtemp(prefix="lfhttpd-test-")


@pytest.fixture
def tmpdir():
    """A fresh temporary directory (str), removed after the test (big fixture trees and
    thousands of tests: nothing is kept)."""
    d = _fresh_dir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def test_timeout(request):
    """The per-test timeout (seconds) that pytest-timeout applies to this test: the run's (60 s,
    x3 for a sanitizer build) or the test's own @pytest.mark.timeout, scaled the same way."""
    m = request.node.get_closest_marker("timeout")
    if m is not None and m.args:
        return float(m.args[0])
    return float(request.config.option.timeout or 0)


@pytest.fixture
def tmp_path(tmpdir):
    import pathlib
    return pathlib.Path(tmpdir)


@pytest.fixture
def fixture_root():
    from lib.server import fixture_tree
    d = _fresh_dir()
    yield fixture_tree(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def srv(request, fixture_root):
    """A fresh server on a fresh fixture document root."""
    from lib.server import Server
    s = Server(root=fixture_root.root)
    s.tree = fixture_root
    s.files = fixture_root.files
    request.node._lfhttpd_fixture_srv = s
    return s


@pytest.fixture(scope="module")
def shared_server():
    """shared_server(make, *args): make(directory, *args) run once, for the tests of a module
    (or of a parametrized test) that share what it starts -- a server each case asks something
    of, instead of a server started per case. The servers make() starts outlive the test that
    first asked for them: they are not stopped after it, nor killed as its leftovers; after the
    module's last test they are stopped and checked like any other (a sanitizer report, a
    server that died or did not exit on SIGTERM: an error of that test)."""
    from lib import server as S
    kept, dirs = [], []

    def share(make, *args, **kw):
        d = _fresh_dir()
        dirs.append(d)
        mark = S.created_mark()
        try:
            value = make(d, *args, **kw)
        finally:
            new = S.take_created(mark)
            kept.extend(new)
            keep_pids.update(s.proc.pid for s in new if s.proc is not None)
        return value
    yield share
    problems = []
    for s in kept:
        keep_pids.discard(s.proc.pid if s.proc is not None else None)
        was_alive = s.alive()
        rc = s.stop()
        if not was_alive:
            problems.append("shared server %r died (status %s)" % (s.cmd, rc))
        elif s.killed:
            problems.append("shared server did not exit within %.0fs of SIGTERM" % S.T(10))
        rep = s.sanitizer_report()
        if rep:
            problems.append("sanitizer report in shared server stderr:\n" + _indent(rep))
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    if problems:
        raise ServerProblem("\n".join(problems))


@pytest.fixture(scope="module")
def shared_srv(shared_server):
    """Like srv, but one server for the module's tests that take it: for the cases of a
    parametrized test that only ask it something."""
    def make(d):
        from lib.server import Server, fixture_tree
        tree = fixture_tree(d)
        s = Server(root=tree.root)
        s.tree, s.files = tree, tree.files
        return s
    return shared_server(make)


def _peer_fixture(tmpdir, start):
    from lib import peers
    started = []

    def run(conf, **values):
        p = getattr(peers, start)(os.path.join(tmpdir, "%s-%d" % (start, len(started))), conf,
                                  **values)
        started.append(p)
        return p
    return run, started


@pytest.fixture
def nginx_peer(tmpdir):
    """nginx_peer(conf, **values): the reference server of a differential test."""
    run, started = _peer_fixture(tmpdir, "nginx")
    yield run
    for p in started:
        p.stop()


@pytest.fixture
def lighttpd_peer(tmpdir):
    """lighttpd_peer(conf, **values): the reference server of a differential test."""
    run, started = _peer_fixture(tmpdir, "lighttpd")
    yield run
    for p in started:
        p.stop()


# ---- after each test: servers stopped and checked, leftovers killed ---------------------------

class ServerProblem(AssertionError):
    """What the checks after a test found (in the test's report: no traceback of this file)."""


def _indent(text, prefix="    "):
    return "\n".join(prefix + l for l in text.rstrip("\n").splitlines())


def _stop_and_check(item, ok):
    """Stop every server started since the last call; [problems]."""
    from lib import server as S
    fixture_srv = getattr(item, "_lfhttpd_fixture_srv", None)
    problems = []
    for s in S.take_created():
        try:
            was_alive = s.alive()
            rc = s.stop()
            if s is fixture_srv and ok:
                if s.died_early:
                    problems.append("server died during the test (status %s)" % rc)
                elif s.killed:
                    problems.append("server did not exit within %.0fs of SIGTERM (SIGKILLed)"
                                    % S.T(10))
                elif was_alive and rc != 0:
                    problems.append("server exited with status %s after SIGTERM" % rc)
            elif rc is not None and rc < 0 and rc not in (-signal.SIGKILL, -signal.SIGTERM):
                problems.append("server killed by signal %d" % -rc)
            rep = s.sanitizer_report()
            if rep:
                problems.append("sanitizer report in server stderr:\n" + _indent(rep))
        except Exception as e:   # noqa: BLE001 (said, not hidden)
            problems.append("error stopping server: %s: %s" % (type(e).__name__, e))
    problems.sort(key=lambda p: "sanitizer" not in p)    # sanitizer reports first
    return problems


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Right after the test's body: its servers stopped and checked. A problem fails the test
    (a sanitizer report even when the test failed already: it is the first thing to read)."""
    __tracebackhide__ = True
    outcome = yield
    ok = outcome.excinfo is None
    problems = _stop_and_check(item, ok)
    fixture_srv = getattr(item, "_lfhttpd_fixture_srv", None)
    if not ok and fixture_srv is not None and not problems:
        tail = fixture_srv.stderr.rstrip().splitlines()[-10:]
        if tail:
            item.add_report_section("call", "server stderr (tail)", "\n".join(tail))
    if problems and (ok or "sanitizer" in problems[0]):
        msg = "\n".join(problems)
        if not ok:
            msg += "\n(the test failed too: %s)" % outcome.excinfo[1]
        raise ServerProblem(msg)
    if problems:
        item.add_report_section("call", "servers", "\n".join(problems))


def _children(pid):
    """pid's children, from /proc (each thread's list: a child belongs to the thread that
    forked it)."""
    out = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def _group_members(pgid):
    out = set()
    for n in os.listdir("/proc"):
        if n.isdigit():
            try:
                with open("/proc/%s/stat" % n, "rb") as f:
                    data = f.read().decode("latin-1")
            except OSError:
                continue
            if int(data[data.rindex(")") + 2:].split()[2]) == pgid:
                out.add(int(n))
    return out


def _live_processes():
    """Every process under this one (orphans included: it is their subreaper), and the
    members of its process group when it leads one and could not be a subreaper."""
    me = os.getpid()
    pids, todo = set(), [me]
    while todo:
        for c in _children(todo.pop()):
            if c not in pids and c not in keep_pids:
                pids.add(c)
                todo.append(c)
    if not _SUBREAPER and os.getpgrp() == me:
        pids |= _group_members(me)
    pids.discard(me)
    return pids


# Processes a fixture keeps for longer than one test (shared_server's): not leftovers, and
# neither are their children.
keep_pids = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the fixtures' own teardown: the servers started since the test's body (by a
    fixture, say) stopped and checked, then every process the test left running killed."""
    __tracebackhide__ = True
    yield
    problems = _stop_and_check(item, False)
    strays = _live_processes() - keep_pids
    for pid in strays:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 5
    for pid in strays:    # reap those that are our children (the rest: their parents' job)
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.01)
    # orphans given to this process that exited during the test: reaped (no Popen waits for them)
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    if problems and "sanitizer" in problems[0]:
        raise ServerProblem("\n".join(problems))
