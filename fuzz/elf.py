"""Harness `elf`: a real corpus ELF with its .sframe bytes or its headers mutated in place.

Input: byte 0 picks the ELF file, byte 1 the mode, the rest is
* mode even: the new .sframe contents, written over the section in place (a
  shorter input also shrinks sh_size, so the fuzzer can cut sections short);
* mode odd: bytes XORed over the ELF header, program headers and section
  headers (in that order), everything else untouched.

Properties: check_elf never lets anything but sfcheck's own errors escape; when
it reports no error, every SFrame section it found dumps without DecodeError.

    python fuzz/elf.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import os
import struct
import sys
from dataclasses import dataclass
from functools import lru_cache

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

with common.instrumented_imports(__name__ == "__main__"):
    from sfcheck.checker import check_elf
    from sfcheck.dump.objdump import dump_text
    from sfcheck.elf import load_elf
    from sfcheck.errors import DecodeError, SfcheckError
    from sfcheck.result import Severity

from fuzz import mutator  # noqa: E402


@dataclass(frozen=True)
class Seed:
    data: bytes
    sframe_off: int  # file offset of .sframe
    sframe_size: int
    size_field: int  # file offset of the .sframe section header's sh_size
    header_spans: tuple[tuple[int, int], ...]  # (offset, length) of ehdr, phdrs, shdrs


def _seed(data: bytes) -> Seed | None:
    if data[:4] != b"\x7fELF" or data[4] != 2:  # the corpus is all ELF64
        return None
    e = "<" if data[5] == 1 else ">"
    (phoff, shoff, _flags, ehsize, phentsize, phnum, shentsize, shnum,
     shstrndx) = struct.unpack_from(e + "QQIHHHHHH", data, 0x20)
    names_off = struct.unpack_from(e + "Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    for i in range(shnum):
        base = shoff + i * shentsize
        name = struct.unpack_from(e + "I", data, base)[0]
        end = data.index(b"\0", names_off + name)
        if data[names_off + name:end] == b".sframe":
            off, size = struct.unpack_from(e + "QQ", data, base + 0x18)
            return Seed(data, off, size, base + 0x20,
                        ((0, ehsize), (phoff, phnum * phentsize), (shoff, shnum * shentsize)))
    return None


@lru_cache(maxsize=1)
def seeds() -> tuple[Seed, ...]:
    out = []
    for p in common.corpus_elves():
        s = _seed(p.read_bytes())
        if s is not None:
            out.append(s)
    return tuple(out)


def build(data: bytes) -> bytes | None:
    """The ELF file an input describes (None when there is no seed to mutate)."""
    all_seeds = seeds()
    if len(data) < 2 or not all_seeds:
        return None
    seed = all_seeds[data[0] % len(all_seeds)]
    buf = bytearray(seed.data)
    body = data[2:]
    if data[1] % 2 == 0:
        new = body[:seed.sframe_size]
        buf[seed.sframe_off:seed.sframe_off + len(new)] = new
        if len(new) < seed.sframe_size:
            order = "<" if buf[5] == 1 else ">"
            struct.pack_into(order + "Q", buf, seed.size_field, len(new))
    else:
        k = 0
        for off, length in seed.header_spans:
            for i in range(off, min(off + length, len(buf))):
                if k >= len(body):
                    break
                buf[i] ^= body[k]
                k += 1
    return bytes(buf)


def test_one_input(data: bytes) -> None:
    elf = build(data)
    if elf is None:
        return
    try:
        result = check_elf(elf)
    except SfcheckError:
        return  # the project's own error types may escape
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


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """Structure-aware mutation of the .sframe part; byte mutation of the rest."""
    if len(data) > 2 and data[1] % 2 == 0:
        body = mutator.mutate(data[2:], max(1, max_size - 2), seed)
        return data[:2] + body
    return mutator.mutate(data, max_size, seed, byte_mutate=None)


if __name__ == "__main__":
    seeds()
    common.run("elf", test_one_input, custom_mutator)
