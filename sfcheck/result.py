"""The result model every renderer reads: findings with rule, severity and location."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

# Text taken from the input (symbol, section and member names) is cut to this many
# characters in findings, with CUT_MARK after it: a hostile name must not make every
# finding that carries it megabytes long.
MAX_TEXT = 256
CUT_MARK = "...[cut]"


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """`text`, or its first `limit` characters and CUT_MARK."""
    return text if len(text) <= limit else text[:limit] + CUT_MARK


class Severity(IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        return cls[text.upper()]


@dataclass(frozen=True, slots=True)
class Location:
    """Where a finding is: file, then section offset, FDE and FRE (each optional)."""

    path: str
    section: str | None = None
    offset: int | None = None  # byte offset in the section
    fde: int | None = None
    pc: int | None = None  # the FDE's function start
    fre: int | None = None
    fre_pc: int | None = None
    function: str | None = None  # symbol of the FDE's function, when a scan looked it up

    def describe(self) -> str:
        parts = []
        if self.section is not None:
            parts.append(self.section + (f"+{self.offset:#x}" if self.offset is not None else ""))
        if self.fde is not None:
            parts.append(f"FDE {self.fde}" + (f" (pc {self.pc:#x})" if self.pc is not None
                                               else ""))
        if self.fre is not None:
            parts.append(f"FRE {self.fre}" + (f" (pc {self.fre_pc:#x})" if self.fre_pc is not None
                                               else ""))
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    severity: Severity
    message: str
    location: Location
    waived: str | None = None  # the waiver's reason, if a waiver covers this finding

    def text(self) -> str:
        where = self.location.describe()
        return f"{self.location.path}: {self.severity}: [{self.rule}] " + (
            f"{where}: {self.message}" if where else self.message)


@dataclass(slots=True)
class SectionSummary:
    name: str
    vma: int
    size: int
    version: int | None = None
    abi: int | None = None
    num_fdes: int | None = None
    num_fres: int | None = None
    nobits: bool = False  # SHT_NOBITS (a separate debug file): a header without bytes


@dataclass(slots=True)
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    sections: list[SectionSummary] = field(default_factory=list)
    error: str | None = None  # the file could not be read at all
    package: str | None = None  # for an archive member: the archive (as named on input)
    member: str | None = None  # ... and the member's path inside it

    def worst(self) -> Severity | None:
        """The highest severity among findings not waived."""
        return max((f.severity for f in self.findings if f.waived is None), default=None)


@dataclass(slots=True)
class Skipped:
    """Inputs a scan passed over without checking."""

    non_elf: int = 0  # regular files or members that are neither ELF nor an archive
    links: int = 0  # symlinks and hard links (never followed inside a tree or archive)
    special: int = 0  # devices, FIFOs, sockets


@dataclass(slots=True)
class Result:
    """A whole scan: every checked file in input order, and what was passed over."""

    files: list[FileResult] = field(default_factory=list)
    skipped: Skipped = field(default_factory=Skipped)
    # Waivers that covered no finding, each as Waiver.as_dict() (sfcheck.waivers).
    unused_waivers: list[dict[str, object]] = field(default_factory=list)
