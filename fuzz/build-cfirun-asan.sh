#!/usr/bin/env bash
# Build sfcheck.dwarf._cfirun with ASan+UBSan into build-asan/ (not the installed module) and
# run fuzz/cfirun.py on it: `fuzz/build-cfirun-asan.sh [libFuzzer flags] [corpus dirs]`,
# e.g. -max_total_time=30; `--build-only`: build, do not run. As fuzz/build-frewalk-asan.sh
# (which says why the runtime is preloaded and Python's allocator is bypassed).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
CC=${CC:-gcc}
out=build-asan
mkdir -p "$out"
inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
so="$out/_cfirun$suffix"
"$CC" -shared -fPIC -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror \
  -fsanitize=address,undefined -fno-sanitize-recover=all \
  -I"$inc" sfcheck/dwarf/_cfirun.c -o "$so"
[ "${1:-}" = --build-only ] && exit 0
asan=$("$CC" -print-file-name=libasan.so)
ubsan=$("$CC" -print-file-name=libubsan.so)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
PYTHONMALLOC=malloc SFCHECK_CFIRUN_SO="$so" LD_PRELOAD="$asan $ubsan" exec "$PY" fuzz/cfirun.py "$@"
