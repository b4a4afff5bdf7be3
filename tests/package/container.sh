#!/usr/bin/env bash
# Package install test (`make package-install-test`, the "package install" stage of .ci/run).
#
# The built .deb (build/package/, made by tests/package/build.sh when missing) in a fresh
# Debian bookworm server (podman, localhost/lfhttpd-fresh:bookworm from
# tools/podman-setup.sh fresh: debootstrap's default variant from the host's apt sources,
# systemd installed but not running, as in any container):
#   1. `apt-get install ./lfhttpd_VERSION_ARCH.deb` pulls its dependencies and installs it;
#   2. the lfhttpd system user exists; lfhttpd.service is enabled but not started (no systemd
#      runs here), lfhttpd.socket is neither; the conffiles are registered; the installed
#      configuration passes `lfhttpd -t`; `systemd-analyze verify` accepts the installed units
#      (--man=no: a fresh server has no man-db; test_install.py checks the Documentation=
#      pages with the installed ones);
#   3. the installed binary, started the way the unit starts it (user lfhttpd, only
#      CAP_NET_BIND_SERVICE, ambient), serves the installed default site on port 80 (fetched by
#      the host's curl inside the container's network namespace) and logs the request to
#      /var/log/lfhttpd/access.log, which logrotate (a Recommends) would rotate as lfhttpd;
#      SIGTERM: exit 0;
#   4. `apt-get purge lfhttpd` removes the configuration, the logs and the unit's enablement.
# Prints one `ok`/`FAIL` line per check with durations; ends with "N passed, N failed"; exits
# non-zero if anything failed. Removes its container, keeps the image.
set -uo pipefail
SELF=$(readlink -f "$0")
cd "$(dirname "$SELF")/../.."

IMAGE=localhost/lfhttpd-fresh:bookworm
C="lfhttpd-pkg-$$"
# ok, bad, note, check, summary, fatal
source tests/lib/check.sh
in_c() { podman exec "$C" bash -c "$1"; }

if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null && exec sudo bash "$SELF" "$@"
    fatal "no container engine: the package install test needs root (or sudo) to run podman"
fi
TMP=$(mktemp -d /tmp/lfhttpd-pkgc.XXXXXX)
cleanup() { podman rm -f -t 0 "$C" >/dev/null 2>&1; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the package and the container ------------------------------------------------------------
deb=$(ls build/package/lfhttpd_*.deb 2>/dev/null | head -n 1)
if [ -z "$deb" ]; then
    s=$SECONDS
    deb=$(bash tests/package/build.sh build/package) || fatal "the package could not be built"
    note "built $deb ($((SECONDS - s)) s)"
fi
s=$SECONDS
bash tools/podman-setup.sh fresh 2>"$TMP/setup.err" || fatal "$(cat "$TMP/setup.err")"
podman run -d --name "$C" --init "$IMAGE" sleep infinity >"$TMP/run.err" 2>&1 \
    && podman cp "$deb" "$C:/tmp/" >>"$TMP/run.err" 2>&1 \
    || { cat "$TMP/run.err"; fatal "could not start a container from $IMAGE"; }
CPID=$(podman inspect --format '{{.State.Pid}}' "$C")
ok "a fresh bookworm container ($((SECONDS - s)) s)"

# ---- 1. install --------------------------------------------------------------------------------
s=$SECONDS
if in_c "cd /tmp && apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -q ./$(basename "$deb")" >"$TMP/install.log" 2>&1; then
    ok "apt-get install ./$(basename "$deb") ($((SECONDS - s)) s)"
else
    tail -n 30 "$TMP/install.log"
    fatal "apt-get install ./$(basename "$deb") failed"
fi

# ---- 2. what the installation left -------------------------------------------------------------
user=$(in_c "getent passwd lfhttpd")
check "the lfhttpd system user exists ($user)" \
    bash -c "[[ '$user' =~ ^lfhttpd:x:([0-9]+): ]] && [ \${BASH_REMATCH[1]} -lt 1000 ]"
check "lfhttpd.service is enabled" \
    in_c "test -L /etc/systemd/system/multi-user.target.wants/lfhttpd.service"
check "lfhttpd.socket is not enabled" \
    in_c "! test -e /etc/systemd/system/sockets.target.wants/lfhttpd.socket"
check "no systemd runs here, and lfhttpd was not started" \
    in_c "! test -d /run/systemd/system && ! grep -qx lfhttpd /proc/[0-9]*/comm"
conf=$(in_c "dpkg-query -W -f='\${Conffiles}' lfhttpd" | awk 'NF { print $1 }' | sort | tr '\n' ' ')
check "conffiles registered: $conf" \
    test "$conf" = "/etc/lfhttpd/lfhttpd.conf /etc/lfhttpd/mime.types /etc/logrotate.d/lfhttpd "
check "lfhttpd -t accepts the installed configuration" \
    in_c "lfhttpd -t -c /etc/lfhttpd/lfhttpd.conf 2>&1 | grep -q 'is valid'"
if in_c "systemd-analyze verify --man=no /lib/systemd/system/lfhttpd.service \
         /lib/systemd/system/lfhttpd.socket" >"$TMP/verify.log" 2>&1 && ! [ -s "$TMP/verify.log" ]; then
    ok "systemd-analyze verify accepts the installed units"
else
    sed 's/^/  | /' "$TMP/verify.log"
    bad "systemd-analyze verify accepts the installed units"
fi

# ---- 3. serving, as the unit runs it ---------------------------------------------------------
podman exec -d "$C" bash -c 'exec setpriv --reuid=lfhttpd --regid=lfhttpd --init-groups \
    --inh-caps=+net_bind_service --ambient-caps=+net_bind_service \
    /usr/sbin/lfhttpd --config /etc/lfhttpd/lfhttpd.conf 2>/tmp/lfhttpd.err' >/dev/null
s=$SECONDS
code=""
while [ $((SECONDS - s)) -lt 30 ]; do
    code=$(nsenter -t "$CPID" -n curl -s -o "$TMP/body" -w '%{http_code}' --max-time 5 \
           http://127.0.0.1/ 2>/dev/null)
    [ "$code" = 200 ] && break
    sleep 0.2
done
in_c "cat /usr/share/lfhttpd/www/index.html" >"$TMP/index.html"
if [ "$code" = 200 ] && cmp -s "$TMP/body" "$TMP/index.html"; then
    ok "the installed lfhttpd, as user lfhttpd, serves /usr/share/lfhttpd/www on port 80"
else
    in_c "cat /tmp/lfhttpd.err" | sed 's/^/  | /'
    bad "the installed lfhttpd serves the default site on port 80 (HTTP $code)"
fi
check "the request is in /var/log/lfhttpd/access.log" \
    in_c 'grep -q "\"GET / HTTP/1.1\" 200" /var/log/lfhttpd/access.log'
check "the server runs as lfhttpd" \
    in_c 'pid=$(grep -lx lfhttpd /proc/[0-9]*/comm | head -n 1 | cut -d/ -f3)
          [ "$(stat -c %U /proc/$pid)" = lfhttpd ]'
check "SIGTERM: a graceful stop" \
    in_c 'pid=$(grep -lx lfhttpd /proc/[0-9]*/comm | head -n 1 | cut -d/ -f3); kill -TERM $pid
          for i in $(seq 100); do [ -d /proc/$pid ] || break; sleep 0.1; done
          ! [ -d /proc/$pid ] && grep -q "stopped" /tmp/lfhttpd.err'

if in_c "logrotate -d /etc/logrotate.d/lfhttpd" >"$TMP/logrotate.log" 2>&1 \
        && grep -q "considering log /var/log/lfhttpd/access.log" "$TMP/logrotate.log" \
        && grep -q "switching euid from 0 to $(in_c 'id -u lfhttpd')" "$TMP/logrotate.log" \
        && ! grep -qi "^error" "$TMP/logrotate.log"; then
    ok "logrotate (a Recommends) accepts the snippet and would rotate access.log as lfhttpd"
else
    sed 's/^/  | /' "$TMP/logrotate.log" | tail -n 20
    bad "logrotate -d /etc/logrotate.d/lfhttpd"
fi

# ---- 4. purge ----------------------------------------------------------------------------------
s=$SECONDS
if in_c "DEBIAN_FRONTEND=noninteractive apt-get purge -y -q lfhttpd" >"$TMP/purge.log" 2>&1; then
    ok "apt-get purge lfhttpd ($((SECONDS - s)) s)"
else
    tail -n 20 "$TMP/purge.log"
    bad "apt-get purge lfhttpd"
fi
check "purge removed /etc/lfhttpd, /var/log/lfhttpd and the service's enablement" \
    in_c "! test -e /etc/lfhttpd && ! test -e /var/log/lfhttpd && \
          ! test -e /etc/systemd/system/multi-user.target.wants/lfhttpd.service"

summary
