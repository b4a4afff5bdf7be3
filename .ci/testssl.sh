#!/usr/bin/env bash
# testssl.sh against lfhttpd's TLS listener, on 127.0.0.1 only.
#
# Starts build/lfhttpd (BUILD=dir to use another build) with a TLS listener on a free loopback
# port and a throw-away certificate chain (tests/lib/pki.py), runs testssl.sh (Debian package
# testssl.sh) with a bounded option set, and fails if any finding is rated HIGH or CRITICAL.
# The test CA is passed with --add-ca, so the chain of trust is judged like a real one.
#
# Checks: a.test (RSA, the default certificate) with protocols, cipher categories, forward
# secrecy, server preferences, server defaults (certificate, chain, sessions), HTTP headers and
# every vulnerability check (-p -s -f -P -S -h -U); b.test (ECDSA, chosen by SNI) with server
# defaults and forward secrecy. Client simulation (-c) and the per-cipher loop are left out to
# keep the run within a few minutes: testssl.sh forks hundreds of processes per check group.
# Options: --fast, --warnings off, --quiet, --nodns none and --ip 127.0.0.1 (no DNS, no other
# address), timeouts on every connection. Ends with the "N passed, N failed" line that .ci/run
# sums up.
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
start=$SECONDS
tmp=$(mktemp -d)
pid=""
cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        wait "$pid" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
    echo "testssl: $*"
    echo "0 passed, 1 failed"
    exit 1
}

make -s deps >/dev/null || fail "make deps failed"
command -v testssl >/dev/null || fail "testssl not installed (Debian package testssl.sh)"
make -s "$BUILD/lfhttpd" >/dev/null || fail "build failed"
python3 tests/lib/pki.py "$tmp/pki" >/dev/null || fail "cannot make the test PKI"

cat > "$tmp/lfhttpd.conf" <<EOF
tls_listen 127.0.0.1:0
tls_certificate $tmp/pki/a.test.chain.pem $tmp/pki/a.test.key
tls_certificate $tmp/pki/b.test.chain.pem $tmp/pki/b.test.key
tls_hsts 31536000
root ./www
threads 2
EOF
"$BUILD/lfhttpd" --config "$tmp/lfhttpd.conf" 2> "$tmp/server.log" &
pid=$!
port=""
for _ in $(seq 100); do
    port=$(sed -n 's|.*listening on https://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$tmp/server.log")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
[ -n "$port" ] || fail "server did not start: $(cat "$tmp/server.log")"
echo "testssl: lfhttpd on https://127.0.0.1:$port (pid $pid)"

for scan in "a.test -p -s -f -P -S -h -U" "b.test -S -f"; do
    read -r host checks <<< "$scan"
    # shellcheck disable=SC2086
    testssl --quiet --warnings off --color 0 --fast --nodns none --ip 127.0.0.1 \
        --connect-timeout 10 --openssl-timeout 30 --add-ca "$tmp/pki/ca.pem" $checks \
        --jsonfile "$tmp/$host.json" "https://$host:$port/" > "$tmp/$host.txt" 2>&1
    rc=$?
    # testssl.sh's exit status counts findings; only a missing report is an error here.
    [ -s "$tmp/$host.json" ] || { cat "$tmp/$host.txt"; fail "no report for $host (exit $rc)"; }
done
kill -0 "$pid" 2>/dev/null || fail "server died during the scan: $(tail -5 "$tmp/server.log")"

python3 - "$tmp/a.test.json" "$tmp/b.test.json" <<'EOF'
import collections
import json
import sys

bad = []
counts = collections.Counter()
for path in sys.argv[1:]:
    with open(path) as f:
        findings = json.load(f)
    for f in findings:
        ip = f.get("ip", "")
        if ip.rsplit("/", 1)[-1] not in ("", "127.0.0.1"):    # "" : notes about testssl itself
            print("testssl: scanned something other than 127.0.0.1: %r" % ip)
            sys.exit(1)
        sev = f.get("severity", "")
        counts[sev] += 1
        if sev in ("LOW", "MEDIUM", "WARN"):
            print("testssl: (%s %s %s: %s)" % (path.rsplit("/", 1)[-1][:-5], sev, f.get("id"),
                                               f.get("finding")))
        if sev in ("HIGH", "CRITICAL"):
            bad.append("%s %s %s: %s" % (path.rsplit("/", 1)[-1][:-5], sev, f.get("id"),
                                         f.get("finding")))
print("testssl: findings by severity: " +
      ", ".join("%s %d" % (k or "-", v) for k, v in sorted(counts.items())))
for b in bad:
    print("testssl: " + b)
sys.exit(1 if bad else 0)
EOF
ok=$?
echo "testssl: $((SECONDS - start)) s"
if [ $ok -ne 0 ]; then
    echo "0 passed, 1 failed"
    exit 1
fi
echo "1 passed, 0 failed"
