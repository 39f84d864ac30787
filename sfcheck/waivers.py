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
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import translate

from .errors import SfcheckError
from .fileio import InputFileError, read_bounded
from .result import SCAN_PATH, FileResult, Finding
from .rules import RULES
from .rules.registry import GROUPS
from .wording import noun

# Out-of-bounds and overlapping-structure findings: every consumer would read memory the
# section does not own, so no reason can make them acceptable.
UNWAIVABLE: frozenset[str] = frozenset({
    "header-too-short", "layout-fdeoff-after-freoff", "layout-fde-array-bounds",
    "layout-fde-array-overlap", "layout-fre-bounds", "layout-fde-fres-bounds",
    "layout-fre-overlap", "fre-datawords-size"})

_KEYS = {"rule", "path", "function", "pc", "package", "reason"}
MAX_WAIVER_FILE = 16 << 20  # bytes; a waiver file is written by hand


def _glob(pattern: str) -> Callable[[str], re.Match[str] | None]:
    """A compiled fnmatchcase: built once per waiver, not once per finding."""
    return re.compile(translate(pattern)).match


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
    _path_re: Callable[[str], object] = field(init=False, repr=False, compare=False)
    _package_re: Callable[[str], object] | None = field(init=False, repr=False, compare=False)
    _function_re: Callable[[str], object] | None = field(init=False, repr=False,
                                                        compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: the compiled globs are set once, here
        set_(self, "_path_re", _glob(self.path))
        set_(self, "_package_re", _glob(self.package) if self.package is not None else None)
        set_(self, "_function_re",
             _glob(self.function) if self.function is not None else None)

    def covers_rule(self, rule: str) -> bool:
        if rule in UNWAIVABLE:
            return False
        return rule == self.rule or (rule in RULES and RULES[rule].group == self.rule)

    def covers_path(self, res: FileResult) -> bool:
        if not any(self._path_re(n) for n in _names(res)):
            return False
        if self._package_re is None:
            return True
        pkg = res.package or ""
        return bool(self._package_re(pkg) or self._package_re(os.path.basename(pkg)))

    def covers_location(self, finding: Finding) -> bool:
        """The pc and function conditions (the rule and path are checked apart)."""
        loc = finding.location
        if self.pc is not None and loc.pc != self.pc:
            return False
        return self._function_re is None or (loc.function is not None
                                             and bool(self._function_re(loc.function)))

    def covers(self, res: FileResult, finding: Finding) -> bool:
        return (self.covers_rule(finding.rule) and self.covers_path(res)
                and self.covers_location(finding))

    def describe(self) -> str:
        where = self.path + (f" in {self.package}" if self.package else "")
        what = (f", function {self.function}" if self.function else "") + (
            f", pc {self.pc:#x}" if self.pc is not None else "")
        return f"waiver #{self.index} ({self.rule} on {where}{what})"

    def as_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.init and getattr(self, f.name) is not None}


def _names(res: FileResult) -> set[str]:
    """The names a waiver's `path` glob is tried on: the reported path and the member."""
    names = {res.path, res.path.removeprefix("./")}
    if res.member is not None:
        last = res.member.rsplit(":", 1)[-1]
        names |= {res.member, res.member.removeprefix("./"), last, last.removeprefix("./")}
    return names


def parse_waivers(text: str, source: str = "<waivers>") -> list[Waiver]:
    import tomllib  # only with --waivers: a plain check does not pay for it

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WaiverError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        # tomllib recurses per nested array or inline table; the file is hand-written.
        raise WaiverError(f"{source}: not a waiver file: arrays or tables nested too deeply") \
            from None
    extra = set(doc) - {"waiver"}
    if extra:
        raise WaiverError(f"{source}: unknown top-level {noun(len(extra), 'key')} "
                          f"{', '.join(sorted(extra))} "
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
        raise fail(f"unknown {noun(len(unknown), 'key')} {', '.join(sorted(unknown))} "
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
    """The waivers of a regular file (no device or FIFO; at most MAX_WAIVER_FILE bytes)."""
    try:
        text = read_bounded(path, MAX_WAIVER_FILE).decode("utf-8")
    except InputFileError as exc:
        raise WaiverError(f"{path}: cannot read waiver file: {exc.message}") from None
    except UnicodeDecodeError as exc:
        raise WaiverError(f"{path}: cannot read waiver file: {exc}") from None
    return parse_waivers(text, path)


def apply_waivers(files: list[FileResult], waivers: list[Waiver],
                  scan: list[Finding] | None = None) -> list[Waiver]:
    """Mark covered findings waived (the first matching waiver's reason, in file order);
    return the waivers that covered nothing, counting what `waive_file` found before the
    per-file cap (FileResult.waivers_used) as covered. `scan`: the findings about the files
    together (Result.findings), at the empty path: a waiver with path "*" covers them.

    Linear in files x waivers: each waiver's path and package globs run once per file;
    a finding then meets only the waivers that matched its file with its rule (or group)
    and its pc (or none), and findings with the same rule, pc and function share one answer.
    """
    if not waivers:
        return []
    used: set[int] = set()
    for res in files:
        used |= res.waivers_used | waive_file(res, res.findings, waivers)
    if scan:
        used |= waive_file(FileResult(SCAN_PATH), scan, waivers)
    return [w for w in waivers if w.index not in used]


def waive_file(res: FileResult, findings: list[Finding], waivers: list[Waiver]) -> set[int]:
    """Mark the findings of one file (`res` names it) waived in place; the indices of the
    waivers used. The checker calls it before the per-file cap, so a waived finding never
    takes the place of one that is not."""
    used: set[int] = set()
    if not findings:
        return used
    index: _Index = {}
    for w in waivers:
        if w.covers_path(res):
            index.setdefault((w.rule, w.pc), []).append(w)
    if not index:
        return used
    memo: dict[tuple[str, int | None, str | None], Waiver | None] = {}
    for i, finding in enumerate(findings):
        loc = finding.location
        key = (finding.rule, loc.pc, loc.function)
        if key not in memo:
            memo[key] = _first(finding, index)
        w = memo[key]
        if w is not None:
            findings[i] = dataclasses.replace(finding, waived=w.reason)
            used.add(w.index)
    return used


# The waivers that matched one file, by (rule or group, pc or None).
_Index = dict[tuple[str, int | None], list[Waiver]]


def _first(finding: Finding, index: _Index) -> Waiver | None:
    """The first waiver (in file order) of the finding's rule or group, for any pc or for
    the finding's, that covers it."""
    if finding.rule in UNWAIVABLE:
        return None
    rule = RULES.get(finding.rule)
    names = {finding.rule} | ({rule.group} if rule is not None else set())
    pcs = {None, finding.location.pc}
    lists = [index[k] for k in ((n, pc) for n in names for pc in pcs) if k in index]
    candidates = lists[0] if len(lists) == 1 else sorted(
        (w for ws in lists for w in ws), key=lambda w: w.index)
    return next((w for w in candidates if w.covers_location(finding)), None)
