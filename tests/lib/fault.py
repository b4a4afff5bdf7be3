"""Fault injection from a test: the control side of tests/fault/fault.c (LD_PRELOAD).

    f = Faults(tmpdir)                      # a control file, everything off
    srv = Server(..., env=f.env())          # the server runs with the injector preloaded
    f.random(["malloc", "calloc"], ppm=20000)   # 2% of those calls fail, from now on
    f.countdown(["malloc"], 3)              # the third malloc from now fails, once
    f.starting_at(["epoll_ctl"], 4)         # the fourth and every later one fail, until off()
    f.always(["pipe"])                      # every pipe() fails
    f.off()
    f.failed("malloc"), f.calls("malloc")   # counters, since the control file was made

The control file is mapped shared by the server, so every change takes effect at once; the
counters are the server's own (atomic increments in the shared page)."""

import mmap
import os
import struct

from lib.probe import fd_count
from lib.procs import rss_kib
from lib.server import BUILD, REPO, wait_until

POINTS = ("malloc", "calloc", "realloc", "memalign", "open", "accept", "pipe", "epoll_ctl",
          "spawn", "pread")
ALLOC = ("malloc", "calloc", "realloc", "memalign")

MAGIC = 0x4946464C
VERSION = 1
# magic, version, armed, mode, ppm, countdown, min_size, calls[16], failed[16]
LAYOUT = struct.Struct("<6IQ16Q16Q")
OFF, ALWAYS, RANDOM, COUNTDOWN, FROM = 0, 1, 2, 3, 4


def library():
    b = BUILD if os.path.isabs(BUILD) else os.path.join(REPO, BUILD)
    path = os.path.join(b, "fault", "libfault.so")
    if not os.path.exists(path):
        raise AssertionError("%s is missing: make %s" % (path, os.path.relpath(path, REPO)))
    return path


def preloaded(base=None, **extra):
    """An environment that loads the injector (LD_PRELOAD), with `extra` variables set."""
    env = dict(os.environ if base is None else base)
    env["LD_PRELOAD"] = library()
    # ASan wants to come first in the library list; the injector forwards to it anyway.
    opts = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "verify_asan_link_order=0"
    env.update(extra)
    return env


class Faults:
    def __init__(self, tmpdir, name="fault.ctl"):
        self.path = os.path.join(tmpdir, name)
        with open(self.path, "wb") as f:
            f.write(LAYOUT.pack(MAGIC, VERSION, 0, OFF, 0, 0, 0, *([0] * 32)))
        self._f = open(self.path, "r+b")
        self._m = mmap.mmap(self._f.fileno(), LAYOUT.size)

    def env(self, base=None):
        """The environment a server needs to run with the injector."""
        return preloaded(base, LFHTTPD_FAULT=self.path)

    def _u32(self, index, value):
        struct.pack_into("<I", self._m, 4 * index, value)

    def _set(self, points, mode, ppm=0, countdown=0, min_size=0):
        mask = 0
        for p in points:
            mask |= 1 << POINTS.index(p)
        # Off first, so that no call sees a half-written setting.
        self._u32(3, OFF)
        self._u32(2, mask)
        self._u32(4, ppm)
        self._u32(5, countdown)
        struct.pack_into("<Q", self._m, 24, min_size)
        self._u32(3, mode)

    def always(self, points, min_size=0):
        self._set(points, ALWAYS, min_size=min_size)

    def random(self, points, ppm, min_size=0):
        self._set(points, RANDOM, ppm=ppm, min_size=min_size)

    def countdown(self, points, n, min_size=0):
        """The n-th armed call from now fails (n >= 1), then everything is off again."""
        self._set(points, COUNTDOWN, countdown=n, min_size=min_size)

    def starting_at(self, points, n):
        """The n-th armed call from now and every one after it fail (n >= 1), until off();
        mode() is ALWAYS once the n-th has come."""
        self._set(points, FROM, countdown=n)

    def off(self):
        self._u32(3, OFF)

    def mode(self):
        return struct.unpack_from("<I", self._m, 12)[0]

    def countdown_left(self):
        return struct.unpack_from("<I", self._m, 20)[0]

    def _counter(self, base, point):
        return struct.unpack_from("<Q", self._m, base + 8 * POINTS.index(point))[0]

    def calls(self, point):
        return self._counter(32, point)

    def failed(self, point):
        return self._counter(32 + 128, point)

    def failed_total(self, points=POINTS):
        return sum(self.failed(p) for p in points)

    def close(self):
        self._m.close()
        self._f.close()


# ---- what a fault test checks afterwards --------------------------------------------------------

def task_count(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def settle(srv, timeout=10.0):
    """Wait until the server's thread count has stopped changing (the pool threads are created
    after the `listening` lines, and a fault armed before that would hit their creation)."""
    seen = []

    def steady():   # the same count 7 times in a row
        seen.append(task_count(srv.proc.pid))
        del seen[:-7]
        return len(seen) == 7 and len(set(seen)) == 1
    wait_until(steady, timeout, step=0.05)
    return seen[-1]


class Baseline:
    """Descriptors, threads and RSS of a settled server, to compare with after faults."""

    def __init__(self, srv):
        self.pid = srv.proc.pid
        self.threads = settle(srv)
        self.fds = fd_count(self.pid)
        self.rss = rss_kib(self.pid)

    def check(self, what, timeout=10.0):
        """Descriptors and threads back to the baseline (waiting for closes in progress)."""
        from lib.server import wait_until
        ok = wait_until(lambda: fd_count(self.pid) == self.fds and
                        task_count(self.pid) == self.threads, timeout)
        assert ok, "%s: %d descriptors and %d threads, baseline %d and %d; /proc/%d/fd: %s" % (
            what, fd_count(self.pid), task_count(self.pid), self.fds, self.threads, self.pid,
            _fd_targets(self.pid))
        return rss_kib(self.pid)


def _fd_targets(pid):
    out = []
    for n in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
        try:
            out.append("%s->%s" % (n, os.readlink("/proc/%d/fd/%s" % (pid, n))))
        except OSError:
            pass
    return ", ".join(out)


def sanitizer_env(env):
    """ASan keeps freed memory in a quarantine (256 MiB by default), which would read as RSS
    growth; leaks are LeakSanitizer's job at exit in that build."""
    opts = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "quarantine_size_mb=4"
    return env
