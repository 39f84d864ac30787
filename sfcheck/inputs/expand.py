"""Turn one input file into the ELF images to check: itself, or an archive's ELF members.

Labels name where an image came from: `pkg.deb:./usr/lib/x.so` for a package member,
`libfoo.a:foo.o` for a static-library member, and `pkg.deb:./usr/lib/libfoo.a:foo.o`
when a library inside a package is opened too.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ..result import Skipped
from .ar import ar_entries
from .compress import DECOMPRESS_ERRORS
from .deb import deb_entries
from .limits import CORRUPT_ERRORS, ArchiveError, Budget, Entries, Limits, PathGuard
from .rpm import rpm_entries
from .sniff import HEAD_SIZE, classify
from .tar import tar_entries

READERS: dict[str, Callable[[BinaryIO, Budget], Entries]] = {
    "deb": deb_entries, "rpm": rpm_entries, "ar": ar_entries, "tar": tar_entries}
ARCHIVE_KINDS = tuple(READERS)


@dataclass(slots=True)
class Member:
    """One ELF image found inside an archive."""

    label: str  # package:member, what reports print as the path
    package: str  # the input file as named on the command line (or found in a directory)
    member: str  # the path inside the package (nested layers joined with ':')
    data: bytes


def archive_members(path: str, kind: str, limits: Limits,
                    skipped: Skipped) -> Iterator[Member]:
    """The ELF members of the archive file `path`; ArchiveError says why one is refused."""
    budget = Budget(limits)
    try:
        with open(path, "rb") as f:
            yield from _expand(READERS[kind](f, budget), path, "", budget, skipped, 1)
    except ArchiveError:
        raise
    except tarfile.TarError as exc:
        raise ArchiveError(f"malformed or truncated tar data: {exc}") from None
    except DECOMPRESS_ERRORS + CORRUPT_ERRORS as exc:
        what = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ArchiveError(f"malformed or truncated {kind}: {type(exc).__name__}: {what}") \
            from None


def _expand(entries: Entries, package: str, prefix: str, budget: Budget,
            skipped: Skipped, depth: int) -> Iterator[Member]:
    guard = PathGuard()
    for entry in entries:
        if entry.type == "symlink":
            guard.symlink(entry.name)
            skipped.links += 1
            continue
        if entry.type == "hardlink":
            guard.hardlink(entry.name, entry.linkname)
            skipped.links += 1
            continue
        guard.check(entry.name)
        if entry.type == "dir":
            continue
        if entry.type == "other" or entry.stream is None:
            skipped.special += 1
            continue
        head = entry.stream.read(8)
        kind = classify(head, "")
        member = prefix + entry.name
        if kind == "elf":
            yield Member(f"{package}:{member}", package, member, head + entry.stream.read())
        elif kind in ("deb", "rpm", "ar") and depth < budget.limits.max_depth:
            data = head + entry.stream.read()
            inner = READERS[classify(data[:HEAD_SIZE], "")](io.BytesIO(data), budget)
            yield from _expand(inner, package, member + ":", budget, skipped, depth + 1)
        else:
            skipped.non_elf += 1
