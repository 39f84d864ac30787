#!/usr/bin/env bash
# Build sfcheck/walk/_frewalk.c with ASan+UBSan and run fuzz/frewalk.py on it:
# `fuzz/build-frewalk-asan.sh [--build-only | libFuzzer flags] [corpus dirs]` (fuzz/build-asan.sh).
exec "$(dirname "$0")/build-asan.sh" frewalk "$@"
