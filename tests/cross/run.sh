#!/usr/bin/env bash
# The arm64 build under emulation (`make arm64-test`, the "arm64" stage of .ci/run):
#
#   1. every unit-test binary of the arm64 build (BUILD, default build-arm64), run by prove
#      with qemu-aarch64-static as its --exec: one check for them all when every TAP test
#      passed, one failure per program prove names in its Test Summary Report;
#   2. the arm64 server itself under qemu, on loopback: GET, HEAD, 404, a range, a compressed
#      variant, HTTPS, keep-alive, a reload by SIGHUP and a graceful stop that exits 0.
#
# Prints one `ok`/`FAIL` line per check and ends with "N passed, N failed"; exits non-zero
# if anything failed. qemu-user does not implement every system call (openat2, for one): the
# server falls back as it does on an old kernel, and says so in its log.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."
BUILD=${1:-build-arm64}
QEMU=${QEMU:-qemu-aarch64-static}
WAIT=${ARM64_WAIT_SECONDS:-60}     # emulation is slow: bounds for start-up and each request

source tests/lib/check.sh

tmp=$(mktemp -d)
srv_pid=""
cleanup() {
    [ -z "$srv_pid" ] || kill -KILL "$srv_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

check "the binary is an arm64 executable" \
    sh -c "readelf -h '$BUILD/lfhttpd' | grep -q 'Machine: *AArch64'"

# ---- 1. unit tests -----------------------------------------------------------------------------
# prove runs each binary under qemu (--exec) and reads its TAP, as tests/suite.sh does:
# "Files=17, Tests=1004, ..." counts the checks; its Test Summary Report names each program
# that failed ("(Wstat: 256 (exited 1) Tests: 30 Failed: 2)"), a crash or timeout included.
prove --failures --comments --exec "timeout -k 10 $((WAIT * 5)) $QEMU" "$BUILD"/tests/test_* \
    >"$tmp/prove.log" 2>&1
prove_rc=$?
sed 's/^/#   /' "$tmp/prove.log" | grep -v ' \.\.* ok$'
files=$(sed -n 's/^Files=\([0-9]*\), Tests=[0-9]*,.*/\1/p' "$tmp/prove.log" | tail -n 1)
tests=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$tmp/prove.log" | tail -n 1)
awk '/^Test Summary Report/ { on = 1; next } on && /\(Wstat: / { print }' "$tmp/prove.log" \
    > "$tmp/unit-failed"
while read -r prog why; do
    bad "unit/$(basename "$prog") under qemu: $why"
done < "$tmp/unit-failed"
if [ -z "$tests" ]; then
    bad "unit tests under qemu: prove printed no summary (exit $prove_rc)"
elif [ "$prove_rc" -eq 0 ] && [ ! -s "$tmp/unit-failed" ]; then
    ok "unit tests under qemu (prove): $files programs, $tests checks"
elif [ ! -s "$tmp/unit-failed" ]; then
    bad "unit tests under qemu: prove exited $prove_rc"
fi

# ---- 2. the server ----------------------------------------------------------------------------
site=$tmp/site
mkdir -p "$site/dir"
printf '<!doctype html><title>arm64</title>\n' > "$site/index.html"
head -c 100000 /dev/urandom > "$site/blob.bin"
for i in $(seq 1 400); do echo "line $i of a text file that compresses well"; done > "$site/dir/t.txt"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" \
    2>/dev/null
"$QEMU" "$BUILD/lfhttpd" --listen 127.0.0.1:0 --tls-listen 127.0.0.1:0 --cert "$tmp/cert.pem" \
    --key "$tmp/key.pem" --root "$site" --threads 2 --user root 2>"$tmp/err.log" &
srv_pid=$!
http="" https=""
for _ in $(seq 1 $((WAIT * 10))); do
    http=$(sed -nE 's|.*listening on http://127\.0\.0\.1:([0-9]+).*|\1|p' "$tmp/err.log" | head -n 1)
    https=$(sed -nE 's|.*listening on https://127\.0\.0\.1:([0-9]+).*|\1|p' "$tmp/err.log" | head -n 1)
    [ -n "$http" ] && [ -n "$https" ] && break
    kill -0 "$srv_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$http" ] || [ -z "$https" ]; then
    sed 's/^/#   /' "$tmp/err.log"
    bad "the arm64 server starts and listens (http and https)"
    summary
    exit 1
fi
ok "the arm64 server starts and listens on :$http and :$https"
base=http://127.0.0.1:$http
c() { curl --noproxy '*' -sS --max-time "$WAIT" "$@"; }

check "GET / is the index" sh -c "c() { curl --noproxy '*' -sS --max-time $WAIT \"\$@\"; };
    c -o '$tmp/got' -w '%{http_code}' $base/ | grep -qx 200 && cmp -s '$tmp/got' '$site/index.html'"
check "GET of 100 kB of random bytes comes back whole" \
    sh -c "curl --noproxy '*' -sS --max-time $WAIT -o '$tmp/blob' $base/blob.bin && cmp -s '$tmp/blob' '$site/blob.bin'"
len=$(c -sI "$base/blob.bin" | tr -d '\r' | sed -nE 's/^[Cc]ontent-[Ll]ength: //p')
check "HEAD says the length (${len:-none})" test "${len:-0}" = 100000
check "a missing file is 404" sh -c "[ \"\$(curl --noproxy '*' -s --max-time $WAIT -o /dev/null \
    -w '%{http_code}' $base/nope)\" = 404 ]"
c -o "$tmp/range" -r 1000-1999 "$base/blob.bin"
check "a range is those bytes" sh -c "[ \"\$(tail -c +1001 '$site/blob.bin' | head -c 1000 | md5sum)\" \
    = \"\$(md5sum < '$tmp/range')\" ]"
enc=""
for _ in $(seq 1 50); do # the variant is made once, in the background: identity until it is ready
    enc=$(c -H 'Accept-Encoding: gzip' -o "$tmp/t.gz" -D - "$base/dir/t.txt" | tr -d '\r' |
          sed -nE 's/^[Cc]ontent-[Ee]ncoding: //p')
    [ "$enc" = gzip ] && break
    sleep 0.2
done
check "a text file is sent gzip once its variant is made, and decodes to the file" \
    sh -c "[ '$enc' = gzip ] && gzip -dc '$tmp/t.gz' | cmp -s - '$site/dir/t.txt'"
check "HTTPS (TLS 1.3) serves the same index" sh -c "curl --noproxy '*' -sS --max-time $WAIT \
    --cacert '$tmp/cert.pem' --tlsv1.3 -o '$tmp/tls' https://localhost:$https/ --resolve \
    localhost:$https:127.0.0.1 && cmp -s '$tmp/tls' '$site/index.html'"
n=$(c -o /dev/null -o /dev/null -w '%{num_connects}\n' "$base/" "$base/dir/t.txt" |
    awk '{ s += $1 } END { print s }')
check "two requests on one keep-alive connection (connections opened: $n)" test "$n" = 1
kill -HUP "$srv_pid"
reloaded=""
for _ in $(seq 1 $((WAIT * 10))); do
    grep -q 'configuration reloaded' "$tmp/err.log" && { reloaded=1; break; }
    sleep 0.1
done
check "SIGHUP reloads the configuration" test -n "$reloaded"
kill -TERM "$srv_pid"
rc=124
for _ in $(seq 1 $((WAIT * 10))); do
    if ! kill -0 "$srv_pid" 2>/dev/null; then wait "$srv_pid"; rc=$?; break; fi
    sleep 0.1
done
srv_pid=""
check "SIGTERM stops it gracefully: exit 0 (got $rc)" test "$rc" = 0
if grep -qE '\[(error|crit|alert)\]' "$tmp/err.log"; then
    grep -E '\[(error|crit|alert)\]' "$tmp/err.log" | sed 's/^/#   /'
    bad "the server's log has no error line"
else
    ok "the server's log has no error line"
fi
summary
