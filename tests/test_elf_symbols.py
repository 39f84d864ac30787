"""elf.symbols.FuncSymbols (symbol table read column-wise, on first use) against the plain
per-entry reading it replaced: the same symbols in the same order, on random tables of
every class and byte order (aliases, equal addresses, undefined and special sections,
other symbol types, names out of the table), on the corpus and on the upstream files."""

from __future__ import annotations

import struct
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.elf.loader import load_elf
from sfcheck.elf.model import FuncSymbol, address_set, addresses
from sfcheck.elf.symbols import FuncSymbols, string_at

from helpers import CORPUS, UPSTREAM


def reference(raw: bytes, strtab: bytes, order: str, is64: bool,
              bases: dict[int, int] | None) -> list[FuncSymbol]:
    """One entry at a time: the reading FuncSymbols must agree with."""
    entsize = 24 if is64 else 16
    out = []
    for entry in struct.iter_unpack(order + ("IBBHQQ" if is64 else "IIIBBH"), raw[entsize:]):
        if is64:
            name_off, info, _o, shndx, value, size = entry
        else:
            name_off, value, size, info, _o, shndx = entry
        if info & 0xF not in (2, 10) or not 0 < shndx < 0xFF00:
            continue
        addr = value + (bases.get(shndx, 0) if bases is not None else 0)
        out.append(FuncSymbol(addr, size, string_at(strtab, name_off) or "?"))
    out.sort(key=lambda f: (f.addr, -f.size, f.name))
    return out


STRTAB = b"\0foo\0bar\0foo_alias\0\xff\xfe\0zz"
_entry = st.tuples(
    st.sampled_from([0, 1, 5, 9, 19, 22, 200]),  # name offsets (some out of the table)
    st.sampled_from([0x12, 0x22, 0x1a, 0x02, 0x11, 0x10, 0x0a, 0xf2]),  # types
    st.sampled_from([0, 1, 2, 0x100, 0xFEFF, 0xFF00, 0xFFF1, 0xFFFF]),  # section indexes
    st.one_of(st.sampled_from([0, 0x1000, 0x1010]), st.integers(0, 2**32 - 1)),
    st.one_of(st.sampled_from([0, 1, 16]), st.integers(0, 2**32 - 1)),
)


def _symtab(entries: list, order: str, is64: bool) -> bytes:
    """A symbol table of `entries` (name, info, shndx, value, size) after the null entry."""
    fmt = order + ("IBBHQQ" if is64 else "IIIBBH")
    rows = [bytes(24 if is64 else 16)]
    for name, info, shndx, value, size in entries:
        rows.append(struct.pack(fmt, name, info, 0, shndx, value, size) if is64
                    else struct.pack(fmt, name, value, size, info, 0, shndx))
    return b"".join(rows)


@settings(max_examples=300, deadline=None)
@given(entries=st.lists(_entry, max_size=40), is64=st.booleans(), big=st.booleans(),
       rel=st.booleans())
def test_same_as_the_per_entry_reading(entries: list, is64: bool, big: bool,
                                       rel: bool) -> None:
    order = ">" if big else "<"
    raw = _symtab(entries, order, is64)
    bases = {1: 0x10000, 2: 0x20000} if rel else None
    got = FuncSymbols(raw, STRTAB, order, is64, bases)
    want = reference(raw, STRTAB, order, is64, bases)
    assert list(got) == want
    assert len(got) == len(want) and bool(got) == bool(want)
    assert addresses(got) == [s.addr for s in want]
    assert address_set(FuncSymbols(raw, STRTAB, order, is64, bases)) == {s.addr for s in want}
    if want:
        assert got[-1] == want[-1] and got[:2] == want[:2]


def _elf_files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and p.read_bytes()[:4] == b"\x7fELF")


def test_corpus_and_upstream_files() -> None:
    """Tables written by real linkers (aliases, .o layouts), through load_elf."""
    seen = 0
    for path in _elf_files(CORPUS) + _elf_files(UPSTREAM):
        data = path.read_bytes()
        try:
            info = load_elf(data, str(path), cfi=True)
        except Exception:  # noqa: BLE001 - unreadable files have no table to compare
            continue
        for syms in (info.symbols, info.cfi.symbols if info.cfi else ()):
            if isinstance(syms, FuncSymbols):
                want = reference(syms._raw, syms._strtab, syms._order, syms._is64,
                                 syms._bases)
                assert list(syms) == want, path
                pcs = [s.addr + d for s in want[::7] for d in (-1, 0, 1, 17)]
                fresh = FuncSymbols(syms._raw, syms._strtab, syms._order, syms._is64,
                                    syms._bases)
                assert fresh.names_at(pcs, True) == [_name_at(want, pc) for pc in pcs], path
                seen += len(want)
    assert seen > 1000


def _name_at(syms: list[FuncSymbol], pc: int) -> str | None:
    """checker.name_functions' lookup, over the reference's sorted list."""
    from bisect import bisect_right

    k = bisect_right([s.addr for s in syms], pc) - 1
    for j in range(k, max(k - 8, -1), -1):
        if syms[j].addr <= pc < syms[j].addr + max(syms[j].size, 1):
            return syms[j].name
    return None


@settings(max_examples=300, deadline=None)
@given(entries=st.lists(_entry, max_size=40), is64=st.booleans(), big=st.booleans(),
       pcs=st.lists(st.one_of(st.sampled_from([0, 0x1000, 0x1008, 0x1010, 0x100f]),
                              st.integers(0, 2**32)), max_size=6),
       presorted=st.booleans(), targeted=st.sampled_from([None, True, False]))
def test_names_at_as_name_functions_finds_them(entries: list, is64: bool, big: bool,
                                               pcs: list[int], presorted: bool,
                                               targeted: bool | None) -> None:
    """FuncSymbols.names_at (only the symbols near the PCs ordered) names each PC as the
    lookup over the whole sorted table does; many symbols share addresses (aliases)."""
    order = ">" if big else "<"
    raw = _symtab(entries, order, is64)
    got = FuncSymbols(raw, STRTAB, order, is64, None)
    if presorted:
        got.addrs  # noqa: B018 - sorts the table: the other path of names_at
    want = reference(raw, STRTAB, order, is64, None)
    assert got.names_at(pcs, targeted) == [_name_at(want, pc) for pc in pcs]
