"""Harness `elf`: a real corpus ELF with its .sframe, its headers, its symbol table or its
.eh_frame mutated in place.

Input: byte 0 picks the ELF file, byte 1 the mode (mod 4), the rest is
* mode 0: the new .sframe contents, written over the section in place (a shorter input
  also shrinks sh_size, so the fuzzer can cut sections short); mutated by the
  structure-aware SFrame mutator;
* mode 1: bytes XORed over the ELF header, program headers and section headers (in
  that order), everything else untouched;
* mode 2: header edits, 12-byte records (table, index, field, how, 8-byte value):
  a field of the ELF header, a program header or a section header set to a value
  chosen to hurt (0, all ones, 2^63, the file size and around it, another field's
  value, PT_GNU_SFRAME, SHT_NOBITS, ...);
* mode 3: symbol table and .eh_frame edits, records of the same shape: a field of a
  symbol (name offset, info, section index, value, size), of an .eh_frame entry
  (length, CIE pointer, start, range) or one of its CFA instruction bytes.
The custom mutator adds, drops and changes whole records in modes 2 and 3.
With bit 2 of byte 1 set, the file is also checked from disk while it changes under the
reader: written to a temporary file and truncated to (byte 1 >> 3 & 15)/16 of its size
right after the checker opened it (the race of issue 27.1, made deterministic).

Properties: check_elf never lets anything but sfcheck's own errors escape; a file
truncated under the reader gives the uncut file's result or "changed while read"; its findings
stay within the per-file cap; when it reports no error, every SFrame section it found
dumps without DecodeError. When run as a fuzzer the process has a memory limit
(RLIMIT_DATA, so running out raises MemoryError) and every input a CPU-time limit
(InputTimeout): both are findings like any other exception, not hangs.

    python fuzz/elf.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import os
import random
import resource
import signal
import struct
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

with common.instrumented_imports(__name__ == "__main__"):
    from sfcheck.checker import MAX_PER_FILE, check_elf
    from sfcheck.dump.objdump import dump_text
    from sfcheck.elf.loader import load_elf
    from sfcheck.errors import DecodeError, SfcheckError
    from sfcheck.fileio import FileView
    from sfcheck.result import Severity
    from sfcheck.walk.context import MAX_PER_RULE

from fuzz import mutator  # noqa: E402

MEMORY_LIMIT = 1 << 30  # bytes of heap (RLIMIT_DATA) for the fuzzing process
CPU_LIMIT = 5.0  # seconds of CPU per input
RECORD = 12  # bytes per edit record in modes 2 and 3


class InputTimeout(Exception):
    """One input used more than CPU_LIMIT seconds of CPU: a finding."""


@dataclass(frozen=True)
class Seed:
    data: bytes
    order: str  # struct byte order
    sframe_off: int  # file offset of .sframe
    sframe_size: int
    size_field: int  # file offset of the .sframe section header's sh_size
    header_spans: tuple[tuple[int, int], ...]  # (offset, length) of ehdr, phdrs, shdrs
    phdrs: tuple[int, ...]  # file offset of each program header
    shdrs: tuple[int, ...]  # file offset of each section header
    symbols: tuple[int, ...]  # file offset of each .symtab (else .dynsym) entry
    eh_entries: tuple[tuple[int, int], ...]  # (file offset, length) of each .eh_frame entry


# (offset in the structure, width) of the fields mode 2 and 3 edit, ELF64.
EHDR_FIELDS = ((0x10, 2), (0x12, 2), (0x20, 8), (0x28, 8), (0x36, 2), (0x38, 2), (0x3A, 2),
               (0x3C, 2), (0x3E, 2))
PHDR_FIELDS = ((0, 4), (4, 4), (8, 8), (16, 8), (32, 8), (40, 8))
SHDR_FIELDS = ((0, 4), (4, 4), (8, 8), (16, 8), (24, 8), (32, 8), (40, 4), (44, 4), (56, 8))
SYM_FIELDS = ((0, 4), (4, 1), (6, 2), (8, 8), (16, 8))
EH_FIELDS = ((0, 4), (4, 4), (8, 4), (12, 4))
# Values that hurt: type codes the loader looks for, and sizes at the edges.
SPECIAL = (0x6474E554, 0x6FFFFFF4, 8, 2, 11, 1, 0xFFFF, 0xFF00, 1 << 31, 1 << 32)
# CFA instruction bytes: advance_loc, def_cfa, def_cfa_offset, def_cfa_expression,
# remember/restore_state, undefined, same_value, escape-ish values, nop.
CFA_OPS = (0x41, 0x0C, 0x0E, 0x0F, 0x0A, 0x0B, 0x07, 0x08, 0x16, 0x10, 0x2E, 0x00, 0x02,
           0x03, 0x04, 0xFF)


def _seed(data: bytes) -> Seed | None:
    if data[:4] != b"\x7fELF" or data[4] != 2:  # the corpus is all ELF64
        return None
    e = "<" if data[5] == 1 else ">"
    (phoff, shoff, _flags, ehsize, phentsize, phnum, shentsize, shnum,
     shstrndx) = struct.unpack_from(e + "QQIHHHHHH", data, 0x20)
    names_off = struct.unpack_from(e + "Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    shdrs = tuple(shoff + i * shentsize for i in range(shnum))
    found: dict[str, tuple[int, int, int, int]] = {}  # name -> (type, offset, size, header)
    for base in shdrs:
        name_off, sh_type = struct.unpack_from(e + "II", data, base)
        end = data.index(b"\0", names_off + name_off)
        off, size = struct.unpack_from(e + "QQ", data, base + 0x18)
        found.setdefault(data[names_off + name_off:end].decode("latin-1"),
                         (sh_type, off, size, base))
    if ".sframe" not in found:
        return None
    _t, sf_off, sf_size, sf_hdr = found[".sframe"]
    symtab = found.get(".symtab") or found.get(".dynsym")
    symbols = tuple(range(symtab[1] + 24, symtab[1] + symtab[2] - 23, 24)) if symtab else ()
    eh = found.get(".eh_frame")
    return Seed(data, e, sf_off, sf_size, sf_hdr + 0x20,
                ((0, ehsize), (phoff, phnum * phentsize), (shoff, shnum * shentsize)),
                tuple(phoff + i * phentsize for i in range(phnum)), shdrs, symbols,
                tuple(_eh_entries(data, e, eh[1], eh[2])) if eh and eh[0] != 8 else ())


def _eh_entries(data: bytes, e: str, off: int, size: int) -> Iterator[tuple[int, int]]:
    """(offset, length) of each CIE/FDE of a well-formed .eh_frame (stops at a terminator)."""
    pos, end = off, off + size
    while pos + 4 <= end:
        length = struct.unpack_from(e + "I", data, pos)[0]
        if length == 0 or length == 0xFFFFFFFF or pos + 4 + length > end:
            return
        yield pos, 4 + length
        pos += 4 + length


@lru_cache(maxsize=1)
def seeds() -> tuple[Seed, ...]:
    out = []
    for p in common.corpus_elves():
        s = _seed(p.read_bytes())
        if s is not None:
            out.append(s)
    return tuple(out)


def _value(how: int, raw: int, old: int, width: int, size: int, other: int) -> int:
    """The new value of a field: `how` picks the kind, `raw` the 8 input bytes."""
    kind = how % 10
    if kind == 0:
        v = raw
    elif kind == 1:
        v = 0
    elif kind == 2:
        v = (1 << 8 * width) - 1
    elif kind == 3:
        v = 1 << (8 * width - 1)  # 2^63 for 8-byte fields
    elif kind == 4:
        v = size + (raw & 0xFF) - 128  # around the end of the file
    elif kind == 5:
        v = old + (raw & 0xFF) - 128
    elif kind == 6:
        v = other  # another header's value of the same field (overlaps, duplicates)
    elif kind == 7:
        v = SPECIAL[raw % len(SPECIAL)]
    elif kind == 8:
        v = old * (2 + (raw & 7))
    else:
        v = old ^ (1 << (raw % (8 * width)))
    return v & ((1 << 8 * width) - 1)


def _records(body: bytes) -> Iterator[tuple[int, int, int, int, int]]:
    for k in range(0, len(body) - RECORD + 1, RECORD):
        table, hi, lo, field, how = body[k:k + 5]
        raw = int.from_bytes(body[k + 4:k + 12], "little")
        yield table, hi << 8 | lo, field, how, raw


def _put(buf: bytearray, order: str, at: int, width: int, value: int) -> None:
    if at >= 0 and at + width <= len(buf):
        buf[at:at + width] = value.to_bytes(width, "little" if order == "<" else "big")


def _get(buf: bytearray, order: str, at: int, width: int) -> int:
    if not (at >= 0 and at + width <= len(buf)):
        return 0
    return int.from_bytes(buf[at:at + width], "little" if order == "<" else "big")


def _edit(buf: bytearray, seed: Seed, body: bytes, headers: bool) -> None:
    """Apply mode 2 (headers) or mode 3 (symbols, .eh_frame) records to `buf`."""
    o, size = seed.order, len(buf)
    for table, index, field, how, raw in _records(body):
        if headers:
            t = table % 3
            if t == 0:
                bases, fields = (0,), EHDR_FIELDS
            elif t == 1:
                bases, fields = seed.phdrs, PHDR_FIELDS
            else:
                bases, fields = seed.shdrs, SHDR_FIELDS
        else:
            t = table % 3
            if t == 2 and seed.eh_entries:  # a CFA instruction byte of an entry
                off, length = seed.eh_entries[index % len(seed.eh_entries)]
                if length > 16:
                    at = off + 16 + field % (length - 16)
                    buf[at] = CFA_OPS[raw % len(CFA_OPS)] if how & 1 else raw & 0xFF
                continue
            if t == 0:
                bases, fields = seed.symbols, SYM_FIELDS
            else:
                bases, fields = tuple(off for off, _n in seed.eh_entries), EH_FIELDS
        if not bases:
            continue
        base = bases[index % len(bases)]
        off, width = fields[field % len(fields)]
        other_base = bases[(index + 1 + (raw >> 56)) % len(bases)]
        value = _value(how, raw, _get(buf, o, base + off, width), width, size,
                       _get(buf, o, other_base + off, width))
        _put(buf, o, base + off, width, value)


def build(data: bytes) -> bytes | None:
    """The ELF file an input describes (None when there is no seed to mutate)."""
    all_seeds = seeds()
    if len(data) < 2 or not all_seeds:
        return None
    seed = all_seeds[data[0] % len(all_seeds)]
    buf = bytearray(seed.data)
    body = data[2:]
    mode = data[1] % 4
    if mode == 0:
        new = body[:seed.sframe_size]
        buf[seed.sframe_off:seed.sframe_off + len(new)] = new
        if len(new) < seed.sframe_size:
            struct.pack_into(seed.order + "Q", buf, seed.size_field, len(new))
    elif mode == 1:
        k = 0
        for off, length in seed.header_spans:
            for i in range(off, min(off + length, len(buf))):
                if k >= len(body):
                    break
                buf[i] ^= body[k]
                k += 1
    else:
        _edit(buf, seed, body, headers=mode == 2)
    return bytes(buf)


def _on_timeout(_sig: int, _frame: object) -> None:
    raise InputTimeout(f"one input used more than {CPU_LIMIT} s of CPU")


def _limited(fn: Callable[[], None]) -> None:
    """Run fn with a CPU-time alarm (ITIMER_PROF): a runaway input raises InputTimeout."""
    old = signal.signal(signal.SIGPROF, _on_timeout)
    signal.setitimer(signal.ITIMER_PROF, CPU_LIMIT)
    try:
        fn()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def test_one_input(data: bytes) -> None:
    elf = build(data)
    if elf is None:
        return
    _limited(lambda: _check(elf))
    if data[1] & 4:
        _limited(lambda: _check_changed(elf, len(elf) * (data[1] >> 3 & 15) // 16))


_CUT: list[tuple[str, int]] = []  # (path, size): truncate that file once it is opened
_opened = FileView.__init__


def _truncating(self: FileView, path: str | os.PathLike[str]) -> None:
    _opened(self, path)
    if _CUT and _CUT[0][0] == self.label:
        os.truncate(path, _CUT.pop()[1])


FileView.__init__ = _truncating  # type: ignore[method-assign]


def _check_changed(elf: bytes, cut: int) -> None:
    """The file cut to `cut` bytes after the checker opened it: the same result as the
    whole file (nothing past the cut was needed) or the one error "changed while read"."""
    import tempfile

    whole = check_elf(elf, path="f")
    with tempfile.TemporaryDirectory(prefix="fuzz-elf-") as tmp:
        path = os.path.join(tmp, "f")
        with open(path, "wb") as f:
            f.write(elf)
        _CUT[:] = [(path, cut)]
        try:
            got = check_elf(path, path="f")
        finally:
            _CUT.clear()
    if got.error is not None and got.error.startswith("changed while read"):
        return
    assert got.error == whole.error, (got.error, whole.error)
    assert got.findings == whole.findings, "a truncated file gave other findings"


def _check(elf: bytes) -> None:
    try:
        result = check_elf(elf)
    except SfcheckError:
        return  # the project's own error types may escape
    # Bounded output: the per-file cap, and per section the per-rule cap.
    assert len(result.findings) <= MAX_PER_FILE + 1, len(result.findings)
    per_rule: dict[tuple[str | None, str], int] = {}
    for f in result.findings:
        key = (f.location.section, f.rule)
        per_rule[key] = per_rule.get(key, 0) + 1
    named = Counter(s.name for s in result.sections)  # sections may share a name
    for (section, rule), n in per_rule.items():
        if section is not None:  # per section: the cap plus one "N more" finding
            assert n <= (MAX_PER_RULE + 1) * max(1, named[section]), (section, rule, n)
    if result.error is not None or any(f.severity >= Severity.ERROR for f in result.findings):
        return
    try:
        info = load_elf(elf)
    except SfcheckError as exc:
        raise AssertionError(f"check_elf found no error, but load_elf fails: {exc}") from None
    for sec in info.sections:
        try:
            for _line in dump_text(sec.data, sec.vma, sec.name):
                pass
        except DecodeError as exc:
            raise AssertionError(f"clean ELF, but the dumper stops: {exc}") from None


def _mutate_records(body: bytes, max_size: int, rng: random.Random) -> bytes:
    """Add, drop, duplicate or change one whole edit record."""
    recs = [body[k:k + RECORD] for k in range(0, len(body) - RECORD + 1, RECORD)]
    op = rng.randrange(4)
    if op == 0 or not recs:
        recs.insert(rng.randrange(len(recs) + 1), bytes(rng.getrandbits(8)
                                                        for _ in range(RECORD)))
    elif op == 1:
        recs.pop(rng.randrange(len(recs)))
    elif op == 2:
        recs.append(recs[rng.randrange(len(recs))])
    else:
        k = rng.randrange(len(recs))
        rec = bytearray(recs[k])
        rec[rng.randrange(RECORD)] = rng.getrandbits(8)
        recs[k] = bytes(rec)
    out = b"".join(recs)
    return out[:max(0, max_size) // RECORD * RECORD]


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """Structure-aware: SFrame mutation of the .sframe part (mode 0), record-level
    mutation of the header/symbol/.eh_frame edits (modes 2, 3), bytes otherwise."""
    if len(data) > 2 and data[1] % 4 == 0:
        body = mutator.mutate(data[2:], max(1, max_size - 2), seed)
        return data[:2] + body
    if len(data) >= 2 and data[1] % 4 in (2, 3):
        rng = random.Random(seed)
        # Sometimes another seed file or the other edit mode.
        head = bytes((rng.getrandbits(8), 2 + rng.randrange(2))) if rng.random() < 0.1 \
            else data[:2]
        return head + _mutate_records(data[2:], max_size - 2, rng)
    return mutator.mutate(data, max_size, seed, byte_mutate=None)


def limit_memory() -> None:
    """The fuzzing process's heap limit: an input that needs more raises MemoryError."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    want = MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (want, hard))


if __name__ == "__main__":
    limit_memory()
    seeds()
    common.run("elf", test_one_input, custom_mutator)
