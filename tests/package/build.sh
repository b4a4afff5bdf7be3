#!/usr/bin/env bash
# tests/package/build.sh OUTDIR — build the Debian package from this tree: `make package`.
#
# dpkg-buildpackage writes next to the source directory and `dh clean` empties build/, so it
# runs on a copy of the tree's files (git's view: tracked and untracked, not ignored) in
# OUTDIR/lfhttpd-VERSION; the .deb, .changes and .buildinfo land in OUTDIR. The build runs
# debian/rules' test subset (DEB_BUILD_OPTIONS=nocheck skips it). The log is OUTDIR/build.log.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."
OUT=${1:?usage: tests/package/build.sh OUTDIR}
VERSION=$(dpkg-parsechangelog -S Version)
rm -rf "$OUT"
SRC=$OUT/lfhttpd-$VERSION
mkdir -p "$SRC"
OUT=$(readlink -f "$OUT")
SRC=$(readlink -f "$SRC")
git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done \
    | xargs -0 cp --parents -p -t "$SRC"
cd "$SRC"
if ! dpkg-buildpackage -b -us -uc >"$OUT/build.log" 2>&1; then
    tail -n 60 "$OUT/build.log" >&2
    echo "package: dpkg-buildpackage failed (log: $OUT/build.log)" >&2
    exit 1
fi
ls "$OUT"/lfhttpd_"$VERSION"_*.deb
