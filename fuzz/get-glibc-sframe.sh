#!/bin/sh
# Build glibc's SFrame reader (sysdeps/generic/sframe-read.c: __sframe_decode, __sframe_find_fre
# and the offset getters; LGPL-2.1+) as a shared library for the `glibc` fuzz target.
# The source comes from Debian's glibc-source package (the release tarball), fetched with a
# private apt state the way corpus/get-toolchains.sh fetches binutils; nothing is vendored and
# no system package is installed.
#
#   sh fuzz/get-glibc-sframe.sh [DEST]      (default DEST: .toolchains/glibc-sframe)
#   GLIBC_SOURCE_DEB=/path/glibc-source_*.deb sh fuzz/get-glibc-sframe.sh   (no download)
#   SUITE=experimental sh fuzz/get-glibc-sframe.sh                          (default sid)
#
# Prints the path of the library built: DEST/libglibc-sframe-<version>.so
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$ROOT/.toolchains/glibc-sframe}
SUITE=${SUITE:-sid}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
deb=${GLIBC_SOURCE_DEB:-}
if [ -z "$deb" ]; then
    A=$DEST/apt
    # shellcheck source=corpus/apt-state.sh
    . "$ROOT/corpus/apt-state.sh"
    private_apt "$A" "deb-src deb" "$SUITE" debian
    apt-get -q update > "$A/update.log" 2>&1
    (cd "$DEST" && apt-get -q download "glibc-source/$SUITE" > "$A/download.log" 2>&1)
    deb=$(ls -t "$DEST"/glibc-source_*_all.deb | head -1)
fi
work=$DEST/src
rm -rf "$work" && mkdir -p "$work/shim"
dpkg-deb -x "$deb" "$work/deb"
tarball=$(ls "$work"/deb/usr/src/glibc/glibc-*.tar.xz | head -1)
ver=$(basename "$tarball" .tar.xz)
tar -C "$work" -xJf "$tarball" --wildcards "$ver/sysdeps/generic/sframe*"
# The shim: what glibc's build would provide to these files.
printf '#include <stddef.h>\n#define libc_hidden_proto(x)\n#define libc_hidden_def(x)\n' \
    > "$work/shim/shim.h"
out=$DEST/lib$ver-sframe.so
gcc -O1 -g -shared -fPIC -include "$work/shim/shim.h" -I"$work/$ver/sysdeps/generic" \
    -o "$out" "$work/$ver/sysdeps/generic/sframe-read.c"
rm -rf "$work/deb"
echo "$out"
