#!/usr/bin/env bash
# Build one of sfcheck's C accelerators with ASan+UBSan into build-asan/ (not the installed
# module) and run its harness on it: `fuzz/build-asan.sh NAME [libFuzzer flags] [corpus dirs]`,
# NAME frewalk (sfcheck/walk/_frewalk.c, fuzz/frewalk.py) or cfirun (sfcheck/dwarf/_cfirun.c,
# fuzz/cfirun.py); e.g. -max_total_time=30; `--build-only` after NAME: build, do not run (exits
# non-zero when ASan builds are impossible here). Python itself is not instrumented, so the
# ASan runtime is preloaded (gcc's libasan; atheris's docs on native extensions do the same).
# fuzz/build-frewalk-asan.sh and fuzz/build-cfirun-asan.sh call it with their NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: fuzz/build-asan.sh frewalk|cfirun [--build-only | libFuzzer flags...]}
shift
case $name in
  frewalk) src=sfcheck/walk/_frewalk.c ;;
  cfirun) src=sfcheck/dwarf/_cfirun.c ;;
  *) echo "fuzz/build-asan.sh: no C module named $name (frewalk, cfirun)" >&2; exit 2 ;;
esac
PY=${PYTHON:-.venv/bin/python}
CC=${CC:-gcc}
out=build-asan
mkdir -p "$out"
inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
so="$out/_$name$suffix"
"$CC" -shared -fPIC -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror \
  -fsanitize=address,undefined -fno-sanitize-recover=all \
  -I"$inc" "$src" -o "$so"
[ "${1:-}" = --build-only ] && exit 0
asan=$("$CC" -print-file-name=libasan.so)
ubsan=$("$CC" -print-file-name=libubsan.so)
# Python's allocator frees in ways LeakSanitizer reports as leaks: leaks are not findings.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# PYTHONMALLOC=malloc: bytes objects get their own malloc blocks, with ASan redzones.
# (The preloaded runtime provides the coverage symbols too: atheris warns that its Python
# coverage is then broken, so the fuzzer runs mostly on the harness's structured cases.)
# The harness finds the instrumented module by SFCHECK_<NAME>_SO.
export "SFCHECK_${name^^}_SO=$so"
PYTHONMALLOC=malloc LD_PRELOAD="$asan $ubsan" exec "$PY" "fuzz/$name.py" "$@"
