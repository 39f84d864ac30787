"""Turn one input file into the ELF images to check: itself, or an archive's ELF members.

Labels name where an image came from: `pkg.deb:./usr/lib/x.so` for a package member,
`libfoo.a:foo.o` for a static-library member, and `pkg.deb:./usr/lib/libfoo.a:foo.o`
when a library inside a package is opened too. A static library may hold two members
of the same name (ar keeps both, the linker uses both): the second is `foo.o#2`.

Archives inside archives (a `.a` or tar in a package, a package in a tar) are opened to
`Limits.max_depth` layers; one found deeper is an error on that member, so a gate fails
instead of passing files it never saw.
"""

from __future__ import annotations

import io
import tarfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ..fileio import InputFileError, open_regular
from ..result import Skipped
from .ar import ar_entries
from .compress import DECOMPRESS_ERRORS, sniff
from .deb import deb_entries
from .limits import CORRUPT_ERRORS, ArchiveError, Budget, Entries, Limits, PathGuard
from .rpm import rpm_entries
from .sniff import HEAD_SIZE, TAR_SUFFIXES, classify
from .spill import SpillDir
from .tar import tar_entries

READERS: dict[str, Callable[[BinaryIO, Budget], Entries]] = {
    "deb": deb_entries, "rpm": rpm_entries, "ar": ar_entries, "tar": tar_entries}
ARCHIVE_KINDS = tuple(READERS)
_CHUNK = 1 << 20


@dataclass(slots=True)
class Member:
    """One ELF image found inside an archive, or a member that could not be opened."""

    label: str  # package:member, what reports print as the path
    package: str  # the input file as named on the command line (or found in a directory)
    member: str  # the path inside the package (nested layers joined with ':')
    data: bytes | None  # the image, when small enough to hold in memory
    spill: str | None = None  # ... or a temporary file holding it (the caller removes it)
    error: str | None = None  # why this member was not checked (nested too deep)


def archive_members(path: str, kind: str, limits: Limits, skipped: Skipped,
                    spill: SpillDir | None = None) -> Iterator[Member]:
    """The ELF members of the archive file `path`; ArchiveError says why one is refused.

    With `spill`, members above `limits.spill_bytes` come as temporary files in it;
    without, every member is held in memory.
    """
    try:
        fd, _ = open_regular(path)
    except InputFileError as exc:
        raise ArchiveError(exc.message) from None
    with open(fd, "rb") as f:
        yield from stream_members(f, path, kind, limits, skipped, spill)


def stream_members(stream: BinaryIO, path: str, kind: str, limits: Limits, skipped: Skipped,
                   spill: SpillDir | None = None) -> Iterator[Member]:
    """archive_members of an archive already open as a seekable `stream` named `path`."""
    budget = Budget(limits)
    try:
        yield from _expand(READERS[kind](stream, budget), path, "", budget, skipped, 1, spill,
                           kind)
    except ArchiveError:
        raise
    except tarfile.TarError as exc:
        raise ArchiveError(f"malformed or truncated tar data: {exc}") from None
    except DECOMPRESS_ERRORS + CORRUPT_ERRORS as exc:
        what = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ArchiveError(f"malformed or truncated {kind}: {type(exc).__name__}: {what}") \
            from None


def _member_kind(head: bytes, name: str) -> str:
    """What a member is. Tar inside an archive is recognised by its ustar magic, or by a
    tar name on a compressed stream (`x.tar.gz`); any other name is not trusted alone."""
    kind = classify(head, "")
    if kind == "other" and name.lower().endswith(TAR_SUFFIXES) and sniff(head) != "none":
        return "tar"
    return kind


def _read(head: bytes, stream: BinaryIO, limit: int,
          spill: SpillDir | None) -> tuple[bytes | None, str | None]:
    """A member's bytes in memory, or (above `limit`, with a spill directory) in a file.
    Read in chunks, so a spilled member never holds more than `limit` bytes here."""
    if spill is None:
        return head + stream.read(), None
    chunks, total = [head], len(head)
    while total <= limit:
        chunk = stream.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks), None
        chunks.append(chunk)
        total += len(chunk)
    return None, spill.write(chunks, stream)


def _expand(entries: Entries, package: str, prefix: str, budget: Budget,
            skipped: Skipped, depth: int, spill: SpillDir | None,
            layer_kind: str) -> Iterator[Member]:
    guard = PathGuard()
    seen: Counter[str] = Counter()  # ar member names (duplicates are told apart)
    limits = budget.limits
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
        name = entry.name
        if layer_kind == "ar":
            seen[name] += 1
            if seen[name] > 1:
                name = f"{name}#{seen[name]}"
        head = entry.stream.read(HEAD_SIZE)
        kind = _member_kind(head, entry.name)
        member = prefix + name
        label = f"{package}:{member}"
        if kind == "elf":
            data, path = _read(head, entry.stream, limits.spill_bytes, spill)
            yield Member(label, package, member, data, path)
        elif kind in READERS and depth >= limits.max_depth:
            yield Member(label, package, member, None, error=(
                f"{kind} archive nested deeper than {limits.max_depth} archive layers: "
                "not opened, its members are not checked"))
        elif kind in READERS:
            data, path = _read(head, entry.stream, limits.spill_bytes, spill)
            inner: BinaryIO
            inner = io.BytesIO(data) if path is None else open(path, "rb")  # noqa: SIM115
            try:
                yield from _expand(READERS[kind](inner, budget), package, member + ":",
                                   budget, skipped, depth + 1, spill, kind)
            finally:
                inner.close()
                if path is not None and spill is not None:
                    spill.remove(path)
        else:
            skipped.non_elf += 1
