"""Check files or bytes: the Python API behind `sfcheck FILE` and every renderer."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import rules  # noqa: F401  (registers every rule)
from .elf import ElfError, load_elf
from .format.model import Header
from .profiles import PROFILES
from .result import FileResult, Finding, Location, SectionSummary, Severity
from .rules import elf as E
from .rules.consumer import check_consumer
from .rules.context import SectionContext
from .rules.defect import check_section_defects
from .rules.registry import GROUPS, RULES, Rule
from .rules.section import check_section
from .rules.semantic import cross_check


@dataclass
class Options:
    enable: set[str] = field(default_factory=set)  # rule IDs or groups switched on
    disable: set[str] = field(default_factory=set)  # rule IDs or groups switched off
    require_sframe: bool = False
    profile: str = "strict"  # a consumer profile name (sfcheck.profiles)

    def enabled(self, rule: Rule) -> bool:
        if rule.id in self.enable:
            return True
        if rule.id in self.disable:
            return False
        return rule.group in self.enable or rule.group not in self.disable

    def validate(self) -> None:
        for name in self.enable | self.disable:
            if name not in RULES and name not in GROUPS:
                raise ValueError(f"unknown rule or group: {name}")
        if self.profile not in PROFILES:
            raise ValueError(f"unknown profile: {self.profile} (one of {', '.join(PROFILES)})")

    def severity_for(self, rule: Rule, severity: Severity) -> Severity | None:
        """The selected profile's severity for a finding (None: not reported)."""
        return PROFILES[self.profile].severity(rule.id, severity)


def _summary(name: str, vma: int, data: bytes, header: Header | None) -> SectionSummary:
    s = SectionSummary(name, vma, len(data))
    if header is not None:
        s.version, s.abi = header.version, header.abi
        s.num_fdes, s.num_fres = header.num_fdes, header.num_fres
    return s


def check_section_bytes(data: bytes, path: str = "<bytes>", vma: int = 0,
                        name: str = ".sframe", options: Options | None = None) -> FileResult:
    """Check one bare SFrame section (no ELF context)."""
    options = options or Options()
    ctx = SectionContext(path, name, vma, bytes(data), options.enabled, options.severity_for)
    result = FileResult(path)
    if not data:
        ctx.emit_as(E.EMPTY, Severity.WARNING, f"{name} has size 0")
        header = None
    else:
        header = check_section(ctx)
        if header is not None:
            check_consumer(ctx, PROFILES[options.profile], header)
        check_section_defects(ctx, header)
    ctx.finish()
    result.findings = ctx.findings
    result.sections.append(_summary(name, vma, data, header))
    return result


def check_elf(source: str | os.PathLike[str] | bytes, path: str | None = None,
              options: Options | None = None) -> FileResult:
    """Check every SFrame section of an ELF file; unreadable files set `error`."""
    options = options or Options()
    label = path or (os.fspath(source) if not isinstance(source, bytes) else "<bytes>")
    result = FileResult(label)
    # The .eh_frame cross-check needs its inputs prepared while the file is parsed.
    cfi = any(options.enabled(r) for r in RULES.values() if r.group in ("semantic", "defect"))
    try:
        info = load_elf(source, name=label, cfi=cfi)
    except ElfError as exc:
        result.error = exc.message
        return result
    if not info.sections:
        rule = E.NO_SFRAME
        sev = Severity.ERROR if options.require_sframe else rule.severity
        if options.enabled(rule) or options.require_sframe:
            result.findings.append(Finding(rule.id, sev, "no SFrame section", Location(label)))
        return result
    ctxs, headers = [], []
    for sec in info.sections:
        ctx = SectionContext(label, sec.name, sec.vma, sec.data, options.enabled,
                             options.severity_for, relocatable=info.e_type == "ET_REL")
        header = check_section(ctx) if sec.data else None
        if header is not None:
            check_consumer(ctx, PROFILES[options.profile], header, info)
        check_section_defects(ctx, header, info)
        E.check_elf_section(ctx, info, sec, header)
        E.check_function_ranges(ctx, info, ctx.ranges)
        ctxs.append(ctx)
        headers.append(header)
        result.sections.append(_summary(sec.name, sec.vma, sec.data, header))
    if cfi:
        cross_check(ctxs, headers, info)
    for ctx in ctxs:
        ctx.finish()
        result.findings.extend(ctx.findings)
    return result
