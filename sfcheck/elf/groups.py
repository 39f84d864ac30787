"""ELF facts beyond the SFrame bytes that the user-facing rules need: COMDAT group
membership and `.rela.sframe` relocation types (objects), the soname and version
definitions (what marks a vDSO), and the size of `.eh_frame` (the figure distros weigh
`.sframe` against). The records (``model.ElfFacts``) are in the model.

Read by :func:`read_facts` from the loader's already decoded section headers; every
table is bounded and a damaged one only leaves its fact empty (these facts add
findings, they are never a reason to refuse a file).
"""

from __future__ import annotations

import struct

from sfcheck.elf.constants import SHT_NOBITS, SHT_REL, SHT_RELA
from sfcheck.elf.headers import PARSE_ERRORS
from sfcheck.elf.model import ElfFacts, SFrameReloc
from sfcheck.elf.relocations import RELOC_TYPES
from sfcheck.elf.symbols import VALUE_AND_SECTION, entry_format, entry_size
from sfcheck.errors import ElfError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

SHT_DYNAMIC = 6
SHT_GROUP = 17
SHT_GNU_VERDEF = 0x6FFFFFFD
GRP_COMDAT = 1
DT_NULL, DT_NEEDED, DT_SONAME = 0, 1, 14

MAX_GROUP_MEMBERS = 1 << 16  # section indices read per file from all SHT_GROUP sections
MAX_RELOCS = 1 << 20  # .rela.sframe entries looked at per file
MAX_DYNAMIC = 4096  # .dynamic entries read
MAX_VERDEFS = 256  # version definitions followed (vd_next chains can loop)
_DAMAGED = (ElfError, *PARSE_ERRORS)


def _cstr(table: bytes, off: int, limit: int = 256) -> str:
    if not 0 <= off < len(table):
        return ""
    end = table.find(b"\0", off, off + limit)
    return table[off:end if end >= 0 else off + limit].decode("utf-8", "surrogateescape")


def read_facts(loader: Any, shdrs: Sequence[Any], names: Sequence[str],
               sframe_indices: Sequence[int], is_rel: bool, is_dyn: bool) -> ElfFacts:
    """The facts of one file (``loader``: the loader.load() in progress, an ElfFile with
    its Relocator)."""
    eh = [sh for sh, name in zip(shdrs, names, strict=True)
          if name == ".eh_frame" and sh.type != SHT_NOBITS]
    facts: dict[str, Any] = {"eh_frame_size": sum(sh.size for sh in eh) if eh else None}
    for key, read in (("comdat", _comdat), ("relocs", _relocs), ("dynamic", _dynamic),
                      ("verdefs", _verdefs)):
        if (key in ("comdat", "relocs") and not is_rel) or (
                key in ("dynamic", "verdefs") and not is_dyn):
            continue
        try:
            got = read(loader, shdrs, names, sframe_indices)
        except _DAMAGED:  # a damaged table leaves the fact empty
            continue
        if key == "dynamic":
            facts["soname"], facts["needed"] = got
        else:
            facts[key] = got
    if facts.get("relocs"):
        facts["reloc_names"] = tuple((rtype, kind[0]) for rtype, kind in
                                     RELOC_TYPES.get(loader.machine, {}).items())
    return ElfFacts(**facts)


def _comdat(loader: Any, shdrs: Sequence[Any], names: Sequence[str],
            _sf: Sequence[int]) -> tuple[tuple[int, str], ...]:
    """Members of GRP_COMDAT groups, with the group's signature (its sh_info symbol)."""
    out: list[tuple[int, str]] = []
    tables: dict[int, tuple[bytes, bytes]] = {}  # read once: a C++ .o has thousands of groups
    for sh in shdrs:
        if sh.type != SHT_GROUP or sh.size < 4 or len(out) >= MAX_GROUP_MEMBERS:
            continue
        raw = loader.section_bytes(sh, names[sh.index])
        keep = min(len(raw) // 4, MAX_GROUP_MEMBERS - len(out) + 1)  # flag word + members
        words = struct.unpack_from(f"{loader.order}{keep}I", raw)
        if not words or not words[0] & GRP_COMDAT:
            continue
        if sh.link not in tables:
            tables[sh.link] = _symbol_tables(loader, shdrs, names, sh.link)
        sig = _symbol_name(loader, names, *tables[sh.link], sh.info) or f"[{sh.index}]"
        out.extend((m, sig) for m in words[1:] if 0 < m < len(shdrs))
    return tuple(out)


def _symbol_tables(loader: Any, shdrs: Sequence[Any], names: Sequence[str],
                   symtab: int) -> tuple[bytes, bytes]:
    """(symbol table, its string table) of section `symtab`, empty when there is none."""
    if not 0 < symtab < len(shdrs) or not 0 < shdrs[symtab].link < len(shdrs):
        return b"", b""
    st = shdrs[symtab]
    return (loader.symbol_table(st, names[symtab]),
            loader.section_bytes(shdrs[st.link], names[st.link]))


def _symbol_name(loader: Any, names: Sequence[str], raw: bytes, strtab: bytes,
                 sym: int) -> str | None:
    is64 = loader.elfclass == 64
    entsize = entry_size(is64)
    if (sym + 1) * entsize > len(raw):
        return None
    fields = struct.unpack_from(entry_format(loader.order, is64), raw, sym * entsize)
    name = _cstr(strtab, fields[0])  # st_name
    if not name:  # a section symbol: the section's name
        shndx = VALUE_AND_SECTION[is64](fields)[1]
        name = names[shndx] if 0 < shndx < len(names) else ""
    return name or None


def _relocs(loader: Any, shdrs: Sequence[Any], names: Sequence[str],
            sframe_indices: Sequence[int]) -> tuple[SFrameReloc, ...]:
    """Every REL/RELA entry against an SFrame section, with the section its symbol is in."""
    out: list[SFrameReloc] = []
    is64 = loader.elfclass == 64
    entsize, fmt, section_of = entry_size(is64), entry_format(loader.order, is64), \
        VALUE_AND_SECTION[is64]
    for rs in shdrs:
        if rs.type not in (SHT_REL, SHT_RELA) or rs.info not in sframe_indices:
            continue
        symtab = b""
        if 0 < rs.link < len(shdrs):
            symtab = loader.symbol_table(shdrs[rs.link], names[rs.link])
        for r_offset, sym, rtype, _addend in loader.relocator.entries(rs, names[rs.index]):
            if len(out) >= MAX_RELOCS:
                return tuple(out)
            target = 0
            if sym and (sym + 1) * entsize <= len(symtab):
                shndx = section_of(struct.unpack_from(fmt, symtab, sym * entsize))[1]
                target = shndx if 0 < shndx < min(len(shdrs), 0xFF00) else 0
            out.append(SFrameReloc(rs.info, r_offset, rtype, target))
    return tuple(out)


def _dynamic(loader: Any, shdrs: Sequence[Any], names: Sequence[str],
             _sf: Sequence[int]) -> tuple[str | None, int]:
    """(DT_SONAME, number of DT_NEEDED) from the SHT_DYNAMIC section."""
    dyn = next((sh for sh in shdrs if sh.type == SHT_DYNAMIC), None)
    if dyn is None or not 0 < dyn.link < len(shdrs):
        return None, 0
    raw = loader.section_bytes(dyn, names[dyn.index])
    strtab = loader.section_bytes(shdrs[dyn.link], names[dyn.link])
    fmt = loader.order + ("qQ" if loader.elfclass == 64 else "iI")
    size = struct.calcsize(fmt)
    soname, needed = None, 0
    for i in range(min(len(raw) // size, MAX_DYNAMIC)):
        tag, val = struct.unpack_from(fmt, raw, i * size)
        if tag == DT_NULL:
            break
        if tag == DT_SONAME:
            soname = _cstr(strtab, val)
        elif tag == DT_NEEDED:
            needed += 1
    return soname, needed


def _verdefs(loader: Any, shdrs: Sequence[Any], names: Sequence[str],
             _sf: Sequence[int]) -> tuple[str, ...]:
    """The names of the version definitions (each Elf_Verdef's first Elf_Verdaux)."""
    vd = next((sh for sh in shdrs if sh.type == SHT_GNU_VERDEF), None)
    if vd is None or not 0 < vd.link < len(shdrs):
        return ()
    raw = loader.section_bytes(vd, names[vd.index])
    strtab = loader.section_bytes(shdrs[vd.link], names[vd.link])
    order = loader.order
    out: list[str] = []
    off, seen = 0, set()
    while len(out) < MAX_VERDEFS and off + 20 <= len(raw) and off not in seen:
        seen.add(off)
        _ver, _flags, _ndx, cnt, _hash, aux, nxt = struct.unpack_from(order + "HHHHIII", raw,
                                                                      off)
        if cnt and off + aux + 8 <= len(raw):
            out.append(_cstr(strtab, struct.unpack_from(order + "I", raw, off + aux)[0]))
        if not nxt:
            break
        off += nxt
    return tuple(out)
