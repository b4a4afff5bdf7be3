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

import pytest

from lib.server import REPO, SCALE, T, binary

STRATEGIES = ("leader-followers", "half-sync-half-async", "reuseport", "leader-followers-edge")
LOADS = ("short", "long", "skewed", "mixed")


def accepted(strategy, tmpdir):
    conf = os.path.join(tmpdir, "probe-%s.conf" % strategy)
    with open(conf, "w") as f:
        f.write("listen 127.0.0.1:0\nroot %s\nconcurrency %s\n" % (tmpdir, strategy))
    return subprocess.run([binary(), "-t", "-c", conf], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def _bench(env, seconds):
    """Run bench/bench.py with `env`; its output, once it exited 0 within `seconds` (scaled).
    bench.py starts its servers in sessions of their own and stops them on SIGTERM: never
    SIGKILL it (they would outlive it), and stop it whatever happens here (the bound, the
    test's timeout), within the test's timeout (each caller's is larger than this bound)."""
    p = subprocess.Popen([sys.executable, os.path.join(REPO, "bench", "bench.py")], env=env,
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        stdout, _ = p.communicate(timeout=T(seconds))
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=15)
    print(stdout[-3000:])
    assert p.returncode == 0, "bench.py exited with %d" % p.returncode
    return stdout


@pytest.mark.timeout(120)
def test_bench_strategies_phase_tiny_load(tmpdir):
    if SCALE > 1:
        pytest.skip("sanitizer build (the harness preloads an allocation counter)")
    if not shutil.which("wrk"):
        pytest.skip("wrk is not installed (tools/deps.sh test)")
    out = os.path.join(tmpdir, "bench")
    env = dict(os.environ, BENCH_PHASES="strategies", BENCH_QUICK="1", BENCH_STRATEGY_ROUNDS="1",
               BENCH_STRATEGY_DURATION="1", BENCH_SKEW_IDLE="20", BENCH_CGI_MS="5",
               BENCH_QUIET_BUDGET="0", BENCH_THREADS="2", BENCH_OUT=out,
               BENCH_BUILD=os.path.dirname(binary()))
    stdout = _bench(env, 60)
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


def _bench_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_harness",
                                                  os.path.join(REPO, "bench", "bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _summary(median, p99, cpu, other=0.1):
    return {"median": median, "min": median, "max": median, "n": 1, "p50_ms": p99 / 2,
            "p99_ms": p99, "cpu_us_per_req": cpu, "ctx_per_req": 0.1, "foreign_cores": other,
            "bytes_per_req": None, "bad": {}}


def test_ratio_table_takes_the_best_peer_and_the_lowest_cpu():
    """The ratio table of make bench-quick, from made-up summaries: the best peer is the
    highest median of nginx, h2o and lighttpd (not the ceiling program, not an lfhttpd
    variant); the CPU column compares with the lowest peer's; a scenario no peer ran says so."""
    b = _bench_module()
    summ = {"1k": {"lfhttpd": _summary(900, 2.0, 10.0), "nginx": _summary(800, 3.0, 9.0),
                   "h2o": _summary(1000, 1.5, 12.0), "ceiling": _summary(5000, 0.5, 1.0),
                   "lfhttpd-copy": _summary(2000, 0.5, 1.0)},
            "256k": {"lfhttpd": _summary(1500, 10.0, 80.0), "lighttpd": _summary(1000, 20.0, 100.0)},
            "404": {"lfhttpd": _summary(700, 1.0, 5.0)}}
    rows = {r["key"]: r for r in b.ratio_rows(summ)}
    assert sorted(rows) == ["1k", "256k", "404"], rows
    assert rows["1k"]["best"] == "h2o" and abs(rows["1k"]["ratio"] - 0.9) < 1e-9, rows["1k"]
    assert rows["1k"]["lowest_cpu"] == 9.0 and rows["1k"]["best_p99"] == 1.5, rows["1k"]
    assert rows["256k"]["best"] == "lighttpd" and rows["256k"]["unit"] == "MiB/s", rows["256k"]
    assert rows["404"]["best"] is None and rows["404"]["ratio"] is None, rows["404"]
    table = "\n".join(b.ratio_table(summ))
    assert "| 1k | 900 req/s | h2o 1,000 | 0.90× | 2.00 ms / 1.50 ms | 10.0 / 9.0 |" in table, table
    assert "| 404 | 700 req/s | – (no peer ran) | – |" in table, table
    # with the rounds: the median of each round's ratio to that round's best peer
    run = lambda v: {"rps": v}
    raw = {"1k": {"lfhttpd": [run(900), run(1200), run(500)],
                  "h2o": [run(1000), run(1000), run(1000)],
                  "nginx": [run(800), run(1500), run(400)],
                  "lfhttpd-copy": [run(9000), run(9000), run(9000)]}}
    row = [r for r in b.ratio_rows(summ, raw) if r["key"] == "1k"][0]
    assert abs(row["ratio"] - 0.8) < 1e-9 and row["ratio_range"] == (0.5, 0.9), row
    assert "| 1k | 900 req/s | h2o 1,000 | 0.80× (0.50–0.90) |" in "\n".join(
        b.ratio_table(summ, raw)), b.ratio_table(summ, raw)


def test_bench_quick_is_every_scenario_against_every_peer_logs_off():
    """make bench-quick: the throughput phase alone, one round, logs off, the three peers (the
    command make would run, not a benchmark)."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "LFHTTPD_DEPS_DONE=1",
                          "bench-quick"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    line = [l for l in out.stdout.splitlines() if "bench/bench.py" in l]
    assert len(line) == 1, out.stdout
    for want in ("BENCH_PHASES=throughput", "BENCH_ROUNDS=${BENCH_ROUNDS:-1}", "BENCH_LOGS=0",
                 "BENCH_SERVERS=${BENCH_SERVERS:-lfhttpd,nginx,h2o,lighttpd}"):
        assert want in line[0], (want, line[0])
    assert "BENCH_SCENARIOS" not in line[0], line[0]


@pytest.mark.timeout(120)
def test_bench_throughput_prints_the_ratio_table(tmpdir):
    """A tiny throughput run (two scenarios, 1 s each, whichever peers are installed): the
    harness prints the ratio table with a row per scenario and puts it in its report."""
    if SCALE > 1:
        pytest.skip("sanitizer build")
    if not shutil.which("wrk"):
        pytest.skip("wrk is not installed (tools/deps.sh test)")
    out = os.path.join(tmpdir, "bench")
    # one peer: h2o or lighttpd, which run as root here (nginx's workers could not read the
    # test's private temporary directory)
    peers = [p for p in ("h2o", "lighttpd") if shutil.which(p)][:1]
    env = dict(os.environ, BENCH_PHASES="throughput", BENCH_QUICK="1", BENCH_ROUNDS="1",
               BENCH_DURATION="1", BENCH_SCENARIOS="1k,404", BENCH_TLS="0",
               BENCH_SERVERS=",".join(["lfhttpd"] + peers), BENCH_QUIET_BUDGET="0",
               BENCH_THREADS="2", BENCH_OUT=out, BENCH_BUILD=os.path.dirname(binary()))
    stdout = _bench(env, 60)
    assert "==== lfhttpd ÷ the best peer (access logs off; medians" in stdout, stdout
    with open(os.path.join(out, "report.md")) as f:
        report = f.read()
    for key in ("1k", "404"):
        row = [l for l in stdout.splitlines() if l.startswith("| %s | " % key)]
        assert len(row) == 1, (key, stdout[-2000:])
        assert row[0] in report, key
        if peers:
            assert "| %s " % peers[0] in row[0] and "×" in row[0], row[0]
        else:
            assert "no peer ran" in row[0], row[0]


def test_lfcosts_measures_every_primitive_of_the_model(tmpdir):
    """bench/lfcosts.c (docs/PERFORMANCE.md, "Past two cores") builds with the project's
    warnings and prints a median for each primitive of the model; the figures are not judged."""
    exe = os.path.join(tmpdir, "lfcosts")
    cc = subprocess.run(["cc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread",
                         os.path.join(REPO, "bench", "lfcosts.c"), "-o", exe],
                        capture_output=True, text=True, timeout=120)
    assert cc.returncode == 0, cc.stderr
    out = subprocess.run([exe, "200"], capture_output=True, text=True, timeout=T(60))
    assert out.returncode == 0, out.stderr
    for what in ("promotion: futex_wake to the wakee running", "promotion: the waker's futex_wake",
                 "epoll_wait returning 1 event", "epoll_wait returning 8 event",
                 "epoll_wait returning 64 event", "re-arm (EPOLL_CTL_MOD), one thread",
                 "re-arm, two threads on one set at once"):
        line = [l for l in out.stdout.splitlines() if l.startswith(what)]
        assert len(line) == 1 and " median " in line[0], (what, out.stdout)
