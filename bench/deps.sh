#!/bin/sh
# Install the Debian packages `make bench` needs, only those missing. Quiet when all are there.
# Separate from tools/deps.sh: the peers and profilers are not needed for `make test`.
#
# The peers' packages would start system daemons on port 80 from their postinst scripts; a
# policy-rc.d that refuses (exit 101) is put in place for the install if the machine has none,
# and removed afterwards. The harness starts its own foreground instances.
set -eu
PKGS="gcc make libc6-dev node-llhttp libssl-dev libcrypt-dev openssl python3 curl procps
      wrk nginx-light h2o lighttpd lighttpd-mod-openssl valgrind strace"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "bench deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
POLICY=/usr/sbin/policy-rc.d
added_policy=""
if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\n# temporary, from lfhttpd bench/deps.sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
    $SUDO chmod 755 "$POLICY"
    added_policy=1
fi
cleanup() { [ -n "$added_policy" ] && $SUDO rm -f "$POLICY"; return 0; }
trap cleanup EXIT INT TERM
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
