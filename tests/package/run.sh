#!/usr/bin/env bash
# Package test (`make package-test`, the "package" stage of .ci/run).
#
#   1. dpkg-buildpackage -b -us -uc on a copy of the tree (tests/package/build.sh): the build
#      runs debian/rules' subset of the test suite;
#   2. lintian on the result: no error (warnings and notes are printed, not failures);
#   3. what the .deb holds: the conffiles (/etc/lfhttpd/*, the logrotate snippet), the
#      binary, man pages, units, default site and log directory; maintainer scripts that
#      create the lfhttpd user, enable lfhttpd.service (started only where systemd runs) and
#      never start lfhttpd.socket; its dependencies.
# Installing it in a fresh bookworm container is tests/package/container.sh.
#
# Prints one `ok`/`FAIL` line per check and the duration of each step; ends with
# "N passed, N failed"; exits non-zero if anything failed. Leaves the package in
# build/package/ (PACKAGE_OUT).
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."
OUT=${PACKAGE_OUT:-build/package}

# ok, bad, note, check, summary, fatal
source tests/lib/check.sh

# ---- 1. build ----------------------------------------------------------------------------------
s=$SECONDS
if deb=$(bash tests/package/build.sh "$OUT" 2>"$OUT.err"); then
    ok "dpkg-buildpackage -b -us -uc: $(basename "$deb") ($((SECONDS - s)) s)"
    # the build's own test run, as a note (its counts are not this stage's)
    grep -E '^[0-9]+ passed, [0-9]+ failed' "$OUT/build.log" | tail -n 1 | sed 's/^/# tests in the package build: /'
else
    cat "$OUT.err"
    bad "dpkg-buildpackage -b -us -uc ($((SECONDS - s)) s)"
    summary
    exit 1
fi
rm -f "$OUT.err"

# ---- 2. lintian --------------------------------------------------------------------------------
s=$SECONDS
changes=$(ls "$OUT"/lfhttpd_*.changes)
lintian --fail-on error --display-level '>=info' "$changes" >"$OUT/lintian.log" 2>&1
rc=$?
grep -v 'running with root privileges' "$OUT/lintian.log" | sed 's/^/# lintian: /'
errors=$(grep -c '^E: ' "$OUT/lintian.log")
if [ "$rc" -eq 0 ] && [ "$errors" -eq 0 ]; then
    ok "lintian: no error ($(grep -c '^W: ' "$OUT/lintian.log") warnings, $((SECONDS - s)) s)"
else
    bad "lintian: exit $rc, $errors error(s)"
fi

# ---- 3. contents -------------------------------------------------------------------------------
X=$(mktemp -d /tmp/lfhttpd-pkg.XXXXXX)
trap 'rm -rf "$X"' EXIT
dpkg-deb -x "$deb" "$X/root" && dpkg-deb -e "$deb" "$X/control"
conffiles=$(sort "$X/control/conffiles" | tr '\n' ' ')
check "conffiles are /etc/lfhttpd/lfhttpd.conf, mime.types and the logrotate snippet ($conffiles)" \
    test "$conffiles" = "/etc/lfhttpd/lfhttpd.conf /etc/lfhttpd/mime.types /etc/logrotate.d/lfhttpd "
for f in usr/sbin/lfhttpd usr/share/man/man8/lfhttpd.8.gz usr/share/man/man5/lfhttpd.conf.5.gz \
         lib/systemd/system/lfhttpd.service lib/systemd/system/lfhttpd.socket \
         usr/share/lfhttpd/www/index.html usr/share/doc/lfhttpd/copyright; do
    check "the package holds /$f" test -f "$X/root/$f"
done
check "the package holds /var/log/lfhttpd" test -d "$X/root/var/log/lfhttpd"
check "the configuration serves /usr/share/lfhttpd/www" \
    grep -qx 'root /usr/share/lfhttpd/www' "$X/root/etc/lfhttpd/lfhttpd.conf"
check "the service starts /usr/sbin/lfhttpd with /etc/lfhttpd/lfhttpd.conf" \
    grep -qx 'ExecStart=/usr/sbin/lfhttpd --config /etc/lfhttpd/lfhttpd.conf' \
    "$X/root/lib/systemd/system/lfhttpd.service"
check "postinst creates the lfhttpd system user" \
    grep -q 'adduser --system --group' "$X/control/postinst"
check "postinst enables lfhttpd.service" \
    grep -q "deb-systemd-helper enable 'lfhttpd.service'" "$X/control/postinst"
check "postinst starts lfhttpd.service only where systemd runs" \
    grep -q "deb-systemd-invoke \$_dh_action 'lfhttpd.service'" "$X/control/postinst"
check "postinst never starts lfhttpd.socket" \
    bash -c "! grep -q \"deb-systemd-invoke .* 'lfhttpd.socket'\" '$X/control/postinst'"
depends=$(dpkg-deb -f "$deb" Depends)
for d in adduser libssl3 libsystemd0; do
    check "Depends names $d ($depends)" grep -q "$d" <<<"$depends"
done
check "Built-Using names llhttp's source package" test -n "$(dpkg-deb -f "$deb" Built-Using)"

summary
