#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build for sfcheck's Python harnesses (atheris).
# Runs in gcr.io/oss-fuzz-base/base-builder-python with the checkout in $SRC/sfcheck;
# compile_python_fuzzer (from the base image) bundles each harness with PyInstaller.
# Locally (no Docker): `SRC=<dir holding the checkout> OUT=/tmp/out bash fuzz/oss-fuzz/build.sh`
# with a compile_python_fuzzer stub exported; tests/test_fuzz_smoke.py does exactly that.
set -eu
cd "$SRC/sfcheck"
# (SFCHECK_SKIP_INSTALL=1: the local check, which runs in the project's own venv.)
[ -n "${SFCHECK_SKIP_INSTALL:-}" ] || python3 -m pip install .
# The harnesses the engine can run on its own (libsframe needs a library path: not here).
HARNESSES=$(python3 -m fuzz list --standalone)
for fuzzer in $HARNESSES; do
  # The elf and unwind harnesses mutate the small corpus ELF files: ship them inside.
  data_args=()
  for elf in $(python3 -c "from fuzz import common; print(' '.join(common.SEED_ELVES))"); do
    data_args+=(--add-data "corpus/$elf:corpus/$(dirname "$elf")")
  done
  compile_python_fuzzer "fuzz/$fuzzer.py" --paths "$SRC/sfcheck" "${data_args[@]}"
  seeds="$WORK/seeds-$fuzzer"
  rm -rf "$seeds"
  python3 -m fuzz seeds "$fuzzer" "$seeds"
  (cd "$seeds" && zip -q -j "$OUT/${fuzzer}_seed_corpus.zip" ./*)
  cp fuzz/sfcheck.dict "$OUT/$fuzzer.dict"
  printf '[libfuzzer]\nmax_len = 4096\ntimeout = 25\n' > "$OUT/$fuzzer.options"
done
