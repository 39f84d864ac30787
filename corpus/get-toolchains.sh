#!/bin/bash
# get-toolchains.sh [DEST]   (default DEST: <repo>/.toolchains)
#
# Fetches the toolchains the SFrame corpus is built with, without touching the
# system's apt state and without installing any system package:
#   DEST/bin-trixie/   binutils 2.44 (trixie, SFrame v2)      -- Debian binary debs + loader wrappers
#   DEST/bin-sid/      binutils 2.47.x (sid, SFrame v3)       -- same ("Recipe A" in toolchains.md)
#   DEST/venv/         python venv with ziglang==0.17.1 (LLVM: SFrame v2 + FUNC_START_PCREL)
#   DEST/zig-cache/    ZIG_GLOBAL_CACHE_DIR / ZIG_LOCAL_CACHE_DIR
# Optional (cross, assembly-only corpus; failures are reported, never fatal):
#   DEST/bin-bookworm-aarch64/  binutils-aarch64-linux-gnu 2.40 (bookworm, v1; runs on the system libc)
#   DEST/bin-trixie-aarch64/    binutils-aarch64-linux-gnu 2.44 (trixie, v2; the unwinder's aarch64 gdb tests)
#   DEST/bin-sid-aarch64/       binutils-aarch64-linux-gnu (sid, v3)
#   DEST/bin-sid-s390x/         binutils-s390x-linux-gnu (sid, v3)
#
# Idempotent: a toolchain whose wrapper dir already works is skipped.
# If a toolchain cannot be fetched, this says so and goes on; build.sh skips it.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
D=$(realpath -m "${1:-$REPO/.toolchains}")
mkdir -p "$D"
FAILED=()

say() { echo "get-toolchains: $*"; }

# shellcheck source=corpus/apt-state.sh
. "$HERE/apt-state.sh"

A=$D/apt
apt_ready=0
setup_apt() {
    [ "$apt_ready" = 1 ] && return 0
    private_apt "$A" deb "bookworm trixie sid" corpus
    if ! apt-get -q update > "$A"/update.log 2>&1; then
        say "apt-get update (private state in $A) FAILED; see $A/update.log"
        return 1
    fi
    apt_ready=1
}

# depends_of PKG SUITE -> first-alternative dependency names (one per line)
depends_of() {
    apt-cache show "$1/$2" 2>/dev/null | awk -F': ' '/^Depends:/{print $2; exit}' \
        | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/:any//; s/ //g' | grep -v '^$'
}

# write_wrappers TRIPLET ROOT BINDIR NEEDS_LOADER
# NEEDS_LOADER=1: run the tool through the suite's own ld.so (its libc is newer
# than bookworm's); --argv0 keeps messages saying "<bindir>/ld: ...".
write_wrappers() {
    local triplet=$1 root=$2 bin=$3 loader=$4 t
    mkdir -p "$bin"
    for t in as ld ld.bfd readelf objdump objcopy nm strip ar; do
        [ -e "$root/usr/bin/$triplet-$t" ] || continue
        if [ "$loader" = 1 ]; then
            printf '#!/bin/sh\nR=%s\nexec "$R/usr/lib64/ld-linux-x86-64.so.2" --argv0 "$0" --library-path "$R/usr/lib/x86_64-linux-gnu" "$R/usr/bin/%s-%s" "$@"\n' \
                "$root" "$triplet" "$t" > "$bin/$t"
        else
            printf '#!/bin/sh\nR=%s\nLD_LIBRARY_PATH="$R/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$R/usr/bin/%s-%s" "$@"\n' \
                "$root" "$triplet" "$t" > "$bin/$t"
        fi
        chmod +x "$bin/$t"
    done
}

# get_binutils SUITE TRIPLET BINDIR NEEDS_LOADER
get_binutils() {
    local suite=$1 triplet=$2 bin=$3 loader=$4
    local tag; tag=$(basename "$bin")
    local deb=$D/debs-$tag root=$D/root-$tag
    if [ -x "$root/usr/bin/$triplet-as" ] && [ -x "$bin/as" ] && "$bin/as" --version >/dev/null 2>&1; then
        say "$tag: present ($("$bin/as" --version | head -1)), not fetched again"
        write_wrappers "$triplet" "$root" "$bin" "$loader"
        return 0
    fi
    setup_apt || return 1
    rm -rf "$deb" "$root"; mkdir -p "$deb" "$root" "$bin"
    local main=binutils-${triplet//_/-}
    local pkgs
    if [ "$loader" = 1 ]; then
        pkgs=$( { echo "$main"; echo libbinutils; echo libc6;
                  for p in "$main" libbinutils; do depends_of "$p" "$suite"; done; } | sort -u)
    else
        # runs on the system libc: only binutils' own libraries are needed
        pkgs=$( { echo "$main"; depends_of "$main" "$suite" | grep -v -e '^libc6$' -e '^libzstd1$' -e '^zlib1g$' -e '^libjansson4$'; } | sort -u)
    fi
    local p
    for p in $pkgs; do
        if ! (cd "$deb" && apt-get -q download "$p/$suite" >> "$deb/download.log" 2>&1); then
            say "$tag: could not download $p/$suite (see $deb/download.log)"
            return 1
        fi
    done
    local f
    for f in "$deb"/*.deb; do dpkg-deb -x "$f" "$root" || return 1; done
    write_wrappers "$triplet" "$root" "$bin" "$loader"
    if "$bin/as" --version >/dev/null 2>&1; then
        say "$tag: $("$bin/as" --version | head -1)"
        return 0
    fi
    say "$tag: fetched but '$bin/as --version' does not run"
    rm -rf "$bin"
    return 1
}

get_zig() {
    local venv=$D/venv
    mkdir -p "$D/zig-cache/global" "$D/zig-cache/local"
    export ZIG_GLOBAL_CACHE_DIR=$D/zig-cache/global ZIG_LOCAL_CACHE_DIR=$D/zig-cache/local
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -m ziglang version >/dev/null 2>&1; then
        say "zig: present (zig $("$venv/bin/python" -m ziglang version)), skipping"
        return 0
    fi
    python3 -m venv "$venv" || return 1
    "$venv/bin/pip" -q install ziglang==0.17.1 || return 1
    say "zig: $("$venv/bin/python" -m ziglang version) ($("$venv/bin/python" -m ziglang cc --version | head -1))"
}

get_binutils trixie x86_64-linux-gnu "$D/bin-trixie" 1 || FAILED+=("bin-trixie (SFrame v2)")
get_binutils sid    x86_64-linux-gnu "$D/bin-sid"    1 || FAILED+=("bin-sid (SFrame v3)")
get_zig || FAILED+=("zig (ziglang==0.17.1, LLVM)")
if [ "${SKIP_CROSS:-0}" != 1 ]; then
    get_binutils bookworm aarch64-linux-gnu "$D/bin-bookworm-aarch64" 0 || FAILED+=("bin-bookworm-aarch64 (optional)")
    get_binutils trixie   aarch64-linux-gnu "$D/bin-trixie-aarch64"   1 || FAILED+=("bin-trixie-aarch64 (optional)")
    get_binutils sid      aarch64-linux-gnu "$D/bin-sid-aarch64"      1 || FAILED+=("bin-sid-aarch64 (optional)")
    get_binutils sid      s390x-linux-gnu   "$D/bin-sid-s390x"        1 || FAILED+=("bin-sid-s390x (optional)")
fi

if [ ${#FAILED[@]} -gt 0 ]; then
    for f in "${FAILED[@]}"; do say "NOT AVAILABLE: $f -- build.sh will skip it"; done
    exit 1
fi
say "all toolchains ready in $D"
