"""`sfcheck dump --json`: the same content as the text dump, as data (schema:
sfcheck-dump.schema.json)."""

from __future__ import annotations

from ..errors import DecodeError
from ..format import constants, datawords
from ..format.decode import Decoder
from ..format.model import FDE, FRE, Header

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

_U64 = (1 << 64) - 1


def header_json(h: Header) -> dict[str, Any]:
    flags = [name for bit, name in ((constants.F_FDE_SORTED, "FDE_SORTED"),
                                    (constants.F_FRAME_POINTER, "FRAME_POINTER"),
                                    (constants.F_FDE_FUNC_START_PCREL, "FDE_FUNC_START_PCREL"))
             if h.flags & bit]
    return {
        "version": h.version, "flags": h.flags, "flag_names": flags,
        "abi": h.abi, "abi_name": constants.ABI_NAMES.get(h.abi),
        "big_endian": h.big_endian, "cfa_fixed_fp_offset": h.fixed_fp,
        "cfa_fixed_ra_offset": h.fixed_ra, "auxhdr_len": len(h.auxhdr),
        "num_fdes": h.num_fdes, "num_fres": h.num_fres, "fre_len": h.fre_len,
        "fdeoff": h.fdeoff, "freoff": h.freoff,
    }


def _flex_rule(ctl: datawords.Control, offset: int | None) -> dict[str, Any]:
    return {"register": ctl.reg if ctl.reg_p else None, "cfa_relative": not ctl.reg_p,
            "offset": offset, "deref": ctl.deref}


def fre_json(h: Header, fde: FDE, fre: FRE, func_pc: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "offset": fre.offset, "start": fre.start,
        "pc": fre.start if fde.pcmask else (func_pc + fre.start) & _U64,
        "info": fre.info, "words": list(fre.words), "mangled_ra": fre.mangled_ra,
        "ra_undefined": fre.ra_undefined,
    }
    if fre.ra_undefined:
        return out
    if fde.flex(h.version):
        cfa_ctl, ra_ctl, fp_ctl = datawords.flex_controls(fre)
        cfa = datawords.cfa_offset(h, fre, True)
        out["cfa"] = None if cfa_ctl is None else _flex_rule(cfa_ctl, cfa)
        fp = datawords.fp_offset(h, fre, True)
        out["fp"] = None if fp_ctl is None or fp is None else _flex_rule(fp_ctl, fp)
        if ra_ctl is None:
            out["ra"] = {"fixed_cfa_offset": h.fixed_ra} if h.fixed_ra else None
        elif datawords.flex_ra_padded(fre):
            out["ra"] = "padding"
        else:
            out["ra"] = _flex_rule(ra_ctl, datawords.ra_offset(h, fre, True))
        return out
    out["cfa"] = {"base": "sp" if fre.base_sp else "fp",
                  "offset": datawords.cfa_offset(h, fre, False)}
    fp = datawords.fp_offset(h, fre, False)
    out["fp"] = None if fp is None else _saved(h, fp)
    ra = datawords.ra_offset(h, fre, False)
    if h.fixed_ra != 0:
        out["ra"] = {"fixed_cfa_offset": h.fixed_ra}
    elif ra is None:
        out["ra"] = None
    elif ra == constants.RA_OFFSET_INVALID:
        out["ra"] = "padding"
    else:
        out["ra"] = _saved(h, ra)
    return out


def _saved(h: Header, value: int) -> dict[str, Any]:
    reg = datawords.s390x_regnum(h, value)
    return {"register": reg} if reg is not None else {"cfa_offset": value}


def fde_json(dec: Decoder, index: int, fde: FDE, section_vma: int) -> dict[str, Any]:
    h = dec.header
    # as objdump does (ignores fdeoff); the validator flags fdeoff != 0
    pc = h.func_start(index, fde.start, section_vma, honour_fdeoff=False) & _U64
    return {
        "index": index, "offset": fde.offset, "pc": pc, "start_field": fde.start,
        "size": fde.size, "info": fde.info, "fre_type": fde.fre_type,
        "pc_type": "mask" if fde.pcmask else "inc", "rep_size": fde.rep_size,
        "fde_type": ("flex" if fde.flex(h.version) else "default"),
        "info2": fde.info2, "signal": h.version >= constants.VERSION_3 and fde.signal,
        "pauth_key": "B" if fde.pauth_key else "A", "fre_off": fde.fre_off,
        "num_fres": fde.num_fres,
        "fres": [fre_json(h, fde, fre, pc) for fre in fde.fres],
    }


def dump_json(data: bytes, section_vma: int = 0, name: str = ".sframe") -> dict[str, Any]:
    """The section as a dict; a decode error is reported in "error" after what was read."""
    out: dict[str, Any] = {"name": name, "vma": section_vma, "size": len(data),
                           "header": None, "fdes": [], "error": None}
    if not data:
        return out
    try:
        dec = Decoder(data)
        out["header"] = header_json(dec.header)
        for i, fde in enumerate(dec.iter_fdes()):
            out["fdes"].append(fde_json(dec, i, fde, section_vma))
    except DecodeError as exc:
        out["error"] = {"message": exc.message, "offset": exc.offset,
                        "structure": exc.structure, "field": exc.field}
    return out


SCHEMA_FILE = "sfcheck-dump.schema.json"


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of `dump --json` output; shipped as package data."""
    import json
    from importlib import resources

    return json.loads(resources.files(__package__).joinpath(SCHEMA_FILE).read_text("utf-8"))
