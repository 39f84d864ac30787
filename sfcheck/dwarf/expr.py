"""DWARF expressions as `.eh_frame` writers use them, decoded without pyelftools.

gas and ld write a handful of operations in CFA and register-rule expressions (the
PLT's ``breg7 8; breg16 0; lit15; and; lit11; ge; lit3; shl; plus``, DRAP's
``breg6 -8; deref``). Decoding those here spares every run pyelftools' DWARF
import (~40 ms); :func:`parse_expr` returns None for anything else (an operation
not in the table, or an operand cut short), and the caller hands the bytes to
pyelftools, which stays the reference (tests/test_dwarf_expr.py compares them).
"""

from __future__ import annotations

import struct

from ..record import NamedTuple
from .leb128 import LebError, leb128


class Op(NamedTuple):
    """One operation, named and with arguments as pyelftools' DWARFExprOp has them."""

    op_name: str
    args: list[int]


# opcode -> (name, struct format of its one fixed-size operand or "" for none)
_FIXED: dict[int, tuple[str, str]] = {
    0x06: ("DW_OP_deref", ""),
    0x08: ("DW_OP_const1u", "B"), 0x09: ("DW_OP_const1s", "b"),
    0x0A: ("DW_OP_const2u", "H"), 0x0B: ("DW_OP_const2s", "h"),
    0x0C: ("DW_OP_const4u", "I"), 0x0D: ("DW_OP_const4s", "i"),
    0x0E: ("DW_OP_const8u", "Q"), 0x0F: ("DW_OP_const8s", "q"),
    0x12: ("DW_OP_dup", ""), 0x13: ("DW_OP_drop", ""), 0x14: ("DW_OP_over", ""),
    0x16: ("DW_OP_swap", ""), 0x1A: ("DW_OP_and", ""), 0x1C: ("DW_OP_minus", ""),
    0x1E: ("DW_OP_mul", ""), 0x21: ("DW_OP_or", ""), 0x22: ("DW_OP_plus", ""),
    0x24: ("DW_OP_shl", ""), 0x25: ("DW_OP_shr", ""), 0x26: ("DW_OP_shra", ""),
    0x27: ("DW_OP_xor", ""), 0x29: ("DW_OP_eq", ""), 0x2A: ("DW_OP_ge", ""),
    0x2B: ("DW_OP_gt", ""), 0x2C: ("DW_OP_le", ""), 0x2D: ("DW_OP_lt", ""),
    0x2E: ("DW_OP_ne", ""),
}
_CONSTU, _CONSTS, _PLUS_UCONST, _BREGX = 0x10, 0x11, 0x23, 0x92


def parse_expr(expr: bytes, little_endian: bool) -> tuple[Op, ...] | None:
    """The operations of `expr`, or None when it holds anything outside the table."""
    order = "<" if little_endian else ">"
    ops: list[Op] = []
    pos, n = 0, len(expr)
    try:
        while pos < n:
            code = expr[pos]
            pos += 1
            if 0x30 <= code <= 0x4F:
                ops.append(Op(f"DW_OP_lit{code - 0x30}", []))
            elif 0x70 <= code <= 0x8F:
                off, pos = leb128(expr, pos, n, True)
                ops.append(Op(f"DW_OP_breg{code - 0x70}", [off]))
            elif code in _FIXED:
                name, fmt = _FIXED[code]
                if fmt:
                    size = struct.calcsize(fmt)
                    if pos + size > n:
                        return None
                    ops.append(Op(name, [struct.unpack_from(order + fmt, expr, pos)[0]]))
                    pos += size
                else:
                    ops.append(Op(name, []))
            elif code in (_CONSTU, _CONSTS, _PLUS_UCONST):
                value, pos = leb128(expr, pos, n, code == _CONSTS)
                name = {_CONSTU: "DW_OP_constu", _CONSTS: "DW_OP_consts",
                        _PLUS_UCONST: "DW_OP_plus_uconst"}[code]
                ops.append(Op(name, [value]))
            elif code == _BREGX:
                reg, pos = leb128(expr, pos, n, False)
                off, pos = leb128(expr, pos, n, True)
                ops.append(Op("DW_OP_bregx", [reg, off]))
            else:
                return None
    except LebError:  # cut short or too long: pyelftools decides
        return None
    return tuple(ops)
