"""The result model every renderer reads: findings with rule, severity and location."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


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


@dataclass(slots=True)
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    sections: list[SectionSummary] = field(default_factory=list)
    error: str | None = None  # the file could not be read at all

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)


@dataclass(slots=True)
class Result:
    files: list[FileResult] = field(default_factory=list)
