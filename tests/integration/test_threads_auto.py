"""threads auto counts the CPUs the process may use: the affinity mask, here set with
taskset, and the cgroup CPU quota (the container test runs `podman run --cpus`). The start-up
log and /server-status say how many threads and why."""

import os
import re
import shutil

from lib.procs import status_json
from lib.server import Server, concurrency, wait_until

SERVING_RE = re.compile(r"lfhttpd serving \S+ with (\d+) threads \(([^;]+); (.*)\)")


def _serving(srv):
    # the line comes right after the "listening on" lines the fixture waits for
    m = wait_until(lambda: SERVING_RE.search(srv.stderr), 10)
    assert m, srv.stderr
    return int(m.group(1)), m.group(3)


def _under_taskset(cpus, root):
    srv = Server(root=root, threads=None, start=False)
    srv.cmd = [shutil.which("taskset"), "-c", cpus] + srv.cmd
    return srv.start()


def test_taskset_limits_threads_auto(tmpdir):
    cpus = sorted(os.sched_getaffinity(0))
    srv = _under_taskset(str(cpus[0]), tmpdir)
    try:
        n, why = _serving(srv)
        assert n == 1, srv.stderr
        assert why.startswith("threads auto: 1 of %d online CPUs in the affinity mask"
                              % os.cpu_count()), why
        pool = status_json(srv)["pool"]
        assert pool["threads_reason"] == why, pool
        # half-sync-half-async counts its reactor thread among the pool's threads
        assert pool["threads"] == (2 if concurrency() == "half-sync-half-async" else 1), pool
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_taskset_with_two_cpus_gives_two_threads(tmpdir):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise AssertionError("this test needs a machine with two CPUs (it has %d)" % len(cpus))
    srv = _under_taskset("%d,%d" % (cpus[0], cpus[1]), tmpdir)
    try:
        n, why = _serving(srv)
        assert "2 of %d online CPUs in the affinity mask" % os.cpu_count() in why, why
        # a cgroup quota of one CPU (a CI container, say) may make it 1, never more than 2
        quota = re.search(r"cgroup CPU quota \d+/\d+ us = (\d+) CPU", why)
        assert n == (min(2, int(quota.group(1))) if quota else 2), (n, why)
    finally:
        srv.stop()


def test_configured_threads_say_so(tmpdir):
    srv = Server(root=tmpdir, threads=3)
    try:
        n, why = _serving(srv)
        assert n == 3 and why == "threads 3: configured", (n, why)
        assert status_json(srv)["pool"]["threads_reason"] == "threads 3: configured"
    finally:
        srv.stop()
