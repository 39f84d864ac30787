"""The consumer facts: what one reader rejects although the format allows it.

The rules are declared in their groups' modules (header, layout, fde, fre, elf); their
checks live here, beside the reader models they run. They run only under a consumer profile
(`--profile`, sfcheck/profiles/); under `strict` they are silent, because strict has its
own rules for real defects. Each fires only when the selected profile lists it, and its
message names the reader.
"""

from __future__ import annotations

from ..elf.model import ElfSFrameInfo
from ..errors import DecodeError
from ..format import constants
from ..format.decode import Decoder, check_fde_array
from ..format.fde_table import Columns
from ..format.model import FRE, Header
from ..profiles import Profile, flag_names
from ..walk.context import SectionContext
from ..wording import plural
from .elf import READER_TEXT
from .fde import (
    MODEL_DIV0,
    MODEL_FAILS,
    MODEL_FAILS_SPEC,
    MODEL_GAP_ROW,
    MODEL_UNINIT,
    MODEL_WRONG_ROW,
    READER_STARTS,
)
from .fre import (
    MODEL_WALK_LOOPS,
    MODEL_WALK_STOPS,
    MODEL_WALK_WARN,
    READER_FLEX_ABI,
    READER_FLEX_ONE_WORD,
)
from .header import (
    FOREIGN_WALK_RULES,
    MODEL_REFUSED,
    READER_AUXHDR,
    READER_BYTE_ORDER,
    READER_EMPTY,
    READER_FLAGS,
    READER_FOREIGN,
    READER_VERSION,
)
from .layout import MODEL_PAST, READER_OFFSETS


def check_consumer(ctx: SectionContext, profile: Profile, h: Header,
                   info: ElfSFrameInfo | None = None) -> None:
    """Run the consumer rules `profile` lists on a section whose header decoded."""
    want = profile.consumer
    if not want:
        return
    reader = profile.reader
    if READER_VERSION.id in want and h.version not in profile.versions:
        takes = ", ".join(f"v{v}" for v in sorted(profile.versions))
        ctx.emit(READER_VERSION, f"{reader} rejects version {h.version} (reads {takes})", offset=2)
        return  # nothing past the header is read
    foreign = info is not None and h.big_endian == info.little_endian
    order = "big" if h.big_endian else "little"
    if READER_BYTE_ORDER.id in want and foreign:
        ctx.emit(READER_BYTE_ORDER, f"{reader} rejects a {order}-endian section in a "
                 f"{'little' if h.big_endian else 'big'}-endian file", offset=0)
        return  # the magic is all it reads
    if READER_FOREIGN.id in want and foreign:
        bad = sorted({f.rule for f in ctx.findings if f.rule in FOREIGN_WALK_RULES})
        if bad:
            ctx.emit(READER_FOREIGN, f"{reader} swaps a {order}-endian "
                     f"section only after a bounded walk, which refuses it ({', '.join(bad)})",
                     offset=0)
    need = profile.required_flags.get(h.version, 0)
    if READER_FLAGS.id in want and need & ~h.flags and not ctx.relocatable:
        ctx.emit(READER_FLAGS, f"{reader} needs {flag_names(need & ~h.flags)}; flags are "
                 f"{h.flags:#x} ({flag_names(h.flags)})", offset=3)
    if READER_AUXHDR.id in want and profile.rejects_auxhdr and h.auxhdr:
        ctx.emit(READER_AUXHDR, f"{reader} rejects sfh_auxhdr_len {len(h.auxhdr)}", offset=7)
    if READER_EMPTY.id in want and profile.rejects_empty and not (h.num_fdes and h.num_fres):
        ctx.emit(READER_EMPTY, f"{reader} rejects num_fdes {h.num_fdes}, num_fres {h.num_fres}",
                 offset=8)
    if READER_OFFSETS.id in want:
        _check_offsets(ctx, profile, h)
    if READER_STARTS.id in want and profile.increasing_starts and not ctx.relocatable:
        prev = None
        for pc, _size, i in ctx.ranges:
            if pc == prev:
                ctx.emit(READER_STARTS, f"function start {pc:#x} equals the previous FDE's; "
                         f"{reader} with CONFIG_SFRAME_VALIDATION rejects the section",
                         fde=i, pc=pc)
            prev = pc
    if READER_TEXT.id in want and profile.one_text_segment and info is not None:
        _check_text_segments(ctx, info, reader)
    if (READER_FLEX_ONE_WORD.id in want or READER_FLEX_ABI.id in want) \
            and h.version == constants.VERSION_3:
        _check_flex_dump(ctx, profile, h)
    if profile.model:
        check_reader_model(ctx, profile, info)


def _flex_registers(fre: FRE) -> list[str]:
    """The control words of a FLEX FRE that libsframe's dumper hands to sframe_get_reg_name:
    CFA (word 0), RA (word 2, unless 0: padding) and FP (word 4, or 3 after padding), each
    only when the dumper can read it and its offset, and its reg_p bit is set."""
    n = fre.count
    if n < 2:
        return []
    w = [fre.uword(k) or 0 for k in range(n)]
    named = ["CFA"] if w[0] & 1 else []
    if n > 2 and w[2] and w[2] & 1:
        named.append("RA")
    fp = 3 if n > 2 and not w[2] else 4
    if fp + 1 < n and w[fp] & 1:
        named.append("FP")
    return named


def _check_flex_dump(ctx: SectionContext, profile: Profile, h: Header) -> None:
    """What libsframe's dumper (dump_sframe_func_fres_flex) asserts on, first case of each:
    it aborts there, so later ones are never reached."""
    want = profile.consumer
    one_word = READER_FLEX_ONE_WORD.id in want
    unknown_abi = READER_FLEX_ABI.id in want and h.abi not in constants.ABI_NAMES
    if not (one_word or unknown_abi) or not _any_flex(ctx.data, h):
        return
    try:
        for i, fde in enumerate(Decoder(ctx.data, h).iter_fdes()):
            if not fde.flex(h.version):
                continue
            for j, fre in enumerate(fde.fres):
                where = dict(fde=i, fre=j, offset=fre.offset)
                if one_word and fre.count == 1:
                    ctx.emit(READER_FLEX_ONE_WORD, f"1 data word in a FLEX FRE: "
                             f"{profile.reader}'s dumper asserts the CFA offset exists "
                             "(dump_sframe_func_fres_flex)", **where)
                    one_word = False
                regs = _flex_registers(fre) if unknown_abi else []
                if regs:
                    ctx.emit(READER_FLEX_ABI, f"{'/'.join(regs)} register in a FLEX FRE under "
                             f"abi_arch {h.abi}: {profile.reader}'s dumper asserts in "
                             "sframe_get_reg_name", **where)
                    unknown_abi = False
                if not (one_word or unknown_abi):
                    return
    except DecodeError:
        return  # the structural rules report where decoding stops


def _any_flex(data: bytes, h: Header) -> bool:
    """Whether an FDE record before the first one that fails to decode is FLEX, read
    without the FREs: when none is, _check_flex_dump's full walk reports nothing (it stops
    at the first decode error, and only FLEX FDEs report), so it is skipped.

    _any_flex_decoded, from the FDE array's FRE-offset column (format/fde_table.Columns)
    instead of one decoded FDE object per record: a v3 record (the array checked whole
    first) decodes without its FREs when its 5-byte attribute record lies within fre_len
    and the FRE sub-section's bytes (Decoder.fde's two checks), and its FDE type is the
    attribute's info2 & 0x1F. tests/test_models_fast_flex.py holds the two equal."""
    if h.version < constants.VERSION_3:
        return False
    try:
        check_fde_array(h, len(data))  # bounds the column by the bytes, not by num_fdes
    except DecodeError:
        return False
    first, fre_len = h.fres_start, h.fre_len
    last = min(h.fres_end, len(data)) - constants.V3_ATTR_SIZE  # the last attribute start
    for fre_off in Columns(data, h, 0, h.num_fdes).fre_offs:
        if fre_off + constants.V3_ATTR_SIZE > fre_len or first + fre_off > last:
            return False  # the first record that fails to decode ends the dumper's walk
        if data[first + fre_off + 3] & 0x1F == constants.FDE_TYPE_FLEX:
            return True
    return False


def _any_flex_decoded(data: bytes, h: Header) -> bool:
    """_any_flex from decoded FDE records (Decoder.fde): the reference."""
    if h.version < constants.VERSION_3:
        return False
    try:
        dec = Decoder(data, h)
        check_fde_array(h, len(data))  # bounds the loop by the bytes, not by num_fdes
        return any(dec.fde(i, with_fres=False).flex(h.version) for i in range(h.num_fdes))
    except DecodeError:
        return False


def _check_offsets(ctx: SectionContext, profile: Profile, h: Header) -> None:
    fdeoff = 0 if profile.ignores_fdeoff else h.fdeoff
    freoff = fdeoff + h.num_fdes * h.fde_size
    wrong = []
    if profile.ignores_fdeoff and h.fdeoff:
        wrong.append(f"FDEs at fdeoff {h.fdeoff:#x} (read from 0)")
    if profile.ignores_freoff and h.freoff != freoff:
        wrong.append(f"FREs at freoff {h.freoff:#x} (read from {freoff:#x})")
    if wrong:
        ctx.emit(READER_OFFSETS, f"{profile.reader} assumes the canonical layout: "
                 + ", ".join(wrong), offset=0x14)


def _check_text_segments(ctx: SectionContext, info: ElfSFrameInfo, reader: str) -> None:
    if info.e_type not in ("ET_EXEC", "ET_DYN"):
        return
    spans = [(s.vaddr, s.vaddr + s.memsz, s.index) for s in info.load_segments if s.flags & 1]
    if len(spans) < 2:
        return  # the starts can lie in one executable segment at most
    used: dict[int, int] = {}  # segment index -> first FDE starting in it
    for pc, _size, i in ctx.ranges:
        seg = next((idx for a, b, idx in spans if a <= pc < b), None)
        if seg is not None:
            used.setdefault(seg, i)
    if len(used) > 1:
        where = ", ".join(f"PT_LOAD[{seg}] (from FDE {i})" for seg, i in sorted(used.items()))
        ctx.emit(READER_TEXT, f"function starts lie in {len(used)} executable segments: {where}; "
                 f"{reader} with CONFIG_SFRAME_VALIDATION rejects every registration")


# -- Findings computed by running a reader model (sfcheck/readers/) against the reference
# table (sfcheck/unwind/table.py): the profile's `model` names the model.




MODEL_RULES = {"refused": MODEL_REFUSED, "wrong-row": MODEL_WRONG_ROW,
               "uninit": MODEL_UNINIT, "past": MODEL_PAST, "lookup-fails": MODEL_FAILS,
               "lookup-fails-spec": MODEL_FAILS_SPEC, "div0": MODEL_DIV0,
               "gap-row": MODEL_GAP_ROW, "walker": MODEL_WALK_LOOPS,
               "walker-warn": MODEL_WALK_WARN, "walk-stops": MODEL_WALK_STOPS}


def _exec_spans(info: ElfSFrameInfo | None) -> list[tuple[int, int]]:
    if info is None or info.e_type not in ("ET_EXEC", "ET_DYN"):
        return []
    return sorted((s.vaddr, s.vaddr + s.memsz) for s in info.load_segments if s.flags & 1)


def check_reader_model(ctx: SectionContext, profile: Profile,
                       info: ElfSFrameInfo | None = None) -> None:
    """Run the profile's reader model against the reference table and report each
    (kind, FDE) once, with its first PC and how many more PCs behave the same."""
    if ctx.relocatable:
        return  # only linkers read a .o: no reader registers or searches it
    from ..readers import compare  # the unwinder table is not needed by other rules
    spans = _exec_spans(info)
    if profile.model == "rfc2023":
        # binfmt registers one range from the lowest to the highest PF_X address.
        text = (spans[0][0], max(e for _, e in spans)) if spans else None
        found = compare.run_rfc2023(ctx.data, ctx.vma, text)
    elif profile.model == "v3":
        found = compare.run_v3(ctx.data, ctx.vma, spans)
    else:
        return
    first: dict[tuple[str, int | None], tuple[compare.Disagreement, int]] = {}
    for d in found:
        key = (d.kind, d.fde)
        old = first.get(key)
        first[key] = (d, 1) if old is None else (old[0], old[1] + 1)
    for (kind, fde), (d, n) in first.items():
        r = MODEL_RULES[kind]
        if r.id not in profile.consumer:
            continue
        more = f" (and {plural(n - 1, 'more PC')} of this FDE)" if n > 1 else ""
        ctx.emit(r, d.message + more, fde=fde)
