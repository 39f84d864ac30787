"""The result model every renderer reads: findings with rule, severity and location."""

from __future__ import annotations

from enum import IntEnum

from .record import Record

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


class Location(Record, frozen=True):
    """Where a finding is: file, then section offset, FDE and FRE (each optional)."""

    __slots__ = ("path", "section", "offset", "fde", "pc", "fre", "fre_pc", "function")

    def __init__(self, path: str, section: str | None = None, offset: int | None = None,
                 fde: int | None = None, pc: int | None = None, fre: int | None = None,
                 fre_pc: int | None = None, function: str | None = None) -> None:
        self.path = path
        self.section = section
        self.offset = offset  # byte offset in the section
        self.fde = fde
        self.pc = pc  # the FDE's function start
        self.fre = fre
        self.fre_pc = fre_pc
        self.function = function  # symbol of the FDE's function, when a scan looked it up

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


class Finding(Record, frozen=True):
    __slots__ = ("rule", "severity", "message", "location", "waived", "effect")

    def __init__(self, rule: str, severity: Severity, message: str, location: Location,
                 waived: str | None = None, effect: str | None = None) -> None:
        self.rule = rule
        self.severity = severity
        self.message = message
        self.location = location
        self.waived = waived  # the waiver's reason, if a waiver covers this finding
        # Under a consumer profile, what its reader does (sfcheck.effects); None: strict.
        self.effect = effect

    def text(self) -> str:
        where = self.location.describe()
        return f"{self.location.path}: {self.severity}: [{self.rule}] " + (
            f"{where}: {self.message}" if where else self.message)


class SectionSummary(Record):
    __slots__ = ("name", "vma", "size", "version", "abi", "num_fdes", "num_fres", "nobits")

    def __init__(self, name: str, vma: int, size: int, version: int | None = None,
                 abi: int | None = None, num_fdes: int | None = None,
                 num_fres: int | None = None, nobits: bool = False) -> None:
        self.name = name
        self.vma = vma
        self.size = size
        self.version = version
        self.abi = abi
        self.num_fdes = num_fdes
        self.num_fres = num_fres
        self.nobits = nobits  # SHT_NOBITS (a separate debug file): a header without bytes


class FileResult(Record, fields=("path", "findings", "sections", "error", "package",
                                  "member")):
    __slots__ = ("path", "findings", "sections", "error", "package", "member", "waivers_used",
                 "eh_frame_size")

    def __init__(self, path: str, findings: list[Finding] | None = None,
                 sections: list[SectionSummary] | None = None, error: str | None = None,
                 package: str | None = None, member: str | None = None) -> None:
        self.path = path
        self.findings = [] if findings is None else findings
        self.sections = [] if sections is None else sections
        self.error = error  # the file could not be read at all
        self.package = package  # for an archive member: the archive (as named on input)
        self.member = member  # ... and the member's path inside it
        # Indices of the waivers that covered a finding of this file, including findings
        # the per-file cap then left out (sfcheck.waivers: such a waiver is not unused).
        self.waivers_used: set[int] = set()
        # sh_size of .eh_frame in a file with SFrame data (None: none, or not read), the
        # figure distros weigh .sframe against (the .sframe sizes are in `sections`)
        self.eh_frame_size: int | None = None

    def worst(self) -> Severity | None:
        """The highest severity among findings that count: not waived, and not one the
        profile's reader never looks at (effect "nothing", sfcheck.effects)."""
        return max((f.severity for f in self.findings
                    if f.waived is None and f.effect != "nothing"), default=None)


def scan_text(f: Finding) -> str:
    """A scan-level finding as a report line: `sfcheck: SEVERITY: [RULE] message`."""
    return f"sfcheck: {f.severity}: [{f.rule}] {f.message}"


class Skipped(Record):
    """Inputs a scan passed over without checking."""

    __slots__ = ("non_elf", "links", "special")

    def __init__(self, non_elf: int = 0, links: int = 0, special: int = 0) -> None:
        self.non_elf = non_elf  # regular files or members that are neither ELF nor an archive
        self.links = links  # symlinks and hard links (never followed inside a tree or archive)
        self.special = special  # devices, FIFOs, sockets


SCAN_PATH = ""  # Location.path of a finding about the scan as a whole (Result.findings)


class Result(Record):
    """A whole scan: every checked file in input order, what was passed over, findings
    about the files together (e.g. SFrame versions mixed, located at SCAN_PATH), and the
    consumer profile it ran under."""

    __slots__ = ("files", "skipped", "unused_waivers", "findings", "profile")

    def __init__(self, files: list[FileResult] | None = None, skipped: Skipped | None = None,
                 unused_waivers: list[dict[str, object]] | None = None,
                 findings: list[Finding] | None = None, profile: str | None = None) -> None:
        self.files = [] if files is None else files
        # The consumer profile the scan ran under (None: strict): findings carry its effects.
        self.profile = profile
        self.skipped = Skipped() if skipped is None else skipped
        self.findings = [] if findings is None else findings
        # Waivers that covered no finding, each as Waiver.as_dict() (sfcheck.waivers).
        self.unused_waivers = [] if unused_waivers is None else unused_waivers
