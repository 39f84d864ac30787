"""sfcheck.dwarf.ehframe's glue around the C reader (sfcheck/dwarf/_cfirun.c): the switch
that loads it, what read_columns hands it (byte order, the row bound it must keep under) and
what it makes of the answer (programs left to Python run with the FP column and the
converter, converted rows interned, each rule triple converted once per file). The C path
must give what the Python reference gives; where it declines, the Python reader answers.

Skipped where the extension was not built (no compiler).
"""

from __future__ import annotations

import struct

import pytest

from sfcheck.dwarf import callframe, ehframe
from sfcheck.dwarf.callframe import OFFSET

from helpers import sleb, uleb

try:  # (imported, not taken from ehframe.CFIRUN: SFCHECK_PURE_PYTHON may have left it None)
    from sfcheck.dwarf import _cfirun
except ImportError:
    _cfirun = None
pytestmark = pytest.mark.skipif(_cfirun is None, reason="sfcheck.dwarf._cfirun not built")

VMA = 0x4000
RA, FP = 16, 6


class Spy:
    """The C reader, with each answer kept (None: it declined the section)."""

    def __init__(self) -> None:
        self.answers: list[tuple | None] = []

    def scan(self, *args: object) -> tuple | None:
        got = _cfirun.scan(*args)
        self.answers.append(got)
        return got


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    s = Spy()
    monkeypatch.setattr(ehframe, "CFIRUN", s)
    return s


def entry(body: bytes, o: str = "<") -> bytes:
    return struct.pack(o + "I", len(body)) + body


def cie(init: bytes = b"\x0c\x07\x08", big: bool = False) -> bytes:
    """A "zR" CIE, pcrel sdata4 pointers (0x1b), code alignment 1, data alignment -8."""
    o = ">" if big else "<"
    return entry(struct.pack(o + "I", 0) + b"\x01zR\0" + uleb(1) + sleb(-8) + bytes([RA])
                 + uleb(1) + b"\x1b" + init, o)


def fde(at: int, program: bytes, start: int = 0x100, cie_at: int = 0,
        big: bool = False) -> bytes:
    """The FDE at section offset `at` for [VMA + start, +0x20)."""
    o = ">" if big else "<"
    return entry(struct.pack(o + "Iii", at + 4 - cie_at, VMA + start - (VMA + at + 8), 0x20)
                 + b"\0" + program, o)


def section(*programs: bytes, init: bytes = b"\x0c\x07\x08", big: bool = False) -> bytes:
    """A CIE at 0, then one FDE per program, at starts 0x100, 0x200, ..."""
    data = cie(init, big)
    for k, program in enumerate(programs):
        data += fde(len(data), program, 0x100 * (k + 1), big=big)
    return data


def columns(data: bytes, reader: object, big: bool = False, convert: object = None) -> tuple:
    """read_columns with `reader` as the C reader (None: the Python reference)."""
    saved = ehframe.CFIRUN
    ehframe.CFIRUN = reader
    try:
        c = ehframe.read_columns(data, VMA, big, 8, RA, FP, convert)
    finally:
        ehframe.CFIRUN = saved
    return list(c.offsets), list(c.starts), list(c.sizes), c.rels, c.limits


def test_the_switch_loads_the_c_reader_unless_told_not_to(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SFCHECK_PURE_PYTHON", raising=False)
    assert ehframe._load_cfirun() is _cfirun
    for value in ("1", ""):  # set to anything, even empty
        monkeypatch.setenv("SFCHECK_PURE_PYTHON", value)
        assert ehframe._load_cfirun() is None


@pytest.mark.parametrize("big", [False, True])
def test_the_c_reader_takes_either_byte_order(spy: Spy, big: bool) -> None:
    data = section(b"\x41\x0e\x10\x86\x02", b"\x41\x0e\x10", big=big)
    got = columns(data, spy, big)
    assert len(spy.answers) == 1 and spy.answers[0] is not None
    assert got == columns(data, None, big)
    assert got[:3] == ([0x14, 0x2A], [VMA + 0x100, VMA + 0x200], [0x20, 0x20])
    assert [list(r) for r in got[3][0]] == [[0, (7, 8), None, None],
                                            [1, (7, 16), None, (OFFSET, -16)]]


def test_the_c_reader_keeps_under_the_row_bound(spy: Spy,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A program of n advance_loc instructions gives n + 1 rows; past MAX_FDE_ROWS
    advances the FDE gets none and says why. The C reader takes programs shorter than the bound (no
    bound can be met on its path) and leaves the rest to Python."""
    monkeypatch.setattr(callframe, "MAX_FDE_ROWS", 4)
    for n, taken in ((3, True), (4, False), (5, False)):
        spy.answers.clear()
        data = section(b"\x41" * n)
        got = columns(data, spy)
        assert [a is not None for a in spy.answers] == [taken], n
        assert got == columns(data, None)
        if n <= 4:
            assert [r.pc for r in got[3][0]] == list(range(n + 1)) and got[4] == {}
        else:
            assert got[3] == [()] and got[4] == {0: "more than 4 CFI rows in one FDE"}


def set_loc(at: int, to: int, then: bytes) -> bytes:
    """A program for fde()'s FDE at `at` that starts with DW_CFA_set_loc to VMA + `to`: its
    pcrel sdata4 operand follows the length, 13 bytes of fields and the opcode."""
    return b"\x01" + struct.pack("<i", VMA + to - (VMA + at + 4 + 13 + 1)) + then


def _set_loc_section() -> bytes:
    data = cie()
    data += fde(len(data), b"\x41\x0e\x10", 0x100)
    return data + fde(len(data), set_loc(len(data), 0x210, b"\x86\x02\x0e\x18"), 0x200)


def test_a_program_left_to_python_keeps_the_fp_column(spy: Spy) -> None:
    data = _set_loc_section()
    got = columns(data, spy)
    (answer,) = spy.answers
    assert answer is not None and [type(d) for d in answer[4]] == [bytes, tuple]
    assert got == columns(data, None)
    assert [list(r) for r in got[3][1]] == [[0, (7, 8), None, None],
                                            [0x10, (7, 24), None, (OFFSET, -16)]]


def _convert(calls: list) -> object:
    def convert(cfa: object, ra: object, fp: object) -> tuple:
        calls.append((cfa, ra, fp))
        return ("C", cfa), ("R", ra), ("F", fp)
    return convert


def test_a_program_left_to_python_is_converted(spy: Spy) -> None:
    data = _set_loc_section()
    got = columns(data, spy, convert=_convert([]))
    assert spy.answers[0] is not None
    assert got == columns(data, None, convert=_convert([]))
    assert [list(r) for r in got[3][1]] == [
        [0, ("C", (7, 8)), ("R", None), ("F", None)],
        [0x10, ("C", (7, 24)), ("R", None), ("F", (OFFSET, -16))]]
    # the row both FDEs have at 0 is one object, whichever reader made it
    assert got[3][0][0] is got[3][1][0]


def test_each_rule_triple_is_converted_once_and_rows_are_interned(spy: Spy) -> None:
    # different programs (so different rows from the C reader), the same rules
    data = section(b"\x41\x0e\x10", b"\x41\x0e\x10\x41", b"\x42\x0e\x10")
    for reader in (spy, None):
        calls: list = []
        got = columns(data, reader, convert=_convert(calls))
        assert calls == [((7, 8), None, None), ((7, 16), None, None)]
        a, b, c = got[3]
        assert [r.pc for r in b] == [0, 1, 2]
        assert a[0] is b[0] is c[0] and a[1] is b[1]
        assert [r.pc for r in c] == [0, 2] and b[2] is c[1]
    assert spy.answers[0] is not None and all(type(d) is bytes for d in spy.answers[0][4])


def test_a_cie_run_once_for_the_programs_left_to_python(
        spy: Spy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file's work bound counts a CIE's initial instructions once, however many FDEs
    use it: the C reader charges its bytes once, and so must the programs it leaves."""
    init = b"\x0c\x07\x08" + bytes(27)  # 30 bytes
    data = cie(init)
    for k in range(3):
        data += fde(len(data), set_loc(len(data), 0x110 + 0x100 * k, b""), 0x100 + 0x100 * k)
    # the C reader's count: the CIE after its id (9 + 30), each FDE's program plus one
    work = 39 + 3 * 6
    monkeypatch.setattr(callframe, "MAX_FILE_OPS", work)
    got = columns(data, spy)
    assert spy.answers[0] is not None and len(spy.answers[0][4]) == 3
    assert got == columns(data, None)
    assert got[4] == {} and [[r.pc for r in rows] for rows in got[3]] == [[0, 0x10]] * 3
    monkeypatch.setattr(callframe, "MAX_FILE_OPS", work - 1)  # one less: declined
    spy.answers.clear()
    assert columns(data, spy) == columns(data, None)
    assert spy.answers == [None]
