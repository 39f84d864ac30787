"""Waivers: accepted findings, listed in a TOML file with the reason for each.

    [[waiver]]
    rule = "fde-overlap"                      # a rule ID, or a group (its waivable rules)
    path = "*/usr/lib/*/libfoo.so.*"          # glob on the reported path or member path
    function = "foo_start"                    # optional: only this function (symbol glob)
    pc = 0x401000                             # optional: only the FDE starting here
    package = "libfoo1_*.deb"                 # optional: glob on the package file name
    reason = "hand-written assembly, upstream bug 1234"   # mandatory

A waived finding is still reported (marked waived, with the reason) but no longer
counts towards `--fail-on`. Waivers that cover nothing are listed after the scan, so a
stale waiver does not hide the next real problem. Findings that say the SFrame data
points outside its own bytes (UNWAIVABLE) cannot be waived: a reader trusting them would
read out of bounds.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .errors import SfcheckError
from .result import FileResult, Finding
from .rules import RULES
from .rules.registry import GROUPS

# Out-of-bounds and overlapping-structure findings: every consumer would read memory the
# section does not own, so no reason can make them acceptable.
UNWAIVABLE: frozenset[str] = frozenset({
    "header-too-short", "layout-fdeoff-after-freoff", "layout-fde-array-bounds",
    "layout-fde-array-overlap", "layout-fre-bounds", "layout-fde-fres-bounds",
    "layout-fre-overlap", "fre-datawords-size"})

_KEYS = {"rule", "path", "function", "pc", "package", "reason"}


class WaiverError(SfcheckError):
    """A waiver file that cannot be used; the message names the file and the waiver."""


@dataclass(frozen=True, slots=True)
class Waiver:
    index: int  # 1-based position in the file, how messages name it
    rule: str  # rule ID or group
    path: str
    reason: str
    function: str | None = None
    pc: int | None = None
    package: str | None = None

    def covers_rule(self, rule: str) -> bool:
        if rule in UNWAIVABLE:
            return False
        return rule == self.rule or (rule in RULES and RULES[rule].group == self.rule)

    def covers_path(self, res: FileResult) -> bool:
        names = {res.path, res.path.removeprefix("./")}
        if res.member is not None:
            last = res.member.rsplit(":", 1)[-1]
            names |= {res.member, res.member.removeprefix("./"), last, last.removeprefix("./")}
        if not any(fnmatchcase(n, self.path) for n in names):
            return False
        if self.package is None:
            return True
        pkg = res.package or ""
        return fnmatchcase(pkg, self.package) or fnmatchcase(os.path.basename(pkg),
                                                             self.package)

    def covers(self, res: FileResult, finding: Finding) -> bool:
        if not self.covers_rule(finding.rule) or not self.covers_path(res):
            return False
        loc = finding.location
        if self.pc is not None and loc.pc != self.pc:
            return False
        return self.function is None or (loc.function is not None
                                         and fnmatchcase(loc.function, self.function))

    def describe(self) -> str:
        where = self.path + (f" in {self.package}" if self.package else "")
        what = (f", function {self.function}" if self.function else "") + (
            f", pc {self.pc:#x}" if self.pc is not None else "")
        return f"waiver #{self.index} ({self.rule} on {where}{what})"

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def parse_waivers(text: str, source: str = "<waivers>") -> list[Waiver]:
    import tomllib  # only with --waivers: a plain check does not pay for it

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WaiverError(f"{source}: not valid TOML: {exc}") from None
    extra = set(doc) - {"waiver"}
    if extra:
        raise WaiverError(f"{source}: unknown top-level key(s) {', '.join(sorted(extra))} "
                          "(write each waiver as a [[waiver]] table)")
    entries = doc.get("waiver", [])
    if not isinstance(entries, list):
        raise WaiverError(f"{source}: `waiver` must be an array of tables ([[waiver]])")
    return [_waiver(entry, i, source) for i, entry in enumerate(entries, 1)]


def _waiver(entry: object, index: int, source: str) -> Waiver:
    def fail(message: str) -> WaiverError:
        return WaiverError(f"{source}: waiver #{index}: {message}")

    if not isinstance(entry, dict):
        raise fail("not a table")
    unknown = set(entry) - _KEYS
    if unknown:
        raise fail(f"unknown key(s) {', '.join(sorted(unknown))} "
                   f"(allowed: {', '.join(sorted(_KEYS))})")
    for key in ("rule", "path", "reason", "function", "package"):
        if key in entry and not isinstance(entry[key], str):
            raise fail(f"`{key}` must be a string")
    rule, reason, path = entry.get("rule"), entry.get("reason", ""), entry.get("path")
    if not rule:
        raise fail("`rule` is required")
    if not path:
        raise fail("`path` is required (a glob; \"*\" for every file)")
    if not reason.strip():
        raise fail("`reason` is required: say why the finding is acceptable")
    if rule not in RULES and rule not in GROUPS:
        raise fail(f"unknown rule or group {rule!r} (see `sfcheck rules`)")
    if rule in UNWAIVABLE:
        raise fail(f"rule {rule} cannot be waived: the data points outside its own bytes")
    pc = entry.get("pc")
    if pc is not None and (not isinstance(pc, int) or isinstance(pc, bool) or pc < 0):
        raise fail("`pc` must be a non-negative integer (TOML allows 0x... hex)")
    return Waiver(index, rule, path, reason.strip(), entry.get("function"),
                  pc, entry.get("package"))


def load_waivers(path: str) -> list[Waiver]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise WaiverError(f"{path}: cannot read waiver file: {reason}") from None
    return parse_waivers(text, path)


def needs_symbols(waivers: list[Waiver]) -> bool:
    """Whether matching needs each finding's function name (worth a symbol-table read)."""
    return any(w.function is not None for w in waivers)


def apply_waivers(files: list[FileResult], waivers: list[Waiver]) -> list[Waiver]:
    """Mark covered findings waived (the first matching waiver's reason, in file order);
    return the waivers that covered nothing."""
    used: set[int] = set()
    if not waivers:
        return []
    for res in files:
        for i, finding in enumerate(res.findings):
            for w in waivers:
                if w.covers(res, finding):
                    res.findings[i] = dataclasses.replace(finding, waived=w.reason)
                    used.add(w.index)
                    break
    return [w for w in waivers if w.index not in used]
