"""RPM packages: lead, signature header, header, then a compressed cpio payload.

Only two header tags are needed (the payload's format and compressor), so the header is
read here with bounds checked against the file, not by a general RPM library: a hostile
header's counts and sizes can then cost no more than the bytes that exist. The payload
goes through the bounded decompressor of compress.py and the small cpio reader below,
which checks each field before it is used.
"""

from __future__ import annotations

import io
import struct
from typing import BinaryIO

from .compress import by_name, decompressed
from .limits import ArchiveError, Budget, Entries, Entry
from .sniff import RPM_MAGIC

_LEAD_SIZE = 96
_HEADER_MAGIC = b"\x8e\xad\xe8"
_HEADER_MAX = 256 << 20  # rpm's own limit on one header's index + data
_CPIO_HEADER = 110
_CPIO_NAME_MAX = 4096
_S_IFMT, _S_IFREG, _S_IFDIR, _S_IFLNK = 0o170000, 0o100000, 0o040000, 0o120000
_TAG_PAYLOADFORMAT, _TAG_PAYLOADCOMPRESSOR = 1124, 1125
_STRING_TYPE = 6
_TAG_VALUE_MAX = 64  # "cpio", "zstd", ...: longer is not a value rpm writes
_INDEX_CHUNK = 4096  # index entries read at a time


def _header_end(stream: BinaryIO, start: int, size: int, align: bool) -> tuple[int, int]:
    """(number of index entries, end) of the header structure at `start`, checked against
    the file size before anything of it is read."""
    stream.seek(start)
    intro = stream.read(16)
    if len(intro) < 16 or not intro.startswith(_HEADER_MAGIC):
        raise ArchiveError(f"malformed RPM: no header structure at offset {start:#x}")
    nindex, hsize = struct.unpack(">II", intro[8:16])
    length = 16 * nindex + hsize
    if length > _HEADER_MAX or start + 16 + length > size:
        raise ArchiveError(f"malformed or truncated RPM: header at {start:#x} claims "
                           f"{nindex} entries and {hsize} data bytes")
    end = start + 16 + length
    return nindex, end + (-end % 8 if align else 0)


def _string_tags(stream: BinaryIO, start: int, nindex: int, end: int,
                 wanted: set[int]) -> dict[int, str]:
    """The STRING values of the `wanted` tags of the header at `start` (already bounded
    by _header_end): the index is read in chunks, each value checked to lie in the store."""
    store = start + 16 + 16 * nindex
    found: dict[int, tuple[int, int]] = {}
    stream.seek(start + 16)
    for first in range(0, nindex, _INDEX_CHUNK):
        n = min(_INDEX_CHUNK, nindex - first)
        chunk = stream.read(16 * n)
        if len(chunk) < 16 * n:
            raise ArchiveError("truncated RPM header index")
        for tag, kind, offset, _count in struct.iter_unpack(">IIII", chunk):
            if tag in wanted and tag not in found:
                if kind != _STRING_TYPE:
                    raise ArchiveError(f"malformed RPM header: tag {tag} has type {kind}, "
                                       "not a string")
                found[tag] = (offset, kind)
    out = {}
    for tag, (offset, _) in found.items():
        if store + offset >= end:
            raise ArchiveError(f"malformed RPM header: tag {tag} points past the header "
                               f"(offset {offset:#x})")
        stream.seek(store + offset)
        raw = stream.read(min(_TAG_VALUE_MAX + 1, end - store - offset))
        if b"\0" not in raw:
            raise ArchiveError(f"malformed RPM header: tag {tag} is not a short "
                               "NUL-terminated string")
        out[tag] = raw[:raw.index(b"\0")].decode("ascii", "replace")
    return out


def _payload(stream: BinaryIO, budget: Budget) -> tuple[int, str, str]:
    """(payload offset, payload format, compressor) from the headers."""
    size = stream.seek(0, io.SEEK_END)
    stream.seek(0)
    if stream.read(4) != RPM_MAGIC or size < _LEAD_SIZE:
        raise ArchiveError("not an RPM package (bad lead)")
    _, sig_end = _header_end(stream, _LEAD_SIZE, size, align=True)
    nindex, end = _header_end(stream, sig_end, size, align=False)
    budget.take_bytes(end)
    tags = _string_tags(stream, sig_end, nindex, end,
                        {_TAG_PAYLOADFORMAT, _TAG_PAYLOADCOMPRESSOR})
    # rpm's defaults when a (very old) package lacks the tags.
    return end, tags.get(_TAG_PAYLOADFORMAT, "cpio"), tags.get(_TAG_PAYLOADCOMPRESSOR, "gzip")


def _hex(field: bytes, what: str) -> int:
    try:
        return int(field, 16)
    except ValueError:
        raise ArchiveError(f"malformed cpio payload: {what} field {field!r} is not hex") from None


def _cpio_entries(stream: BinaryIO, budget: Budget) -> Entries:
    """newc/crc cpio (magic 070701/070702), the only formats rpm writes for normal files."""
    pos = 0
    while True:
        head = stream.read(_CPIO_HEADER)
        if len(head) < _CPIO_HEADER:
            raise ArchiveError("truncated cpio payload (no TRAILER!!! entry)")
        magic = head[:6]
        if magic == b"07070X":
            raise ArchiveError("cpio payload in rpm's large-file (07070X) format is not supported")
        if magic not in (b"070701", b"070702"):
            raise ArchiveError(f"malformed cpio payload: bad magic {magic!r} at {pos:#x}")
        mode = _hex(head[14:22], "mode")
        filesize = _hex(head[54:62], "filesize")
        namesize = _hex(head[94:102], "namesize")
        if not 1 <= namesize <= _CPIO_NAME_MAX:
            raise ArchiveError(f"malformed cpio payload: name size {namesize} at {pos:#x}")
        name_pad = -(_CPIO_HEADER + namesize) % 4
        name_raw = stream.read(namesize + name_pad)[:namesize]
        if len(name_raw) < namesize:
            raise ArchiveError("truncated cpio payload")
        name = name_raw.rstrip(b"\x00").decode("utf-8", "surrogateescape")
        if name == "TRAILER!!!":
            return
        budget.take_member()
        pad = -filesize % 4
        kind = mode & _S_IFMT
        if kind == _S_IFLNK:
            if filesize > _CPIO_NAME_MAX:
                raise ArchiveError(f"cpio symlink {name} has a {filesize}-byte target")
            target = stream.read(filesize)
            stream.read(pad)
            yield Entry(name, "symlink", None, target.decode("utf-8", "surrogateescape"))
        elif kind == _S_IFREG:
            data = _Window(stream, filesize)
            yield Entry(name, "file", data)
            data.skip_rest()
            if len(stream.read(pad)) < pad:
                raise ArchiveError("truncated cpio payload")
        else:
            if kind != _S_IFDIR and filesize:
                raise ArchiveError(f"cpio entry {name} of type {kind:o} has data")
            yield Entry(name, "dir" if kind == _S_IFDIR else "other")
        pos += _CPIO_HEADER + namesize + name_pad + filesize + pad


class _Window(io.RawIOBase):
    """The next `size` bytes of a stream, as a file; the rest is skipped afterwards."""

    def __init__(self, stream: BinaryIO, size: int) -> None:
        self._stream = stream
        self._left = size

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        n = self._left if size is None or size < 0 else min(size, self._left)
        data = self._stream.read(n)
        if len(data) < n:
            raise ArchiveError("truncated cpio payload: file data cut short")
        self._left -= n
        return data

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def skip_rest(self) -> None:
        while self._left:
            self.read(1 << 20)


def rpm_entries(stream: BinaryIO, budget: Budget) -> Entries:
    offset, fmt, comp = _payload(stream, budget)
    if fmt != "cpio":
        raise ArchiveError(f"unsupported RPM payload format {fmt!r} (only cpio)")
    stream.seek(offset)
    yield from _cpio_entries(decompressed(stream, by_name(comp), budget), budget)
