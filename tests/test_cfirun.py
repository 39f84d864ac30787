"""The C reader of .eh_frame's common case (sfcheck/dwarf/_cfirun.c) against the Python
reader it is derived from (ehframe._read_columns, callframe.run): same columns, same rows
(raw and converted), same error, on generated sections, damaged ones and the corpus's.
Skipped where the extension was not built (SFCHECK_PURE_PYTHON, no compiler)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.dwarf import callframe, ehframe
from sfcheck.dwarf.cfi import decode_eh_frame
from sfcheck.format.abi import ABIS

from helpers import CORPUS, sleb, uleb

CFIRUN = ehframe.CFIRUN
pytestmark = pytest.mark.skipif(CFIRUN is None, reason="sfcheck.dwarf._cfirun not built "
                                "(or SFCHECK_PURE_PYTHON set)")


def both(data: bytes, vma: int = 0x1000, big: bool = False, asz: int = 8,
         convert: bool = False) -> tuple:
    """(C path's answer, Python's), each the columns or the error's type and text."""
    out = []
    for mode in (CFIRUN, None):
        ehframe.CFIRUN = mode
        try:
            if convert:
                abi = next(a for a in ABIS.values() if a.big_endian == big)
                r = decode_eh_frame(data, vma, not big, asz, abi)
                out.append((list(r.starts), list(r.ends), list(r.offsets), r.rels, r.limits))
            else:
                c = ehframe.read_columns(data, vma, big, asz, 16, 6)
                out.append((list(c.offsets), list(c.starts), list(c.sizes), c.rels, c.limits))
        except Exception as exc:  # noqa: BLE001 — the error itself is compared
            out.append((type(exc).__name__, str(exc)))
        finally:
            ehframe.CFIRUN = CFIRUN
    return tuple(out)


def entry(body: bytes, big: bool = False) -> bytes:
    return struct.pack(">I" if big else "<I", len(body)) + body


def cie(aug: bytes, program: bytes, *, version: int = 1, enc: int = 0x1B, caf: int = 1,
        daf: int = -8, big: bool = False) -> bytes:
    o = ">" if big else "<"
    body = struct.pack(o + "IB", 0, version) + aug + b"\0"
    if version == 4:
        body += bytes([8, 0])
    body += uleb(caf) + sleb(daf) + (bytes([16]) if version == 1 else uleb(16))
    if aug.startswith(b"z"):
        augdata = b""
        for ch in aug[1:]:
            if ch == ord("R"):
                augdata += bytes([enc])
            elif ch == ord("P"):
                augdata += bytes([0x9B]) + struct.pack(o + "i", 0x100)
            elif ch == ord("L"):
                augdata += bytes([0x1B])
        body += uleb(len(augdata)) + augdata
    return entry(body + program, big)


def fde(cie_at: int, at: int, program: bytes, *, start: int = 0x40, size: int = 0x80,
        z: bool = True, big: bool = False) -> bytes:
    o = ">" if big else "<"
    body = struct.pack(o + "Iii", (at + 4 - cie_at) & 0xFFFFFFFF, start, size) + (
        b"\0" if z else b"")
    return entry(body + program, big)


# Instructions the compilers write, with operands on the edges, and some they rarely do.
def _op(draw: st.DrawFn) -> bytes:
    reg = draw(st.sampled_from([0, 6, 7, 16, 29, 30, 63, 200, 1 << 40]))
    n = draw(st.sampled_from([0, 1, 8, 0x7F, 0x80, 0x3FFF, 1 << 32, (1 << 62) - 1]))
    s = draw(st.sampled_from([0, -1, 1, -64, 63, -(1 << 40), (1 << 62) - 1]))
    kind = draw(st.integers(0, 22))
    if kind == 0:
        return bytes([0x40 | draw(st.integers(0, 63))])
    if kind == 1:
        return bytes([0x80 | (reg & 0x3F)]) + uleb(n)
    if kind == 2:
        return bytes([0xC0 | (reg & 0x3F)])
    if kind == 3:
        op = draw(st.sampled_from([0x02, 0x03, 0x04]))
        return bytes([op]) + bytes(draw(st.integers(0, 2)) for _ in range({2: 1, 3: 2, 4: 4}[op]))
    if kind == 4:
        op = draw(st.sampled_from([0x05, 0x11, 0x14, 0x15, 0x2F]))
        return bytes([op]) + uleb(reg) + (sleb(s) if op in (0x11, 0x15) else uleb(n))
    if kind == 5:
        return bytes([draw(st.sampled_from([0x06, 0x07, 0x08, 0x0D, 0x0E, 0x2E]))]) + uleb(
            reg if draw(st.booleans()) else n)
    if kind == 6:
        return bytes([0x09]) + uleb(reg) + uleb(n)
    if kind in (7, 8):
        return bytes([0x0A if kind == 7 else 0x0B])
    if kind == 9:
        return bytes([0x0C]) + uleb(reg) + uleb(n)
    if kind == 10:
        return bytes([0x12]) + uleb(reg) + sleb(s)
    if kind == 11:
        return bytes([0x13]) + sleb(s)
    if kind == 12:  # def_cfa_expression: the PLT's
        expr = draw(st.sampled_from([b"\x77\x08\x80\x00\x3f\x1a\x3b\x2a\x33\x24\x22",
                                     b"\x77\x08", b""]))
        return bytes([0x0F]) + uleb(len(expr)) + expr
    if kind == 13:
        expr = draw(st.binary(max_size=4))
        return bytes([draw(st.sampled_from([0x10, 0x16]))]) + uleb(reg) + uleb(len(expr)) + expr
    if kind == 14:
        return bytes([0x01]) + struct.pack("<q", draw(st.integers(-8, 0x200)))
    if kind == 15:
        return bytes([0x00, 0x2D])
    if kind == 16:  # a LEB128 past 9 bytes (Python's alone)
        return bytes([0x0E]) + b"\x80" * draw(st.integers(8, 12)) + b"\x01"
    if kind == 17:
        return bytes([draw(st.integers(0, 255))])
    return bytes([0x40 | draw(st.integers(0, 63))])


@st.composite
def programs(draw: st.DrawFn) -> bytes:
    ops = draw(st.lists(st.composite(_op)(), max_size=12))
    prog = b"".join(ops)
    if draw(st.integers(0, 9)) == 0:  # cut inside an instruction
        prog = prog[:draw(st.integers(0, len(prog)))]
    return prog


@st.composite
def sections(draw: st.DrawFn) -> tuple[bytes, bool]:
    big = draw(st.booleans())
    # (mostly what toolchains write: the C reader's case)
    aug = draw(st.sampled_from([b"zR"] * 4 + [b"zPLR", b"zRS", b"", b"zR?", b"zRB", b"eh"]))
    version = draw(st.sampled_from([1, 1, 3, 4]))
    enc = draw(st.sampled_from([0x1B] * 4 + [0x03, 0x00, 0x0B, 0x9B, 0x1C]))
    init = draw(st.sampled_from([b"\x0c\x07\x08\x90\x01", b"\x0c\x07\x08", b"", b"\x0a",
                                 b"\x0f\x02\x77\x08"]))
    data = cie(aug, init, version=version, enc=enc, caf=draw(st.sampled_from([1, 4])),
               daf=draw(st.sampled_from([-8, -4, 1, 1 << 40])), big=big)
    cies = [0]
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.integers(0, 5)) == 0:
            cies.append(len(data))
            data += cie(b"zR", init, big=big)
            continue
        at = len(data)
        target = draw(st.sampled_from(cies * 4 + [at + 8, 3]))
        data += fde(target, at, draw(programs()), z=aug.startswith(b"z"),
                    start=draw(st.integers(-(1 << 31), (1 << 31) - 1)),
                    size=draw(st.integers(-4, 0x1000)), big=big)
    if draw(st.booleans()):
        data += b"\0\0\0\0"
    if draw(st.integers(0, 9)) == 0 and data:  # damage: a byte, or the end
        k = draw(st.integers(0, len(data) - 1))
        data = (data[:k] + bytes([draw(st.integers(0, 255))]) + data[k + 1:]
                if draw(st.booleans()) else data[:k])
    return data, big


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sec=sections(), convert=st.booleans(), asz=st.sampled_from([8, 4]))
def test_generated_sections_read_alike(sec: tuple[bytes, bool], convert: bool,
                                       asz: int) -> None:
    data, big = sec
    c, py = both(data, big=big, asz=asz, convert=convert)
    assert c == py


def test_generated_sections_mostly_take_the_c_path() -> None:
    """The plain case is the C reader's, whole: no FDE left to Python."""
    prog = b"\x41\x0e\x10\x86\x02\x43\x0d\x06\x0a\x4c\x0c\x07\x08\x0b\x41"
    data = cie(b"zR", b"\x0c\x07\x08\x90\x01")
    for _ in range(3):
        data += fde(0, len(data), prog)
    data += fde(0, len(data), b"\x0f\x02\x77\x08")  # an expression: C's too
    got = CFIRUN.scan(data, 0x1000, False, 8, 16, 6, 1 << 21, (1 << 16) - 1)
    assert got is not None and all(type(d) is bytes for d in got[4])
    assert len(got[4]) == 2  # three FDEs with one program share an entry
    assert both(data)[0] == both(data)[1]
    assert both(data, convert=True)[0] == both(data, convert=True)[1]


def test_set_loc_is_left_to_python() -> None:
    data = cie(b"zR", b"\x0c\x07\x08\x90\x01")
    data += fde(0, len(data), b"\x41\x0e\x10\x01" + struct.pack("<i", 0x50))
    got = CFIRUN.scan(data, 0x1000, False, 8, 16, 6, 1 << 21, (1 << 16) - 1)
    assert got is not None and type(got[4][0]) is tuple
    c, py = both(data)
    assert c == py and len(c[3][0]) == 3


@pytest.mark.parametrize("program", [b"\x0b", b"\x0e", b"\x3f", b"\x0e" + b"\xff" * 12 + b"\x01"])
def test_bad_programs_fail_as_in_python(program: bytes) -> None:
    data = cie(b"zR", b"\x0c\x07\x08") + b""
    data += fde(0, len(data), program)
    c, py = both(data)
    assert c == py and c[0] == "EhFrameError"


def test_work_bounds_leave_the_section_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Near a bound the C reader declines; Python's reader stops the FDE as it always did."""
    monkeypatch.setattr(callframe, "MAX_FDE_ROWS", 4)
    data = cie(b"zR", b"\x0c\x07\x08")
    data += fde(0, len(data), b"\x41" * 8)
    assert CFIRUN.scan(data, 0, False, 8, 16, 6, 1 << 21, 3) is None
    c, py = both(data)
    assert c == py and c[4] == {0: "more than 4 CFI rows in one FDE"}


def _eh_frames() -> list[Path]:
    out = []
    for p in sorted(CORPUS.rglob("*")):
        if p.is_file() and p.read_bytes()[:4] == b"\x7fELF":
            out.append(p)
    return out


@pytest.mark.parametrize("path", _eh_frames(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_sections_read_alike(path: Path) -> None:
    elf = ELFFile(io.BytesIO(path.read_bytes()))
    sec = elf.get_section_by_name(".eh_frame")
    if sec is None or sec["sh_type"] == "SHT_NOBITS":
        pytest.skip("no .eh_frame bytes")
    data, big = sec.data(), not elf.little_endian
    asz = elf.elfclass // 8
    for convert in (False, True):
        c, py = both(data, sec["sh_addr"], big, asz, convert)
        assert c == py
    # and damaged: a few bytes of the first FDE's program
    for k in range(min(len(data), 0x60), min(len(data), 0x70)):
        bad = data[:k] + bytes([data[k] ^ 0xFF]) + data[k + 1:]
        c, py = both(bad, sec["sh_addr"], big, asz)
        assert c == py


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_fuzz_harness_inputs(data: bytes) -> None:
    """fuzz/cfirun.py's property on its own input shapes (the ASan campaign's harness)."""
    from fuzz.cfirun import both as harness_both
    from fuzz.cfirun import make_section

    section, big, asz = make_section(data)
    fast, ref = harness_both(section, big, asz, CFIRUN)
    assert fast == ref
    # the harness puts the switch back: it left None, and every later test in the process
    # read .eh_frame with the Python reference instead of the C reader users run
    assert ehframe.CFIRUN is CFIRUN


def test_fuzz_harness_reaches_the_interpreter() -> None:
    from fuzz.cfirun import make_section

    section, big, asz = make_section(b"\x04\x41\x0e\x10\x86\x02\xff\xfe\x0f\x02\x77\x08")
    got = CFIRUN.scan(section, 0x1000, big, asz, 16, 6, 1 << 21, (1 << 16) - 1)
    assert got is not None and len(got[4]) == 2 and all(type(d) is bytes for d in got[4])
