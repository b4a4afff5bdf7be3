#!/bin/sh
# mkbase.sh — make a local `debian:bookworm-slim` image for podman from Debian's packages,
# for machines that cannot reach a container registry (see tests/container/run.sh).
#
# debootstrap (minbase) from the host's own apt mirror, the -updates/-security upgrades, the
# dpkg/apt settings and the trimming of the official -slim image, then `podman import`.
# Tagged localhost/debian:bookworm-slim and docker.io/library/debian:bookworm-slim, so that
# `FROM debian:bookworm-slim` resolves to it with `podman build --pull=never`.
# The mirror is read from the apt sources at run time, never written down here.
# Run as root; needs debootstrap and podman. About 1 minute; the image is about 80 MB.
set -eu

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
trap 'rm -rf "$R"' EXIT INT TERM
echo "mkbase: debootstrap bookworm from $MIRROR" >&2
nice -n 10 debootstrap --variant=minbase bookworm "$R" "$MIRROR" >/dev/null

# apt inside the image uses the host's sources (main, -updates, -security).
rm -f "$R/etc/apt/sources.list"
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$R/etc/apt/sources.list.d/"
else
    cp /etc/apt/sources.list "$R/etc/apt/sources.list"
fi

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

# debootstrap fetched the point release only: pull in -updates and -security.
cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
nice -n 10 chroot "$R" sh -c 'apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -y -qq upgrade >/dev/null && apt-get clean'

# Trim as the -slim image does.
rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/var/log/*.log "$R"/var/log/apt/* "$R"/tmp/*
find "$R/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
find "$R/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$R"/usr/share/man/* "$R"/usr/share/locale/* "$R"/usr/share/info/* "$R"/usr/share/groff/* \
       "$R"/usr/share/lintian/overrides/*
: > "$R/etc/resolv.conf"
echo localhost > "$R/etc/hostname"

nice -n 10 tar --numeric-owner --xattrs -C "$R" -c . \
    | podman import --quiet --change 'CMD ["bash"]' - localhost/debian:bookworm-slim >/dev/null
podman tag localhost/debian:bookworm-slim docker.io/library/debian:bookworm-slim
echo "mkbase: made localhost/debian:bookworm-slim" >&2
