#!/usr/bin/env bash
# The arm64 container image (`make arm64-image-test`, the "arm64 image" stage of .ci/run):
#
#   1. podman builds the repository's Dockerfile for linux/arm64: its build stage runs on this
#      machine and cross-compiles (Debian's cross compiler, arm64's libraries through
#      multiarch); the runtime stage is arm64's;
#   2. what the image says and holds: arm64, the size bound of the amd64 image, the same user,
#      an arm64 server binary;
#   3. the image run under qemu-user (the kernel's binfmt handler for arm64, registered here
#      from qemu-user-static's own definition when it is missing): it serves the default site,
#      its health check answers, and a stop drains and exits 0;
#   4. the same Dockerfile built for this machine's architecture too, and a manifest list
#      holding both (`podman manifest`), as a registry would serve them.
#
# As root (podman, binfmt). Prints one `ok`/`FAIL` line per check and ends with
# "N passed, N failed"; exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."
IMAGE="localhost/lfhttpd:arm64-test-$$"
NATIVE="localhost/lfhttpd:native-test-$$"
LIST="localhost/lfhttpd:multi-test-$$"
NAME="lfhttpd-arm64-test-$$"
MAX_IMAGE_BYTES=${MAX_IMAGE_BYTES:-20000000}
WAIT=${ARM64_WAIT_SECONDS:-60}

source tests/lib/check.sh
TMP=$(mktemp -d)
cleanup() {
    podman rm -f "$NAME" >/dev/null 2>&1
    podman manifest rm "$LIST" >/dev/null 2>&1
    podman rmi -f "$IMAGE" "$NATIVE" >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT

s=$SECONDS
bash tools/podman-setup.sh slim 2>"$TMP/setup.err" || fatal "$(cat "$TMP/setup.err")"
ok "podman and the base image debian:bookworm-slim ready ($((SECONDS - s)) s)"

# ---- 1. build ------------------------------------------------------------------------------------
host=$(dpkg --print-architecture)
s=$SECONDS
if podman build --pull=never --network=host --format docker --platform linux/arm64 \
        --build-arg BUILDPLATFORM="linux/$host" -t "$IMAGE" . >"$TMP/build.log" 2>&1; then
    ok "podman build --platform linux/arm64 on $host ($((SECONDS - s)) s)"
else
    tail -n 30 "$TMP/build.log"
    fatal "podman build --platform linux/arm64 failed"
fi

# ---- 2. what the image is ------------------------------------------------------------------------
inspect() { podman image inspect --format "$1" "$IMAGE" 2>/dev/null; }
check "the image is linux/arm64 ($(inspect '{{.Os}}/{{.Architecture}}'))" \
    test "$(inspect '{{.Os}}/{{.Architecture}}')" = linux/arm64
size=$(inspect '{{.Size}}')
check "image size $size bytes <= $MAX_IMAGE_BYTES" test "$size" -le "$MAX_IMAGE_BYTES"
check "it runs as the same non-root user ($(inspect '{{.Config.User}}'))" \
    test "$(inspect '{{.Config.User}}')" = "10001:10001"
if root=$(podman image mount "$IMAGE" 2>"$TMP/mount.err"); then
    check "its server is an arm64 executable, and its loader arm64's" \
        bash -c 'readelf -h "$1/usr/local/bin/lfhttpd" | grep -q "Machine: *AArch64" &&
                 test -f "$1/lib/ld-linux-aarch64.so.1"' _ "$root"
    podman image unmount "$IMAGE" >/dev/null 2>&1
else
    cat "$TMP/mount.err"
    bad "podman image mount failed: the image's files could not be read"
fi

# ---- 3. run it under qemu-user -------------------------------------------------------------------
handler=/proc/sys/fs/binfmt_misc/qemu-aarch64
if [ ! -e "$handler" ]; then
    [ -e /proc/sys/fs/binfmt_misc/register ] ||
        mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null
    def=/usr/lib/binfmt.d/qemu-aarch64.conf
    [ -f "$def" ] && cat "$def" >/proc/sys/fs/binfmt_misc/register 2>/dev/null
fi
if ! grep -qs '^enabled' "$handler"; then
    bad "no binfmt handler for arm64 here (and none could be registered): the image cannot run"
    summary
    exit 1
fi
port=$(free_port)
if podman run -d --name "$NAME" --platform linux/arm64 --read-only --cap-drop=ALL \
        -p "127.0.0.1:$port:8080" "$IMAGE" >/dev/null 2>"$TMP/run.err"; then
    ok "podman run --platform linux/arm64 --read-only --cap-drop=ALL"
else
    cat "$TMP/run.err"
    fatal "the arm64 image does not start"
fi
code=""
for _ in $(seq 1 $((WAIT * 5))); do
    code=$(curl --noproxy '*' -s --max-time 5 -o "$TMP/index" -w '%{http_code}' \
           "http://127.0.0.1:$port/") && [ "$code" = 200 ] && break
    sleep 0.2
done
check "it serves the default site (HTTP $code)" \
    bash -c '[ "$1" = 200 ] && cmp -s "$2" www/index.html' _ "$code" "$TMP/index"
check "its health check (the server probing itself) answers" \
    podman exec "$NAME" /usr/local/bin/lfhttpd --probe http://127.0.0.1:8080/readyz
podman stop -t "$WAIT" "$NAME" >/dev/null 2>&1
rc=$(podman inspect --format '{{.State.ExitCode}}' "$NAME" 2>/dev/null)
check "a stop drains it and it exits 0 (got $rc)" test "$rc" = 0
podman logs "$NAME" 2>/dev/null | grep -q 'stopped' ||
    note "its log: $(podman logs "$NAME" 2>&1 | tail -n 3 | tr '\n' ' ')"

# ---- 4. a manifest list with both architectures ---------------------------------------------------
# The build machine's own image from the same Dockerfile (the container stage builds and tests
# it; here it is only built, from the layers that stage left when they are still there).
s=$SECONDS
if podman build --pull=never --network=host --format docker --platform "linux/$host" \
        --build-arg BUILDPLATFORM="linux/$host" -t "$NATIVE" . >"$TMP/native.log" 2>&1; then
    ok "podman build --platform linux/$host ($((SECONDS - s)) s)"
else
    tail -n 30 "$TMP/native.log"
    bad "podman build --platform linux/$host failed"
fi
if podman manifest create "$LIST" >/dev/null 2>"$TMP/list.err" &&
        podman manifest add "$LIST" "containers-storage:$IMAGE" >/dev/null 2>>"$TMP/list.err" &&
        podman manifest add "$LIST" "containers-storage:$NATIVE" >/dev/null 2>>"$TMP/list.err"; then
    arches=$(podman manifest inspect "$LIST" 2>/dev/null |
             python3 -c 'import json,sys; print(" ".join(sorted(m["platform"]["os"] + "/" +
                          m["platform"]["architecture"] for m in json.load(sys.stdin)["manifests"])))')
    want=$(printf '%s\n' linux/arm64 "linux/$host" | sort -u | tr '\n' ' ' | sed 's/ $//')
    check "a manifest list holds both ($arches)" test "$arches" = "$want"
else
    cat "$TMP/list.err"
    bad "podman manifest create/add failed"
fi
summary
