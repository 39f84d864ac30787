"""`python -m sfcheck.integrations.rpmlint_shim [--check-dir DIR] [--config-dir DIR]`: make
the plain `rpmlint` command load sfcheck's check, as a distribution's package would.

rpmlint imports a check only as `rpmlint.checks.<Name>`, a folder of its own package (see
rpmlint_run.py), so this writes there a one-line module `SFrameCheck.py` that imports the
real class from sfcheck, and `sframe.toml` (Checks = ["SFrameCheck"] and the [SFrame]
defaults) into a folder rpmlint reads configuration from ($XDG_CONFIG_DIRS/rpmlint, by
default /etc/xdg/rpmlint). Both are small files a package manager can own and remove.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .rpmlint_run import XDG_DIR

SHIM = ('"""sfcheck\'s rpmlint check (python -m sfcheck.integrations.rpmlint_shim)."""\n'
        "\nfrom sfcheck.integrations.rpmlint_check import SFrameCheck  # noqa: F401\n")
CONFIG = XDG_DIR / "rpmlint" / "sframe.toml"


def rpmlint_checks_dir() -> Path:
    """The folder rpmlint imports its checks from (rpmlint.checks' only path entry)."""
    import rpmlint.checks

    (path,) = rpmlint.checks.__path__  # a namespace package inside the rpmlint package
    return Path(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sfcheck.integrations.rpmlint_shim",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--check-dir", type=Path, help="rpmlint's checks folder (default: "
                        "that of the rpmlint this Python imports)")
    parser.add_argument("--config-dir", type=Path, default=Path("/etc/xdg/rpmlint"),
                        help="where sframe.toml goes (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        check_dir = args.check_dir or rpmlint_checks_dir()
        (check_dir / "SFrameCheck.py").write_text(SHIM)
        args.config_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CONFIG, args.config_dir / CONFIG.name)
    except ImportError as exc:
        print(f"sfcheck: error: rpmlint is not importable here ({exc})", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"sfcheck: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    print(f"{check_dir / 'SFrameCheck.py'}\n{args.config_dir / CONFIG.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
