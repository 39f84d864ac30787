"""The safety rules every archive reader obeys, in one place.

Archives are never extracted: members are read one at a time, into memory or, above
`Limits.spill_bytes`, into a private temporary file (spill.py).
What is still checked, because a hostile package is exactly what a gate sees:

- member names: no absolute paths, no `..` that climbs out of the archive root,
  no member reached through a symlink member (the classic `link -> /etc`,
  `link/passwd` pair), no hard link to a target outside the archive;
- size: the uncompressed bytes read from one archive (including every nested
  layer, and the holes of sparse tar members) and the number of members are
  bounded, so a compression bomb or a million-entry archive stops with a clear
  error instead of filling memory or disk; member paths are at most 4096 bytes;
- nesting: archives inside archives are opened to `Limits.max_depth` layers;
- symlinks, hard links, devices, FIFOs and directories are never read (they
  hold no ELF bytes of their own) and are counted as skipped.
"""

from __future__ import annotations

import io
import posixpath
import struct
from collections.abc import Iterator

from ..errors import SfcheckError
from ..record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import BinaryIO, Literal

    EntryType = Literal["file", "dir", "symlink", "hardlink", "other"]

GiB = 1 << 30

# Decompression and container errors that mean "this archive is corrupt or cut short".
# Readers translate them into ArchiveError; anything else is a bug in sfcheck.
CORRUPT_ERRORS: tuple[type[BaseException], ...] = (
    EOFError, OSError, ValueError, KeyError, IndexError, UnicodeDecodeError, OverflowError,
    struct.error)


class Entry(Record):
    """One member of an archive layer, as a reader yields it."""

    __slots__ = ("name", "type", "stream", "linkname")

    def __init__(self, name: str, type: EntryType,  # noqa: A002
                 stream: BinaryIO | None = None, linkname: str = "") -> None:
        self.name = name  # as stored in the archive
        self.type = type
        self.stream = stream  # a file's bytes; valid only until the next entry
        self.linkname = linkname


Entries = Iterator[Entry]


class ArchiveError(SfcheckError):
    """An archive that cannot or must not be read; the message says which and why."""


class Limits(Record, frozen=True):
    __slots__ = ("max_bytes", "max_members", "max_depth", "spill_bytes")

    def __init__(self, max_bytes: int = 8 * GiB, max_members: int = 1_000_000,
                 max_depth: int = 4, spill_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes  # uncompressed bytes read from one top-level input
        self.max_members = max_members  # members (of every nested layer) in one top-level input
        # Archive layers opened: package -> tar -> .a -> member is 3; an archive found
        # deeper is an error on that member (never a quiet "not ELF" skip).
        self.max_depth = max_depth
        # A member larger than this is written to a temporary file (memory stays bounded).
        self.spill_bytes = spill_bytes
        if min(max_bytes, max_members, max_depth, spill_bytes) <= 0:
            raise ValueError("archive limits must be positive")


class Budget:
    """What one top-level input may still consume; shared by its nested layers."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.bytes = 0
        self.members = 0

    def take_bytes(self, n: int) -> None:
        if self.bytes + n > self.limits.max_bytes:
            raise ArchiveError(
                f"archive expands to more than {self.limits.max_bytes} bytes "
                "(decompression bomb?); raise --max-archive-bytes if it is genuine")
        self.bytes += n

    def take_member(self) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise ArchiveError(
                f"archive has more than {self.limits.max_members} members; "
                "raise --max-archive-members if it is genuine")


class BoundedStream(io.RawIOBase):
    """A read-only stream over a decompressor that charges every byte to a Budget.

    The charge is made before the read, so a single huge `read(n)` (tarfile reads
    a whole pax header at once) is refused without being allocated.
    """

    def __init__(self, inner: io.BufferedIOBase | io.RawIOBase, budget: Budget) -> None:
        self._inner = inner
        self._budget = budget

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            chunks = []
            while chunk := self.read(1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        room = self._budget.limits.max_bytes - self._budget.bytes
        data = self._inner.read(min(size, room + 1))
        self._budget.take_bytes(len(data))
        return data

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


MAX_MEMBER_PATH = 4096  # bytes in a member path (Linux PATH_MAX); longer is refused


def _inside(path: str) -> str | None:
    """`path` normalised relative to the archive root, or None if it climbs out."""
    norm = posixpath.normpath(path)
    if norm == ".":
        return ""
    if norm == ".." or norm.startswith("../"):
        return None
    return norm


_LINK = ""  # trie key marking a symlink member (no path component is empty after normpath)


class PathGuard:
    """Checks member names of one archive layer against traversal and symlink tricks.

    Symlink members are kept in a trie of path components, so checking a name costs one
    step per component (linear in its length), whatever the number of links.
    """

    def __init__(self) -> None:
        self._links: dict[str, dict] = {}  # component -> subtree; _LINK marks a symlink

    def check(self, name: str) -> str:
        """The normalised name of a member; ArchiveError if it is hostile."""
        if len(name) > MAX_MEMBER_PATH:
            raise ArchiveError(f"member path is longer than {MAX_MEMBER_PATH} bytes: "
                               f"{name[:80]}...")
        if "\x00" in name:
            raise ArchiveError(f"member name contains a NUL byte: {name!r}")
        if name.startswith("/"):
            raise ArchiveError(f"member has an absolute path: {name}")
        norm = _inside(name)
        if norm is None:
            raise ArchiveError(f"member path escapes the archive root: {name}")
        parts = norm.split("/")
        node = self._links
        for i, part in enumerate(parts[:-1]):
            node = node.get(part)  # type: ignore[assignment]
            if node is None:
                break
            if _LINK in node:
                raise ArchiveError(
                    f"member {name} lies under symlink member {'/'.join(parts[:i + 1])} "
                    "(symlink escape)")
        return norm

    def symlink(self, name: str) -> None:
        """Remember a symlink member; it is never followed, and nothing may lie under it."""
        node = self._links
        for part in self.check(name).split("/"):
            node = node.setdefault(part, {})
        node[_LINK] = {}

    def hardlink(self, name: str, target: str) -> None:
        self.check(name)
        if target.startswith("/") or _inside(target) is None:
            raise ArchiveError(f"hard link {name} points outside the archive: {target}")
