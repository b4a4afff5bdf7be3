#!/bin/sh
# image-rootfs.sh BINARY DIR — the root filesystem of the container image's runtime stage
# (Dockerfile): BINARY as DIR/usr/local/bin/lfhttpd and the shared objects it loads, nothing
# else of the build machine: no shell, no package manager, no other program.
#
# The libraries are found from the binary, never listed by hand: `objdump -p` gives what it
# asks for (its NEEDED entries), `ldd` where the dynamic loader finds those and what they need
# in turn (and the loader itself); each is copied, symlinks resolved, to the path the loader
# found it at, which is one of the loader's default directories. A library added to the build
# (LDLIBS) therefore lands in the image by itself. The result is checked by running the binary
# chrooted into DIR: a missing library fails the build here, not the container later.
#
# A binary of another architecture (the arm64 image, cross-built on amd64) cannot be asked of
# ldd: its libraries are found the loader's way without running it — NEEDED entries, searched
# in that architecture's multiarch directories (/lib/TRIPLET, /usr/lib/TRIPLET), recursively,
# plus the loader its PT_INTERP names — and the chrooted check runs it through qemu-user when
# the kernel has a binfmt handler for it, and is said to be skipped otherwise.
#
# Also writes DIR/etc/passwd and DIR/etc/group naming the unprivileged user the image runs as
# (uid/gid 10001, `lfhttpd`), for tools that show user names (podman top, ps).
set -eu
[ $# -eq 2 ] || { echo "usage: image-rootfs.sh BINARY DIR" >&2; exit 2; }
bin=$1
dir=$2

mkdir -p "$dir/usr/local/bin" "$dir/etc"
cp "$bin" "$dir/usr/local/bin/lfhttpd"

needed=$(objdump -p "$bin" | awk '$1 == "NEEDED" { print $2 }')
[ -n "$needed" ] || { echo "image-rootfs: $bin has no NEEDED entries (static?)" >&2; exit 1; }
machine=$(readelf -h "$bin" | sed -n 's/^ *Machine: *//p')
case $machine in
    *X86-64*) triplet=x86_64-linux-gnu ;;
    *AArch64*) triplet=aarch64-linux-gnu ;;
    *) echo "image-rootfs: $bin: unknown machine '$machine'" >&2; exit 1 ;;
esac
host=$(readelf -h /bin/sh | sed -n 's/^ *Machine: *//p')

# The libraries of a foreign binary, without running it: each NEEDED name found in the
# multiarch directories, then theirs, until nothing new; and the loader (PT_INTERP).
foreign_libs() {
    todo=$needed seen=""
    while [ -n "$todo" ]; do
        next=""
        for n in $todo; do
            case " $seen " in *" $n "*) continue ;; esac
            seen="$seen $n"
            found=""
            for d in /lib/$triplet /usr/lib/$triplet; do
                [ -e "$d/$n" ] && { found=$d/$n; break; }
            done
            [ -n "$found" ] || { echo "image-rootfs: $n (NEEDED) not found in /lib/$triplet" >&2; return 1; }
            echo "$found"
            next="$next $(objdump -p "$found" | awk '$1 == "NEEDED" { print $2 }')"
        done
        todo=$next
    done
    readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p'
}

if [ "$machine" = "$host" ]; then
    ldd_out=$(ldd "$bin")
    if echo "$ldd_out" | grep -q 'not found'; then
        echo "image-rootfs: the loader cannot resolve every library of $bin:" >&2
        echo "$ldd_out" >&2
        exit 1
    fi
    # "libssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x...)" and
    # "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
    libs=$(echo "$ldd_out" | awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }')
else
    libs=$(foreign_libs) || exit 1
fi
for n in $needed; do
    echo "$libs" | grep -q "/$n\$" || { echo "image-rootfs: $n (NEEDED) not found by ldd" >&2; exit 1; }
done
for lib in $libs; do
    mkdir -p "$dir$(dirname "$lib")"
    cp -L "$lib" "$dir$lib"
    echo "image-rootfs: $lib" >&2
done

printf 'root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nlfhttpd:x:10001:10001:lfhttpd:/nonexistent:/usr/sbin/nologin\n' \
    >"$dir/etc/passwd"
printf 'root:x:0:\nlfhttpd:x:10001:\n' >"$dir/etc/group"

# The binary runs with only what is in DIR (a foreign one through the kernel's binfmt handler).
if [ "$machine" = "$host" ] || grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-${triplet%%-*}; then
    chroot "$dir" /usr/local/bin/lfhttpd --version
else
    echo "image-rootfs: no binfmt handler for $machine here: the chrooted run is skipped" >&2
fi
