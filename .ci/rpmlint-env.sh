#!/usr/bin/env bash
# The real rpmlint 2 for tests/test_rpmlint.py, in .venv-rpmlint/ beside .venv/.
# rpmlint needs the rpm Python bindings, which exist only as Debian's python3-rpm, built for
# Debian's /usr/bin/python3: so this venv is made from that interpreter with the system site
# packages visible, and gets rpmlint from PyPI and this checkout (editable). Without it the
# rpmlint tests skip with the reason. The shim (sfcheck/integrations/rpmlint_shim.py) goes into
# that venv's rpmlint so the test of the plain `rpmlint` command runs too.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs="rpm python3-rpm python3-venv libmagic1"
if [ "$(id -u)" = 0 ] && ! { command -v rpmbuild && /usr/bin/python3 -c 'import rpm, venv, ensurepip'; } >/dev/null 2>&1; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null; } \
    || { echo "note: could not install $pkgs; the rpmlint tests will skip"; exit 0; }
fi
{ [ -x .venv-rpmlint/bin/python ] || /usr/bin/python3 -m venv --system-site-packages .venv-rpmlint; } \
  && .venv-rpmlint/bin/pip install -q 'rpmlint>=2,<3' -e . \
  && .venv-rpmlint/bin/python -m sfcheck.integrations.rpmlint_shim \
       --config-dir .venv-rpmlint/etc/xdg/rpmlint >/dev/null \
  || echo "note: could not set up .venv-rpmlint; the rpmlint tests will skip"
