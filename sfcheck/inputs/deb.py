"""Debian binary packages: an ar archive holding debian-binary, control.tar.* and data.tar.*.

Only data.tar (the files the package installs) is scanned; its compression (gzip, xz,
zstd, bzip2 or none) is taken from the stream's magic, not trusted from the name.
"""

from __future__ import annotations

from typing import BinaryIO

from .ar import ar_entries
from .limits import ArchiveError, Budget, Entries
from .tar import tar_entries


def deb_entries(stream: BinaryIO, budget: Budget) -> Entries:
    members = ar_entries(stream, budget)
    first = next(members, None)
    if first is None or first.name != "debian-binary" or first.stream is None:
        raise ArchiveError("not a Debian package: first member is not debian-binary")
    version = first.stream.read(16)
    if not version.startswith(b"2."):
        raise ArchiveError(f"unsupported .deb format version {version.strip()!r}")
    for entry in members:
        if entry.name.startswith("data.tar"):
            assert entry.stream is not None
            yield from tar_entries(entry.stream, budget)
            return
    raise ArchiveError("Debian package has no data.tar member (truncated?)")
