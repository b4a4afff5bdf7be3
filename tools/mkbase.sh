#!/bin/sh
# mkbase.sh — make a local Debian bookworm image for podman from Debian's packages, for
# machines that cannot reach a container registry.
#
#   tools/mkbase.sh              localhost/debian:bookworm-slim, the Dockerfile's base
#                                (tests/container/run.sh): debootstrap's minbase variant, the
#                                dpkg/apt settings and the trimming of the official -slim image;
#                                also tagged docker.io/library/debian:bookworm-slim, so that
#                                `FROM debian:bookworm-slim` resolves to it with --pull=never.
#                                About 1 minute; about 80 MB.
#   tools/mkbase.sh --fresh      localhost/lfhttpd-fresh:bookworm, a fresh bookworm server
#                                (tests/quickstart/run.sh): debootstrap's default variant
#                                (required + important, what the installer puts on a server
#                                before tasks), nothing trimmed, no -slim settings.
#                                About 3.5 minutes (2 cores, other load); about 210 MB.
#   --tag IMAGE                  another name for the image made.
#
# Both: from the host's own apt mirror, with the host's apt sources (main, -updates,
# -security, as on a configured server) and their upgrades, and no package lists left (an
# `apt-get update` comes first, as on any machine whose lists are not current); then
# `podman import`. The mirror is read from the apt sources at run time, never written down
# here. Run as root; needs debootstrap and podman (tools/podman-setup.sh installs them and
# calls this script when an image is missing).
set -eu

KIND=slim
TAG=""
while [ $# -gt 0 ]; do
    case $1 in
    --fresh) KIND=fresh ;;
    --tag) [ $# -ge 2 ] || { echo "mkbase: --tag needs an image name" >&2; exit 2; }
           TAG=$2; shift ;;
    --tag=*) TAG=${1#--tag=} ;;
    *) echo "mkbase: unknown option '$1' (--fresh, --tag IMAGE)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$KIND" = fresh ]; then
    VARIANT=""                              # debootstrap's default: required + important
    : "${TAG:=localhost/lfhttpd-fresh:bookworm}"
else
    VARIANT=--variant=minbase
    : "${TAG:=localhost/debian:bookworm-slim}"
fi

# The URI of the first apt source for the suite "bookworm" (deb822 file, else sources.list).
mirror() {
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        awk 'BEGIN { RS = ""; FS = "\n" }
             {
                 uri = ""; ok = 0
                 for (i = 1; i <= NF; i++) {
                     if ($i ~ /^URIs:/) { split($i, a, /[ \t]+/); uri = a[2] }
                     if ($i ~ /^Suites:/ && $i ~ /[ \t]bookworm([ \t]|$)/) ok = 1
                 }
                 if (ok && uri != "") { print uri; exit }
             }' /etc/apt/sources.list.d/debian.sources
    fi
    if [ -f /etc/apt/sources.list ]; then
        awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++
                           if ($(i + 1) == "bookworm") { print $i; exit } }' /etc/apt/sources.list
    fi
}
MIRROR=$(mirror | head -n 1)
[ -n "$MIRROR" ] || { echo "mkbase: no apt source for bookworm found in /etc/apt" >&2; exit 1; }

R=$(mktemp -d /var/tmp/bookworm-rootfs.XXXXXX)
chmod 755 "$R"       # apt in the chroot downloads as _apt
trap 'rm -rf "$R"' EXIT INT TERM
echo "mkbase: debootstrap ${VARIANT:-(default variant)} bookworm from $MIRROR" >&2
# shellcheck disable=SC2086 # VARIANT is one word or none
nice -n 10 debootstrap $VARIANT bookworm "$R" "$MIRROR" >/dev/null

# apt inside the image uses the host's sources (main, -updates, -security).
rm -f "$R/etc/apt/sources.list"
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$R/etc/apt/sources.list.d/"
else
    cp /etc/apt/sources.list "$R/etc/apt/sources.list"
fi

slim_settings() {
    # The dpkg/apt settings of the official -slim image.
    cat > "$R/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
CFG
    echo force-unsafe-io > "$R/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
    cat > "$R/etc/apt/apt.conf.d/docker-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CFG
    echo 'Acquire::Languages "none";' > "$R/etc/apt/apt.conf.d/docker-no-languages"
    echo 'Acquire::GzipIndexes "true";' > "$R/etc/apt/apt.conf.d/docker-gzip-indexes"
    echo 'Apt::AutoRemove::SuggestsImportant "false";' > "$R/etc/apt/apt.conf.d/docker-autoremove-suggests"
}
[ "$KIND" = fresh ] || slim_settings

# debootstrap fetched the point release only: pull in -updates and -security.
cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
nice -n 10 chroot "$R" sh -c 'apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -y -qq upgrade >/dev/null && apt-get clean'

# No package lists: both images start with `apt-get update`, as any machine whose lists are
# not current must (and the fresh image's users find out if the README forgets it).
rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/var/log/apt/* "$R"/tmp/*
if [ "$KIND" != fresh ]; then
    # Trim as the -slim image does.
    rm -rf "$R"/var/log/*.log
    find "$R/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
    find "$R/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "$R"/usr/share/man/* "$R"/usr/share/locale/* "$R"/usr/share/info/* "$R"/usr/share/groff/* \
           "$R"/usr/share/lintian/overrides/*
fi
: > "$R/etc/resolv.conf"
echo localhost > "$R/etc/hostname"

nice -n 10 tar --numeric-owner --xattrs -C "$R" -c . \
    | podman import --quiet --change 'CMD ["bash"]' - "$TAG" >/dev/null
if [ "$TAG" = localhost/debian:bookworm-slim ]; then
    podman tag "$TAG" docker.io/library/debian:bookworm-slim
fi
echo "mkbase: made $TAG" >&2
