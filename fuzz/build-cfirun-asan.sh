#!/usr/bin/env bash
# Build sfcheck/dwarf/_cfirun.c with ASan+UBSan and run fuzz/cfirun.py on it:
# `fuzz/build-cfirun-asan.sh [--build-only | libFuzzer flags] [corpus dirs]` (fuzz/build-asan.sh).
exec "$(dirname "$0")/build-asan.sh" cfirun "$@"
