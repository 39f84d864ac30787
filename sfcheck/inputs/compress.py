"""Streaming decompressors (gzip, xz, zstd, bzip2) behind one bounded interface."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from typing import BinaryIO

import zstandard

from .limits import ArchiveError, BoundedStream, Budget

GZIP_MAGIC = b"\x1f\x8b"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BZIP2_MAGIC = b"BZh"

# Names used by dpkg (data.tar.EXT) and by rpm's PAYLOADCOMPRESSOR tag.
_BY_NAME = {"gz": "gzip", "gzip": "gzip", "xz": "xz", "lzma": "xz", "zst": "zstd",
            "zstd": "zstd", "bz2": "bzip2", "bzip2": "bzip2", "": "none", "none": "none",
            "identity": "none"}


def sniff(head: bytes) -> str:
    """The compression of a stream from its first bytes ('none' if not compressed)."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(XZ_MAGIC):
        return "xz"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(BZIP2_MAGIC):
        return "bzip2"
    return "none"


def by_name(name: str) -> str:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ArchiveError(f"unsupported compression: {name}") from None


def decompressed(raw: BinaryIO, method: str, budget: Budget) -> io.BufferedReader:
    """A buffered reader of `raw` decompressed with `method`, every byte charged to `budget`."""
    inner: BinaryIO
    if method == "gzip":
        inner = gzip.GzipFile(fileobj=raw, mode="rb")
    elif method == "xz":
        # FORMAT_AUTO accepts .xz and legacy .lzma (old rpm and dpkg payloads).
        inner = lzma.LZMAFile(raw, mode="rb")  # noqa: SIM115 (the caller owns raw)
    elif method == "zstd":
        # read_across_frames: zstd(1) and rpm may write several frames.
        inner = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    elif method == "bzip2":
        inner = bz2.BZ2File(raw, mode="rb")
    elif method == "none":
        inner = raw
    else:
        raise ArchiveError(f"unsupported compression: {method}")
    return io.BufferedReader(BoundedStream(inner, budget), buffer_size=1 << 16)


# What a corrupt compressed stream raises, besides the CORRUPT_ERRORS of limits.py.
DECOMPRESS_ERRORS: tuple[type[BaseException], ...] = (
    lzma.LZMAError, zstandard.ZstdError, zlib.error)
