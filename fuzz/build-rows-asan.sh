#!/usr/bin/env bash
# Build sfcheck.format._rows with ASan+UBSan into build-asan/ (not the installed module) and
# run fuzz/rows.py on it: `fuzz/build-rows-asan.sh [libFuzzer flags] [corpus dirs]`,
# e.g. -max_total_time=30; `--build-only`: build, do not run (exits non-zero when ASan
# builds are impossible here). Python itself is not instrumented, so the ASan runtime is
# preloaded (gcc's libasan; atheris's docs on native extensions do the same).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
CC=${CC:-gcc}
out=build-asan
mkdir -p "$out"
inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
so="$out/_rows$suffix"
"$CC" -shared -fPIC -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror \
  -fsanitize=address,undefined -fno-sanitize-recover=all \
  -I"$inc" sfcheck/format/_rows.c -o "$so"
[ "${1:-}" = --build-only ] && exit 0
asan=$("$CC" -print-file-name=libasan.so)
ubsan=$("$CC" -print-file-name=libubsan.so)
# Python's allocator frees in ways LeakSanitizer reports as leaks: leaks are not findings.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# PYTHONMALLOC=malloc: bytes objects get their own malloc blocks, with ASan redzones.
# (The preloaded runtime provides the coverage symbols too: atheris warns that its Python
# coverage is then broken, so the fuzzer runs mostly on make_case's structure.)
PYTHONMALLOC=malloc SFCHECK_ROWS_SO="$so" LD_PRELOAD="$asan $ubsan" exec "$PY" fuzz/rows.py "$@"
