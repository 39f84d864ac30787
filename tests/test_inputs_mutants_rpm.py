"""The RPM header reader on hand-built packages: the signature's 8-byte alignment, the two
payload tags (found past an index chunk, first one wins, defaults when absent), every
refusal with its offset, and each bound (header size, tag value length, the header's end)
at the limit and one past it. Written for the inputs mutation group (issue 29)."""

from __future__ import annotations

import gzip
import io
import lzma
import struct
from pathlib import Path

import pytest
from test_inputs_mutants_packages import S_IFREG, TRAILER, cpio_entry

from sfcheck.inputs import ArchiveError, Limits
from sfcheck.inputs.limits import Budget
from sfcheck.inputs.rpm import _payload, rpm_entries

LEAD = b"\xed\xab\xee\xdb" + bytes(92)
HEADER_MAX = 256 << 20


def header(tags: list[tuple[int, int, bytes]], pad_store: int = 0,
           offsets: dict[int, int] | None = None, nindex: int | None = None) -> bytes:
    """A header structure: (tag, type, value) entries, values stored in order."""
    index, store = [], b""
    for tag, kind, value in tags:
        offset = (offsets or {}).get(tag, len(store))
        index.append(struct.pack(">IIII", tag, kind, offset, 1))
        store += value
    store += bytes(pad_store)
    count = len(tags) if nindex is None else nindex
    return b"\x8e\xad\xe8\x01\0\0\0\0" + struct.pack(">II", count, len(store)) + \
        b"".join(index) + store


def package(main: bytes, payload: bytes, signature: bytes | None = None) -> bytes:
    sig = header([], pad_store=5) if signature is None else signature
    sig += bytes(-len(sig) % 8)  # the signature is padded to 8 bytes
    return LEAD + sig + main + payload


CPIO = cpio_entry(b"./usr/lib/x.so", S_IFREG, b"\x7fELF data") + TRAILER
STRING = 6


def _tags(fmt: bytes = b"cpio", comp: bytes = b"gzip") -> list[tuple[int, int, bytes]]:
    return [(1000, STRING, b"name\0"), (1124, STRING, fmt + b"\0"), (1125, STRING, comp + b"\0")]


def _entries(data: bytes, limits: Limits | None = None) -> list[tuple[str, bytes | None]]:
    return [(e.name, e.stream.read() if e.stream else None)
            for e in rpm_entries(io.BytesIO(data), Budget(limits or Limits()))]


def _refused(data: bytes) -> str:
    with pytest.raises(ArchiveError) as exc:
        _entries(data)
    return str(exc.value)


def test_payload_read_after_an_unaligned_signature() -> None:
    for comp, packed in ((b"gzip", gzip.compress(CPIO)), (b"xz", lzma.compress(CPIO))):
        assert _entries(package(header(_tags(comp=comp)), packed)) == \
            [("./usr/lib/x.so", b"\x7fELF data")]


def test_missing_tags_take_rpms_defaults() -> None:
    assert _entries(package(header([(1000, STRING, b"n\0")]), gzip.compress(CPIO))) == \
        [("./usr/lib/x.so", b"\x7fELF data")]


def test_first_of_a_repeated_tag_wins() -> None:
    tags = [*_tags(comp=b"xz"), (1125, STRING, b"gzip\0")]
    assert _entries(package(header(tags), lzma.compress(CPIO))) == \
        [("./usr/lib/x.so", b"\x7fELF data")]


def test_tag_found_past_the_first_index_chunk() -> None:
    filler = [(2000 + i, 4, b"") for i in range(4100)]
    tags = [*filler, (1124, STRING, b"drpm\0")]
    assert _refused(package(header(tags), b"")) == \
        "unsupported RPM payload format 'drpm' (only cpio)"


def test_unknown_compressor_refused() -> None:
    assert _refused(package(header(_tags(comp=b"lzip")), b"")) == \
        "unsupported compression: lzip"


def test_tag_of_the_wrong_type_refused() -> None:
    tags = [(1124, STRING, b"cpio\0"), (1125, 4, b"gzip\0")]
    assert _refused(package(header(tags), b"")) == \
        "malformed RPM header: tag 1125 has type 4, not a string"


def test_tag_value_length_at_the_bound_and_one_past() -> None:
    at = b"c" * 64
    assert _refused(package(header(_tags(comp=at)), b"")) == \
        f"unsupported compression: {at.decode()}"
    assert _refused(package(header(_tags(comp=at + b"c")), b"")) == \
        "malformed RPM header: tag 1125 is not a short NUL-terminated string"


def test_tag_value_at_the_end_of_the_header_and_past_it() -> None:
    """A value starting at the store's last byte is read (an empty string: rpm's default
    does not apply, so the format is refused); one starting at the end is refused."""
    tags = [(1124, STRING, b"\0")]
    assert _refused(package(header(tags), b"")) == \
        "unsupported RPM payload format '' (only cpio)"
    past = header([(1124, STRING, b"\0")], offsets={1124: 1})
    assert _refused(package(past, b"")) == \
        "malformed RPM header: tag 1124 points past the header (offset 0x1)"


def test_value_cut_by_the_end_of_the_header_refused() -> None:
    """The value's NUL lies in the payload, after the header: not read there."""
    tags = [(1000, STRING, b"name\0"), (1124, STRING, b"cpio")]
    assert _refused(package(header(tags), b"\0" + bytes(100))) == \
        "malformed RPM header: tag 1124 is not a short NUL-terminated string"


def test_no_header_structure_named_by_offset() -> None:
    assert _refused(LEAD + b"\x8e\xad\xe7" + bytes(40)) == \
        "malformed RPM: no header structure at offset 0x60"
    sig = header([], pad_store=8)
    assert _refused(LEAD + sig + b"junk" * 10) == \
        f"malformed RPM: no header structure at offset {96 + len(sig):#x}"
    assert _refused(LEAD + sig + b"\x8e\xad\xe8\x01") == \
        f"malformed RPM: no header structure at offset {96 + len(sig):#x}"


def test_bad_lead_refused() -> None:
    assert _refused(b"\xed\xab\xee\xdb" + bytes(91)) == "not an RPM package (bad lead)"
    assert _refused(b"\xed\xab\xee\xdc" + bytes(200)) == "not an RPM package (bad lead)"
    assert _refused(LEAD) == "malformed RPM: no header structure at offset 0x60"  # whole lead


def test_header_ending_at_the_file_end_read_one_byte_more_refused() -> None:
    main = header(_tags(), pad_store=3)
    data = package(main, b"")
    start = len(data) - len(main)
    end, fmt, comp = _payload(io.BytesIO(data), Budget(Limits()))
    assert (end, fmt, comp) == (len(data), "cpio", "gzip")
    with pytest.raises(ArchiveError) as exc:
        _payload(io.BytesIO(data[:-1]), Budget(Limits()))
    assert str(exc.value) == (f"malformed or truncated RPM: header at {start:#x} claims "
                              f"3 entries and {len(main) - 16 - 48} data bytes")


def test_header_bytes_charged_to_the_budget() -> None:
    data = package(header(_tags()), gzip.compress(CPIO))
    end = len(data) - len(gzip.compress(CPIO))
    _payload(io.BytesIO(data), Budget(Limits(max_bytes=end)))
    with pytest.raises(ArchiveError, match="expands to more than"):
        _payload(io.BytesIO(data), Budget(Limits(max_bytes=end - 1)))


def test_header_size_bound_at_the_limit_and_one_past(tmp_path: Path) -> None:
    """rpm's 256 MiB header limit, on sparse files (the store is never read)."""
    sig = header([], pad_store=0)
    for hsize, ok in ((HEADER_MAX, True), (HEADER_MAX + 1, False)):
        main = b"\x8e\xad\xe8\x01\0\0\0\0" + struct.pack(">II", 0, hsize)
        path = tmp_path / f"big-{hsize}.rpm"
        with path.open("wb") as f:
            f.write(LEAD + sig + main)
            f.truncate(96 + len(sig) + 16 + hsize + 8)
        with path.open("rb") as f:
            if ok:
                assert _payload(f, Budget(Limits()))[1:] == ("cpio", "gzip")
            else:
                with pytest.raises(ArchiveError) as exc:
                    _payload(f, Budget(Limits()))
                assert str(exc.value) == (f"malformed or truncated RPM: header at "
                                          f"{96 + len(sig):#x} claims 0 entries and {hsize} "
                                          "data bytes")


def test_tag_value_bytes_outside_ascii_replaced() -> None:
    assert _refused(package(header(_tags(comp=b"gz\xffip")), b"")) == \
        "unsupported compression: gz\ufffdip"
