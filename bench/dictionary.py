#!/usr/bin/env python3
"""dictionary.py — what dcz (RFC 9842: zstd with the previous version as a dictionary) saves
on real releases, against gzip -9, Brotli 11 and zstd 19. Not a test: a measurement.

    make && python3 bench/dictionary.py [--package react-dom --old 18.3.0 --new 18.3.1
                                         --file umd/react-dom.production.min.js]

Both releases come from the npm registry (`npm pack`, kept in build/dictionary/). The new
release's file is compressed on its own with each coding, and as dcz against the old release's
file twice: with lfhttpd's own encoder (bench/dcz.c linked against build/liblfhttpd.a, built
here) and with Python's zstandard module (a raw-content dictionary), each decoded back and
compared. CPU time is what the encoding costs once (lfhttpd makes a dcz variant once per pair
of versions, in the background). Needs Debian's python3-brotli and python3-zstandard (tools/
deps.sh, set `test`): when this Python lacks them, the script runs itself again under
/usr/bin/python3.
"""
import argparse
import gzip
import os
import subprocess
import sys
import tarfile
import time

DEBIAN_PYTHON = "/usr/bin/python3"
try:
    import brotli
    import zstandard
except ImportError:
    if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) and \
            os.path.exists(DEBIAN_PYTHON):
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
    sys.exit("dictionary.py: needs python3-brotli and python3-zstandard (make deps)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DCZ_MAGIC = bytes([0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00])
LIBS = ["-lssl", "-lcrypto", "-lcrypt", "-lz", "-lbrotlienc", "-lzstd", "-lsystemd", "-pthread"]
GOAL = 0.70  # dcz at least this much smaller than Brotli 11 on a patch release


def fetch(package, version, workdir):
    """The release's tarball from the npm registry (once), unpacked; its package/ folder."""
    base = package.split("/")[-1]
    tgz = os.path.join(workdir, f"{base}-{version}.tgz")
    if not os.path.exists(tgz):
        try:
            subprocess.run(["npm", "pack", f"{package}@{version}", "--silent",
                            "--pack-destination", workdir], check=True,
                           stdout=subprocess.DEVNULL, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            sys.exit(f"dictionary.py: cannot fetch {package}@{version} with npm pack ({e}); "
                     "the releases are needed once, then kept in build/dictionary/")
    dest = os.path.join(workdir, f"{base}-{version}")
    if not os.path.isdir(dest):
        with tarfile.open(tgz) as t:
            t.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") \
                else t.extractall(dest)
    return os.path.join(dest, "package")


def cpu(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def build_driver(workdir):
    """bench/dcz.c against the library of `make`; None (with a note) when it is not built."""
    lib = os.path.join(ROOT, "build", "liblfhttpd.a")
    if not os.path.exists(lib):
        print("# build/liblfhttpd.a is missing (run make): lfhttpd's encoder is skipped")
        return None
    exe = os.path.join(workdir, "dcz")
    src = os.path.join(ROOT, "bench", "dcz.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < max(os.path.getmtime(src),
                                                               os.path.getmtime(lib)):
        subprocess.run(["cc", "-std=gnu11", "-O2", "-D_GNU_SOURCE",
                        "-I" + os.path.join(ROOT, "server"), "-I" + os.path.join(ROOT, "handlers"),
                        src, lib, "-o", exe] + LIBS, check=True)
    return exe


def dcz_lfhttpd(exe, old_path, new_path, new, old, workdir, level):
    out = os.path.join(workdir, "out.dcz")
    r = subprocess.run([exe, old_path, new_path, out, str(level)], check=True,
                       capture_output=True, text=True)
    size, secs, wlog, mem = r.stdout.split()
    with open(out, "rb") as f:
        body = f.read()
    check(body, old, new, "lfhttpd")
    return int(size), float(secs), f"window 2^{wlog}, job ~{int(mem) >> 20} MiB"


def dcz_python(old, new, level):
    import hashlib
    d = zstandard.ZstdCompressionDict(old, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    body, secs = cpu(lambda: DCZ_MAGIC + hashlib.sha256(old).digest() +
                     zstandard.ZstdCompressor(level=level, dict_data=d).compress(new))
    check(body, old, new, "python zstandard")
    return len(body), secs


def check(body, old, new, who):
    """Decode as a browser does: the header checked and taken off, then the frame."""
    import hashlib
    assert body[:8] == DCZ_MAGIC and body[8:40] == hashlib.sha256(old).digest(), who
    d = zstandard.ZstdCompressionDict(old, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    got = zstandard.ZstdDecompressor(dict_data=d).decompressobj().decompress(body[40:])
    assert got == new, f"{who}: the dcz body does not decode to the new version"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--package", default="react-dom")
    ap.add_argument("--old", default="18.3.0")  # the patch release before --new
    ap.add_argument("--new", default="18.3.1")
    ap.add_argument("--file", default="umd/react-dom.production.min.js")
    ap.add_argument("--level", type=int, default=19, help="zstd level of dcz (default 19)")
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "dictionary"))
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    old_path = os.path.join(fetch(a.package, a.old, a.workdir), a.file)
    new_path = os.path.join(fetch(a.package, a.new, a.workdir), a.file)
    with open(old_path, "rb") as f:
        old = f.read()
    with open(new_path, "rb") as f:
        new = f.read()

    rows = [("identity", len(new), 0.0, "")]
    for name, fn in (("gzip -9", lambda: gzip.compress(new, 9, mtime=0)),
                     ("brotli 11", lambda: brotli.compress(new, quality=11)),
                     ("zstd 19", lambda: zstandard.ZstdCompressor(level=19).compress(new))):
        body, secs = cpu(fn)
        rows.append((name, len(body), secs, ""))
    exe = build_driver(a.workdir)
    if exe:
        size, secs, note = dcz_lfhttpd(exe, old_path, new_path, new, old, a.workdir, a.level)
        rows.append((f"dcz {a.level} (lfhttpd)", size, secs, note))
    size, secs = dcz_python(old, new, a.level)
    rows.append((f"dcz {a.level} (python zstandard)", size, secs, ""))

    print(f"{a.package} {a.new}, {a.file} ({len(new)} bytes), dictionary: {a.old} "
          f"({len(old)} bytes)")
    print(f"{'coding':<28} {'bytes':>9} {'vs identity':>12} {'vs brotli 11':>13} {'cpu ms':>8}")
    br = rows[2][1]
    for name, size, secs, note in rows:
        print(f"{name:<28} {size:>9} {size / len(new):>11.1%} {size / br:>12.1%} "
              f"{secs * 1000:>8.1f}  {note}")
    best = min(s for n, s, _, _ in rows if n.startswith("dcz"))
    saved = 1 - best / br
    print(f"dcz is {saved:.1%} smaller than brotli 11 (goal: at least {GOAL:.0%}): "
          f"{'met' if saved >= GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
