"""Fault injection from a test: the control side of tests/fault/fault.c (LD_PRELOAD).

    f = Faults(tmpdir)                      # a control file, everything off
    srv = Server(..., env=f.env())          # the server runs with the injector preloaded
    f.random(["malloc", "calloc"], ppm=20000)   # 2% of those calls fail, from now on
    f.countdown(["malloc"], 3)              # the third malloc from now fails, once
    f.always(["pipe"])                      # every pipe() fails
    f.off()
    f.failed("malloc"), f.calls("malloc")   # counters, since the control file was made

The control file is mapped shared by the server, so every change takes effect at once; the
counters are the server's own (atomic increments in the shared page)."""

import mmap
import os
import struct

from lib.server import BUILD, REPO

POINTS = ("malloc", "calloc", "realloc", "memalign", "open", "accept", "pipe", "epoll_ctl",
          "spawn")
ALLOC = ("malloc", "calloc", "realloc", "memalign")

MAGIC = 0x4946464C
VERSION = 1
# magic, version, armed, mode, ppm, countdown, min_size, calls[16], failed[16]
LAYOUT = struct.Struct("<6IQ16Q16Q")
OFF, ALWAYS, RANDOM, COUNTDOWN = 0, 1, 2, 3


def library():
    b = BUILD if os.path.isabs(BUILD) else os.path.join(REPO, BUILD)
    path = os.path.join(b, "fault", "libfault.so")
    if not os.path.exists(path):
        raise AssertionError("%s is missing: make %s" % (path, os.path.relpath(path, REPO)))
    return path


class Faults:
    def __init__(self, tmpdir, name="fault.ctl"):
        self.path = os.path.join(tmpdir, name)
        with open(self.path, "wb") as f:
            f.write(LAYOUT.pack(MAGIC, VERSION, 0, OFF, 0, 0, 0, *([0] * 32)))
        self._f = open(self.path, "r+b")
        self._m = mmap.mmap(self._f.fileno(), LAYOUT.size)

    def env(self, base=None):
        """The environment a server needs to run with the injector."""
        env = dict(os.environ if base is None else base)
        env["LD_PRELOAD"] = library()
        env["LFHTTPD_FAULT"] = self.path
        # ASan wants to come first in the library list; the injector forwards to it anyway.
        opts = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "verify_asan_link_order=0"
        return env

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
