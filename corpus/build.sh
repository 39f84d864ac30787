#!/bin/bash
# build.sh [TOOLCHAINS_DIR]      (default: $TOOLCHAINS or <repo>/.toolchains)
#
# Builds the SFrame corpus from corpus/src/ with every available toolchain:
#   v1/    system gcc + bookworm binutils 2.40            (SFrame v1)
#   v2/    gcc -B$TC/bin-trixie/   binutils 2.44          (SFrame v2)
#   v3/    gcc -B$TC/bin-sid/      binutils 2.47.x        (SFrame v3)
#   llvm/  python -m ziglang cc (clang + lld 22.1.8)      (SFrame v2 + FUNC_START_PCREL)
#   bad/   deliberately mismatched links (see bad/README.md)
#   aarch64/{v1,v3}/, s390x/v3/   cross, assembly only (optional)
#   defects/  small inputs showing known producer defects (ONLY=defects builds just these)
# Next to each ELF X with a .sframe section it records:
#   X.readelf        readelf --sframe X   (the readelf that decodes that version)
#   X.readelf-2.47   (v2 and bad/ files) the same with sid's readelf 2.47.x
#   X.readelf*.stderr  readelf's stderr, when not empty
#   X.readelf-S      readelf -S -W X;  X.readelf-l  readelf -l -W X (linked files)
#   X.eh_frame       readelf --debug-dump=frames-interp X
# plus <dir>/BUILD.log (commands and every compiler/assembler/linker message),
# VERSIONS (tool versions per directory) and MANIFEST.tsv (sfinfo.py summary).
# A toolchain that is not in TOOLCHAINS_DIR is skipped with a message; its
# committed outputs are left as they are.
set -uo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
TC=$(realpath -m "${1:-${TOOLCHAINS:-$REPO/.toolchains}}")
SRC=$HERE/src
SFINFO=$HERE/sfinfo.py
export ZIG_GLOBAL_CACHE_DIR=$TC/zig-cache/global ZIG_LOCAL_CACHE_DIR=$TC/zig-cache/local
ZIGPY=$TC/venv/bin/python

RE_V1=/usr/bin/readelf
RE_V2=$TC/bin-trixie/readelf
RE_SID=$TC/bin-sid/readelf

note() { echo "build.sh: $*"; }
die() {
    echo "build.sh: ********************************************************" >&2
    echo "build.sh: FATAL: $*" >&2
    echo "build.sh: ********************************************************" >&2
    exit 1
}

have_bin() { [ -x "$1/as" ] && "$1/as" --version > /dev/null 2>&1; }
have_zig() { [ -x "$ZIGPY" ] && "$ZIGPY" -m ziglang version > /dev/null 2>&1; }

sanitize() {
    sed -e "s#$TC#\$TC#g" -e "s#$HERE#<corpus>#g" \
        -e 's#/tmp/cc[A-Za-z0-9_]*\.s#<tmp>.s#g' -e 's#/tmp/[A-Za-z0-9_.]*-[0-9a-f]*\.s#<tmp>.s#g'
}

# run CMD...: log the command and its stderr (sanitized) to $LOG, return its status
run() {
    local err rc
    err=$(mktemp)
    printf '$ %s\n' "$*" | sanitize >> "$LOG"
    "$@" 2> "$err"
    rc=$?
    sanitize < "$err" >> "$LOG"
    [ $rc -ne 0 ] && echo "(exit status $rc)" >> "$LOG"
    rm -f "$err"
    return $rc
}
must() { run "$@" || die "command failed (see $LOG): $*"; }

# runexe EXE: run a built executable, it must exit 0
runexe() {
    local out rc
    out=$(cd "$(dirname "$1")" && "./$(basename "$1")" 2>&1)
    rc=$?
    printf '$ ./%s\n%s\n(exit status %s)\n' "$(basename "$1")" "$out" "$rc" >> "$LOG"
    [ $rc -eq 0 ] || die "$1 exited with status $rc: $out"
}

sf_field() { python3 "$SFINFO" "$1" | cut -f"$2"; }

# record FILE READELF [SUFFIX]
record() {
    local f=$1 re=$2 sfx=${3:-} rc
    if [ "$(sf_field "$f" 4)" = none ]; then
        note "$f: no .sframe section, nothing recorded"
        echo "# $(basename "$f"): no .sframe section" >> "$LOG"
        return 0
    fi
    (cd "$(dirname "$f")" && "$re" --sframe "$(basename "$f")") > "$f.readelf$sfx" 2> "$f.readelf$sfx.stderr"
    rc=$?
    [ $rc -ne 0 ] && echo "(readelf exit status $rc)" >> "$f.readelf$sfx.stderr"
    [ -s "$f.readelf$sfx.stderr" ] || rm -f "$f.readelf$sfx.stderr"
    [ -n "$sfx" ] && return 0
    (cd "$(dirname "$f")" && "$re" -S -W "$(basename "$f")") > "$f.readelf-S" 2> /dev/null
    if [ "$(sf_field "$f" 2)" != REL ]; then
        (cd "$(dirname "$f")" && "$re" -l -W "$(basename "$f")") > "$f.readelf-l" 2> /dev/null
    fi
    (cd "$(dirname "$f")" && "$re" --debug-dump=frames-interp "$(basename "$f")") > "$f.eh_frame" 2> /dev/null
    return 0
}

# check FILE VERSION [FLAGBIT]: the SFrame version byte (byte 2 of .sframe) must be VERSION
check() {
    local f=$1 want=$2 bit=${3:-} row ver flags
    row=$(python3 "$SFINFO" "$f")
    ver=$(echo "$row" | cut -f6)
    flags=$(echo "$row" | cut -f7)
    [ "$(echo "$row" | cut -f4)" = none ] && die "$f has no .sframe section (expected SFrame v$want)"
    [ "$ver" = "$want" ] || die "$f: SFrame version byte is '$ver', expected $want -- wrong toolchain?"
    if [ -n "$bit" ] && [ $((flags & bit)) -eq 0 ]; then
        die "$f: SFrame flags $flags lack bit $bit"
    fi
    return 0
}

set_version_line() {   # TAG TEXT
    local v=$HERE/VERSIONS
    touch "$v"
    { grep -v "^$1: " "$v"; echo "$1: $2"; } | sort > "$v.tmp" && mv "$v.tmp" "$v"
}

newdir() {  # DIR -> fresh output dir, sets OUT LOG S (relative path to src)
    OUT=$1
    rm -rf "$OUT"
    mkdir -p "$OUT"
    LOG=$OUT/BUILD.log
    : > "$LOG"
    S=$(realpath --relative-to="$OUT" "$SRC")
    cd "$OUT" || die "cd $OUT"
}

# ---------------------------------------------------------------- GNU x86-64
build_gnu() {   # TAG BINDIR(or '') VERSION READELF [SECOND_READELF]
    local tag=$1 bindir=$2 ver=$3 re=$4 re2=${5:-}
    local CC=(gcc)
    [ -n "$bindir" ] && CC+=("-B$bindir/")
    CC+=(-Wa,--gsframe)
    newdir "$HERE/$tag"
    note "building $tag with $("${CC[@]}" -print-prog-name=as | sanitize) ($("$("${CC[@]}" -print-prog-name=as)" --version | head -1))"
    # objects
    must "${CC[@]}" -O2 -fPIC -c -o lib.o "$S/lib.c"
    must "${CC[@]}" -O0 -fPIC -c -o lib_O0.o "$S/lib.c"
    must "${CC[@]}" -O2 -fPIC -c -o drap.o "$S/drap.c"
    must "${CC[@]}" -fPIC -c -o asm_cases.o "$S/asm_cases.S"
    must "${CC[@]}" -c -o pad4.o "$S/pad4.S"
    must "${CC[@]}" -O2 -fno-stack-protector -c -o nolibc.o "$S/nolibc.c"
    # Linked outputs: compile each source to a fixed-name object first. When the gcc
    # driver assembles a .S itself, a random temp name (ccXXXXXX.o) lands in .strtab
    # and the output is no longer reproducible.
    local OBJ=.obj
    mkdir -p "$OBJ"
    cclink() {   # OUT "CFLAGS" "LDFLAGS" SOURCES...
        local out=$1 cf=$2 lf=$3 src o objs=()
        shift 3
        for src in "$@"; do
            o=$OBJ/$out.$(basename "$src").o
            must "${CC[@]}" $cf -c -o "$o" "$src"
            objs+=("$o")
        done
        must "${CC[@]}" $cf -o "$out" "${objs[@]}" $lf
    }
    # shared objects
    cclink libcorpus.so "-O2 -fPIC" "-shared -Wl,-soname,libcorpus.so" "$S/lib.c" "$S/drap.c" "$S/asm_cases.S"
    cclink libcorpus_O0.so "-O0 -fPIC" "-shared -Wl,-soname,libcorpus_O0.so" "$S/lib.c" "$S/drap.c" "$S/asm_cases.S"
    cclink libcorpus_fp.so "-O2 -fno-omit-frame-pointer -fPIC" "-shared -Wl,-soname,libcorpus_fp.so" "$S/lib.c" "$S/drap.c" "$S/asm_cases.S"
    # PIE executables
    cclink exe_pie "-O2 -fPIE" "-pie -L. -lcorpus -Wl,-rpath,\$ORIGIN" "$S/main.c" "$S/sig.c"
    cclink exe_pie_O0 "-O0 -fPIE" "-pie" "$S/main.c" "$S/sig.c" "$S/lib.c" "$S/drap.c" "$S/asm_cases.S"
    cclink exe_pie_fp "-O2 -fno-omit-frame-pointer -fPIE" "-pie" "$S/main.c" "$S/sig.c" "$S/lib.c" "$S/drap.c" "$S/asm_cases.S"
    # tiny static executables without libc
    cclink exe_static "-O2 -fno-stack-protector" "-static -nostdlib" "$S/nolibc.c" "$S/asm_cases.S" "$S/drap.c"
    cclink exe_static_O0 "-O0 -fno-stack-protector" "-static -nostdlib" "$S/nolibc.c" "$S/asm_cases.S" "$S/drap.c"
    rm -rf "$OBJ"
    local x
    for x in exe_pie exe_pie_O0 exe_pie_fp exe_static exe_static_O0; do runexe "$OUT/$x"; done
    for x in lib.o lib_O0.o drap.o asm_cases.o pad4.o nolibc.o libcorpus.so libcorpus_O0.so libcorpus_fp.so \
             exe_pie exe_pie_O0 exe_pie_fp exe_static exe_static_O0; do
        check "$OUT/$x" "$ver"
        record "$OUT/$x" "$re"
        [ -n "$re2" ] && record "$OUT/$x" "$re2" -2.47
    done
    set_version_line "$tag" "$(gcc --version | head -1) | as: $("$("${CC[@]}" -print-prog-name=as)" --version | head -1) | ld: $("$("${CC[@]}" -print-prog-name=ld)" --version | head -1) | readelf: $("$re" --version | head -1)${re2:+ + $("$re2" --version | head -1)}"
    note "$tag done"
}

# ---------------------------------------------------------------- LLVM (zig cc)
build_llvm() {
    local ZCC=("$ZIGPY" -m ziglang cc -g0 -fno-sanitize=all -Wa,--gsframe -Wa,--allow-experimental-sframe)
    # lld's default --gc-sections (as zig invokes it) discards .sframe entirely;
    # --no-gc-sections keeps it.
    local KEEP=-Wl,--no-gc-sections
    newdir "$HERE/llvm"
    note "building llvm with $("$ZIGPY" -m ziglang cc --version | head -1)"
    must "${ZCC[@]}" -O2 -fPIC -c -o lib.o "$S/lib.c"
    must "${ZCC[@]}" -O0 -fPIC -c -o lib_O0.o "$S/lib.c"
    must "${ZCC[@]}" -O2 -fPIC -c -o drap.o "$S/drap.c"
    must "${ZCC[@]}" -fPIC -c -o asm_cases.o "$S/asm_cases.S"
    must "${ZCC[@]}" -c -o pad4.o "$S/pad4.S"
    must "${ZCC[@]}" -O2 -fno-stack-protector -c -o nolibc.o "$S/nolibc.c"
    must "${ZCC[@]}" -O2 -fPIE -c -o main.o "$S/main.c"
    must "${ZCC[@]}" -O2 -fPIE -c -o sig.o "$S/sig.c"
    # linked outputs from exactly one SFrame-bearing object (lld does not merge .sframe)
    must "${ZCC[@]}" -O2 -fPIC -shared $KEEP -Wl,-soname,liblib.so -o liblib.so "$S/lib.c"
    must "${ZCC[@]}" -O2 $KEEP -o exe_pie "$S/unity.c"
    must "${ZCC[@]}" -O0 $KEEP -o exe_pie_O0 "$S/unity.c"
    must "${ZCC[@]}" -O2 -static -nostdlib -fno-stack-protector -DCORPUS_SINGLE $KEEP -o exe_static "$S/nolibc.c"
    local x
    for x in exe_pie exe_pie_O0 exe_static; do runexe "$OUT/$x"; done
    for x in lib.o lib_O0.o drap.o asm_cases.o pad4.o nolibc.o main.o sig.o liblib.so exe_pie exe_pie_O0 exe_static; do
        check "$OUT/$x" 2 4
        if [ -x "$RE_SID" ]; then record "$OUT/$x" "$RE_SID"; else note "no sid readelf: $x not recorded"; fi
    done
    set_version_line llvm "zig $("$ZIGPY" -m ziglang version) | $("$ZIGPY" -m ziglang cc --version | head -1) | $("$ZIGPY" -m ziglang ld.lld --version 2>/dev/null | head -1) | readelf: $("$RE_SID" --version 2>/dev/null | head -1)"
    note "llvm done"
}

# ---------------------------------------------------------------- negative corpus
# record_auto FILE: record with the readelf that decodes the version actually found
record_auto() {
    local f=$1 v
    [ -e "$f" ] || return 0
    v=$(sf_field "$f" 6)
    case "$v" in
        1) record "$f" "$RE_V1" ;;
        2) if [ "$(( $(sf_field "$f" 7) & 4 ))" -eq 0 ] && [ -x "$RE_V2" ]; then
               record "$f" "$RE_V2"; [ -x "$RE_SID" ] && record "$f" "$RE_SID" -2.47
           else
               [ -x "$RE_SID" ] && record "$f" "$RE_SID"
           fi ;;
        *) [ -x "$RE_SID" ] && record "$f" "$RE_SID" ;;
    esac
    return 0
}

# badlink NAME GCC_B_DIR(or '') OBJECTS...: link a mismatched object twice:
#   NAME_raw.so  -nostdlib -shared: no PLT, so ld has only the foreign input section
#   NAME_plt.so  ordinary -shared (crt files, PLT): ld generates its own PLT SFrame
badlink() {
    local name=$1 bdir=$2; shift 2
    local CC=(gcc)
    [ -n "$bdir" ] && CC+=("-B$bdir/")
    run "${CC[@]}" -nostdlib -shared -Wl,-soname,${name}_raw.so -o ${name}_raw.so "$1"
    run "${CC[@]}" -O2 -shared -Wl,-soname,${name}_plt.so -o ${name}_plt.so "$@"
    record_auto "$OUT/${name}_raw.so"
    record_auto "$OUT/${name}_plt.so"
}

build_bad() {
    newdir "$HERE/bad"
    local V2=../v2 V3=../v3 LL=../llvm
    note "building bad/"
    # (a) ld 2.40 + v2 objects
    if [ -e $V2/asm_cases.o ]; then
        badlink ld240_v2obj "" $V2/asm_cases.o $V2/lib.o
        run gcc -Wa,--gsframe -O2 -pie -o ld240_v2obj_exe $V2/lib.o $V2/drap.o $V2/asm_cases.o "$S/main.c" "$S/sig.c"
        [ -e ld240_v2obj_exe ] && { record_auto "$OUT/ld240_v2obj_exe"; runexe "$OUT/ld240_v2obj_exe"; }
    else
        note "bad (a) skipped: needs v2/*.o"
    fi
    # (b) ld 2.44 + v3 objects
    if have_bin "$TC/bin-trixie" && [ -e $V3/asm_cases.o ]; then
        badlink ld244_v3obj "$TC/bin-trixie" $V3/asm_cases.o $V3/lib.o
    else
        note "bad (b) skipped: needs bin-trixie and v3/*.o"
    fi
    # (c) lld (zig) + several SFrame objects: sections concatenated, no PT_GNU_SFRAME
    if have_zig && [ -e $LL/lib.o ]; then
        local ZCC=("$ZIGPY" -m ziglang cc -g0 -fno-sanitize=all)
        run "${ZCC[@]}" -shared -Wl,--no-gc-sections -Wl,-soname,lld_2obj.so -o lld_2obj.so $LL/lib.o $LL/drap.o
        run "${ZCC[@]}" -Wl,--no-gc-sections -o lld_5obj_exe $LL/main.o $LL/sig.o $LL/lib.o $LL/drap.o $LL/asm_cases.o
        record_auto "$OUT/lld_2obj.so"
        record_auto "$OUT/lld_5obj_exe"
        [ -e lld_5obj_exe ] && runexe "$OUT/lld_5obj_exe"
    else
        note "bad (c) skipped: needs zig and llvm/*.o"
    fi
    # (d) ld 2.47 + v2 objects from gas; (e) ld 2.47 + LLVM (v2+PCREL) objects
    if have_bin "$TC/bin-sid"; then
        [ -e $V2/asm_cases.o ] && badlink ld247_v2obj "$TC/bin-sid" $V2/asm_cases.o $V2/lib.o
        [ -e $LL/asm_cases.o ] && badlink ld247_llvmobj "$TC/bin-sid" $LL/asm_cases.o $LL/lib.o
    else
        note "bad (d),(e) skipped: needs bin-sid"
    fi
    note "bad/ done"
}

# ---------------------------------------------------------------- cross (asm only)
build_cross() {   # ARCH TAG BINDIR VERSION READELF
    local arch=$1 tag=$2 bindir=$3 ver=$4 re=$5
    newdir "$HERE/$arch/$tag"
    note "building $arch/$tag with $("$bindir/as" --version | head -1)"
    must "$bindir/as" --gsframe -o asm.o "$S/asm_$arch.s"
    must "$bindir/ld" -z max-page-size=4096 -shared -soname libasm.so -o libasm.so asm.o
    must "$bindir/ld" -z max-page-size=4096 -static -e _start -o exe_static asm.o
    local x
    for x in asm.o libasm.so exe_static; do
        check "$OUT/$x" "$ver"
        record "$OUT/$x" "$re"
    done
    set_version_line "$arch/$tag" "as: $("$bindir/as" --version | head -1) | ld: $("$bindir/ld" --version | head -1) | readelf: $("$re" --version | head -1)"
}

# ---------------------------------------------------------------- known defects
# defects/: one small input per toolchain showing a known producer defect that the
# main sources do not (each checked by tests/test_semantic.py).
build_defects() {
    newdir "$HERE/defects"
    local tag bindir re ver
    for tag in v1 v2 v3; do
        case $tag in
            v1) bindir=/usr/bin; re=$RE_V1; ver=1 ;;
            v2) bindir=$TC/bin-trixie; re=$RE_V2; ver=2 ;;
            v3) bindir=$TC/bin-sid; re=$RE_SID; ver=3 ;;
        esac
        have_bin "$bindir" || { SKIPPED+=("defects/$tag: $bindir missing"); continue; }
        must "$bindir/as" --gsframe -o "cfi_at_end-$tag.o" "$S/cfi_at_end.s"
        check "$OUT/cfi_at_end-$tag.o" "$ver"
        record "$OUT/cfi_at_end-$tag.o" "$re"
        # ld 2.40's libsframe asserts fre_start < func_size on this input and aborts:
        # the defect itself. Later ld links it.
        if run "$bindir/ld" -z max-page-size=4096 -shared -o "cfi_at_end-$tag.so" "cfi_at_end-$tag.o"; then
            check "$OUT/cfi_at_end-$tag.so" "$ver"
            record "$OUT/cfi_at_end-$tag.so" "$re"
        else
            rm -f "cfi_at_end-$tag.so"
            note "defects/$tag: ld aborted linking cfi_at_end-$tag.o (PR libsframe/33131; see BUILD.log)"
        fi
    done
    note "defects/ done"
}

# ---------------------------------------------------------------- main
SKIPPED=()
if [ "${ONLY:-}" = defects ]; then  # ONLY=defects corpus/build.sh: just that directory
    build_defects
    for s in "${SKIPPED[@]}"; do note "SKIPPED $s"; done
    exit 0
fi
build_gnu v1 "" 1 "$RE_V1"
if have_bin "$TC/bin-trixie"; then
    if [ -x "$RE_SID" ]; then build_gnu v2 "$TC/bin-trixie" 2 "$RE_V2" "$RE_SID"; else build_gnu v2 "$TC/bin-trixie" 2 "$RE_V2"; fi
else
    SKIPPED+=("v2: $TC/bin-trixie missing (run corpus/get-toolchains.sh)")
fi
if have_bin "$TC/bin-sid"; then build_gnu v3 "$TC/bin-sid" 3 "$RE_SID"; else SKIPPED+=("v3: $TC/bin-sid missing"); fi
if have_zig; then build_llvm; else SKIPPED+=("llvm: $TC/venv with ziglang==0.17.1 missing"); fi
build_bad
if have_bin "$TC/bin-bookworm-aarch64"; then build_cross aarch64 v1 "$TC/bin-bookworm-aarch64" 1 "$RE_V1"; else SKIPPED+=("aarch64/v1: bin-bookworm-aarch64 missing"); fi
if have_bin "$TC/bin-sid-aarch64" && [ -x "$RE_SID" ]; then build_cross aarch64 v3 "$TC/bin-sid-aarch64" 3 "$RE_SID"; else SKIPPED+=("aarch64/v3: bin-sid-aarch64 missing"); fi
if have_bin "$TC/bin-sid-s390x" && [ -x "$RE_SID" ]; then build_cross s390x v3 "$TC/bin-sid-s390x" 3 "$RE_SID"; else SKIPPED+=("s390x/v3: bin-sid-s390x missing"); fi
build_defects

cd "$HERE" || exit 1
# MANIFEST.tsv: one line per ELF file in the corpus
{
    printf 'file\telf_type\tmachine\tsframe_sh_type\tsh_size\tversion\tflags\tabi\tnum_fdes\tpt_gnu_sframe_filesz\n'
    find v1 v2 v3 llvm bad aarch64 s390x defects -type f 2> /dev/null | sort | while read -r f; do
        [ "$(head -c4 "$f" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] && python3 "$SFINFO" "$f"
    done
} > MANIFEST.tsv

for s in "${SKIPPED[@]}"; do note "SKIPPED $s"; done
note "corpus size: $(du -sh --exclude=src "$HERE" | cut -f1) ($(find "$HERE" -type f | wc -l) files)"
