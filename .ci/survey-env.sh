#!/usr/bin/env bash
# `sfcheck survey --scheduler` and tests/test_survey_dask.py: the survey extra
# (dask[distributed]) into the venv given as $1 (the one the suite runs in). Debian 12's
# python3-distributed is 2022.12; PyPI's current release installs on Python 3.11 too.
# objcopy (binutils, with gcc on every CI image) builds the demo repository's files without
# SFrame. Without dask the Dask tests skip with the reason.
set -euo pipefail
venv=${1:?usage: .ci/survey-env.sh VENV}
"$venv/bin/pip" install -q 'dask[distributed]>=2022.12' \
  || echo "note: could not install dask[distributed]; the survey's Dask tests will skip"
