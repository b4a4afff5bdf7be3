#!/usr/bin/env bash
# Container test (`make container-test`, also a stage of .ci/run).
#
# Builds the image from the Dockerfile with podman and runs it the way a user would:
#   1. tools/podman-setup.sh slim: podman (Debian's package) and its machine settings,
#      installed / written when missing (that script says why); a local
#      debian:bookworm-slim base image made with tools/mkbase.sh when there is none (no
#      registry is needed or contacted);
#   2. podman build --pull=never --format docker (docker format keeps the HEALTHCHECK); the
#      image's size (at most 20 MB) and its files: the binary, the libraries it loads, its
#      configuration and the default site: no shell, no package manager, nothing else;
#   3. the default site with --read-only, --cap-drop=ALL, no-new-privileges and --cpus 0.5:
#      GET /, the probes, the HEALTHCHECK (the server probing itself), the user, capabilities
#      and read-only root as the kernel shows them, `threads auto` from the CPU quota, and
#      `podman stop` (SIGTERM): exit code 0, quick, the drain in the log;
#   4. a directory mounted read-only over /srv/www: a file byte-identical, then `podman stop`
#      while a slow download is in flight: the download completes intact; then a site whose
#      /srv/www is a symlink on a mounted directory, swapped to another release by this script:
#      followed without a signal, the previous release's hashed chunk still served;
#   5. `podman kube play deploy/kubernetes.yaml`: every replica serves the site, the probes,
#      the CPU limit, the security context; a ConfigMap update done the kubelet's way reaches
#      every server without a restart; a pod stopped during a large download serves through
#      drain_delay (not ready, still serving), drains, and the body arrives complete; then
#      `podman kube down`. What podman 4.3 does not do as a kubelet would is said where it
#      matters (and in the manifest);
#   6. a pod (tests/container/swap-pod.yaml) of lfhttpd and a second container sharing a
#      volume, as with a git-sync sidecar: a swap of its `current` symlink done from inside
#      the second container is followed without a signal.
# No container engine (podman missing and not installable) is a failure, never a skip.
# Ends with "N passed, N failed"; exits non-zero if anything failed. Removes the containers,
# pods, volume, network and images it made; keeps the base image.
set -uo pipefail
SELF=$(readlink -f "$0")
cd "$(dirname "$SELF")/../.."

PREFIX="lfhttpd-ct-$$"
IMAGE="localhost/lfhttpd:ct-$$"   # its own tag: another run on the machine may build too
MAX_IMAGE_BYTES=20000000

# ok, bad, note, check, summary, fatal
source tests/lib/check.sh

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
    for c in "$PREFIX-site" "$PREFIX-mount" "$PREFIX-deploy"; do
        podman rm -f -t 0 "$c" >/dev/null 2>&1
    done
    [ -n "${KUBE_UP:-}" ] && kube_cleanup
    [ -f "$TMP/swap-pod.yaml" ] && podman kube down "$TMP/swap-pod.yaml" >/dev/null 2>&1
    if [ -n "${MOUNTED:-}" ]; then
        podman image unmount "$IMAGE" >/dev/null 2>&1
    fi
    if [ -n "${BUILT:-}" ]; then
        podman rmi -f "$IMAGE" >/dev/null 2>&1
        # this build's stages (each run's own label), never another run's
        podman image prune -f --filter "label=lfhttpd.container-test=$$" >/dev/null 2>&1
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. podman, its settings, the base image (tools/podman-setup.sh) --------------------------
s=$SECONDS
bash tools/podman-setup.sh slim 2>"$TMP/setup.err" || fatal "$(cat "$TMP/setup.err")"
ok "podman and the base image debian:bookworm-slim ready ($((SECONDS - s)) s)"

# ---- 2. build, and what is in the image ------------------------------------------------------
s=$SECONDS
if podman build --pull=never --network=host --format docker --label "lfhttpd.container-test=$$" \
        -t "$IMAGE" . >"$TMP/build.log" 2>&1; then
    BUILT=1
    ok "podman build ($((SECONDS - s)) s)"
else
    BUILT=1
    tail -n 30 "$TMP/build.log"
    fatal "podman build failed"
fi
inspect() { podman image inspect --format "$1" "$IMAGE" 2>/dev/null; }
size=$(inspect '{{.Size}}')
note "image size $((size / 1000000)).$(( size / 100000 % 10 )) MB ($size bytes, uncompressed)"
check "image size $size bytes <= $MAX_IMAGE_BYTES" test "$size" -le "$MAX_IMAGE_BYTES"
check "image runs as a non-root user ($(inspect '{{.Config.User}}'))" \
    test "$(inspect '{{.Config.User}}')" = "10001:10001"
check "image exposes 8080 and 8443" \
    bash -c '[[ "$1" == *8080/tcp* && "$1" == *8443/tcp* ]]' _ "$(inspect '{{json .Config.ExposedPorts}}')"
check "image has STOPSIGNAL SIGTERM" test "$(inspect '{{.Config.StopSignal}}')" = SIGTERM
check "image names the public CAs' roots for the ACME client (SSL_CERT_FILE)" \
    bash -c '[[ "$1" == *SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt* ]]' _ "$(inspect '{{.Config.Env}}')"
hc_cmd=$(inspect '{{json .Config.Healthcheck.Test}}')
check "image HEALTHCHECK is the server probing /readyz, no shell ($hc_cmd)" \
    test "$hc_cmd" = '["CMD","/usr/local/bin/lfhttpd","--probe","http://127.0.0.1:8080/readyz"]'

# Every file of the image, from its mounted root filesystem.
if root=$(podman image mount "$IMAGE" 2>"$TMP/mount.err"); then
    MOUNTED=1
    (cd "$root" && find . -mindepth 1 \( -type f -o -type l \) -printf '%y %p\n' | sort) >"$TMP/files"
    podman image unmount "$IMAGE" >/dev/null 2>&1 && MOUNTED=
    note "$(wc -l <"$TMP/files") files in the image"
    # the shared objects the binary loads (found by tools/image-rootfs.sh at build time)
    libs=$(awk '$2 ~ /^\.\/(usr\/)?lib(64)?\// { print $2 }' "$TMP/files" | tr '\n' ' ')
    note "libraries: $libs"
    check "the image holds the server, its configuration and the default site" \
        bash -c 'for f in ./usr/local/bin/lfhttpd ./etc/lfhttpd/lfhttpd.conf ./etc/lfhttpd/mime.types \
                          ./srv/www/index.html ./etc/passwd ./etc/group \
                          ./etc/ssl/certs/ca-certificates.crt; do
                     grep -qx "f $f" "$1" || { echo "missing $f"; exit 1; }; done' _ "$TMP/files"
    check "no shell, no package manager, no other program in the image" \
        bash -c '! grep -E "/(sh|bash|dash|busybox|dpkg|apt|apt-get|perl|python3?)$" "$1"' _ "$TMP/files"
    check "nothing else: each file is the binary, a shared object, /etc or the site" \
        bash -c '! grep -vE "^f \./(usr/local/bin/lfhttpd|(usr/)?lib(64)?/.*\.so[.0-9]*|etc/(lfhttpd/[a-z.]+|passwd|group|ssl/certs/ca-certificates\.crt)|srv/www/.*)$" "$1"' \
        _ "$TMP/files"
    check "the default site has no CGI scripts (nothing to run them with)" \
        bash -c '! grep -q "^f \./srv/www/cgi-bin/" "$1"' _ "$TMP/files"
    check "the libraries include libc, libssl and libcrypto, found from the binary" \
        bash -c '[[ "$1" == *libc.so.6* && "$1" == *libssl.so.3* && "$1" == *libcrypto.so.3* ]]' _ "$libs"
else
    cat "$TMP/mount.err"
    bad "podman image mount failed: the image's files could not be listed"
fi

# ---- helpers ---------------------------------------------------------------------------------
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
# stop_container NAME [TIMEOUT]: podman stop (SIGTERM, then SIGKILL after TIMEOUT, default
# 10 s); sets STOP_MS and EXIT_CODE
stop_container() {
    local name=$1 start end
    start=$(date +%s%N)
    podman stop -t "${2:-10}" "$name" >/dev/null 2>"$TMP/stop.err" || cat "$TMP/stop.err"
    end=$(date +%s%N)
    STOP_MS=$(( (end - start) / 1000000 ))
    EXIT_CODE=$(podman inspect --format '{{.State.ExitCode}}' "$name" 2>/dev/null)
}
# status_line PID FIELD: a line of /proc/PID/status as the host sees it (the image has no
# shell or tools to ask from inside)
status_line() { awk -v f="$2:" '$1 == f { $1 = ""; sub(/^ /, ""); print }' "/proc/$1/status"; }
# root_mount_options PID: the mount options of the process's root filesystem
root_mount_options() { awk '$5 == "/" { print $6 }' "/proc/$1/mountinfo" | tail -n 1; }

# ---- 3. the default site, locked down, under a CPU limit -------------------------------------
C="$PREFIX-site"
if run_container "$C" --read-only --cap-drop=ALL --security-opt=no-new-privileges --cpus 0.5; then
    ok "container with the default site answers on 127.0.0.1:$PORT (--read-only --cap-drop=ALL --cpus 0.5)"
    code=$(curl -s -o "$TMP/index" -w '%{http_code}' "http://127.0.0.1:$PORT/")
    check "GET / is 200 and byte-identical to www/index.html (status $code)" \
        bash -c '[ "$1" = 200 ] && cmp -s "$2" www/index.html' _ "$code" "$TMP/index"
    probes=$(for p in livez readyz healthz; do
                 curl -s -o /dev/null -w "$p=%{http_code} " "http://127.0.0.1:$PORT/$p"; done)
    check "probes answer 200 ($probes)" test "$probes" = "livez=200 readyz=200 healthz=200 "

    # podman cannot schedule health checks without systemd; run it by hand: it is the server
    # probing itself (no shell, no curl in the image)
    podman healthcheck run "$C" >"$TMP/hc.out" 2>&1
    hc=$?
    status=$(podman inspect --format '{{.State.Health.Status}}' "$C" 2>/dev/null \
             || podman inspect --format '{{.State.Healthcheck.Status}}' "$C" 2>/dev/null)
    check "podman healthcheck run (lfhttpd --probe): exit $hc, status $status" \
        bash -c '[ "$1" = 0 ] && [ "$2" = healthy ]' _ "$hc" "$status"
    [ "$hc" = 0 ] || grep -v systemd "$TMP/hc.out"

    # the server is PID 1 of the container: what the kernel says about it
    pid=$(podman inspect --format '{{.State.Pid}}' "$C")
    uids=$(status_line "$pid" Uid | tr -s '\t ' ' ')
    check "the server runs as uid 10001, not root (Uid: $uids)" test "$uids" = "10001 10001 10001 10001"
    caps="$(status_line "$pid" CapEff) $(status_line "$pid" CapBnd)"
    check "no capabilities, effective or bounding (--cap-drop=ALL: $caps)" \
        test "$caps" = "0000000000000000 0000000000000000"
    check "no new privileges ($(status_line "$pid" NoNewPrivs))" test "$(status_line "$pid" NoNewPrivs)" = 1
    opts=$(root_mount_options "$pid")
    check "the root filesystem is read-only (--read-only: $opts)" bash -c '[[ ",$1," == *,ro,* ]]' _ "$opts"
    check "podman top shows the server as user lfhttpd" \
        bash -c 'podman top "$1" user args 2>/dev/null | grep -Eq "^lfhttpd +/usr/local/bin/lfhttpd"' _ "$C"
    podman logs "$C" >"$TMP/site.log" 2>&1
    threads=$(grep -o 'with [0-9]* threads ([^)]*)' "$TMP/site.log" | head -n 1)
    note "$threads"
    check "--cpus 0.5: threads auto is 1, from the cgroup CPU quota" \
        bash -c '[[ "$1" == "with 1 threads ("*"cgroup CPU quota 50000/100000 us = 1 CPU rounded up"* ]]' _ "$threads"

    stop_container "$C"
    # Exit code 0: the server ended on SIGTERM by itself; the SIGKILL after the stop timeout
    # would give 137. (The time is shown, not compared: it depends on the machine's load.)
    check "podman stop (SIGTERM): exit code $EXIT_CODE (137 if killed), ${STOP_MS} ms" \
        test "$EXIT_CODE" = 0
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
if run_container "$C" --read-only -v "$SITE:/srv/www:ro"; then
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
    check "podman stop during a download: exit code $EXIT_CODE (137 if killed), ${STOP_MS} ms" \
        test "$EXIT_CODE" = 0
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
rm -f "$SITE/big.bin" "$TMP/big.bin"

# ---- 4b. a deploy's symlink swap: /srv/www a symlink on a mounted directory ------------------
# What a git-sync sidecar or a deploy script does to a shared volume, done by this script on a
# host directory mounted over /srv (a kube play pod with a sidecar is not done here: the image
# has no shell, and a second container sharing an emptyDir was left for later): the image's own
# `root /srv/www` is then a symlink `www -> releases/1`, renamed over by `www -> releases/2`.
DEPLOY="$TMP/deploy"
mkdir -p "$DEPLOY/releases/1/assets" "$DEPLOY/releases/2/assets"
for n in 1 2; do printf 'release %s\n' "$n" >"$DEPLOY/releases/$n/index.html"; done
printf 'export const release = 1;\n' >"$DEPLOY/releases/1/assets/app.1a2b3c4d.js"
ln -s releases/1 "$DEPLOY/www"
chmod -R a+rX "$DEPLOY"
C="$PREFIX-deploy"
if run_container "$C" --read-only -v "$DEPLOY:/srv:ro"; then
    body=$(curl -s "http://127.0.0.1:$PORT/index.html")
    check "release 1 through the www -> releases/1 symlink ($body)" test "$body" = "release 1"
    ln -s releases/2 "$DEPLOY/www.tmp" && mv -T "$DEPLOY/www.tmp" "$DEPLOY/www"
    for i in $(seq 100); do
        podman logs "$C" 2>&1 | grep -q "root /srv/www -> releases/2: switched" && break
        sleep 0.1
    done
    podman logs "$C" >"$TMP/deploy.log" 2>&1
    check "the swap is followed without a signal: $(grep -m1 'switched' "$TMP/deploy.log")" \
        grep -q "root /srv/www -> releases/2: switched (generation 2)" "$TMP/deploy.log"
    body=$(curl -s "http://127.0.0.1:$PORT/index.html")
    check "release 2 after the swap ($body)" test "$body" = "release 2"
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/assets/app.1a2b3c4d.js")
    check "release 1's hashed chunk still served from the previous tree (root_grace; $code)" \
        test "$code" = 200
    podman rm -f -t 0 "$C" >/dev/null 2>&1
else
    bad "container with a symlinked site did not start"
fi

# ---- 5. podman kube play deploy/kubernetes.yaml ----------------------------------------------
# The manifest as it is; its names read from it. One kube run at a time on a machine: pods,
# the ConfigMap's volume and the image name are named by the manifest, not by this run.
KUBE=deploy/kubernetes.yaml
kube_field() { awk -v k="$1:" '$1 == k { print $2; exit }' "$KUBE"; }
KUBE_IMAGE=$(kube_field image)
DEPLOYMENT=$(awk '/^kind: Deployment/ { d = 1 } d && $1 == "name:" { print $2; exit }' "$KUBE")
CONFIGMAP=$(awk '/^kind: ConfigMap/ { d = 1 } d && $1 == "name:" { print $2; exit }' "$KUBE")
CONTAINER=$(awk '$1 == "-" && $2 == "name:" { print $3; exit }' "$KUBE")
REPLICAS=$(kube_field replicas)
GRACE=$(kube_field terminationGracePeriodSeconds)
CM_DIR=$(awk '$1 == "mountPath:" { print $2; exit }' "$KUBE")
NET="$PREFIX-net"
kube_cleanup() {
    podman kube down "$KUBE" >/dev/null 2>&1
    podman volume rm -f "$CONFIGMAP" >/dev/null 2>&1
    podman network rm -f "$NET" >/dev/null 2>&1
    podman untag "$IMAGE" "$KUBE_IMAGE" >/dev/null 2>&1
    # a user's own image of that name, as it was
    [ -n "${KUBE_PREV:-}" ] && podman tag "$KUBE_PREV" "$KUBE_IMAGE" >/dev/null 2>&1
    KUBE_UP=
}
pod_ip() { podman inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1" 2>/dev/null; }
ctr() { echo "$DEPLOYMENT-pod-$1-$CONTAINER"; }

note "kube: $KUBE: deployment $DEPLOYMENT ($REPLICAS replicas, container $CONTAINER), configmap $CONFIGMAP at $CM_DIR, image $KUBE_IMAGE, grace ${GRACE}s"
exec 9>/var/tmp/lfhttpd-container-test-kube.lock
flock 9
s=$SECONDS
KUBE_PREV=$(podman image inspect --format '{{.Id}}' "$KUBE_IMAGE" 2>/dev/null)
KUBE_UP=1
podman kube down "$KUBE" >/dev/null 2>&1           # leftovers of an interrupted run
podman volume rm -f "$CONFIGMAP" >/dev/null 2>&1   # else kube play reuses its old content
podman tag "$IMAGE" "$KUBE_IMAGE"
podman network create "$NET" >/dev/null
if podman kube play --replace --network "$NET" "$KUBE" >"$TMP/kube.log" 2>&1; then
    ok "podman kube play $KUBE ($((SECONDS - s)) s)"
else
    grep -v systemd "$TMP/kube.log" | tail -n 20
    bad "podman kube play $KUBE failed"
fi
pods=$(podman pod ps --filter "name=^$DEPLOYMENT-pod-" --format '{{.Name}}' | sort | tr '\n' ' ')
check "one pod per replica: $pods" test "$(echo $pods | wc -w)" = "$REPLICAS"

# every replica: ready, serving the site, as the manifest's security context and CPU limit say
declare -A IP
etags=""
for i in $(seq 0 $((REPLICAS - 1))); do
    c=$(ctr "$i")
    IP[$i]=$(pod_ip "$c")
    ready=""
    for try in $(seq 100); do
        ready=$(curl -s -o /dev/null --max-time 1 -w '%{http_code}' "http://${IP[$i]}:8080/readyz")
        [ "$ready" = 200 ] && break
        sleep 0.1
    done
    # what a kubelet's httpGet probes ask, from outside the container (the manifest's probes
    # and scrape annotations name the admin port, 9090)
    live=$(curl -s -o /dev/null -w '%{http_code}' "http://${IP[$i]}:8080/livez")
    check "pod $i (${IP[$i]}): /readyz $ready, /livez $live" test "$ready $live" = "200 200"
    admin=$(for p in livez readyz metrics; do
        printf '%s=%s ' $p "$(curl -s -o "$TMP/admin.$p.$i" -w '%{http_code}' "http://${IP[$i]}:9090/$p")"; done)
    pub=$(curl -s -o /dev/null -w '%{http_code}' "http://${IP[$i]}:8080/metrics")
    check "pod $i: admin port ($admin), /metrics on 8080 closed by status_allow none ($pub)" \
        bash -c '[ "$1" = "livez=200 readyz=200 metrics=200 " ] && [ "$2" = 403 ] &&
                 grep -q "^lfhttpd_http_requests_total{" "$3"' _ "$admin" "$pub" "$TMP/admin.metrics.$i"
    code=$(curl -s -D "$TMP/head.$i" -o "$TMP/index.$i" -w '%{http_code}' "http://${IP[$i]}:8080/")
    check "pod $i serves the site: GET / $code, byte-identical to www/index.html" \
        bash -c '[ "$1" = 200 ] && cmp -s "$2" www/index.html' _ "$code" "$TMP/index.$i"
    etags="$etags$(grep -i '^etag:' "$TMP/head.$i" | tr -d '\r')|"
    pid=$(podman inspect --format '{{.State.Pid}}' "$c")
    sec="uid=$(status_line "$pid" Uid | awk '{print $1}') caps=$(status_line "$pid" CapEff) nnp=$(status_line "$pid" NoNewPrivs) root=$(root_mount_options "$pid" | cut -d, -f1)"
    check "pod $i: runAsUser, capabilities dropped, no privilege escalation, read-only root ($sec)" \
        test "$sec" = "uid=10001 caps=0000000000000000 nnp=1 root=ro"
    podman logs "$c" >"$TMP/pod.$i.log" 2>&1
    threads=$(grep -o 'with [0-9]* threads ([^)]*)' "$TMP/pod.$i.log" | head -n 1)
    check "pod $i: limits.cpu 1 gives threads auto 1 ($threads)" \
        bash -c '[[ "$1" == "with 1 threads ("*"cgroup CPU quota 100000/100000 us = 1 CPU"* ]]' _ "$threads"
    STARTED[$i]=$(podman inspect --format '{{.State.StartedAt}} {{.State.Pid}}' "$c")
done
check "validators equal across replicas (${etags%|})" \
    bash -c 'IFS="|" read -ra e <<<"$1"; [ -n "${e[0]}" ] && for x in "${e[@]}"; do [ "$x" = "${e[0]}" ] || exit 1; done' _ "$etags"

# The probes as podman takes them: livenessProbe -> a health check that runs curl through
# /bin/sh inside the container (neither is in the image, so podman cannot run it: the checks
# above ask /livez from outside, as a kubelet does); readinessProbe is not used at all.
hc=$(podman inspect --format '{{json .Config.Healthcheck.Test}}' "$(ctr 0)")
note "podman's health check from the livenessProbe: $hc"
check "podman took the livenessProbe's path and port (/livez on 9090)" \
    bash -c '[[ "$1" == *"/livez"* && "$1" == *9090* ]]' _ "$hc"

# A ConfigMap update, the kubelet's way: a new timestamped directory and the ..data swap in
# the volume every pod mounts. Podman cannot update a ConfigMap in place (kube play --replace
# recreates the pods). Before: the test endpoints are off; after: on, in every server.
VOL=$(podman volume inspect --format '{{.Mountpoint}}' "$CONFIGMAP")
before=$(for i in "${!IP[@]}"; do curl -s -o /dev/null -w '%{http_code} ' "http://${IP[$i]}:8080/_test/bytes/16"; done)
for i in "${!IP[@]}"; do RELOADS[$i]=$(podman logs "$(ctr "$i")" 2>&1 | grep -c 'configuration reloaded'); done
cp "$VOL/lfhttpd.conf" "$TMP/lfhttpd.conf"
printf '# added by the container test\ntest_endpoints /_test/\n' >>"$TMP/lfhttpd.conf"
python3 tests/lib/kubelet.py "$VOL" "lfhttpd.conf=$TMP/lfhttpd.conf"
note "ConfigMap volume after the update: $(cd "$VOL" && ls -A | tr '\n' ' ')"
for i in "${!IP[@]}"; do
    c=$(ctr "$i")
    after=""
    for try in $(seq 100); do   # reload_on_change: 300 ms after the swap, on a quiet machine
        after=$(curl -s -o /dev/null -w '%{http_code}' "http://${IP[$i]}:8080/_test/bytes/16")
        [ "$after" = 200 ] && break
        sleep 0.1
    done
    n=$(podman logs "$c" 2>&1 | grep -c 'configuration reloaded')
    now=$(podman inspect --format '{{.State.StartedAt}} {{.State.Pid}}' "$c")
    check "pod $i: the ConfigMap change reached the server without a restart (/_test/ $after; reloads ${RELOADS[$i]} -> $n; same process)" \
        bash -c '[ "$1" = 200 ] && [ "$2" -gt "$3" ] && [ "$4" = "$5" ]' _ "$after" "$n" "${RELOADS[$i]}" "$now" "${STARTED[$i]}"
done
check "before the update the test endpoints were off ($before)" bash -c '[[ "$1" =~ ^(404 )+$ ]]' _ "$before"
podman logs "$(ctr 0)" 2>&1 | grep 'reload_on_change: .*changed' | tail -n 1 | sed 's/^/# /'

# Pod 0 is stopped during a large download, as a kubelet stops a pod: SIGTERM to the server
# and, after it exits or terminationGracePeriodSeconds, the sandbox. (podman 4.3's `kube down`
# and `pod stop` stop the infra container, and with it the pod's network, at the same time as
# the server, so the drain could not deliver anything; podman also ignores
# terminationGracePeriodSeconds: it is passed to `podman stop -t` here.) 100 MiB at 8 MB/s
# take 13 s at least: still in flight when drain_delay (5 s) ends, even when `podman stop`
# is slow to deliver SIGTERM (the client's socket buffer holds the last megabytes), and done
# well within drain_timeout (30 s) after it.
c=$(ctr 0)
curl -s -o "$TMP/ref.bin" "http://${IP[1]}:8080/_test/bytes/104857600"
curl -s --max-time 60 --limit-rate 8000000 -o "$TMP/dl.bin" -w '%{http_code} %{size_download}' \
    "http://${IP[0]}:8080/_test/bytes/104857600" >"$TMP/dl.status" 2>&1 &
curl_pid=$!
sleep 0.5
start=$(date +%s%N)
podman stop -t "$GRACE" "$c" >/dev/null 2>"$TMP/stop.err" &
stop_pid=$!
# during drain_delay: not ready, still alive, still accepting and serving
during=""
for try in $(seq 50); do
    during=$(curl -s -o /dev/null --max-time 1 -w '%{http_code}' "http://${IP[0]}:8080/readyz")
    [ "$during" = 503 ] && break
    sleep 0.1
done
live=$(curl -s -o /dev/null --max-time 1 -w '%{http_code}' "http://${IP[0]}:8080/livez")
page=$(curl -s -o /dev/null --max-time 1 -w '%{http_code}' "http://${IP[0]}:8080/")
check "after SIGTERM, during drain_delay: /readyz $during, /livez $live, a new request $page" \
    test "$during $live $page" = "503 200 200"
wait "$stop_pid"
STOP_MS=$(( ($(date +%s%N) - start) / 1000000 ))
wait "$curl_pid"
curl_rc=$?
EXIT_CODE=$(podman inspect --format '{{.State.ExitCode}}' "$c")
check "pod 0 stopped: exit code $EXIT_CODE (137 if killed after ${GRACE} s), after ${STOP_MS} ms" \
    test "$EXIT_CODE" = 0
check "the download in flight arrived complete (curl exit $curl_rc, $(cat "$TMP/dl.status"), same bytes as from pod 1)" \
    bash -c '[ "$1" = 0 ] && cmp -s "$2" "$3"' _ "$curl_rc" "$TMP/dl.bin" "$TMP/ref.bin"
podman logs "$c" >"$TMP/pod.0.log" 2>&1
check "pod 0's log: drain_delay, then the drain with the download open, then stopped" \
    bash -c 'grep -q "not ready, still serving" "$1" && grep -q "drain_delay over" "$1" \
             && grep -Eq "draining: stopped accepting, [1-9][0-9]* connection" "$1" && grep -q "\] stopped" "$1"' \
    _ "$TMP/pod.0.log"
grep -E 'SIGTERM|drain|stopped' "$TMP/pod.0.log" | sed 's/^/# /'
rm -f "$TMP/dl.bin" "$TMP/ref.bin"

s=$SECONDS
if podman kube down "$KUBE" >"$TMP/down.log" 2>&1; then
    left=$(podman pod ps --filter "name=^$DEPLOYMENT-pod-" --format '{{.Name}}' | wc -l)
    check "podman kube down: no pod left ($left; $((SECONDS - s)) s)" test "$left" = 0
else
    grep -v systemd "$TMP/down.log" | tail -n 10
    bad "podman kube down failed"
fi
kube_cleanup
flock -u 9

# ---- 6. a git-sync-style swap inside a pod (tests/container/swap-pod.yaml) -------------------
# lfhttpd and a second container (the base image, standing for a git-sync sidecar) share a
# volume holding release 1; the test swaps its `current` symlink from inside the second one.
SWAP_POD="lfhttpd-swap-$$"
SWAP_SITE="$TMP/podsite"
mkdir -p "$SWAP_SITE/releases/1/assets"
echo "release 1" >"$SWAP_SITE/releases/1/index.html"
echo "export const release = 1;" >"$SWAP_SITE/releases/1/assets/app.1a2b3c4d.js"
ln -s releases/1 "$SWAP_SITE/current"
chmod -R a+rX "$SWAP_SITE"
sed -e "s|POD|$SWAP_POD|" -e "s|SITE|$SWAP_SITE|" -e "s|IMAGE|$IMAGE|" \
    tests/container/swap-pod.yaml >"$TMP/swap-pod.yaml"
if podman kube play "$TMP/swap-pod.yaml" >"$TMP/swap-play.log" 2>&1; then
    ok "podman kube play of a pod with lfhttpd and a deployer sharing a volume"
    SWAP_C="$SWAP_POD-lfhttpd"
    SWAP_IP=$(pod_ip "$SWAP_C")
    for i in $(seq 100); do
        curl -s -o /dev/null --max-time 1 "http://$SWAP_IP:8080/" && break
        sleep 0.1
    done
    body=$(curl -s --max-time 5 "http://$SWAP_IP:8080/index.html")
    check "release 1 from the shared volume ($body)" test "$body" = "release 1"
    podman exec "$SWAP_POD-deployer" /bin/sh -c 'mkdir -p /site/releases/2 &&
        echo "release 2" >/site/releases/2/index.html &&
        ln -s releases/2 /site/current.tmp && mv -T /site/current.tmp /site/current'
    for i in $(seq 100); do
        podman logs "$SWAP_C" 2>&1 | grep -q "root_follow: configuration reloaded (generation 2)" \
            && break
        sleep 0.1
    done
    podman logs "$SWAP_C" >"$TMP/swap.log" 2>&1
    check "the sidecar's swap is followed: $(grep -m1 'switched' "$TMP/swap.log")" \
        grep -q "root /site/current -> releases/2: switched (generation 2)" "$TMP/swap.log"
    body=$(curl -s --max-time 5 "http://$SWAP_IP:8080/index.html")
    check "release 2 after the swap ($body)" test "$body" = "release 2"
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
        "http://$SWAP_IP:8080/assets/app.1a2b3c4d.js")
    check "release 1's hashed chunk still served from the previous tree ($code)" test "$code" = 200
else
    tail -n 20 "$TMP/swap-play.log"
    bad "podman kube play of the swap pod failed"
fi
podman kube down "$TMP/swap-pod.yaml" >/dev/null 2>&1

summary
