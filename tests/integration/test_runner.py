"""The test runner (tests/run.py) itself: a test may carry a timeout of its own.

A copy of the runner and tests/lib runs a generated test file with a default timeout of 1 s:
a test that sleeps 3 s times out, the same test with `.timeout = 30` passes.
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


def test_a_test_may_set_its_own_timeout(tmpdir):
    tests = os.path.join(tmpdir, "tests")
    os.makedirs(os.path.join(tests, "integration"))
    shutil.copy2(os.path.join(REPO, "tests", "run.py"), tests)
    shutil.copytree(os.path.join(REPO, "tests", "lib"), os.path.join(tests, "lib"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(tests, "integration", "test_sleepers.py"), "w") as f:
        f.write(TESTS)
    p = subprocess.run([sys.executable, os.path.join(tests, "run.py"), "--no-unit",
                        "--timeout", "1", "--build", os.path.dirname(binary())],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=T(90))
    out = p.stdout.decode("utf-8", "replace")
    lines = out.splitlines()
    assert any(l.startswith("FAIL test_sleepers.py::test_sleeps_past_the_default: TestTimeout")
               for l in lines), out
    assert any(l.startswith("PASS test_sleepers.py::test_sleeps_within_its_own ")
               for l in lines), out
    assert lines[-1] == "1 passed, 1 failed", out
    assert p.returncode == 1, out
