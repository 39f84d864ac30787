"""sfcheck findings as rpmlint issues: tag names, levels, detail text, descriptions and the
`[SFrame]` table of rpmlint's TOML configuration.

Kept free of rpmlint imports so it is testable where rpmlint is not installed; the check
class (rpmlint_check.py) only feeds it files and hands its issues to rpmlint's output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping

from ..checker import Options
from ..errors import SfcheckError
from ..profiles import PROFILES
from ..report.escape import escape
from ..result import FileResult, Finding, Severity
from ..rules import RULES

TAG_PREFIX = "sframe-"
# Tags of the integration itself, not of a rule: the file could not be read as ELF, and
# sfcheck failed on it (a bug in sfcheck: reported, so a package is never passed silently).
UNREADABLE = TAG_PREFIX + "unreadable-elf"
CHECK_FAILED = TAG_PREFIX + "check-failed"
LEVELS = {Severity.ERROR: "E", Severity.WARNING: "W", Severity.INFO: "I"}
# The config table and its keys (named as sfcheck's command-line options).
TABLE = "SFrame"
KEYS = ("profile", "enable", "disable", "require-sframe", "show", "max-per-rule")


class ConfigError(SfcheckError, ValueError):
    """The [SFrame] table is wrong: rpmlint stops with this one line."""


def tag(rule_id: str) -> str:
    return TAG_PREFIX + rule_id


class Settings:
    """What the [SFrame] table asks: sfcheck's Options, the least severity reported (info
    findings such as per-binary text coverage would otherwise be a line per file of every
    package) and how many issues one rule may give per file (the rest are counted)."""

    __slots__ = ("options", "show", "max_per_rule")

    def __init__(self, options: Options, show: Severity = Severity.WARNING,
                 max_per_rule: int = 10) -> None:
        self.options = options
        self.show = show
        self.max_per_rule = max_per_rule


def _names(table: Mapping[str, object], key: str) -> set[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[{TABLE}] {key} must be a list of rule IDs or groups")
    return set(value)


def settings(configuration: Mapping[str, object]) -> Settings:
    """Settings from rpmlint's merged configuration (its `[SFrame]` table, if any)."""
    table = configuration.get(TABLE, {})
    if not isinstance(table, Mapping):
        raise ConfigError(f"[{TABLE}] must be a table")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(f"[{TABLE}] unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    profile = table.get("profile", "strict")
    if profile not in PROFILES:
        raise ConfigError(f"[{TABLE}] profile {profile!r} unknown (one of "
                          f"{', '.join(PROFILES)})")
    require = table.get("require-sframe", False)
    if not isinstance(require, bool):
        raise ConfigError(f"[{TABLE}] require-sframe must be true or false")
    show = table.get("show", "warning")
    if show not in ("info", "warning", "error"):
        raise ConfigError(f"[{TABLE}] show must be \"info\", \"warning\" or \"error\"")
    cap = table.get("max-per-rule", 10)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ConfigError(f"[{TABLE}] max-per-rule must be a whole number >= 1")
    options = Options(enable=_names(table, "enable"), disable=_names(table, "disable"),
                      require_sframe=require, profile=PROFILES[profile])
    try:
        options.validate()
    except ValueError as exc:
        raise ConfigError(f"[{TABLE}] {exc}") from None
    return Settings(options, Severity.parse(str(show)), cap)


def _details(path: str, f: Finding) -> str:
    where = f.location.describe()
    if f.location.function is not None:
        where += f" in {f.location.function}"
    return escape(f"{path} {where}: {f.message}" if where else f"{path} {f.message}")


def issues(path: str, result: FileResult, s: Settings) -> Iterator[tuple[str, str, str]]:
    """(level, tag, details) for one checked file of a package: `path` as installed."""
    if result.error is not None:
        yield "W", UNREADABLE, escape(f"{path} {result.error}")
        return
    shown = sorted((f for f in result.findings if f.severity >= s.show),
                   key=lambda f: -f.severity)
    total = Counter(f.rule for f in shown)
    given: Counter[str] = Counter()
    for f in shown:
        given[f.rule] += 1
        if given[f.rule] > s.max_per_rule:
            continue
        text = _details(path, f)
        if given[f.rule] == s.max_per_rule and total[f.rule] > s.max_per_rule:
            text += f" (and {total[f.rule] - s.max_per_rule} more in this file)"
        yield LEVELS[f.severity], tag(f.rule), text


def failed(path: str, exc: Exception) -> tuple[str, str, str]:
    """The issue for a file sfcheck raised on (a bug in sfcheck, reported, never hidden)."""
    return "E", CHECK_FAILED, escape(f"{path} {type(exc).__name__}: {exc}")


def descriptions() -> dict[str, str]:
    """`rpmlint --explain TAG` text for every tag: the rule's explanation from sfcheck's
    catalogue, its fix and its default severity."""
    # The title as written (it may start with a tool's name: "ld's .plt.got FDE ...").
    out = {tag(r.id): f"{r.title}. {r.explanation} Fix: {r.hint} "
                      f"(sfcheck rule {r.id}, group {r.group}, default severity "
                      f"{r.severity}; `sfcheck explain {r.id}` adds what each consumer "
                      "profile says.)"
           for r in RULES.values()}
    out[UNREADABLE] = ("The file starts like an ELF file but sfcheck cannot read it as one "
                       "(truncated, or its headers point outside the file), so its SFrame "
                       "data was not checked. The detail says what is wrong.")
    out[CHECK_FAILED] = ("sfcheck failed on this file: a bug in sfcheck, please report it "
                         "with the file. Its SFrame data was not checked; the detail names "
                         "the exception.")
    return out
