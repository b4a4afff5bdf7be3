"""The Makefile on a machine that lacks a package: `make run` and `make test` work the first time.

GNU make reads a directory once and keeps what it saw. A make that installs node-llhttp and then
builds in the same run cannot see /usr/share/llhttp (it did not exist when make looked), and
stopped with "No rule to make target 'build/llhttp/llhttp.o'". The goals that install packages
now install first and then make again (the Makefile's DEPS_GOALS).

The first contact is staged on a copy of the tree: `dpkg-query` and `apt-get` shims on PATH
report node-llhttp missing and "install" it by copying Debian's llhttp sources into a directory
that does not exist before (LLHTTP_SRC/LLHTTP_INC point there). The real tools/deps.sh and the
real Makefile run; the compiled objects of the build under test are copied along (with their
times), so only llhttp and the link are made. The clean bookworm container stage of CI
(tests/quickstart/run.sh) makes the same first contact for real.
"""

import os
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest

from lib.server import REPO, T, free_port

REAL_SRC = "/usr/share/llhttp"
REAL_INC = "/usr/share/include/llhttp"

DPKG_QUERY = r"""#!/bin/sh
# shim: node-llhttp is installed once the fake apt-get has copied it; everything else is.
for last; do :; done
if [ "$last" = node-llhttp ] && [ ! -f "$FAKE_LLHTTP_SRC/llhttp.c" ]; then
    echo "unknown ok not-installed"; exit 1
fi
echo "install ok installed"
"""

APT_GET = r"""#!/bin/sh
# shim: "installs" node-llhttp by copying Debian's sources where the Makefile is told to look.
echo "apt-get $*" >>"$FAKE_LOG"
case " $* " in
*" install "*)
    case " $* " in *" node-llhttp "*)
        mkdir -p "$FAKE_LLHTTP_SRC" "$FAKE_LLHTTP_INC"
        cp -p "$REAL_SRC"/*.c "$FAKE_LLHTTP_SRC"/
        cp -p "$REAL_INC"/*.h "$FAKE_LLHTTP_INC"/ ;;
    esac ;;
esac
exit 0
"""

SUDO = """#!/bin/sh
exec "$@"
"""


def _tracked_files():
    out = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], stdout=subprocess.PIPE, check=True).stdout
    return [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(REPO, f))]


def _stage(tmpdir):
    """A copy of the tree (times kept) with the release objects, and the shims."""
    tree = os.path.join(tmpdir, "tree")
    for f in _tracked_files():
        dst = os.path.join(tree, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(REPO, f), dst)
    for sub in ("obj", "tests"):     # the library's objects, the unit-test binaries
        built = os.path.join(REPO, "build", sub)
        if os.path.isdir(built):
            shutil.copytree(built, os.path.join(tree, "build", sub))
    fake = os.path.join(tmpdir, "fake")
    bindir = os.path.join(fake, "bin")
    os.makedirs(bindir)
    for name, text in (("dpkg-query", DPKG_QUERY), ("apt-get", APT_GET), ("sudo", SUDO)):
        p = os.path.join(bindir, name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o755)
    env = dict(os.environ)
    env.update(PATH=bindir + ":" + env["PATH"],
               FAKE_LOG=os.path.join(fake, "apt.log"),
               FAKE_LLHTTP_SRC=os.path.join(fake, "usr-share", "llhttp"),
               FAKE_LLHTTP_INC=os.path.join(fake, "usr-share", "include", "llhttp"),
               REAL_SRC=REAL_SRC, REAL_INC=REAL_INC)
    for k in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "LFHTTPD_DEPS_DONE"):
        env.pop(k, None)
    make = ["make", "-C", tree, "-j2",
            "LLHTTP_SRC=" + env["FAKE_LLHTTP_SRC"], "LLHTTP_INC=" + env["FAKE_LLHTTP_INC"]]
    return tree, env, make


def _uninstall(tree, env):
    """Back to "node-llhttp is not installed", and nothing of it built."""
    shutil.rmtree(os.path.join(os.path.dirname(env["FAKE_LLHTTP_SRC"])), ignore_errors=True)
    shutil.rmtree(os.path.join(tree, "build", "llhttp"), ignore_errors=True)
    if os.path.exists(env["FAKE_LOG"]):
        os.unlink(env["FAKE_LOG"])


def _installed(env):
    with open(env["FAKE_LOG"]) as f:
        return "node-llhttp" in f.read()




# Runs a whole make while the suite goes on beside it: its own deadlines below, not the
# default per-test timeout, bound it (scaled for sanitizer builds like the default).
@pytest.mark.timeout(360)
def test_make_run_serves_the_site_the_first_time_llhttp_is_installed(tmpdir):
    assert os.path.isfile(os.path.join(REAL_SRC, "llhttp.c")), "node-llhttp is not installed"
    tree, env, make = _stage(tmpdir)
    _uninstall(tree, env)
    port = free_port()
    log = open(os.path.join(tmpdir, "run.log"), "wb")
    p = subprocess.Popen(make + ["run", "RUN_LISTEN=127.0.0.1:%d" % port], env=env,
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
    body = None
    try:
        deadline = time.monotonic() + T(240)
        while time.monotonic() < deadline and p.poll() is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=2) as r:
                    body = r.read()
                break
            except OSError:
                time.sleep(0.2)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=T(20))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        log.close()
    with open(os.path.join(tmpdir, "run.log"), "rb") as f:
        out = f.read().decode("utf-8", "replace")
    assert body is not None, "make run did not serve / the first time:\n" + out[-3000:]
    with open(os.path.join(REPO, "www", "index.html"), "rb") as f:
        assert body == f.read(), "GET / is not www/index.html"
    assert _installed(env), "make run did not install node-llhttp (apt-get log)"
    assert "No rule to make target" not in out


# Runs a whole make (and a test run) while the suite goes on beside it: its own deadlines below, not the
# default per-test timeout, bound it (scaled for sanitizer builds like the default).
@pytest.mark.timeout(360)
def test_make_test_passes_the_first_time_llhttp_is_installed(tmpdir):
    tree, env, make = _stage(tmpdir)
    _uninstall(tree, env)
    p = subprocess.run(make + ["test", "TESTS=unit/test_http_date"], env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=T(300), start_new_session=True)
    out = p.stdout.decode("utf-8", "replace")
    assert p.returncode == 0, "make test failed the first time:\n" + out[-3000:]
    summary = [l for l in out.splitlines() if l.endswith(" passed, 0 failed")]
    assert summary and not summary[-1].startswith("0 "), out[-3000:]
    assert _installed(env), "make test did not install node-llhttp (apt-get log)"


def test_deps_as_a_prerequisite_is_refused(tmpdir):
    """A goal added later with `deps` as a prerequisite would install too late for its own make:
    the Makefile refuses it, on every machine, so the mistake cannot land."""
    tree, env, make = _stage(tmpdir)
    with open(os.path.join(tree, "Makefile"), "a") as f:
        f.write("\nlater-goal: deps all\n\t@echo built\n")
    p = subprocess.run(make + ["later-goal"], env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=T(120))
    out = p.stdout.decode("utf-8", "replace")
    assert p.returncode != 0, out[-2000:]
    assert "list it in DEPS_GOALS" in out, out[-2000:]
    assert "built" not in out.splitlines()


@pytest.mark.parametrize("harness", sorted(
    f for f in os.listdir(os.path.join(REPO, "tests", "fuzz")) if f.endswith(".c")))
def test_fuzz_harness_compiles_against_the_headers(harness):
    """The libFuzzer harnesses are built by `make fuzz` (clang), outside `make test`; a field
    that moves in a header must not leave them behind. Checked here with the suite's compiler
    and the harness's own include path (syntax and types only: no libFuzzer needed)."""
    inc = os.environ.get("LLHTTP_INC", "/usr/share/include/llhttp")
    r = subprocess.run(["cc", "-std=gnu11", "-fsyntax-only", "-D_GNU_SOURCE", "-Werror",
                        "-Wall", "-Iserver", "-Ihandlers", "-Itests/fuzz", "-I" + inc,
                        os.path.join("tests", "fuzz", harness)],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
