#!/usr/bin/env bash
# podman-setup.sh — podman ready to build and run containers here, and the local base images:
#
#   tools/podman-setup.sh [slim] [fresh]
#
#   1. podman (Debian's package) and what it needs (catatonit: `podman run --init`),
#      installed when missing;
#   2. /etc/containers/containers.conf: the `runc` runtime (crun fails on hybrid cgroups) and
#      default_ulimits the container may set without CAP_SYS_RESOURCE (nofile and nproc at
#      this machine's hard limits); keys already set are left as they are;
#   3. each named base image made with tools/mkbase.sh when it is not there (kept once made;
#      one mkbase at a time if two runs start together):
#        slim   localhost/debian:bookworm-slim, the Dockerfile's base (tests/container/run.sh)
#        fresh  localhost/lfhttpd-fresh:bookworm, a fresh bookworm server
#               (tests/quickstart/run.sh)
#
# No container registry is needed or contacted. Run as root. Prints `# ` notes on stdout; on failure,
# one `podman-setup: reason` line on stderr and exit status 1. Used by tests/container/run.sh
# and tests/quickstart/run.sh (step 2 above says why each setting is there).
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

PKGS="podman buildah runc catatonit fuse-overlayfs slirp4netns uidmap debootstrap"
CONF=/etc/containers/containers.conf

note() { echo "# $*"; }
die()  { echo "podman-setup: $*" >&2; exit 1; }

for kind in "$@"; do
    case $kind in
    slim | fresh) ;;
    *) die "unknown base image '$kind' (slim, fresh)" ;;
    esac
done
[ "$(id -u)" -eq 0 ] || die "needs root (podman runs rootful here)"

# ---- 1. podman -------------------------------------------------------------------------------
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    note "installing$missing"
    s=$SECONDS
    if ! { apt-get update -qq >/dev/null \
           && DEBIAN_FRONTEND=noninteractive nice -n 10 apt-get install -y -qq \
                  --no-install-recommends $missing >/dev/null; }; then
        die "no container engine: podman is not installed and apt-get could not install$missing"
    fi
    note "installed in $((SECONDS - s)) s"
fi
command -v podman >/dev/null || die "no container engine: podman not found after installing it"

# ---- 2. containers.conf ----------------------------------------------------------------------
NOFILE=$(awk '/^Max open files/{print $5}' /proc/self/limits)
NPROC=$(awk '/^Max processes/{print $4}' /proc/self/limits)
PMAX=$(cat /proc/sys/kernel/pid_max)
{ [ "$NPROC" = unlimited ] || [ "$NPROC" -gt "$PMAX" ]; } && NPROC=$PMAX
[ "$NOFILE" = unlimited ] && NOFILE=1048576
conf_key() { # conf_key TABLE KEY VALUE: add KEY = VALUE to [TABLE] unless KEY is set
    local table=$1 key=$2 value=$3
    if test -f "$CONF" && grep -Eq "^[[:space:]]*$key[[:space:]]*=" "$CONF"; then
        return
    fi
    mkdir -p "$(dirname "$CONF")"
    if test -f "$CONF" && grep -Eq "^[[:space:]]*\[$table\][[:space:]]*(#.*)?$" "$CONF"; then
        sed -i -E "0,/^[[:space:]]*\[$table\][[:space:]]*(#.*)?$/s//&\n$key = $value/" "$CONF"
    else
        { [ -s "$CONF" ] && echo; printf '[%s]\n%s = %s\n' "$table" "$key" "$value"; } >>"$CONF"
    fi
    note "$CONF: [$table] $key = $value"
}
conf_key containers default_ulimits "[\"nofile=$NOFILE:$NOFILE\", \"nproc=$NPROC:$NPROC\"]"
conf_key engine runtime '"runc"'

# ---- 3. base images --------------------------------------------------------------------------
for kind in "$@"; do
    if [ "$kind" = fresh ]; then
        image=localhost/lfhttpd-fresh:bookworm opt=--fresh
    else
        image=localhost/debian:bookworm-slim opt=""
    fi
    podman image exists "$image" && continue
    note "no $image image: making it with tools/mkbase.sh $opt"
    s=$SECONDS
    if ! flock /var/tmp/lfhttpd-mkbase.lock sh -c \
            'podman image exists "$1" || sh tools/mkbase.sh $2' _ "$image" "$opt"; then
        die "base image $image: tools/mkbase.sh $opt failed"
    fi
    note "made $image in $((SECONDS - s)) s"
done
exit 0
