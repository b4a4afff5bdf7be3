"""The suite's own tooling: tests/conftest.py (what it adds to pytest), tests/suite.sh (make
test: prove, then pytest, the failures named again, the summary line) and .ci/run's ending.

Each runs a copy of the tooling (pytest.ini, tests/conftest.py, tests/lib, tests/suite.sh) on
generated test files, with a stand-in build directory where a test needs one: an `lfhttpd`
shell script that announces a listener (and may write a sanitizer report), unit "tests" that
are shell scripts printing TAP. The tail of a long log (what a CI page shows) must always say
what failed.
"""

import os
import shutil
import subprocess
import sys

import pytest

from lib.server import REPO, T

SLEEPERS = '''
import time

import pytest


def test_sleeps_past_the_default():
    time.sleep(3)


@pytest.mark.timeout(30)
def test_sleeps_within_its_own():
    time.sleep(3)
'''

TIMEOUTS = '''
import pytest
import pytest_timeout


def _say(request, test_timeout):
    applied = pytest_timeout._get_item_settings(request.node).timeout
    print("\\nTIMEOUT %s fixture=%g plugin=%g" % (request.node.name, test_timeout, applied))


def test_default(request, test_timeout):
    _say(request, test_timeout)


@pytest.mark.timeout(300)
def test_own(request, test_timeout):
    _say(request, test_timeout)
'''

FAILING = '''
def test_a_first_pass():
    pass


def test_fails_with_a_reason():
    assert 1 + 1 == 3, "arithmetic is broken here"


def test_a_last_pass():
    pass
'''

# A stand-in server: announces a listener, reports (or not) like a sanitizer, exits on SIGTERM.
FAKE_LFHTTPD = '''#!/bin/sh
trap 'exit 0' TERM
if [ -n "${FAKE_REPORT:-}" ]; then
    echo "==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x1" >&2
fi
echo "lfhttpd: listening on http://127.0.0.1:9" >&2
while :; do sleep 0.05; done
'''

SERVERS = '''
import os


def test_a_server_that_reports(srv):
    assert srv.port == 9


def test_a_server_that_does_not(srv):
    assert srv.port == 9
'''

SHARED = '''
import os

import pytest


@pytest.fixture(scope="module")
def one(shared_server):
    from lib.server import Server
    return shared_server(lambda d: Server(root=d))


@pytest.mark.parametrize("case", [1, 2, 3])
def test_each_case_asks_the_same_server(one, case):
    assert one.alive()
    with open(os.environ["PIDS_FILE"], "a") as f:
        f.write("%d\\n" % one.proc.pid)
'''

LEFTOVERS = '''
import os
import subprocess


def test_leaves_a_child_and_an_orphan(tmpdir):
    child = subprocess.Popen(["sleep", "300"])
    subprocess.run(["sh", "-c", "sleep 300 & echo $! > %s/orphan" % tmpdir], check=True)
    with open(os.environ["PIDS_FILE"], "w") as f:
        f.write("%d %s" % (child.pid, open(tmpdir + "/orphan").read()))
'''

TAP_UNITS = {
    "test_tap": "#!/bin/sh\necho 1..3\necho 'ok 1 - a'\necho 'not ok 2 - b'\necho 'ok 3 - c'\n",
    "test_crash": "#!/bin/sh\necho 1..2\necho 'ok 1 - a'\nexit 3\n",
    "test_fine": "#!/bin/sh\necho 1..2\necho 'ok 1 - a'\necho 'ok 2 - b'\n",
}


def _copy(tmpdir, files, units=None, fake_server=False):
    """A tree with the tooling, tests/integration/NAME for each {NAME: text}, and a build
    directory (units: {name: TAP script}; fake_server: the stand-in lfhttpd)."""
    tree = os.path.join(tmpdir, "tree")
    tests = os.path.join(tree, "tests")
    os.makedirs(os.path.join(tests, "integration"))
    for f in ("pytest.ini", "tests/conftest.py", "tests/suite.sh"):
        shutil.copy2(os.path.join(REPO, f), os.path.join(tree, f))
    shutil.copytree(os.path.join(REPO, "tests", "lib"), os.path.join(tests, "lib"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in files.items():
        with open(os.path.join(tests, "integration", name), "w") as f:
            f.write(text)
    build = os.path.join(tree, "build")
    os.makedirs(os.path.join(build, "tests"))
    scripts = dict(("tests/" + k, v) for k, v in (units or {}).items())
    if fake_server:
        scripts["lfhttpd"] = FAKE_LFHTTPD
    for name, text in scripts.items():
        with open(os.path.join(build, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(build, name), 0o755)
    return tree


def _run(tree, args, env=None, timeout=120):
    e = dict(os.environ)
    for k in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST", "LFHTTPD_BUILD",
              "LFHTTPD_SCALE", "LFHTTPD_TEST_CONCURRENCY"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run(args, cwd=tree, env=e, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=T(timeout))
    out = p.stdout.decode("utf-8", "replace")
    return out, out.splitlines(), p.returncode


def _pytest(tree, *args, env=None):
    env = dict(env or {}, CI="1")     # short summary lines not cut (as tests/suite.sh runs it)
    return _run(tree, [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-vv", "-rfE",
                       "--build=build"] + list(args), env)


def test_a_test_may_set_its_own_timeout(tmpdir):
    tree = _copy(tmpdir, {"test_sleepers.py": SLEEPERS})
    out, lines, rc = _pytest(tree, "--timeout", "1", "tests/integration/test_sleepers.py")
    assert any(l.startswith("FAILED tests/integration/test_sleepers.py::"
                            "test_sleeps_past_the_default - Failed: Timeout") for l in lines), out
    assert "1 failed, 1 passed" in lines[-1], out
    assert rc == 1, out


@pytest.mark.parametrize("build,scale", [("build", 1), ("build-asan", 3), ("build-tsan", 3),
                                         ("build-arm64", 1)])
def test_timeouts_are_scaled_for_a_sanitizer_build(tmpdir, build, scale):
    """60 s per test, and a test's own longer figure, x3 when the build directory's name says
    "san" (a test's own figure is never below the run's: 300 s here)."""
    tree = _copy(tmpdir, {"test_timeouts.py": TIMEOUTS})
    os.makedirs(os.path.join(tree, build), exist_ok=True)
    out, lines, rc = _pytest(tree, "-s", "-p", "no:xdist", "--build=" + build,
                             "tests/integration/test_timeouts.py", env={"PYTEST_TIMEOUT": ""})
    assert rc == 0, out
    said = sorted(l.split(None, 1)[1] for l in lines if l.startswith("TIMEOUT "))
    assert said == ["test_default fixture=%g plugin=%g" % (60 * scale, 60 * scale),
                    "test_own fixture=%g plugin=%g" % (300 * scale, 300 * scale)], out
    assert "(timeouts x%g)" % scale in out, out


def test_a_sanitizer_report_fails_the_test_that_started_the_server(tmpdir):
    tree = _copy(tmpdir, {"test_servers.py": SERVERS}, fake_server=True)
    out, lines, rc = _pytest(tree, "-k", "reports", env={"FAKE_REPORT": "1"})
    assert any(l.startswith("FAILED tests/integration/test_servers.py::"
                            "test_a_server_that_reports - conftest.ServerProblem: sanitizer report")
               for l in lines), out
    assert "heap-use-after-free" in out, out
    assert rc == 1, out
    out, lines, rc = _pytest(tree, "-k", "does_not")
    assert "1 passed" in lines[-1] and rc == 0, out


def test_a_shared_server_outlives_each_case_and_is_checked_after_the_last(tmpdir):
    tree = _copy(tmpdir, {"test_shared.py": SHARED}, fake_server=True)
    pids_file = os.path.join(tmpdir, "pids")
    out, lines, rc = _pytest(tree, env={"PIDS_FILE": pids_file})
    assert rc == 0 and "3 passed" in lines[-1], out
    with open(pids_file) as f:
        pids = f.read().split()
    assert len(pids) == 3 and len(set(pids)) == 1, (pids, out)    # one server, not killed
    out, lines, rc = _pytest(tree, env={"PIDS_FILE": pids_file, "FAKE_REPORT": "1"})
    assert any(l.startswith("ERROR tests/integration/test_shared.py::"
                            "test_each_case_asks_the_same_server[3] - conftest.ServerProblem: "
                            "sanitizer report in shared server") for l in lines), out
    assert "3 passed, 1 error" in lines[-1] and rc == 1, out


def test_processes_a_test_leaves_are_killed_after_it(tmpdir):
    tree = _copy(tmpdir, {"test_leftovers.py": LEFTOVERS})
    pids_file = os.path.join(tmpdir, "pids")
    for mode in (["-p", "no:xdist"], ["-n", "1"]):     # in the main process; in a worker
        out, lines, rc = _pytest(tree, *mode, env={"PIDS_FILE": pids_file})
        assert rc == 0, out
        with open(pids_file) as f:
            pids = [int(x) for x in f.read().split()]
        assert len(pids) == 2, out
        for pid in pids:
            try:
                with open("/proc/%d/stat" % pid) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except FileNotFoundError:
                continue
            assert state == "Z", "%s: process %d (%s) still runs after the test" % (mode, pid,
                                                                                  state)


def test_make_test_names_failures_above_its_summary(tmpdir):
    """tests/suite.sh: prove's TAP counts and pytest's report, added into the last line; every
    failure named again after the last test's line."""
    tree = _copy(tmpdir, {"test_mixed.py": FAILING}, units=TAP_UNITS)
    out, lines, rc = _run(tree, ["sh", "tests/suite.sh", "--build", "build"])
    # unit: 6 TAP tests ran, 1 `not ok`, 1 program exits 3 (one failure more); pytest: 2 + 1
    assert lines[-1] == "7 passed, 3 failed", out
    assert rc == 1, out
    recap = [i for i, l in enumerate(lines) if l == "=== what failed (details above):"]
    assert len(recap) == 1, out
    i = recap[0]
    assert all("PASSED" not in l for l in lines[i:]), out     # after every test's line
    assert lines[i + 1:-1] == [
        "FAILED unit/test_crash: exit status or plan (no not ok); its output above",
        "FAILED unit/test_tap: 1 not ok; its output above",
        "FAILED tests/integration/test_mixed.py::test_fails_with_a_reason - "
        "AssertionError: arithmetic is broken here",
    ], out
    assert "arithmetic is broken here" in "\n".join(lines[:i]), out    # the details, above
    assert "not ok 2 - b" in lines[:i], out


def test_make_test_selects_with_tests(tmpdir):
    """--tests (make test TESTS=...): unit/ names select prove's programs, the rest pytest's
    tests (-k), A,B either."""
    tree = _copy(tmpdir, {"test_mixed.py": FAILING}, units=TAP_UNITS)
    out, lines, rc = _run(tree, ["sh", "tests/suite.sh", "--build", "build", "--tests",
                                 "unit/test_fine,test_mixed.py::first_pass,last_pass"])
    assert lines[-1] == "4 passed, 0 failed", out
    assert rc == 0, out
    out, lines, rc = _run(tree, ["sh", "tests/suite.sh", "--build", "build", "--tests",
                                 "unit/test_fine"])
    assert lines[-1] == "2 passed, 0 failed", out
    assert "pytest" not in out, out


def test_ci_names_failed_stages_above_its_total(tmpdir):
    """.ci/run's own stage() and ending, with three stand-in stages: one passes, one fails a
    test, one crashes without a summary line."""
    with open(os.path.join(REPO, ".ci", "run")) as f:
        script = f.read()
    head = script[:script.index('\nstage "test" ')]
    tail = script[script.index('\nif [ -s "$failures" ]'):]
    stages = ('''
stage "good" bash -c 'echo "PASSED x"; echo "1 passed, 0 failed"'
stage "bad" bash -c 'echo "PASSED y"; echo "FAILED tests/t.py::z - broken"; echo "    why"; '''
              '''echo "1 passed, 1 failed"; exit 1'
stage "crash" bash -c 'echo "out of disk"; exit 3'
''')
    os.makedirs(os.path.join(tmpdir, ".ci"))
    path = os.path.join(tmpdir, ".ci", "run")
    with open(path, "w") as f:
        f.write(head + stages + tail)
    p = subprocess.run(["bash", path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=T(30))
    lines = p.stdout.decode("utf-8", "replace").splitlines()
    out = "\n".join(lines)
    assert lines[-1] == "2 passed, 2 failed", out
    i = lines.index("=== what failed, by stage:")
    assert lines[i + 1:-1] == ["stage bad: exit 1, 1 passed, 1 failed",
                               "    FAILED tests/t.py::z - broken",
                               "stage crash: no summary line (exit 3); its last lines:",
                               "    out of disk"], out
    assert p.returncode == 1, out
