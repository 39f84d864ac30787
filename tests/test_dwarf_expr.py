"""sfcheck.dwarf.expr against pyelftools' DWARF expression parser (the reference)."""

from __future__ import annotations

from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.dwarf.structs import DWARFStructs
from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.dwarf.expr import parse_expr

from helpers import sleb, uleb

PARSERS = {le: DWARFExprParser(DWARFStructs(little_endian=le, dwarf_format=32, address_size=8))
           for le in (True, False)}
PLT = bytes(
    [0x77, 0x08, 0x80, 0x00, 0x3F, 0x1A, 0x3B, 0x2A, 0x33, 0x24, 0x22])  # ld's .plt CFA


def _ref(expr: bytes, le: bool) -> list[tuple[str, list[int]]]:
    return [(op.op_name, list(op.args)) for op in PARSERS[le].parse_expr(list(expr))]


def _ours(expr: bytes, le: bool) -> list[tuple[str, list[int]]] | None:
    ops = parse_expr(expr, le)
    return None if ops is None else [(op.op_name, list(op.args)) for op in ops]


def test_plt_and_drap_expressions() -> None:
    assert _ours(PLT, True) == _ref(PLT, True)
    assert [name for name, _ in _ours(PLT, True)] == [
        "DW_OP_breg7", "DW_OP_breg16", "DW_OP_lit15", "DW_OP_and", "DW_OP_lit11",
        "DW_OP_ge", "DW_OP_lit3", "DW_OP_shl", "DW_OP_plus"]
    drap = bytes([0x76, 0x78, 0x06])  # breg6 -8; deref
    assert _ours(drap, True) == _ref(drap, True) == [("DW_OP_breg6", [-8]), ("DW_OP_deref", [])]


def test_outside_the_table_falls_back() -> None:
    assert parse_expr(bytes([0x03]) + bytes(8), True) is None  # DW_OP_addr
    assert parse_expr(bytes([0x96]), True) is None  # DW_OP_nop
    assert parse_expr(bytes([0x0C, 1, 2]), True) is None  # const4u cut short
    assert parse_expr(bytes([0x77, 0x80]), True) is None  # LEB128 cut short


_FIXED = st.sampled_from([0x06, 0x12, 0x13, 0x14, 0x16, 0x1A, 0x1C, 0x1E, 0x21, 0x22, 0x24,
                          0x25, 0x26, 0x27, 0x29, 0x2A, 0x2B, 0x2C, 0x2D, 0x2E])


def _fixed(codes: list[int], size: int) -> st.SearchStrategy[bytes]:
    """One of `codes` with a `size`-byte operand."""
    return st.builds(lambda c, raw: bytes([c]) + raw, st.sampled_from(codes),
                     st.binary(min_size=size, max_size=size))


_OP = st.one_of(
    st.builds(lambda c: bytes([c]), st.integers(0x30, 0x4F) | _FIXED),
    st.builds(lambda c, v: bytes([c]) + sleb(v), st.integers(0x70, 0x8F),
              st.integers(-(1 << 40), 1 << 40)),
    _fixed([0x08, 0x09], 1),
    _fixed([0x0A, 0x0B], 2),
    _fixed([0x0C, 0x0D], 4),
    _fixed([0x0E, 0x0F], 8),
    st.builds(lambda v: b"\x10" + uleb(v), st.integers(0, 1 << 64)),
    st.builds(lambda v: b"\x11" + sleb(v), st.integers(-(1 << 63), 1 << 63)),
    st.builds(lambda v: b"\x23" + uleb(v), st.integers(0, 1 << 64)),
    st.builds(lambda r, v: b"\x92" + uleb(r) + sleb(v), st.integers(0, 300),
              st.integers(-(1 << 20), 1 << 20)),
)


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(_OP, max_size=12), le=st.booleans())
def test_same_as_pyelftools_on_the_table(ops: list[bytes], le: bool) -> None:
    expr = b"".join(ops)
    assert _ours(expr, le) == _ref(expr, le)


@settings(max_examples=300, deadline=None)
@given(expr=st.binary(max_size=24), le=st.booleans())
def test_any_bytes_none_or_same_as_pyelftools(expr: bytes, le: bool) -> None:
    ours = _ours(expr, le)
    if ours is not None:
        assert ours == _ref(expr, le)
