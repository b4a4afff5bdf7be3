"""The test runner (tests/run.py) and .ci/run themselves.

A copy of the runner and tests/lib runs a generated test file with a default timeout of 1 s:
a test that sleeps 3 s times out, the same test with `.timeout = 30` passes. A failure is
repeated, with its detail, after every other line of the run and just above its summary, and
.ci/run names every failed stage and its FAIL lines just above its grand total: the tail of a
long log (what a CI page shows) always says what failed.
"""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib.server import REPO, T, binary  # noqa: E402

TESTS = '''
import time


def test_sleeps_past_the_default():
    time.sleep(3)


def test_sleeps_within_its_own():
    time.sleep(3)


test_sleeps_within_its_own.timeout = 30
'''


def _run_copy(tmpdir, name, text, timeout="1"):
    """Run a copy of the runner on one generated test file; its output, its lines, its exit."""
    tests = os.path.join(tmpdir, "tests")
    os.makedirs(os.path.join(tests, "integration"))
    shutil.copy2(os.path.join(REPO, "tests", "run.py"), tests)
    shutil.copytree(os.path.join(REPO, "tests", "lib"), os.path.join(tests, "lib"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(tests, "integration", name), "w") as f:
        f.write(text)
    p = subprocess.run([sys.executable, os.path.join(tests, "run.py"), "--no-unit",
                        "--timeout", timeout, "--build", os.path.dirname(binary())],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=T(90))
    out = p.stdout.decode("utf-8", "replace")
    return out, out.splitlines(), p


def test_a_test_may_set_its_own_timeout(tmpdir):
    out, lines, p = _run_copy(tmpdir, "test_sleepers.py", TESTS)
    assert any(l.startswith("FAIL test_sleepers.py::test_sleeps_past_the_default: TestTimeout")
               for l in lines), out
    assert any(l.startswith("PASS test_sleepers.py::test_sleeps_within_its_own ")
               for l in lines), out
    assert lines[-1] == "1 passed, 1 failed", out
    assert p.returncode == 1, out


FAILING = '''
def test_a_first_pass():
    pass


def test_fails_with_a_reason():
    assert 1 + 1 == 3, "arithmetic is broken here"


def test_a_last_pass():
    pass
'''


def test_failures_are_repeated_above_the_summary(tmpdir):
    out, lines, p = _run_copy(tmpdir, "test_mixed.py", FAILING, timeout="30")
    assert lines[-1] == "2 passed, 1 failed", out
    recap = [i for i, l in enumerate(lines) if l == "=== 1 failure, repeated from above:"]
    assert len(recap) == 1, out
    i = recap[0]
    assert all(not l.startswith("PASS ") for l in lines[i:]), out   # after every test's line
    assert lines[i + 1].startswith("FAIL test_mixed.py::test_fails_with_a_reason: "), out
    assert "arithmetic is broken here" in "\n".join(lines[i + 1:-1]), out   # the detail too
    fails = [l for l in lines if l.startswith("FAIL test_mixed.py::test_fails_with_a_reason")]
    assert len(fails) == 2, out          # where it happened, and again at the end
    assert p.returncode == 1, out


def test_ci_names_failed_stages_above_its_total(tmpdir):
    """.ci/run's own stage() and ending, with three stand-in stages: one passes, one fails a
    test, one crashes without a summary line."""
    with open(os.path.join(REPO, ".ci", "run")) as f:
        script = f.read()
    head = script[:script.index('\nstage "test" ')]
    tail = script[script.index('\nif [ -s "$failures" ]'):]
    stages = ('''
stage "good" bash -c 'echo "PASS x"; echo "1 passed, 0 failed"'
stage "bad" bash -c 'echo "PASS y"; echo "FAIL t.py::z: broken (1s)"; echo "    why"; '''
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
                               "    FAIL t.py::z: broken (1s)",
                               "stage crash: no summary line (exit 3); its last lines:",
                               "    out of disk"], out
    assert p.returncode == 1, out
