#!/bin/sh
# Install the Debian packages lfhttpd needs, only those missing: tools/deps.sh SET...
#
#   build  compile build/lfhttpd (make, make run)
#   test   run the test suite (make test): the clients and the reference servers it talks to
#   fuzz   the libFuzzer harnesses (make fuzz): clang with libFuzzer and the sanitizer runtimes
#   bench  the benchmark (make bench): the peers and the profilers; the decoders that check
#          bench/dictionary.py's encodings (its releases come through the machine's npm)
#   analyze  static analysis (make analyze): cppcheck
#   arm64  the arm64 cross build and its tests under qemu-user (make arm64-test)
#   package  the Debian package (make package): debhelper, lintian and debian/control's
#          Build-Depends (those of its test subset too)
#
# Quiet when everything is already there. The Makefile runs it before it builds anything
# (its goals that install packages make in two passes: see the top of the Makefile).
#
# Some packages (nginx-light, lighttpd, h2o) start a system daemon on port 80 from their
# postinst script. While installing, a policy-rc.d that refuses (exit 101) is put in place if
# the machine has none, and removed afterwards: the tests and the benchmark start their own
# foreground instances on loopback ports, and `make deps` must not leave a web server running.
set -eu
[ $# -gt 0 ] || set -- build test
pkgs=""
for set in "$@"; do
    case $set in
    # zlib, Brotli, zstd: compression of static files on the fly (handlers/compress/);
    # json-c: the ACME client's replies (server/acme/; its HTTPS is OpenSSL and llhttp)
    build) pkgs="$pkgs gcc make libc6-dev node-llhttp libssl-dev libcrypt-dev zlib1g-dev
                 libbrotli-dev libzstd-dev libsystemd-dev libjson-c-dev
                 python3" ;;
    # nginx-light: the reference for the static differential test; lighttpd: for the CGI one
    # (tests/integration/test_cgi_lighttpd.py); chromium: renders /server-status headless
    # (tests/integration/test_status.py); testssl.sh: the TLS check in CI (.ci/testssl.sh);
    # python3-brotli, python3-zstandard: the decoders of the compression tests (test_compress.py);
    # systemd: systemd-socket-activate and systemd-analyze (test_systemd.py, test_install.py);
    # mandoc: lints the man pages; logrotate: checks the installed snippet; util-linux: setpriv;
    # strace: the system calls the server makes, against the unit's SystemCallFilter;
    # prometheus: promtool checks the /metrics exposition (test_metrics.py); pebble: the test
    # ACME CA (test_acme.py); hugo: builds the static site served end to end
    # (test_site_hugo.py); python3-pytest runs the integration tests, two files at a time
    # (python3-pytest-xdist), each test bounded (python3-pytest-timeout); perl's prove runs
    # the unit tests (TAP).
    test) pkgs="$pkgs python3 openssl curl wrk procps nginx-light lighttpd chromium testssl.sh
                python3-brotli python3-zstandard systemd mandoc logrotate util-linux strace
                prometheus pebble hugo python3-pytest python3-pytest-xdist
                python3-pytest-timeout perl" ;;
    fuzz) pkgs="$pkgs clang libclang-rt-dev llvm" ;;
    analyze) pkgs="$pkgs cppcheck" ;;
    package) pkgs="$pkgs dpkg-dev debhelper lintian git curl logrotate mandoc openssl procps strace
                   systemd" ;;
    bench) pkgs="$pkgs openssl python3 curl procps wrk nginx-light h2o lighttpd
                 lighttpd-mod-openssl lighttpd-mod-deflate libjs-jquery valgrind strace
                 python3-brotli python3-zstandard" ;;
    # arm64: the cross compiler, arm64's libraries through Debian's multiarch (dpkg's arm64
    # architecture is added first, below), and qemu-user-static to run what it builds here.
    arm64) pkgs="$pkgs crossbuild-essential-arm64 qemu-user-static node-llhttp curl openssl
                 libc6-dev:arm64 libssl-dev:arm64 libcrypt-dev:arm64 zlib1g-dev:arm64
                 libbrotli-dev:arm64 libzstd-dev:arm64 libsystemd-dev:arm64
                 libjson-c-dev:arm64" ;;
    *) echo "deps: unknown set '$set' (build, test, fuzz, bench, package, analyze, arm64)" >&2
       exit 2 ;;
    esac
done
missing=""
for p in $pkgs; do
    case " $missing " in *" $p "*) continue ;; esac
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
        echo "deps: missing packages:$missing; run as root, or install sudo" >&2
        exit 2
    }
    SUDO="sudo"
fi
POLICY=/usr/sbin/policy-rc.d
added_policy=""
if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\n# temporary, from lfhttpd tools/deps.sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
    $SUDO chmod 755 "$POLICY"
    added_policy=1
fi
cleanup() { [ -z "$added_policy" ] || $SUDO rm -f "$POLICY"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
case " $missing " in *":arm64 "*)
    dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64 ;;
esac
# (through env: sudo resets the environment)
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
