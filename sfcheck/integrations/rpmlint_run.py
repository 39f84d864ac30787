"""`python -m sfcheck.integrations.rpmlint_run [rpmlint options] FILE...`: the real rpmlint
with sfcheck's check `SFrameCheck` loaded.

rpmlint 2 imports each name in `Checks` as a module of its own package rpmlint.checks and
nowhere else (rpmlint/lint.py `load_check`), so a check shipped by another package must
either be put into that folder (the shim in docs/rpmlint.md) or be given that module name
before rpmlint looks: this does the latter, then runs rpmlint's own command line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# This folder holds rpmlint/sframe.toml (Checks = ["SFrameCheck"] and the [SFrame] defaults).
XDG_DIR = Path(__file__).resolve().parent / "xdg"


def install() -> None:
    """Make `SFrameCheck` loadable by rpmlint in this process and list it in `Checks`."""
    # rpmlint reads $XDG_CONFIG_DIRS/rpmlint/*.toml when its config module is first
    # imported (pyxdg reads the variable once), so this comes before any rpmlint import.
    dirs = os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    if str(XDG_DIR) not in dirs.split(os.pathsep):
        # Last: XDG dirs are read in reverse, so a system config and -c come after ours.
        os.environ["XDG_CONFIG_DIRS"] = dirs + os.pathsep + str(XDG_DIR)
    from . import rpmlint_check

    sys.modules["rpmlint.checks.SFrameCheck"] = rpmlint_check


def main() -> None:
    try:
        install()
    except ImportError as exc:
        sys.exit(f"sfcheck: error: rpmlint is not importable here ({exc}); install rpmlint 2 "
                 "and the rpm Python bindings (docs/rpmlint.md)")
    from rpmlint.cli import lint

    sys.argv[0] = "rpmlint"
    lint()


if __name__ == "__main__":
    main()
