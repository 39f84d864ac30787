"""The project's own exception types.

Every failure caused by input data is a SfcheckError (these, or a subclass beside the
reader that raises it: dwarf's LebError, EhFrameError and CfiError, procfs.ProcError,
filesnap.SnapshotError, ...), so callers (the CLI, the fuzz harnesses) can tell "bad
input" from "bug in sfcheck". The only other exception classes are signals that never
leave their module (a work bound reached, a step that cannot be taken) and the reader
models' outcomes; tests/test_error_model.py lists them and fails on any new class that is
neither.
"""

from __future__ import annotations


class SfcheckError(Exception):
    """Base class of every error sfcheck raises on purpose."""


class DecodeError(SfcheckError):
    """SFrame bytes that cannot be decoded, with the exact place that failed."""

    def __init__(self, message: str, offset: int | None = None,
                 structure: str | None = None, field: str | None = None) -> None:
        self.message = message
        self.offset = offset
        self.structure = structure
        self.field = field
        # The located text is built by __str__ when asked for: the checker catches and
        # reports many of these per damaged section, most never printed.
        super().__init__(message, offset, structure, field)

    def __str__(self) -> str:
        where = []
        if self.offset is not None:
            where.append(f"offset {self.offset:#x}")
        if self.structure:
            where.append(self.structure + (f".{self.field}" if self.field else ""))
        return f"{self.message} ({', '.join(where)})" if where else self.message


class EncodeError(SfcheckError):
    """A model that cannot be written (a value does not fit its field)."""


class ElfError(SfcheckError):
    """An ELF file that cannot be read well enough to find its SFrame data."""

    def __init__(self, message: str, path: str | None = None) -> None:
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)
