"""tar archives (plain or compressed; also a .deb's data.tar), read as a stream with tarfile."""

from __future__ import annotations

import tarfile
from typing import TYPE_CHECKING, BinaryIO

from .compress import decompressed, sniff
from .limits import Budget, Entries, Entry

if TYPE_CHECKING:
    from .limits import EntryType


def _type(info: tarfile.TarInfo) -> EntryType:
    if info.isreg():
        return "file"
    if info.isdir():
        return "dir"
    if info.issym():
        return "symlink"
    if info.islnk():
        return "hardlink"
    return "other"  # character/block devices, FIFOs: never read


def tar_entries(raw: BinaryIO, budget: Budget) -> Entries:
    """Entries of a tar stream, compressed with gzip/xz/zstd/bzip2 or not (sniffed)."""
    head = raw.read(8)
    raw.seek(0)
    stream = decompressed(raw, sniff(head), budget)
    # Stream mode ("r|"): one forward pass, no seeking, nothing written to disk.
    with tarfile.open(fileobj=stream, mode="r|") as tf:
        while True:
            info = tf.next()
            if info is None:
                return
            tf.members.clear()  # stream mode keeps every TarInfo otherwise
            budget.take_member()
            kind = _type(info)
            if info.sparse is not None:
                # tarfile fills a sparse member's holes itself, so they never pass through
                # the bounded stream: charge the expanded size (realsize) before reading.
                stored = sum(size for _, size in info.sparse)
                budget.take_bytes(max(0, info.size - stored))
            data = tf.extractfile(info) if kind == "file" else None
            yield Entry(info.name, kind, data, info.linkname)
