"""The benchmark harness (bench/bench.py) still runs: its strategies phase on a tiny load.

Not a benchmark: nothing here looks at a figure beyond "there is one". Strategies this build of
lfhttpd rejects are skipped by the harness with a note, which is checked too.
"""

import json
import os
import shutil
import signal
import subprocess
import sys

from lib.server import REPO, SCALE, T, binary

STRATEGIES = ("leader-followers", "half-sync-half-async", "reuseport", "leader-followers-edge")
LOADS = ("short", "long", "skewed", "mixed")


def accepted(strategy, tmpdir):
    conf = os.path.join(tmpdir, "probe-%s.conf" % strategy)
    with open(conf, "w") as f:
        f.write("listen 127.0.0.1:0\nroot %s\nconcurrency %s\n" % (tmpdir, strategy))
    return subprocess.run([binary(), "-t", "-c", conf], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def test_bench_strategies_phase_tiny_load(tmpdir):
    if SCALE > 1:
        print("skipped: sanitizer build (the harness preloads an allocation counter)")
        return
    if not shutil.which("wrk"):
        print("skipped: wrk is not installed (tools/deps.sh test)")
        return
    out = os.path.join(tmpdir, "bench")
    env = dict(os.environ, BENCH_PHASES="strategies", BENCH_QUICK="1", BENCH_STRATEGY_ROUNDS="1",
               BENCH_STRATEGY_DURATION="1", BENCH_SKEW_IDLE="20", BENCH_CGI_MS="5",
               BENCH_QUIET_BUDGET="0", BENCH_THREADS="2", BENCH_OUT=out,
               BENCH_BUILD=os.path.dirname(binary()))
    # bench.py starts its servers in sessions of their own and stops them on SIGTERM: never
    # SIGKILL it (they would outlive it), and stop it whatever happens here (the test timeout)
    p = subprocess.Popen([sys.executable, os.path.join(REPO, "bench", "bench.py")], env=env,
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        stdout, _ = p.communicate(timeout=T(50))
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=30)
    print(stdout[-3000:])
    assert p.returncode == 0, "bench.py exited with %d" % p.returncode
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    with open(os.path.join(out, "strategies.md")) as f:
        table = f.read()
    have = {s: accepted(s, tmpdir) for s in STRATEGIES}
    want = [s for s in STRATEGIES if have[s]] or ["leader-followers"]  # an older build
    for s in STRATEGIES:
        if s not in want:
            assert "skipped (this lfhttpd rejects `concurrency %s`)" % s in stdout, s
    for load in LOADS:
        got = results["strategies"][load]
        assert sorted(got) == sorted(want), (load, sorted(got))
        for s in want:
            x = got[s]
            assert x["median"] > 0, (load, s, x)
            assert x["alloc_per_req"] is not None, (load, s, "allocations not counted")
            assert not x["bad"], (load, s, x["bad"])
            assert "| %s | " % s in table, s
        if load == "mixed":
            # The slow probe is measured for every strategy. How many of its requests complete
            # within the tiny run's second depends on the machine's load (a loaded machine can
            # leave reuseport's probe with none): the figure is the harness's to report, not
            # this test's to judge.
            assert all(isinstance(got[s]["slow_rps"], (int, float)) and got[s]["slow_rps"] >= 0
                       for s in want), got
            assert any(got[s]["slow_rps"] > 0 for s in want), got
