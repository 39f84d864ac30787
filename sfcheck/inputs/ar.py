"""`ar` archives (static libraries `.a`, and the outer layer of `.deb`), read with arpy."""

from __future__ import annotations

from typing import BinaryIO

import arpy

from .limits import ArchiveError, Budget, Entries, Entry
from .sniff import AR_MAGIC, THIN_MAGIC

_FILE_TYPES = (arpy.HEADER_NORMAL, arpy.HEADER_GNU, arpy.HEADER_BSD)


def _name(raw: bytes | str) -> str:
    return raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw


def ar_entries(stream: BinaryIO, budget: Budget) -> Entries:
    """Every regular member of an ar archive, in archive order (the symbol table and the
    GNU long-name table are not members)."""
    head = stream.read(len(AR_MAGIC))
    if head == THIN_MAGIC:
        raise ArchiveError("thin archive: its members are files outside the archive; "
                           "scan those files instead")
    if head != AR_MAGIC:
        raise ArchiveError("not an ar archive (bad global header)")
    stream.seek(0)
    try:
        archive = arpy.Archive(fileobj=stream)
        while True:
            header = archive.read_next_header()
            if header is None:
                return
            # arpy takes the decimal size field as is; a negative one would move the next
            # header backwards (and loop), so stop here, before arpy reads on.
            if header.size < 0:
                raise ArchiveError(f"ar member header at {header.offset:#x} has a negative size")
            if header.type not in _FILE_TYPES:
                continue
            budget.take_member()
            budget.take_bytes(header.size)
            # Reads raise arpy.ArchiveAccessError (an OSError) when the data is cut short.
            yield Entry(_name(header.name), "file", arpy.ArchiveFileData(archive, header))
    except arpy.ArchiveFormatError as exc:
        raise ArchiveError(f"malformed or truncated ar archive: {exc}") from None
