"""Check files or bytes: the Python API behind `sfcheck FILE` and every renderer."""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable, Sequence

from . import rules  # noqa: F401  (registers every rule)
from .elf.loader import load_elf
from .elf.model import Buffer, ElfSFrameInfo, FuncSymbol, addresses
from .elf.symbols import FuncSymbols
from .errors import ElfError
from .format.model import Header
from .profiles import STRICT, Profile, empty_section_message, reads_segment
from .profiles import get as get_profile
from .record import Record, replace
from .result import FileResult, Finding, Location, SectionSummary, Severity
from .rules import elf as elf_rules
from .rules.consumer import check_consumer
from .rules.coverage import check_text_coverage
from .rules.defect import check_section_defects, check_stubs_only
from .rules.header import TOO_SHORT
from .rules.linkable import check_object, object_severity, runtime_only
from .rules.registry import GROUPS, RULES, Rule
from .rules.semantic import cross_check
from .walk.context import SectionContext
from .walk.section import check_section
from .wording import plural

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from .waivers import Waiver


class Options(Record):
    __slots__ = ("enable", "disable", "require_sframe", "profile")

    def __init__(self, enable: set[str] | None = None, disable: set[str] | None = None,
                 require_sframe: bool = False, profile: Profile | str = STRICT) -> None:
        self.enable = set() if enable is None else enable  # rule IDs or groups switched on
        self.disable = set() if disable is None else disable  # rule IDs or groups switched off
        self.require_sframe = require_sframe
        # The consumer profile (sfcheck.profiles). The command line passes the object; a
        # name from an API caller is looked up here, once (ValueError if unknown).
        self.profile: Profile = profile if isinstance(profile, Profile) else get_profile(profile)

    def enabled(self, rule: Rule) -> bool:
        if rule.id in self.enable:
            return True
        if rule.id in self.disable:
            return False
        return rule.group in self.enable or rule.group not in self.disable

    def validate(self) -> None:
        for name in self.enable | self.disable:
            if name not in RULES and name not in GROUPS:
                from .wording import did_you_mean

                raise ValueError(f"unknown rule or group: {name}"
                                 + did_you_mean(name, [*GROUPS, *RULES]))

    def severity_for(self, rule: Rule, severity: Severity) -> Severity | None:
        """The selected profile's severity for a finding (None: not reported)."""
        return self.profile.severity(rule.id, severity)


class SectionStats(Record):
    """Figures of one checked section for `sfcheck survey`: the header's flags and the
    elf-text-coverage totals (executable bytes, bytes no FDE covers)."""

    __slots__ = ("name", "flags", "text_bytes", "missing")

    def __init__(self, name: str, flags: int | None, text_bytes: int, missing: int) -> None:
        self.name = name
        self.flags = flags
        self.text_bytes = text_bytes
        self.missing = missing


def _summary(name: str, vma: int, data: bytes, header: Header | None) -> SectionSummary:
    s = SectionSummary(name, vma, len(data))
    if header is not None:
        s.version, s.abi = header.version, header.abi
        s.num_fdes, s.num_fres = header.num_fdes, header.num_fres
    return s


def check_section_bytes(data: bytes, path: str = "<bytes>", vma: int = 0,
                        name: str = ".sframe", options: Options | None = None,
                        raw: bool = False) -> FileResult:
    """Check one bare SFrame section (no ELF context).

    `raw`: the bytes are a whole input file given as a section (check --raw), so 0 bytes is
    a section cut short before its header, not the empty section an object may hold."""
    options = options or Options()
    ctx = SectionContext(path, name, vma, bytes(data), options.enabled, options.severity_for)
    result = FileResult(path)
    if not data and not raw:
        ctx.emit_as(elf_rules.EMPTY, Severity.WARNING, f"{name} has size 0")
        header = None
    else:
        header = check_section(ctx)
        if header is not None:
            check_consumer(ctx, options.profile, header)
        check_section_defects(ctx, header)
    ctx.finish()
    result.findings = with_effects(ctx.findings, options.profile)
    result.sections.append(_summary(name, vma, data, header))
    return result


def with_effects(findings: list[Finding], profile: Profile) -> list[Finding]:
    """Each finding with what `profile`'s reader does with it (sfcheck.effects); under
    strict, the findings as they are."""
    if profile.name == "strict":
        return findings
    out = []
    for f in findings:
        rule = RULES.get(f.rule)
        effect = profile.effect(f.rule, rule.group if rule else None, f.severity)
        out.append(f if effect is None else replace(f, effect=effect))
    return out


MAX_PER_FILE = 1000  # findings kept per file (worst first); the per-rule cap is per section


def check_elf(source: str | os.PathLike[str] | Buffer, path: str | None = None,
              options: Options | None = None, waivers: Sequence[Waiver] = (),
              package: str | None = None, member: str | None = None,
              stats: list[SectionStats] | None = None,
              walked: list[Walked] | None = None) -> FileResult:
    """Check every SFrame section of an ELF file (a path, or its bytes in any buffer: a
    path is read through bounded reads, a buffer in place, neither copied whole);
    unreadable files set `error`. Findings with a PC are named by the file's function
    symbols, whatever the output format. `waivers` are applied before the per-file cap
    (`package` and `member` are what their globs see). `stats`, when given, gets one
    SectionStats per SFrame section checked (the survey's figures, which the result model
    does not carry); `walked`, when given, gets the file's Walked (for check_elf_consumers)
    once every section is checked."""
    options = options or Options()
    label = path or (os.fsdecode(source) if isinstance(source, str | os.PathLike)
                     else "<bytes>")
    result = FileResult(label, package=package, member=member)
    # The .eh_frame cross-check needs its inputs prepared while the file is parsed.
    cfi = any(options.enabled(r) for r in RULES.values() if r.group in ("semantic", "defect"))
    try:
        info = load_elf(source, name=label, cfi=cfi)
    except ElfError as exc:
        result.error = exc.message
        return result
    if not info.sections:
        rule = elf_rules.NO_SFRAME
        sev = Severity.ERROR if options.require_sframe else rule.severity
        if options.enabled(rule) or options.require_sframe:
            result.findings.append(Finding(rule.id, sev, "no SFrame section", Location(label)))
        return result  # elf-no-sframe is sfcheck's gate: no reader effect
    profile = options.profile
    relocatable = info.e_type == "ET_REL"
    severity_for = options.severity_for
    objects = relocatable and runtime_only(profile)
    if objects:
        def severity_for(rule: Rule, severity: Severity) -> Severity | None:
            return object_severity(profile, rule.id, severity)
    ctxs, headers = [], []
    walks: list[tuple[Header | None, Sequence[tuple[int, int, int]]] | None] = []
    for k, sec in enumerate(info.sections):
        sev_for = severity_for
        if sec.segment is not None and not reads_segment(profile):
            sev_for = _below_error(severity_for)
        ctx = SectionContext(label, sec.name, sec.vma, sec.data, options.enabled,
                             sev_for, relocatable=relocatable)
        if k == 0:
            elf_rules.check_file(ctx, info)
        if sec.nobits:
            # A separate debug file: the header is kept, the bytes are in the binary.
            ctx.emit(elf_rules.NO_DATA, f"{sec.name} is SHT_NOBITS ({sec.size:#x} bytes not "
                     "in this file)" + (": a separate debug file" if info.debug_only else "")
                     + "; no SFrame data to check")
            ctx.finish()
            result.findings.extend(ctx.findings)
            result.sections.append(SectionSummary(sec.name, sec.vma, 0, nobits=True))
            walks.append(None)
            continue
        header = check_section(ctx) if sec.data else None
        walks.append((header, ctx.ranges))
        if not sec.data and not relocatable:
            # every reader refuses a zero-size section: say so, naming them
            ctx.emit(TOO_SHORT, empty_section_message(profile), offset=0)
        if header is not None:
            if objects:
                check_object(ctx, profile, header)
            else:
                check_consumer(ctx, profile, header, info)
        check_section_defects(ctx, header, info)
        check_stubs_only(ctx, info)
        elf_rules.check_elf_section(ctx, info, sec, header)
        elf_rules.check_object_relocs(ctx, info, sec, header)
        elf_rules.check_vdso(ctx, info, sec, header)
        elf_rules.check_function_ranges(ctx, info, ctx.ranges)
        text = check_text_coverage(ctx, info)
        if stats is not None:
            stats.append(SectionStats(sec.name, header.flags if header else None, *text))
        # The per-FDE range columns have had their last reader: freed before the
        # cross-check builds its own per-FDE state, so the two never peak together.
        ctx.ranges = []
        ctxs.append(ctx)
        headers.append(header)
        result.sections.append(_summary(sec.name, sec.vma, sec.data, header))
    if walked is not None:
        walked.append(Walked(info, walks))
    if cfi:
        cross_check(ctxs, headers, info)
    for ctx in ctxs:
        ctx.finish()
        result.findings.extend(ctx.findings)
    result.eh_frame_size = info.facts.eh_frame_size
    findings = name_functions(result.findings, info.symbols)
    if waivers:
        from .waivers import waive_file

        result.waivers_used = waive_file(result, findings, list(waivers))
    result.findings = with_effects(_capped(findings, label), profile)
    return result


def consumer_options(profile: Profile) -> Options:
    """`profile` with only its consumer rules on: what its reader adds to the strict check."""
    return Options(profile=profile, enable=set(profile.consumer), disable=set(GROUPS))


class Walked(Record):
    """A loaded file and, per SFrame section (None: SHT_NOBITS), the header and function
    ranges the structure walk read: neither depends on which rules are on."""

    __slots__ = ("info", "sections")

    def __init__(self, info: ElfSFrameInfo,
                 sections: list[tuple[Header | None, Sequence[tuple[int, int, int]]] | None]
                 ) -> None:
        self.info = info
        self.sections = sections


def check_elf_consumers(source: str | os.PathLike[str] | Buffer, profiles: Sequence[Profile],
                        path: str | None = None, walked: Walked | None = None
                        ) -> list[FileResult]:
    """For each of `profiles`, what check_elf gives under consumer_options(profile), with
    the file loaded and each section's structure walked once for all of them (or taken
    from `walked`, a check_elf run's): with every group off, only check_consumer emits,
    and what it reads of the walk does not depend on which rules are on. A relocatable
    file gets separate runs (its profile severities come from rules/linkable.py)."""
    label = path or (os.fsdecode(source) if isinstance(source, str | os.PathLike)
                     else "<bytes>")
    if walked is None:
        try:
            info = load_elf(source, name=label, cfi=False)
        except ElfError as exc:
            results = [FileResult(label) for _ in profiles]
            for r in results:
                r.error = exc.message
            return results
    else:
        info = walked.info
    if info.e_type == "ET_REL":
        return [check_elf(source, path=label, options=consumer_options(p)) for p in profiles]
    if walked is None:
        quiet = Options(disable=set(GROUPS))  # the walk reads and emits nothing
        walks: list[tuple[Header | None, Sequence[tuple[int, int, int]]] | None] = []
        for sec in info.sections:
            if sec.nobits:
                walks.append(None)
                continue
            ctx = SectionContext(label, sec.name, sec.vma, sec.data, quiet.enabled,
                                 quiet.severity_for)
            walks.append((check_section(ctx) if sec.data else None, ctx.ranges))
        walked = Walked(info, walks)
    out = []
    for profile in profiles:
        options = consumer_options(profile)
        result = FileResult(label)
        for sec, w in zip(info.sections, walked.sections, strict=True):
            if w is None:
                result.sections.append(SectionSummary(sec.name, sec.vma, 0, nobits=True))
                continue
            header, ranges = w
            sev_for = options.severity_for
            if sec.segment is not None and not reads_segment(profile):
                sev_for = _below_error(sev_for)
            ctx = SectionContext(label, sec.name, sec.vma, sec.data, options.enabled, sev_for,
                                 ranges=ranges)
            if header is not None:
                check_consumer(ctx, profile, header, info)
            ctx.finish()
            result.findings.extend(ctx.findings)
            result.sections.append(_summary(sec.name, sec.vma, sec.data, header))
        result.eh_frame_size = info.facts.eh_frame_size
        findings = name_functions(result.findings, info.symbols)
        result.findings = with_effects(_capped(findings, label), profile)
        out.append(result)
    return out


def _below_error(severity_for: Callable[[Rule, Severity], Severity | None]
                 ) -> Callable[[Rule, Severity], Severity | None]:
    """A profile's severities for a segment its reader never reads: errors become warnings
    (shown, and not counted against that reader)."""
    def sev(rule: Rule, severity: Severity) -> Severity | None:
        s = severity_for(rule, severity)
        return Severity.WARNING if s == Severity.ERROR else s
    return sev


def name_functions(findings: list[Finding], symbols: Sequence[FuncSymbol]) -> list[Finding]:
    """Set Location.function for findings that carry an FDE start PC: the sized function
    symbol containing it (aliases share a start, so a few before the nearest are tried)."""
    if not any(f.location.pc is not None for f in findings) or not symbols:
        return findings
    if isinstance(symbols, FuncSymbols):  # the table sorted only where the PCs need it
        pcs = [f.location.pc for f in findings
               if f.location.pc is not None and f.location.function is None]
        names = dict(zip(pcs, symbols.names_at(pcs), strict=True))
        return [replace(f, location=replace(f.location, function=names[f.location.pc]))
                if f.location.pc is not None and f.location.function is None
                and names[f.location.pc] is not None else f for f in findings]
    starts = addresses(symbols)
    out = []
    for f in findings:
        pc = f.location.pc
        if pc is not None and f.location.function is None:
            k = bisect_right(starts, pc) - 1
            for j in range(k, max(k - 8, -1), -1):
                sym = symbols[j]
                if sym.addr <= pc < sym.addr + max(sym.size, 1):
                    f = replace(f, location=replace(f.location, function=sym.name))
                    break
        out.append(f)
    return out


def _capped(findings: list[Finding], label: str) -> list[Finding]:
    """At most MAX_PER_FILE findings, and one saying how many were not kept: those not
    waived first, the worst first, so a waived finding never takes the place of one that
    counts for --fail-on."""
    if len(findings) <= MAX_PER_FILE:
        return findings
    kept = sorted(findings, key=lambda f: (f.waived is not None, -f.severity))[:MAX_PER_FILE]
    order = {id(f): i for i, f in enumerate(findings)}
    kept.sort(key=lambda f: order[id(f)])
    dropped = len(findings) - MAX_PER_FILE
    waived = sum(f.waived is not None for f in findings) - sum(
        f.waived is not None for f in kept)
    kept.append(Finding(elf_rules.CAPPED.id, elf_rules.CAPPED.severity,
                        f"{plural(dropped, 'more finding')} in this file not shown "
                        f"(at most {MAX_PER_FILE} per file)"
                        + (f", {waived} of them waived" if waived else ""), Location(label)))
    return kept
