"""tar archives (plain or compressed; also a .deb's data.tar), read as a stream with tarfile.

tarfile is lenient where GNU tar complains, and the difference hides members from a gate:
a header with a bad checksum (or cut short) after the first one ends the archive quietly,
where GNU tar says "Skipping to next header" and extracts what follows; a negative size
(base-256 or a pax `size=-1`) sends the stream backwards and ends it the same way; a pax
header or GNU long name is read whole, whatever size it claims. `_StrictInfo` refuses
each of these, before any body is read.
"""

from __future__ import annotations

import re
import tarfile
from typing import TYPE_CHECKING, BinaryIO

from .compress import decompressed, sniff
from .limits import ArchiveError, Budget, Entries, Entry

if TYPE_CHECKING:
    from .limits import EntryType

# A pax header body, a GNU long name or link, or a sparse map (GNU 1.0 format, or old GNU
# extension blocks) larger than this is refused before it is read: real ones are a few
# hundred bytes (member paths are refused above 4096 bytes anyway).
MAX_HEADER_BODY = 1 << 20
MAX_SIZE = (1 << 63) - 1  # off_t: what GNU tar can represent; anything above is a lie
_DECIMAL = re.compile(r"[0-9]+\Z")
_PAX_SIZES = ("size", "GNU.sparse.size", "GNU.sparse.realsize")


def _check_size(size: int, what: str) -> None:
    if size < 0:
        raise ArchiveError(f"tar header has a negative size ({size}) for {what}")
    if size > MAX_SIZE:
        raise ArchiveError(f"tar header has an impossible size ({size}) for {what}")


class _StrictInfo(tarfile.TarInfo):
    """A TarInfo that refuses what GNU tar would complain about (see the module doc)."""

    @classmethod
    def fromtarfile(cls, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        offset = tarfile_.fileobj.tell()  # type: ignore[union-attr]
        try:
            info = super().fromtarfile(tarfile_)
        except (tarfile.InvalidHeaderError, tarfile.TruncatedHeaderError) as exc:
            # Only an empty read (no end-of-archive blocks) or zero blocks end the archive.
            raise ArchiveError(f"invalid tar header at offset {offset}: {exc}") from None
        # A pax record replaces the header's size after frombuf: check what it says too.
        for key in _PAX_SIZES:
            value = info.pax_headers.get(key)
            if value is not None and not _DECIMAL.match(value):
                raise ArchiveError(f"tar member {info.name!r}: pax {key}={value[:40]!r} is "
                                   "not a size")
        _check_size(info.size, repr(info.name))
        return info

    @classmethod
    def frombuf(cls, buf: bytes, encoding: str, errors: str) -> tarfile.TarInfo:
        info = super().frombuf(buf, encoding, errors)
        _check_size(info.size, repr(info.name))
        return info

    def _body_bound(self, what: str) -> None:
        if self.size > MAX_HEADER_BODY:
            raise ArchiveError(f"tar {what} of {self.size} bytes (more than "
                               f"{MAX_HEADER_BODY}): refused before reading it")

    def _proc_gnulong(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        self._body_bound("GNU long name or link")
        return super()._proc_gnulong(tarfile_)  # type: ignore[misc]

    def _proc_pax(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        self._body_bound("pax header")
        return super()._proc_pax(tarfile_)  # type: ignore[misc]

    def _proc_sparse(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        # Old GNU sparse: 4 regions in the header, then extension blocks of 21 while the
        # "extended" byte is set; each block is read here, at most MAX_HEADER_BODY of them.
        structs, extended, realsize = self._sparse_structs  # type: ignore[attr-defined]
        del self._sparse_structs  # type: ignore[attr-defined]
        fileobj = tarfile_.fileobj
        read = 0
        while extended:
            read += tarfile.BLOCKSIZE
            if read > MAX_HEADER_BODY:
                raise ArchiveError(f"tar sparse map of member {self.name!r} longer than "
                                   f"{MAX_HEADER_BODY} bytes: refused")
            block = fileobj.read(tarfile.BLOCKSIZE)  # type: ignore[union-attr]
            if len(block) != tarfile.BLOCKSIZE:
                raise ArchiveError(f"tar sparse map of member {self.name!r} cut short")
            for pos in range(0, 21 * 24, 24):
                start = tarfile.nti(block[pos:pos + 12])
                length = tarfile.nti(block[pos + 12:pos + 24])
                if start and length:
                    structs.append((start, length))
            extended = bool(block[504])
        _check_size(realsize, repr(self.name))
        self.sparse = structs
        self.offset_data = fileobj.tell()  # type: ignore[union-attr]
        tarfile_.offset = self.offset_data + self._block(self.size)  # type: ignore[attr-defined]
        self.size = realsize
        return self

    def _proc_gnusparse_10(self, next_: tarfile.TarInfo, pax_headers: dict[str, str],
                           tarfile_: tarfile.TarFile) -> None:
        # GNU sparse 1.0: a count, then offset/length pairs, one decimal per line, at the
        # start of the member's data; the whole map is bounded before it is parsed.
        fileobj = tarfile_.fileobj
        buf = fileobj.read(tarfile.BLOCKSIZE)  # type: ignore[union-attr]
        count, _, rest = buf.partition(b"\n")
        if not count.isdigit():
            raise ArchiveError(f"tar sparse map of member {next_.name!r} is malformed")
        pairs = int(count)
        numbers: list[int] = []
        while len(numbers) < 2 * pairs:
            if b"\n" not in rest:
                if len(buf) > MAX_HEADER_BODY:
                    raise ArchiveError(f"tar sparse map of member {next_.name!r} longer "
                                       f"than {MAX_HEADER_BODY} bytes: refused")
                block = fileobj.read(tarfile.BLOCKSIZE)  # type: ignore[union-attr]
                if not block:
                    raise ArchiveError(f"tar sparse map of member {next_.name!r} cut short")
                buf += block
                rest += block
                continue
            number, _, rest = rest.partition(b"\n")
            if not number.isdigit():
                raise ArchiveError(f"tar sparse map of member {next_.name!r} is malformed")
            numbers.append(int(number))
        next_.offset_data = fileobj.tell()  # type: ignore[union-attr]
        next_.sparse = list(zip(numbers[::2], numbers[1::2], strict=True))


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
    with tarfile.open(fileobj=stream, mode="r|", tarinfo=_StrictInfo) as tf:
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
