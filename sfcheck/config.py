"""The configuration file of `sfcheck check`: defaults for its options, kept with a project.

Found from the working directory upwards: in each directory `sfcheck.toml` (its top-level
keys), else `[tool.sfcheck]` in `pyproject.toml`; the search stops at the first directory
holding either (a pyproject.toml counts only with a `[tool.sfcheck]` table: most say
nothing about sfcheck), and does not go above a repository root (a directory with `.git`).
`sfcheck.toml` wins over `pyproject.toml` in one directory: a file of its own is the more
deliberate choice. `--config FILE` names the file, `--no-config` reads none.

Keys are the long option names (`fail-on`, not `fail_on`); the command line wins over the
file. Every error (unreadable file, TOML syntax, unknown key, wrong type or value) is a
ConfigError whose message names the file and the key: the caller prints it on one line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import SfcheckError
from .fileio import InputFileError, read_bounded

NAMES = ("sfcheck.toml", "pyproject.toml")  # precedence within one directory
MAX_CONFIG_FILE = 1 << 20  # a configuration larger than this is not one
SEVERITIES = ("error", "warning", "info")
# Every way TOML can spell a [tool.sfcheck] table holds one of these: `tool.sfcheck` (a
# header or a dotted key, names quoted or not) or a `[tool]` header. A pyproject.toml
# without either is not parsed (tomllib costs start-up time on every run).
_MAY_HOLD_TABLE = re.compile(rb"""tool["']?\s*\.\s*["']?sfcheck|^\s*\[\s*["']?tool["']?\s*\]""",
                             re.M)
FORMATS = ("text", "json", "sarif", "junit", "github", "gitlab")


class ConfigError(SfcheckError, ValueError):
    """A configuration file that cannot be used; the message names file and key."""


def _choice(options: tuple[str, ...]):  # noqa: ANN202  (a checker: value -> error or None)
    def check(value: object) -> str | None:
        if isinstance(value, str) and value in options:
            return None
        return f"expected one of {', '.join(options)}, got {value!r}"
    return check


def _names(value: object) -> str | None:
    from .rules import GROUPS, RULES

    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"expected a list of rule IDs or groups, got {value!r}"
    unknown = [v for v in value if v not in RULES and v not in GROUPS]
    return f"unknown rule or group {unknown[0]!r}" if unknown else None


def _profile(value: object) -> str | None:
    from .profiles import PROFILE_NAMES

    return _choice(tuple(PROFILE_NAMES))(value)


def _jobs(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return None
    return f"expected a whole number >= 1, got {value!r}"


def _path(value: object) -> str | None:
    return None if isinstance(value, str) and value else f"expected a file path, got {value!r}"


def _bool(value: object) -> str | None:
    return None if isinstance(value, bool) else f"expected true or false, got {value!r}"


# key -> (argparse destination, checker of the TOML value)
KEYS = {
    "profile": ("profile", _profile),
    "fail-on": ("fail_on", _choice((*SEVERITIES, "none"))),
    "show": ("show", _choice(SEVERITIES)),
    "enable": ("enable", _names),
    "disable": ("disable", _names),
    "waivers": ("waivers", _path),
    "format": ("format", _choice(FORMATS)),
    "jobs": ("jobs", _jobs),
    "require-sframe": ("require_sframe", _bool),
}


def _read(path: Path) -> dict[str, object]:
    try:
        data = read_bounded(path, MAX_CONFIG_FILE)
    except InputFileError as exc:
        raise ConfigError(f"{path}: cannot read configuration file: {exc.message}") from None
    if path.name == "pyproject.toml" and not _MAY_HOLD_TABLE.search(data):
        return {}
    import tomllib  # only for a file that may hold settings (start-up time)

    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8: {exc.reason} at byte {exc.start}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _table(path: Path, doc: dict[str, object]) -> dict[str, object] | None:
    """The sfcheck settings of a parsed file: all of sfcheck.toml, pyproject's
    [tool.sfcheck] (None when it has none)."""
    if path.name != "pyproject.toml":
        return doc
    tool = doc.get("tool")
    table = tool.get("sfcheck") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: tool.sfcheck: expected a table, got {table!r}")
    return table


def discover(start: Path) -> tuple[Path, dict[str, object]] | None:
    """The configuration that applies in `start`: (file, its sfcheck table), or None."""
    for directory in (start, *start.parents):
        try:
            found = [directory / n for n in NAMES if (directory / n).is_file()]
            root = (directory / ".git").exists()
        except PermissionError:  # a directory we may not look into: no configuration of ours
            return None
        for candidate in found:
            table = _table(candidate, _read(candidate))  # unreadable: one line naming it
            if table is not None:
                return candidate, table
        if root:  # a repository's root: its parent is not ours
            return None
    return None


def load(path: Path) -> dict[str, object]:
    """The sfcheck table of a file named with --config."""
    table = _table(path, _read(path))
    if table is None:
        raise ConfigError(f"{path}: no [tool.sfcheck] table")
    return table


def settings(path: Path, table: dict[str, object]) -> dict[str, object]:
    """Checked values by argparse destination; waivers made relative to the file's
    directory."""
    where = "tool.sfcheck." if path.name == "pyproject.toml" else ""
    out: dict[str, object] = {}
    for key, value in table.items():
        if key not in KEYS:
            near = key.replace("_", "-")
            hint = f" (did you mean {near!r}?)" if near in KEYS else ""
            raise ConfigError(f"{path}: {where}{key}: unknown key{hint}; known keys: "
                              f"{', '.join(KEYS)}")
        dest, check = KEYS[key]
        problem = check(value)
        if problem:
            raise ConfigError(f"{path}: {where}{key}: {problem}")
        if key == "waivers":
            value = os.path.join(os.path.dirname(os.path.abspath(path)), str(value))
        out[dest] = value
    return out


def apply(args: object, values: dict[str, object]) -> None:
    """Fill the options the command line left unset (None) from the file's values.
    --enable/--disable add to the file's lists, and a name given on the command line
    leaves the file's opposite list, so the command line wins there too."""
    cli_enable = getattr(args, "enable", None) or []
    cli_disable = getattr(args, "disable", None) or []
    for dest, value in values.items():
        if dest == "enable":
            setattr(args, dest, [n for n in value if n not in cli_disable]  # type: ignore[union-attr]
                    + cli_enable)
        elif dest == "disable":
            setattr(args, dest, [n for n in value if n not in cli_enable]  # type: ignore[union-attr]
                    + cli_disable)
        elif getattr(args, dest, None) in (None, False) or (dest == "jobs"
                                                            and not getattr(args, dest)):
            setattr(args, dest, value)
