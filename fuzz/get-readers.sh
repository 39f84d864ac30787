#!/bin/bash
# get-readers.sh [DEST]   (default DEST: <repo>/.toolchains/readers)
#
# Fetches the real SFrame readers the oracle harness (fuzz/oracles.py) runs, as Debian binary
# packages into a private apt state (nothing is installed, the system's apt state is untouched):
#   DEST/bin/llvm-readobj-22      llvm-22 1:22.1.8-3 (sid) + libllvm22 and its libraries
#   DEST/bin/llvm-readobj-23      llvm-23 1:23.1.4-2 (sid) + libllvm23 and its libraries
#   DEST/bin/objdump-2.40         binutils 2.40 (bookworm; libsframe 2.40, SFrame v1 only)
#   DEST/bin/objdump-sid          binutils 2.47.50 (sid; libsframe3, v2 and v3)
# sid's binaries need sid's libc: each wrapper runs them through the unpacked sid root's own
# loader (as corpus/get-toolchains.sh does). bookworm's run on the system libc.
# Idempotent: a wrapper that already runs is kept. Exits 1 if any reader is missing.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
D=$(realpath -m "${1:-$REPO/.toolchains/readers}")
BIN=$D/bin
mkdir -p "$BIN"
FAILED=()
say() { echo "get-readers: $*"; }

# shellcheck source=corpus/apt-state.sh
. "$REPO/corpus/apt-state.sh"
apt_ready=0
setup_apt() {
    [ "$apt_ready" = 1 ] && return 0
    private_apt "$D/apt" deb "bookworm sid" readers
    apt-get -q update > "$D/apt/update.log" 2>&1 || { say "apt-get update failed ($D/apt/update.log)"; return 1; }
    apt_ready=1
}

# fetch ROOT SUITE PKG... : download PKG/SUITE each and unpack into ROOT
fetch() {
    local root=$1 suite=$2; shift 2
    local deb=$root.debs p f
    rm -rf "$root" "$deb"; mkdir -p "$root" "$deb"
    for p in "$@"; do
        (cd "$deb" && apt-get -q download "$p/$suite" >> "$deb/download.log" 2>&1) \
            || { say "could not download $p/$suite ($deb/download.log)"; return 1; }
    done
    for f in "$deb"/*.deb; do dpkg-deb -x "$f" "$root" || return 1; done
    rm -rf "$deb"  # the unpacked root is what runs
}

# wrap NAME ROOT EXE LIBDIRS : BIN/NAME runs ROOT/EXE through ROOT's own loader
wrap() {
    printf '#!/bin/sh\nR=%s\nexec "$R/usr/lib64/ld-linux-x86-64.so.2" --argv0 "$0" --library-path "%s" "$R/%s" "$@"\n' \
        "$2" "$4" "$3" > "$BIN/$1"
    chmod +x "$BIN/$1"
}

works() { "$BIN/$1" --version >/dev/null 2>&1; }

# sid's C/C++ runtime and the libraries libLLVM links (libllvmN's Depends, first level)
SID_RUNTIME="libc6 libstdc++6 libgcc-s1 zlib1g libzstd1"
LLVM_LIBS="libedit2 libbsd0 libmd0 libtinfo6 libffi8 libxml2-16 libz3-4"

get_llvm() {
    local v=$1 name=llvm-readobj-$1 root=$D/root-llvm-$1
    if works "$name"; then say "$name: present ($("$BIN/$name" --version | grep -m1 version))"; return 0; fi
    setup_apt || return 1
    # shellcheck disable=SC2086
    fetch "$root" sid "llvm-$v" "libllvm$v" $SID_RUNTIME $LLVM_LIBS || return 1
    wrap "$name" "$root" "usr/lib/llvm-$v/bin/llvm-readobj" \
        "$root/usr/lib/x86_64-linux-gnu:$root/usr/lib/llvm-$v/lib"
    works "$name" || { say "$name: fetched but does not run"; return 1; }
    say "$name: $("$BIN/$name" --version | grep -m1 version)"
}

get_objdump_sid() {
    local root=$D/root-binutils-sid
    if works objdump-sid; then say "objdump-sid: present ($("$BIN/objdump-sid" --version | head -1))"; return 0; fi
    setup_apt || return 1
    local pkgs
    pkgs=$(apt-cache show binutils-x86-64-linux-gnu/sid libbinutils/sid 2>/dev/null \
        | awk -F': ' '/^Depends:/{print $2}' | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/:any//; s/ //g' \
        | grep -v '^$' | sort -u)
    # shellcheck disable=SC2086
    fetch "$root" sid binutils-x86-64-linux-gnu libbinutils $SID_RUNTIME $pkgs || return 1
    wrap objdump-sid "$root" usr/bin/x86_64-linux-gnu-objdump "$root/usr/lib/x86_64-linux-gnu"
    works objdump-sid || { say "objdump-sid: fetched but does not run"; return 1; }
    say "objdump-sid: $("$BIN/objdump-sid" --version | head -1)"
}

get_objdump_bookworm() {
    local root=$D/root-binutils-bookworm
    if works objdump-2.40; then say "objdump-2.40: present ($("$BIN/objdump-2.40" --version | head -1))"; return 0; fi
    setup_apt || return 1
    # bookworm's libc is the system's: only binutils' own libraries are unpacked
    fetch "$root" bookworm binutils-x86-64-linux-gnu libbinutils libctf0 libctf-nobfd0 libgprofng0 \
        libjansson4 || return 1
    printf '#!/bin/sh\nR=%s\nLD_LIBRARY_PATH="$R/usr/lib/x86_64-linux-gnu" exec "$R/usr/bin/x86_64-linux-gnu-objdump" "$@"\n' \
        "$root" > "$BIN/objdump-2.40"
    chmod +x "$BIN/objdump-2.40"
    works objdump-2.40 || { say "objdump-2.40: fetched but does not run"; return 1; }
    say "objdump-2.40: $("$BIN/objdump-2.40" --version | head -1)"
}

get_llvm 22 || FAILED+=(llvm-readobj-22)
get_llvm 23 || FAILED+=(llvm-readobj-23)
get_objdump_bookworm || FAILED+=(objdump-2.40)
get_objdump_sid || FAILED+=(objdump-sid)
if [ ${#FAILED[@]} -gt 0 ]; then
    say "NOT AVAILABLE: ${FAILED[*]} (the oracle tests skip them)"
    exit 1
fi
say "all readers ready in $BIN"
