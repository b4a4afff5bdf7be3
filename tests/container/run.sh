#!/usr/bin/env bash
# Container test (`make container-test`, also a stage of .ci/run).
#
# Builds the image from the Dockerfile with podman and runs it the way a user would:
#   1. tools/podman-setup.sh slim: podman (Debian's package) and its machine settings,
#      installed / written when missing (see ../shared/CONTAINERS.md); a local
#      debian:bookworm-slim base image made with tools/mkbase.sh when there is none (no
#      registry is needed or contacted);
#   2. podman build --pull=never --format docker (docker format keeps the HEALTHCHECK);
#   3. a container with the default site on a published loopback port: GET /, the health
#      check, the server's user (not root), and `podman stop` (SIGTERM): exit code 0, quick,
#      and the log shows the drain;
#   4. a container with a directory mounted read-only over /srv/www: a file byte-identical,
#      then `podman stop` while a slow download is in flight: the download completes intact.
# No container engine (podman missing and not installable) is a failure, never a skip.
# Ends with "N passed, N failed"; exits non-zero if anything failed. Removes the containers
# and the image it made (and dangling build-stage images); keeps the base image.
set -uo pipefail
SELF=$(readlink -f "$0")
cd "$(dirname "$SELF")/../.."

IMAGE=localhost/lfhttpd:test
PREFIX="lfhttpd-ct-$$"

pass=0
fail=0
t0=$SECONDS
ok()   { pass=$((pass + 1)); echo "ok   - $*"; }
bad()  { fail=$((fail + 1)); echo "FAIL - $*"; }
note() { echo "# $*"; }
check() { # check NAME COMMAND... : ok when the command succeeds
    local name=$1; shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
summary() {
    echo "$pass passed, $fail failed ($((SECONDS - t0)) s)"
    [ "$fail" -eq 0 ]
}
fatal() { # a failure that makes the rest meaningless
    bad "$*"
    summary
    exit 1
}

# podman runs rootful (CONTAINERS.md): as root, or again under sudo
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
        exec sudo bash "$SELF" "$@"
    fi
    fatal "no container engine: the container test needs root (or sudo) to install and run podman"
fi

TMP=$(mktemp -d /tmp/lfhttpd-ct.XXXXXX)
cleanup() {
    local c
    for c in "$PREFIX-site" "$PREFIX-mount"; do
        podman rm -f -t 0 "$c" >/dev/null 2>&1
    done
    if [ -n "${BUILT:-}" ]; then
        podman rmi -f "$IMAGE" >/dev/null 2>&1
        # the untagged build stage (and any other dangling image); not -a: keeps the base
        podman image prune -f >/dev/null 2>&1
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. podman, its settings, the base image (tools/podman-setup.sh) --------------------------
s=$SECONDS
bash tools/podman-setup.sh slim 2>"$TMP/setup.err" || fatal "$(cat "$TMP/setup.err")"
ok "podman and the base image debian:bookworm-slim ready ($((SECONDS - s)) s)"

# ---- 2. build --------------------------------------------------------------------------------
s=$SECONDS
if podman build --pull=never --network=host --format docker -t "$IMAGE" . >"$TMP/build.log" 2>&1; then
    BUILT=1
    ok "podman build ($((SECONDS - s)) s)"
else
    BUILT=1
    tail -n 30 "$TMP/build.log"
    fatal "podman build failed"
fi
inspect() { podman image inspect --format "$1" "$IMAGE" 2>/dev/null; }
note "image size $(( $(inspect '{{.Size}}') / 1000000 )) MB"
check "image runs as a non-root user ($(inspect '{{.Config.User}}'))" \
    test "$(inspect '{{.Config.User}}')" = "10001:10001"
check "image exposes 8080 and 8443" \
    bash -c '[[ "$1" == *8080/tcp* && "$1" == *8443/tcp* ]]' _ "$(inspect '{{json .Config.ExposedPorts}}')"
check "image has STOPSIGNAL SIGTERM" test "$(inspect '{{.Config.StopSignal}}')" = SIGTERM
check "image has a HEALTHCHECK" \
    bash -c '[[ "$1" == *lfhttpd-healthcheck* ]]' _ "$(inspect '{{json .Config.Healthcheck}}')"

# ---- helpers ---------------------------------------------------------------------------------
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# run_container NAME [podman run options...]: start it on a free loopback port, wait for HTTP
run_container() {
    local name=$1; shift
    local try
    for try in 1 2 3; do
        PORT=$(free_port)
        if podman run -d --name "$name" -p "127.0.0.1:$PORT:8080" "$@" "$IMAGE" \
                >"$TMP/run.log" 2>&1; then
            break
        fi
        podman rm -f -t 0 "$name" >/dev/null 2>&1
        PORT=""
    done
    if [ -z "$PORT" ]; then
        cat "$TMP/run.log"
        return 1
    fi
    local i
    for i in $(seq 100); do
        curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/" && return 0
        [ "$(podman inspect --format '{{.State.Running}}' "$name" 2>/dev/null)" = true ] || break
        sleep 0.1
    done
    podman logs "$name" 2>&1 | tail -n 20
    return 1
}
# stop_container NAME: podman stop (SIGTERM, 10 s before SIGKILL); sets STOP_MS and EXIT_CODE
stop_container() {
    local name=$1 start end
    start=$(date +%s%N)
    podman stop -t 10 "$name" >/dev/null 2>"$TMP/stop.err" || cat "$TMP/stop.err"
    end=$(date +%s%N)
    STOP_MS=$(( (end - start) / 1000000 ))
    EXIT_CODE=$(podman inspect --format '{{.State.ExitCode}}' "$name" 2>/dev/null)
}

# ---- 3. the default site ---------------------------------------------------------------------
C="$PREFIX-site"
if run_container "$C"; then
    ok "container with the default site answers on 127.0.0.1:$PORT"
    code=$(curl -s -o "$TMP/index" -w '%{http_code}' "http://127.0.0.1:$PORT/")
    check "GET / is 200 with the default site (status $code)" \
        bash -c '[ "$1" = 200 ] && grep -q lfhttpd "$2"' _ "$code" "$TMP/index"
    check "GET / is byte-identical to www/index.html" cmp -s "$TMP/index" www/index.html
    code=$(curl -s -o "$TMP/hello" -w '%{http_code}' "http://127.0.0.1:$PORT/cgi-bin/hello")
    check "GET /cgi-bin/hello runs the script, as with make run (status $code)" \
        bash -c '[ "$1" = 200 ] && grep -q "^Hello from CGI! This is /cgi-bin/hello, run by lfhttpd" "$2"' \
        _ "$code" "$TMP/hello"

    # podman cannot schedule health checks without systemd; run it by hand
    podman healthcheck run "$C" >"$TMP/hc.out" 2>&1
    hc=$?
    status=$(podman inspect --format '{{.State.Health.Status}}' "$C" 2>/dev/null \
             || podman inspect --format '{{.State.Healthcheck.Status}}' "$C" 2>/dev/null)
    check "podman healthcheck run: exit $hc, status $status" \
        bash -c '[ "$1" = 0 ] && [ "$2" = healthy ]' _ "$hc" "$status"
    [ "$hc" = 0 ] || grep -v systemd "$TMP/hc.out"

    # the server is PID 1 of the container; its real, effective, saved and fs uids
    uids=$(podman exec "$C" awk '/^Uid:/{print $2, $3, $4, $5}' /proc/1/status 2>/dev/null)
    check "the server runs as uid 10001, not root (Uid: $uids)" test "$uids" = "10001 10001 10001 10001"
    check "podman top shows the server as user lfhttpd" \
        bash -c 'podman top "$1" user args 2>/dev/null | grep -Eq "^lfhttpd +lfhttpd"' _ "$C"

    stop_container "$C"
    check "podman stop (SIGTERM): exit code $EXIT_CODE, ${STOP_MS} ms" \
        bash -c '[ "$1" = 0 ] && [ "$2" -lt 3000 ]' _ "$EXIT_CODE" "$STOP_MS"
    podman logs "$C" >"$TMP/site.log" 2>&1
    check "the log (stderr) shows the graceful drain" \
        bash -c 'grep -q "SIGTERM received: shutting down gracefully" "$1" && grep -q "draining:" "$1" \
                 && grep -q "\] stopped" "$1"' _ "$TMP/site.log"
    grep -q . "$TMP/site.log" || note "empty container log"
    podman rm -f -t 0 "$C" >/dev/null 2>&1
else
    bad "container with the default site did not start"
fi

# ---- 4. a site directory mounted over /srv/www -----------------------------------------------
SITE="$TMP/site"
mkdir -p "$SITE"
printf 'lfhttpd container test %s\nline two\n' "$$" >"$SITE/file.txt"
head -c $((32 * 1024 * 1024)) /dev/urandom >"$SITE/big.bin"
chmod 755 "$TMP" "$SITE"
chmod 644 "$SITE"/*
C="$PREFIX-mount"
if run_container "$C" -v "$SITE:/srv/www:ro"; then
    ok "container with a mounted site answers on 127.0.0.1:$PORT"
    code=$(curl -s -o "$TMP/file.txt" -w '%{http_code}' "http://127.0.0.1:$PORT/file.txt")
    check "GET /file.txt from the mounted directory is 200 and byte-identical (status $code)" \
        bash -c '[ "$1" = 200 ] && cmp -s "$2" "$3"' _ "$code" "$TMP/file.txt" "$SITE/file.txt"
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/index.html")
    check "the mount replaces the default site (GET /index.html is $code)" test "$code" = 404

    # a download that takes ~4 s (32 MiB at 8 MB/s, more than the socket buffers hold) is in
    # flight when SIGTERM arrives
    curl -s --max-time 20 --limit-rate 8000000 -o "$TMP/big.bin" -w '%{http_code} %{size_download}' \
        "http://127.0.0.1:$PORT/big.bin" >"$TMP/big.status" 2>&1 &
    curl_pid=$!
    sleep 0.5
    stop_container "$C"
    wait "$curl_pid"
    curl_rc=$?
    check "podman stop during a download: exit code $EXIT_CODE, ${STOP_MS} ms (< 10 s: no SIGKILL)" \
        bash -c '[ "$1" = 0 ] && [ "$2" -lt 9000 ]' _ "$EXIT_CODE" "$STOP_MS"
    check "the download in flight completed byte-identical (curl exit $curl_rc, $(cat "$TMP/big.status"))" \
        bash -c '[ "$1" = 0 ] && cmp -s "$2" "$3"' _ "$curl_rc" "$TMP/big.bin" "$SITE/big.bin"
    if [ "$curl_rc" != 0 ] && [ "$EXIT_CODE" = 0 ]; then
        note "the server exited 0 before the client had the whole response: bytes still in its"
        note "socket send buffer die with the container's network namespace (podman stop, pod"
        note "deletion). The drain must wait until they are delivered (lingering close / SIOCOUTQ)."
    fi
    podman logs "$C" >"$TMP/mount.log" 2>&1
    check "the log shows the drain with the connection open" \
        bash -c 'grep -Eq "draining: stopped accepting, [1-9][0-9]* connection" "$1" && grep -q "\] stopped" "$1"' \
        _ "$TMP/mount.log"
    podman rm -f -t 0 "$C" >/dev/null 2>&1
else
    bad "container with a mounted site did not start"
fi

summary
