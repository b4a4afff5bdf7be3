#!/bin/sh
# Install the Debian packages lfhttpd's build and tests need (or, with `fuzz`, the fuzzers),
# only those missing.
# Quiet when everything is already there. Used by `make deps` (and so by `make run`/`make test`).
set -eu
# nginx-light: the reference for the static differential test; lighttpd: for the CGI one
# (tests/integration/test_cgi_lighttpd.py); chromium: renders /server-status headless
# (tests/integration/test_status.py); testssl.sh: the TLS check in CI.
PKGS="gcc make libc6-dev node-llhttp libssl-dev libcrypt-dev openssl python3 curl wrk procps
      nginx-light testssl.sh lighttpd chromium"
# `deps.sh fuzz` (make fuzz): clang with libFuzzer and the sanitizer runtimes.
if [ "${1:-}" = fuzz ]; then
    PKGS="clang libclang-rt-dev llvm"
fi
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
