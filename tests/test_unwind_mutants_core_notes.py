"""What a core's notes and memory read as (issue 29's unwind-core survivors): every note
whole, threads with their registers, NT_FILE mappings, auxv, bounds at the boundary and one
past, the core's one-line errors, and memory read through blocks and mapped files.

Cores and notes are built by tests/unwind_build.py from the ELF and Linux layouts; every
expected value comes from what the builder was asked for."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from sfcheck.errors import ElfError
from sfcheck.fileio import FileView
from sfcheck.unwind import core as core_mod
from sfcheck.unwind import notes
from sfcheck.unwind.core import CoreFile
from sfcheck.unwind.notes import FileMapping, iter_notes, nt_file, prstatus

from unwind_build import auxv, core_bytes, note, prstatus_raw
from unwind_build import nt_file as nt_file_note
from unwind_build import prstatus as prstatus_note

X86_REGS = ["r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx",
            "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base",
            "gs_base", "ds", "es", "fs", "gs"]


def _reader(blob: bytes, calls: list[tuple[int, int]] | None = None):
    def read(off: int, n: int) -> bytes:
        if calls is not None:
            calls.append((off, n))
        return blob[off:off + n]
    return read


def _notes(blob: bytes, start: int = 0, size: int | None = None,
           calls: list[tuple[int, int]] | None = None) -> list[tuple[bytes, int, bytes]]:
    size = len(blob) - start if size is None else size
    return [(n, t, bytes(d)) for n, t, d in iter_notes(_reader(blob, calls), start, size, "<")]


# -- iter_notes ----------------------------------------------------------------------------


def test_notes_read_whole_with_padding() -> None:
    """Names and descs of every length mod 4, read back exactly (NUL dropped from names)."""
    parts = [(b"CORE\0", 1, b"abcde"), (b"LINUX\0", 0x406, b"x" * 16), (b"GNU\0", 3, b""),
             (b"AB\0", 7, b"123"), (b"", 9, b"zz")]
    blob = b"".join(note(t, d, name=n) for n, t, d in parts)
    assert _notes(blob) == [(n.rstrip(b"\0"), t, d) for n, t, d in parts]


def test_notes_at_an_offset_and_big_endian() -> None:
    body = note(1, b"\x01\x02\x03\x04", order="big") + note(6, b"q" * 8, order="big")
    blob = b"\xff" * 7 + body + b"\xee" * 5
    got = [(n, t, bytes(d)) for n, t, d in iter_notes(_reader(blob), 7, len(body), ">")]
    assert got == [(b"CORE", 1, b"\x01\x02\x03\x04"), (b"CORE", 6, b"q" * 8)]


def test_truncated_note_ends_the_list_at_the_boundary() -> None:
    """A desc that ends exactly at the segment's end is read; one byte short, it stops."""
    first, last = note(1, b"a" * 8), note(2, b"b" * 8)
    blob = first + last
    assert [t for _n, t, _d in _notes(blob)] == [1, 2]
    assert [t for _n, t, _d in _notes(blob, size=len(blob) - 1)] == [1]
    # a name running past the end stops too (desc size 0)
    head = struct.pack("<III", 8, 0, 5) + b"CORE"
    assert _notes(first + head) == [(b"CORE", 1, b"a" * 8)]
    assert _notes(first + head + b"\0\0\0\0") == [(b"CORE", 1, b"a" * 8), (b"CORE", 5, b"")]
    # fewer than 12 bytes of header left: nothing more
    assert _notes(first + b"\0" * 11) == [(b"CORE", 1, b"a" * 8)]
    assert _notes(first + b"\0" * 12) == [(b"CORE", 1, b"a" * 8), (b"", 0, b"")]


@pytest.mark.parametrize("first", [notes._NOTE_WINDOW - 40, notes._NOTE_WINDOW - 24])
def test_notes_across_the_window_are_read_whole(first: int) -> None:
    """Notes larger than the read window, and headers straddling it (the second note's
    header starts 4 bytes before the window's end when `first` is WINDOW - 24), come back
    whole; no read asks for more than the window or the note being read, nor for a byte
    outside the note segment."""
    window = notes._NOTE_WINDOW
    descs = [bytes([k]) * n for k, n in enumerate((first, 30, window + 4097, 5, 3))]
    body = b"".join(note(k + 1, d) for k, d in enumerate(descs))
    blob = b"\xee" * 8 + body + b"\xee" * 8
    calls: list[tuple[int, int]] = []
    got = _notes(blob, 8, len(body), calls=calls)
    assert got == [(b"CORE", k + 1, d) for k, d in enumerate(descs)]
    assert calls[0] == (8, window)
    # a read per window: the first, from the note crossing its end, the note larger than
    # a window (read whole), then the rest
    assert len(calls) == 4, calls
    assert all(o >= 8 and o + n <= 8 + len(body) for o, n in calls), calls
    assert all(n <= window + 4097 + 20 for _o, n in calls)
    assert sum(n for _o, n in calls) < 3 * len(blob)


def _sparse_reader(chunks: list[tuple[int, bytes]], calls: list[tuple[int, int]]):
    """A segment of zeros holding `chunks` (offset, bytes), never built whole."""
    def read(off: int, n: int) -> bytes:
        calls.append((off, n))
        out = bytearray(n)
        for at, chunk in chunks:
            lo, hi = max(off, at), min(off + n, at + len(chunk))
            if lo < hi:
                out[lo - off:hi - off] = chunk[lo - at:hi - at]
        return bytes(out)
    return read


def test_last_note_across_the_window_is_read_to_the_segment_end() -> None:
    """The last note crosses the first window's end: it is read again from its start up
    to the segment's end, never past it."""
    window = notes._NOTE_WINDOW
    descs = [b"a" * (window - 60), b"b" * 30]
    body = b"".join(note(k + 1, d) for k, d in enumerate(descs))
    blob = body + b"\xee" * window
    calls: list[tuple[int, int]] = []
    assert _notes(blob, 0, len(body), calls=calls) == [(b"CORE", 1, descs[0]),
                                                       (b"CORE", 2, descs[1])]
    pos = len(note(1, descs[0]))
    assert calls == [(0, window), (pos, len(body) - pos)]


@pytest.mark.parametrize("over", [0, 1])
def test_note_over_max_is_skipped_unread(over: int) -> None:
    """A note of more than MAX_NOTE bytes is skipped (its desc never read); the next is
    read. One of exactly MAX_NOTE bytes is read."""
    descsz = notes.MAX_NOTE - 12 - 8 + over
    before = note(6, b"x" * 16)  # the big note is not the first: its limit is its own size
    head = struct.pack("<III", 5, descsz, 0x46494C45) + b"CORE\0\0\0\0"
    after = note(1, b"tail")
    padded = (descsz + 3) & ~3
    at = len(before)
    size = at + len(head) + padded + len(after)
    calls: list[tuple[int, int]] = []
    read = _sparse_reader([(0, before), (at, head), (at + len(head) + padded, after)], calls)
    got = [(n, t, len(d)) for n, t, d in iter_notes(read, 0, size, "<")]
    first, tail = (b"CORE", 6, 16), (b"CORE", 1, 4)
    assert got == ([first, tail] if over else [first, (b"CORE", 0x46494C45, descsz), tail])
    assert all(o + n <= size for o, n in calls)
    if over:
        assert max(n for _o, n in calls) <= notes._NOTE_WINDOW


# -- prstatus ------------------------------------------------------------------------------


def test_prstatus_registers_whole_at_the_size_boundary() -> None:
    values = [0x1000 + 0x11 * i for i in range(len(X86_REGS))]
    desc = prstatus_raw(-3 & 0xFFFFFFFF, values)[20:]  # the desc of the note
    need = 112 + 8 * len(X86_REGS)
    t = prstatus(memoryview(desc[:need]), "<", 62, 4)
    assert t is not None and (t.number, t.pid, t.machine) == (4, -3, 62)
    assert t.named == dict(zip(X86_REGS, values, strict=True))
    r = t.registers
    named = dict(zip(X86_REGS, values, strict=True))
    assert (r.pc, r.sp, r.fp, r.ra) == (named["rip"], named["rsp"], named["rbp"], None)
    dwarf = ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp"] + [f"r{i}"
                                                                        for i in range(8, 16)]
    assert r.others == {i: named[n] for i, n in enumerate(dwarf)}
    assert prstatus(memoryview(desc[:need - 1]), "<", 62, 1) is None
    assert prstatus(memoryview(desc), "<", 3, 1) is None  # i386: no layout known


def test_prstatus_copies_its_registers() -> None:
    """pr_reg is the register block alone (a copy), not the fields after it."""
    buf = bytearray(prstatus_raw(9, list(range(27)))[20:] + b"\x77" * 64)
    t = prstatus(memoryview(buf), "<", 62, 1)
    assert t is not None and t.pr_reg == bytes(buf[112:112 + 8 * 27])
    buf[112:120] = b"\xff" * 8
    assert t is not None and t.named["r15"] == 0 and isinstance(t.pr_reg, bytes)


# -- nt_file -------------------------------------------------------------------------------


def _nt_desc(maps: list[tuple[int, int, int, str]], page: int = 4096,
             count: int | None = None) -> bytes:
    body = nt_file_note(maps, page)[20:]  # after the note header and "CORE\0" + pad
    if count is not None:
        body = count.to_bytes(8, "little") + body[8:]
    return body


def test_nt_file_mappings_whole() -> None:
    maps = [(0x5000, 0x7000, 3 * 8192, "/usr/lib/b.so"), (0x1000, 0x2000, 0, "/bin/a"),
            (0x9000, 0x9001, 8192, "/c")]
    got, more = nt_file(memoryview(_nt_desc(maps, 8192)), "<", 100)
    assert more == 0
    assert got == [FileMapping(s, e, off, p) for s, e, off, p in maps]


def test_nt_file_room_and_skipped_entries() -> None:
    maps = [(0x1000 * (i + 1), 0x1000 * (i + 2), 0, f"/l{i}") for i in range(5)]
    desc = memoryview(_nt_desc(maps))
    got, more = nt_file(desc, "<", 3)
    assert [m.path for m in got] == ["/l0", "/l1", "/l2"] and more == 2
    assert nt_file(desc, "<", 5) == (nt_file(desc, "<", 6)[0], 0)
    assert nt_file(desc, "<", 0) == ([], 5)
    assert nt_file(desc, "<", -4) == ([], 5)
    # an empty or reversed range is left out, the next entry keeps its own name
    odd = [(0x2000, 0x2000, 0, "/empty"), (0x3000, 0x2000, 0, "/reversed"),
           (0x4000, 0x4001, 0, "/kept")]
    got, more = nt_file(memoryview(_nt_desc(odd)), "<", 10)
    assert got == [FileMapping(0x4000, 0x4001, 0, "/kept")] and more == 0


def test_nt_file_names_missing() -> None:
    """Fewer names than entries: the entries without one are left out."""
    maps = [(0x1000, 0x2000, 0, "/a"), (0x3000, 0x4000, 0, "/b")]
    desc = _nt_desc(maps)
    cut = desc[:desc.index(b"/b")]  # "/a\0" kept; the second name gone
    got, _ = nt_file(memoryview(cut), "<", 10)
    assert got == [FileMapping(0x1000, 0x2000, 0, "/a"), FileMapping(0x3000, 0x4000, 0, "")]
    got, _ = nt_file(memoryview(desc[:desc.index(b"/a")]), "<", 10)
    assert got == [FileMapping(0x1000, 0x2000, 0, "")]


def test_nt_file_counts_at_the_boundary() -> None:
    maps = [(0x1000, 0x2000, 0, "/a"), (0x3000, 0x4000, 4096, "/b")]
    table = _nt_desc(maps)[:16 + 48]  # no names at all
    got, more = nt_file(memoryview(table), "<", 10)
    assert got == [FileMapping(0x1000, 0x2000, 0, "")] and more == 0
    # a count one past what the bytes hold: nothing used
    assert nt_file(memoryview(_nt_desc(maps, count=3)[:16 + 48]), "<", 10) == ([], 0)
    assert nt_file(memoryview(_nt_desc(maps, count=2**63)), "<", 10) == ([], 0)
    assert nt_file(memoryview(b"\0" * 15), "<", 10) == ([], 0)
    # a table filling the note exactly, of many entries, no names
    many = [(0x1000 * (i + 1), 0x1000 * (i + 2), 0, "/x") for i in range(30)]
    table = _nt_desc(many)[:16 + 24 * 30]
    got, more = nt_file(memoryview(table), "<", 100)
    assert [(m.start, m.path) for m in got] == [(0x1000, "")] and more == 0
    got, more = nt_file(memoryview(_nt_desc([])), "<", 10)
    assert (got, more) == ([], 0)


def test_nt_file_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    maps = [(0x1000, 0x2000, 0, "/a")]
    desc = memoryview(_nt_desc(maps))
    monkeypatch.setattr(notes, "MAX_NT_FILE", len(desc))
    assert nt_file(desc, "<", 10)[0] == [FileMapping(0x1000, 0x2000, 0, "/a")]
    monkeypatch.setattr(notes, "MAX_NT_FILE", len(desc) - 1)
    assert nt_file(desc, "<", 10) == ([], 0)


# -- CoreFile.parse ------------------------------------------------------------------------


def _core(extra: bytes = b"", loads: list[tuple[int, bytes]] | None = None,
          machine: int = 62) -> bytes:
    return core_bytes(prstatus_note(11, 0x401000, 0x7000) + prstatus_note(12, 0x401010, 0x7100)
                      + extra, loads if loads is not None else [(0x7000, bytes(range(256)))],
                      machine=machine)


def test_core_parsed_whole() -> None:
    maps = [(0x600000, 0x601000, 0x2000, "/lib/x.so"), (0x400000, 0x402000, 0, "/bin/p")]
    extra = (nt_file_note(maps) + auxv({9: 0x401000, 3: 0x400040})
             + auxv({9: 0xBAD}) + note(1, b"\0" * 400, name=b"LINUX\0"))
    core = CoreFile.parse(_core(extra), "lbl")
    assert core.path == "lbl" and core.machine == 62 and not core.big_endian
    assert [(t.number, t.pid, t.registers.pc, t.registers.sp) for t in core.threads] == [
        (1, 11, 0x401000, 0x7000), (2, 12, 0x401010, 0x7100)]
    assert core.mappings == [FileMapping(0x400000, 0x402000, 0, "/bin/p"),
                             FileMapping(0x600000, 0x601000, 0x2000, "/lib/x.so")]
    assert core.auxv == {9: 0x401000, 3: 0x400040, 0: 0}  # the first value of a key kept
    assert core.pac_mask is None and core.mappings_dropped == 0
    assert core.path_resolver("/bin/p") == "/bin/p"
    assert core.read(0x7000, 4) == bytes(range(4))


def test_auxv_trailing_bytes_and_last_entry() -> None:
    body = b"".join(struct.pack("<QQ", k, v) for k, v in ((7, 70), (9, 90)))
    for tail, want in ((b"", {7: 70, 9: 90}), (b"\x05" * 15, {7: 70, 9: 90})):
        core = CoreFile.parse(_core(note(6, body + tail)))
        assert core.auxv == want
    core = CoreFile.parse(_core(note(6, body + struct.pack("<QQ", 3, 30))))
    assert core.auxv == {7: 70, 9: 90, 3: 30}


def test_nt_file_room_over_several_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core_mod, "MAX_FILE_MAPPINGS", 3)
    a = [(0x1000 * (i + 1), 0x1000 * (i + 2), 0, f"/a{i}") for i in range(2)]
    b = [(0x10000 * (i + 1), 0x10000 * (i + 1) + 0x1000, 0, f"/b{i}") for i in range(4)]
    core = CoreFile.parse(_core(nt_file_note(a) + nt_file_note(b)))
    assert [m.path for m in core.mappings] == ["/a0", "/a1", "/b0"]
    assert core.mappings_dropped == 3
    monkeypatch.setattr(core_mod, "MAX_FILE_MAPPINGS", 1)  # both notes lose some
    core = CoreFile.parse(_core(nt_file_note(a) + nt_file_note(b)))
    assert [m.path for m in core.mappings] == ["/a0"] and core.mappings_dropped == 5


def test_pac_mask_only_first_linux_note_on_aarch64() -> None:
    def pac(insn: int, size: int = 16) -> bytes:
        return note(0x406, (struct.pack("<QQ", 0xD, insn) + bytes(8))[:size], name=b"LINUX\0")
    regs = [0] * 34
    base = prstatus_raw(1, regs)
    got = CoreFile.parse(core_bytes(base + pac(0xAA) + pac(0xBB), [], machine=183))
    assert got.pac_mask == 0xAA
    assert CoreFile.parse(core_bytes(base + pac(0xAA, 15), [], machine=183)).pac_mask is None
    core = CoreFile.parse(core_bytes(base + pac(0xAA, 15) + pac(0xCC), [], machine=183))
    assert core.pac_mask == 0xCC
    # CORE-named, or on another machine: not a PAC mask
    core_named = note(0x406, struct.pack("<QQ", 1, 2))
    assert CoreFile.parse(core_bytes(base + core_named, [], machine=183)).pac_mask is None
    assert CoreFile.parse(_core(pac(0xAA))).pac_mask is None


def test_only_core_notes_make_threads_and_fp_registers_follow_s390x() -> None:
    linux = note(1, prstatus_note(99, 1, 2)[20:], name=b"LINUX\0")
    core = CoreFile.parse(_core(linux))
    assert [t.pid for t in core.threads] == [11, 12]
    # NT_PRFPREG on x86-64 is not s390x's floating point registers
    core = CoreFile.parse(_core(note(2, bytes(136))))
    assert [t.fpregs for t in core.threads] == [None, None]
    # a short prstatus makes no thread and does not use up a number
    short = note(1, prstatus_note(5, 1, 2)[20:20 + 112 + 8 * 27 - 1])
    core = CoreFile.parse(core_bytes(short + prstatus_note(6, 3, 4), []))
    assert [(t.number, t.pid) for t in core.threads] == [(1, 6)]


def test_s390x_fp_note_before_any_thread_is_ignored() -> None:
    fp = note(2, bytes(8) + b"".join(i.to_bytes(8, "big") for i in range(16)), order="big")
    regs = [0x0705, 0x1000A0, *range(16)]
    core = CoreFile.parse(core_bytes(fp + prstatus_raw(5, regs, order="big"), [], machine=22,
                                     order="big"))
    assert [t.fpregs for t in core.threads] == [None]


@pytest.mark.parametrize("patch, message", [
    ((0, b"\x7fELG"), "not an ELF file"),
    ((16, b"\x02\x00"), "not a core file (e_type ET_EXEC)"),
    ((4, b"\x01"), "only 64-bit cores are supported"),
])
def test_core_errors_are_one_line(patch: tuple[int, bytes], message: str) -> None:
    blob = bytearray(_core())
    at, new = patch
    blob[at:at + len(new)] = new
    with pytest.raises(ElfError) as info:
        CoreFile.parse(bytes(blob), "the.core")
    assert (info.value.message, info.value.path) == (message, "the.core")


def test_short_file_is_not_elf() -> None:
    for blob in (b"", b"\x7fEL"):
        with pytest.raises(ElfError) as info:
            CoreFile.parse(blob, "c")
        assert info.value.message == "not an ELF file"


def test_pt_note_past_the_end_at_the_boundary() -> None:
    """The notes may end at the file's end; one byte past it is a one-line error with the
    note's offset."""
    blob = core_bytes(prstatus_note(3, 0x10, 0x20), [])
    off = 64 + 56
    assert len(blob) == off + len(prstatus_note(3, 0x10, 0x20))
    assert [t.pid for t in CoreFile.parse(blob).threads] == [3]
    with pytest.raises(ElfError) as info:
        CoreFile.parse(blob[:-1], "c")
    assert info.value.message == f"PT_NOTE at {off:#x} runs past the end of the file"
    assert info.value.path == "c"


def test_hostile_header_is_one_line() -> None:
    blob = bytearray(_core())
    blob[32:40] = (2**63).to_bytes(8, "little")  # e_phoff
    with pytest.raises(ElfError) as info:
        CoreFile.parse(bytes(blob), "c")
    assert info.value.message.startswith("cannot parse core: ")
    assert info.value.path == "c"


def test_open_refuses_a_directory_and_truncated_file(tmp_path: Path) -> None:
    with pytest.raises(ElfError) as info:
        CoreFile.open(str(tmp_path))
    assert info.value.path == str(tmp_path) and "\n" not in info.value.message
    p = tmp_path / "core"
    p.write_bytes(_core(nt_file_note([(0x1000, 0x2000, 0, "/x")])))
    core = CoreFile.open(str(p), lambda path: None)
    try:
        assert isinstance(core.data, FileView) and core.path == str(p)
        assert [t.pid for t in core.threads] == [11, 12]
        assert core.path_resolver("/x") is None
        assert core.read(0x7000 + 10, 3) == bytes([10, 11, 12])
    finally:
        core.close()


# -- CoreFile.read -------------------------------------------------------------------------


def test_read_bounds_of_a_load() -> None:
    """filesz bytes are in the core; a read ending at the last one works, one past it
    falls to the mapped files (none: None)."""
    data = bytes(range(256)) * 2
    core = CoreFile.parse(_core(loads=[(0x7000, data), (0x9000, b"\xaa" * 16)]))
    assert core.read(0x7000, 512) == data
    assert core.read(0x7000 + 500, 12) == data[500:]
    assert core.read(0x7000 + 500, 13) is None
    assert core.read(0x6FFF, 1) is None
    assert core.read(0x9000, 16) == b"\xaa" * 16 and core.read(0x9000 + 15, 2) is None
    assert core.read(0x7000, 0) == b""
    assert core.read(-1, 1) is None and core.read(0x7000, -1) is None


def test_read_at_the_top_of_the_address_space() -> None:
    """A hostile PT_LOAD running past 2**64: nothing past the last address is read."""
    top = 2**64 - 16
    core = CoreFile.parse(_core(loads=[(top, b"\x01" * 32)]))
    assert core.read(top, 16) == b"\x01" * 16
    assert core.read(top + 8, 8) == b"\x01" * 8
    assert core.read(top + 8, 9) is None
    assert core.read(top + 16, 1) is None


def test_read_at_address_zero_and_loads_out_of_order() -> None:
    core = CoreFile.parse(_core(loads=[(0x9000, b"\x09" * 16), (0, b"\x05" * 16),
                                       (0x7000, b"\x07" * 16)]))
    assert [ld.vaddr for ld in core.loads] == [0, 0x7000, 0x9000]
    assert core.read(0, 4) == b"\x05" * 4
    assert core.read(0x7000, 16) == b"\x07" * 16 and core.read(0x9008, 8) == b"\x09" * 8


def test_load_whose_bytes_are_missing_from_the_core() -> None:
    """A PT_LOAD claiming more file bytes than the core holds: reads past the core's end
    are None, those inside are read."""
    blob = _core(loads=[(0x7000, bytes(range(64)))])
    short = blob[:-16]
    core = CoreFile.parse(short)
    assert core.read(0x7000, 48) == bytes(range(48))
    assert core.read(0x7000 + 40, 9) is None


def _big_core(tmp_path: Path, size: int) -> tuple[Path, bytes]:
    data = os.urandom(size)
    p = tmp_path / "core"
    p.write_bytes(_core(loads=[(0x100000, data)]))
    return p, data


def test_file_view_core_reads_across_blocks(tmp_path: Path) -> None:
    """Reads at, across and one byte over the core's block boundaries (file offsets)."""
    block = core_mod._BLOCK
    p, data = _big_core(tmp_path, 4 * block)
    core = CoreFile.open(str(p))
    try:
        first = block - core.loads[0].offset  # the load's offset of the core's 2nd block
        assert first > 0
        for at, n in ((0, 8), (-8, 8), (-4, 8), (-1, 1), (0, 1), (-1, 2), (-2, 2), (-3, 2),
                      (5, 3), (block - 3, block + 10), (0, block), (1, block), (-1, block),
                      (block, block), (2 * block - 1, 2)):
            at += first
            assert core.read(0x100000 + at, n) == data[at:at + n], (at - first, n)
        end = len(data)
        assert core.read(0x100000 + end - 8, 8) == data[-8:]
        assert core.read(0x100000 + end - 7, 8) is None
        assert core.read(0x100000 + 1, 3) == data[1:4]
    finally:
        core.close()


def test_file_view_core_keeps_a_bounded_cache(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core_mod, "_CACHED_BLOCKS", 3)
    block = core_mod._BLOCK
    p, data = _big_core(tmp_path, 6 * block)
    core = CoreFile.open(str(p))
    try:
        base = core.loads[0].offset
        for k in range(6):
            pos = k * block + 16
            assert core.read(0x100000 + pos, 8) == data[pos:pos + 8]
            assert len(core._blocks) == min(k + 1, 3)
        # the oldest blocks went first: the three last remain
        assert sorted(core._blocks) == sorted(
            (base + k * block + 16) >> core_mod._BLOCK_SHIFT for k in (3, 4, 5))
    finally:
        core.close()


def test_core_truncated_before_parse_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "core"
    p.write_bytes(_core())
    view = FileView(str(p))
    try:
        os.truncate(p, 200)
        with pytest.raises(ElfError) as info:
            CoreFile.parse(view, "lbl")
        assert info.value.path == "lbl"
        assert info.value.message.startswith("changed while read"), info.value.message
    finally:
        view.close()


def test_core_truncated_after_open_raises_changed(tmp_path: Path) -> None:
    from sfcheck.fileio import FileChangedError

    p, data = _big_core(tmp_path, 2 * core_mod._BLOCK)
    core = CoreFile.open(str(p))
    try:
        os.truncate(p, core.loads[0].offset + 100)
        with pytest.raises(FileChangedError):
            core.read(0x100000 + core_mod._BLOCK + 40, 8)
    finally:
        core.close()


# -- memory from mapped files --------------------------------------------------------------


def _mapped_core(tmp_path: Path, files: dict[str, bytes],
                 maps: list[tuple[int, int, int, str]]) -> CoreFile:
    for name, body in files.items():
        (tmp_path / name).write_bytes(body)
    return CoreFile.parse(_core(nt_file_note(maps)),
                          path_resolver=lambda p: str(tmp_path / p.lstrip("/")))


def test_mapped_file_read_at_its_page_offset(tmp_path: Path) -> None:
    body = os.urandom(4 * 4096)
    core = _mapped_core(tmp_path, {"lib": body}, [(0x500000, 0x502000, 4096, "/lib")])
    assert core.read(0x500000, 16) == body[4096:4112]
    assert core.read(0x501FF8, 8) == body[2 * 4096 - 8 + 4096:3 * 4096]
    assert core.read(0x501FF8, 9) is None  # past the mapping's end (not the file's)
    assert core.read(0x4FFFFF, 1) is None  # below every mapping
    assert core.file_read("/lib", 4 * 4096 - 4, 4) == body[-4:]
    assert core.file_read("/lib", 4 * 4096 - 4, 5) is None  # past the file: SIGBUS
    assert core.file_read("/lib", -1, 2) is None and core.file_read("/lib", 0, -1) is None
    assert core.file_read("/lib", 0, 0) == b""
    assert core.unreadable == {}


def test_unreadable_mapped_file_noted_once(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    core = _mapped_core(tmp_path, {}, [(0x500000, 0x501000, 0, "/dir"),
                                       (0x600000, 0x601000, 0, "/missing")])
    assert core.read(0x500000, 8) is None
    assert core.unreadable == {"/dir": "a directory, not a regular file: refused"}
    assert core.read(0x600000, 8) is None
    assert core.unreadable["/missing"] == "cannot read file: No such file or directory"
    assert core._mapped_file("/dir") is None


def test_mapped_files_past_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core_mod, "MAX_MAPPED_FILES", 2)
    body = b"\x11" * 4096
    maps = [(0x100000 * (i + 1), 0x100000 * (i + 1) + 0x1000, 0, f"/f{i}") for i in range(3)]
    core = _mapped_core(tmp_path, {f"f{i}": body for i in range(3)}, maps)
    assert core.read(0x100000, 4) == b"\x11" * 4 and core.read(0x200000, 4) == b"\x11" * 4
    assert core.read(0x300000, 4) is None
    assert core.unreadable == {"/f2": "more than 2 mapped files: not read"}


def test_open_files_bounded_and_reopened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core_mod, "MAX_OPEN_MAPPED_FILES", 2)
    bodies = {f"f{i}": bytes([i + 1]) * 4096 for i in range(3)}
    maps = [(0x100000 * (i + 1), 0x100000 * (i + 1) + 0x1000, 0, f"/f{i}") for i in range(3)]
    core = _mapped_core(tmp_path, bodies, maps)
    assert core.read(0x100000, 1) == b"\x01"
    assert core.read(0x200000, 1) == b"\x02"
    assert core.read(0x100000, 1) == b"\x01"  # f0 now the most recent
    assert core.read(0x300000, 1) == b"\x03"  # closes f1, the least recently read
    assert list(core._open_files) == ["/f0", "/f2"]
    assert core._file_cache["/f1"].view is None and core._file_cache["/f0"].view is not None
    assert core.read(0x200000, 2) == b"\x02\x02"  # reopened: the same file
    assert list(core._open_files) == ["/f2", "/f1"] and core.unreadable == {}
    core.close()
    assert core._open_files == {} and all(f.view is None for f in core._file_cache.values())


@pytest.mark.parametrize("change, message", [
    ("shrink", "changed while read: 4096 bytes when first read, now 100 bytes"),
    ("replace", "changed while read: 4096 bytes when first read, now 4096 bytes "
                "(rewritten or replaced)"),
])
def test_mapped_file_changed_before_reopen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           change: str, message: str) -> None:
    monkeypatch.setattr(core_mod, "MAX_OPEN_MAPPED_FILES", 1)
    maps = [(0x100000, 0x101000, 0, "/a"), (0x200000, 0x201000, 0, "/b")]
    core = _mapped_core(tmp_path, {"a": b"\x0a" * 4096, "b": b"\x0b" * 4096}, maps)
    assert core.read(0x100000, 1) == b"\x0a"
    assert core.read(0x200000, 1) == b"\x0b"  # /a closed
    a = tmp_path / "a"
    if change == "shrink":
        os.truncate(a, 100)
    else:
        a.unlink()
        a.write_bytes(b"\x0c" * 4096)
    assert core.read(0x100000, 1) is None
    assert core.unreadable == {"/a": message}
    assert core._file_cache["/a"] is None and "/a" not in core._open_files
    assert core.read(0x100000, 1) is None  # not read again
    assert core.read(0x200000, 1) == b"\x0b"


def test_mapped_file_truncated_while_open(tmp_path: Path) -> None:
    """A file shrunk while it is open: that file's error, closed and forgotten."""
    core = _mapped_core(tmp_path, {"a": b"\x0a" * 8192}, [(0x100000, 0x102000, 0, "/a")])
    assert core.read(0x100000, 1) == b"\x0a" and "/a" in core._open_files
    os.truncate(tmp_path / "a", 100)
    assert core.read(0x101000, 8) is None
    assert list(core.unreadable) == ["/a"]
    assert core.unreadable["/a"].startswith("changed while read")
    assert "/a" not in core._open_files and core._file_cache["/a"] is None


def test_mapped_file_identity_is_first_seen(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"x" * 10)
    f = core_mod._MappedFile(str(p))
    st = os.stat(p)
    assert f.size == 10 and f.ident == (st.st_dev, st.st_ino, 10, st.st_mtime_ns)
    assert f.view is not None and f.local == str(p)
    f.close()
    assert f.view is None
    f.close()  # twice: no error
    f.reopen()
    assert f.view is not None and f.view.read(0, 3) == b"xxx"
    f.close()
