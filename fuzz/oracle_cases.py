"""Cases for the real-reader oracles (fuzz/oracles.py): corpus ELF files, upstream and
regression sections wrapped in an ELF file, and hostile sections of each class issue 26 lists.

Every case is (name, ELF bytes). The hostile ones are byte edits of the corpus's own
libcorpus.so sections (v2 and v3, native x86-64 byte order), so each differs from a section
both readers take by the one thing its name says.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from bench.elfwrap import EHDR, PHDR, wrap_section
from sfcheck.format import constants as C

from .common import CORPUS, REGRESSIONS, upstream_sections

ELF_MAGIC = b"\x7fELF"
TEXT = (0x1000, 0x2000)  # the text range the wrapped files' PT_LOAD R+X covers
HOSTILE_VMA = 0x2350  # where libcorpus.so holds .sframe: its PC-relative starts land in TEXT
# header fields after the 8-byte preamble: num_fdes, num_fres, fre_len, fdeoff, freoff
NUM_FDES, NUM_FRES, FRE_LEN, FDEOFF, FREOFF = 8, 12, 16, 20, 24
AUXHDR_LEN = 7


def wrap(sec: bytes, vma: int = HOSTILE_VMA) -> bytes:
    """`sec` as the .sframe of a small linked x86-64 file (bench/elfwrap.py)."""
    version = sec[2] if len(sec) > 2 else C.VERSION_2
    return wrap_section(sec, vma, *TEXT, version)


def corpus_files() -> Iterator[tuple[str, bytes]]:
    """Every ELF file under corpus/ (objects, libraries, executables of every toolchain)."""
    for p in sorted(CORPUS.rglob("*")):
        if p.is_file():
            with p.open("rb") as f:
                if f.read(4) == ELF_MAGIC:
                    yield f"corpus/{p.relative_to(CORPUS)}", p.read_bytes()


def upstream_cases() -> Iterator[tuple[str, bytes]]:
    for name, data, vma in upstream_sections():
        yield f"upstream/{name}", wrap(data, vma or HOSTILE_VMA)


def regression_cases() -> Iterator[tuple[str, bytes]]:
    for p in sorted(REGRESSIONS.glob("*/*")):
        if p.is_file() and p.suffix != ".txt":
            yield f"regression/{p.parent.name}/{p.name}", wrap(p.read_bytes())


def _section(rel: str) -> bytes:
    from sfcheck.elf.loader import load_elf
    return load_elf(str(CORPUS / rel)).sections[0].data


def _put(sec: bytes, at: int, fmt: str, value: int) -> bytes:
    b = bytearray(sec)
    struct.pack_into(fmt, b, at, value)
    return bytes(b)


def _get(sec: bytes, at: int, fmt: str = "<I") -> int:
    return int(struct.unpack_from(fmt, sec, at)[0])


def _fde_at(sec: bytes, i: int) -> int:
    return C.HEADER_SIZE + sec[AUXHDR_LEN] + _get(sec, FDEOFF) + i * C.FDE_SIZE[sec[2]]


def _fre_base(sec: bytes) -> int:
    return C.HEADER_SIZE + sec[AUXHDR_LEN] + _get(sec, FREOFF)


def _first_fre_info(sec: bytes) -> int:
    """Offset of the first FDE's first FRE info byte (after its start address)."""
    fde = _fde_at(sec, 0)
    if sec[2] == C.VERSION_3:
        start_fre_off = _get(sec, fde + 12)
        attrs = _fre_base(sec) + start_fre_off
        fre_type = sec[attrs + 2] & 0xF
        return attrs + 5 + (1, 2, 4)[fre_type]
    start_fre_off = _get(sec, fde + 8)
    fre_type = sec[fde + 16] & 0xF
    return _fre_base(sec) + start_fre_off + (1, 2, 4)[fre_type]


def _flex_fde(sec: bytes) -> int | None:
    """Index of the first v3 FDE whose info2 says FLEX."""
    for i in range(_get(sec, NUM_FDES)):
        attrs = _fre_base(sec) + _get(sec, _fde_at(sec, i) + 12)
        if sec[attrs + 3] & 0x1F == C.FDE_TYPE_FLEX:
            return i
    return None


def hostile_sections() -> Iterator[tuple[str, bytes]]:
    """(name, section bytes) of every hostile class, on the v2 and v3 libcorpus.so sections."""
    v1 = _section("v1/libcorpus.so")
    for tag in ("v1", "v2", "v3"):
        sec = _section(f"{tag}/libcorpus.so")
        ver = sec[2]
        fde_size = C.FDE_SIZE[ver]
        n = len(sec)
        fres = _fre_base(sec)
        yield f"{tag}-unmodified", sec
        for cut in (0, 7, C.HEADER_SIZE - 1, C.HEADER_SIZE + fde_size // 2, fres - 1, fres + 3,
                    n - 1):
            yield f"{tag}-truncated-{cut}", sec[:cut]
        # num_fdes * fde_size wraps at 32 bits to a small array
        wrap_n = ((1 << 32) // fde_size) + 1
        yield f"{tag}-num-fdes-wraps", _put(sec, NUM_FDES, "<I", wrap_n)
        yield f"{tag}-num-fdes-ffffffff", _put(sec, NUM_FDES, "<I", 0xFFFFFFFF)
        yield f"{tag}-num-fdes-plus1", _put(sec, NUM_FDES, "<I", _get(sec, NUM_FDES) + 1)
        yield f"{tag}-fre-len-ffffffff", _put(sec, FRE_LEN, "<I", 0xFFFFFFFF)
        yield f"{tag}-fre-len-plus16", _put(sec, FRE_LEN, "<I", _get(sec, FRE_LEN) + 16)
        start_fre_at = _fde_at(sec, 0) + (12 if ver == C.VERSION_3 else 8)
        yield f"{tag}-fre-offset-past-end", _put(sec, start_fre_at, "<I", n)
        last = _fde_at(sec, _get(sec, NUM_FDES) - 1) + (12 if ver == C.VERSION_3 else 8)
        yield f"{tag}-last-fre-offset-past-end", _put(sec, last, "<I", 0x10000)
        yield f"{tag}-freoff-inside-fdes", _put(sec, FREOFF, "<I", fde_size + 4)
        yield f"{tag}-freoff-0", _put(sec, FREOFF, "<I", 0)
        yield f"{tag}-auxhdr-255", _put(sec, AUXHDR_LEN, "<B", 255)
        yield f"{tag}-auxhdr-8", _put(sec, AUXHDR_LEN, "<B", 8)
        info = _first_fre_info(sec)
        yield f"{tag}-fre-info-4byte-words", _put(sec, info, "<B", (sec[info] & 0x9F) | 0x40)
        yield f"{tag}-fre-info-15-words", _put(sec, info, "<B", (sec[info] & 0xE1) | 0x1E)
        yield f"{tag}-fre-info-size-code-3", _put(sec, info, "<B", sec[info] | 0x60)
        yield f"{tag}-version-1", _put(sec, 2, "<B", 1)
        yield f"{tag}-flags-none", _put(sec, 3, "<B", 0)
        yield f"{tag}-flags-unknown", _put(sec, 3, "<B", sec[3] | 0x80)
        yield f"{tag}-bad-magic", _put(sec, 0, "<H", 0xDEE3)
        yield f"{tag}-num-fdes-0", _put(sec, NUM_FDES, "<I", 0)
        yield f"{tag}-num-fres-ffffffff", _put(sec, NUM_FRES, "<I", 0xFFFFFFFF)
    # a v1 section relabelled v2 (17-byte FDEs read as 20-byte ones)
    yield "v1-relabelled-v2", _put(v1, 2, "<B", 2)
    yield "v1-relabelled-v3", _put(v1, 2, "<B", 3)
    v3 = _section("v3/libcorpus.so")
    flex = _flex_fde(v3)
    if flex is not None:
        attrs = _fre_base(v3) + _get(v3, _fde_at(v3, flex) + 12)
        yield "v3-flex-retyped-default", _put(v3, attrs + 3, "<B", v3[attrs + 3] & ~0x1F)
        yield "v3-flex-fre-type-addr4", _put(v3, attrs + 2, "<B", (v3[attrs + 2] & 0xF0) | 2)
        yield "v3-flex-type-2", _put(v3, attrs + 3, "<B", (v3[attrs + 3] & ~0x1F) | 2)
        # the FLEX FDE's first FRE with one data word: dump_sframe_func_fres_flex asserts
        info = attrs + 5 + (1, 2, 4)[v3[attrs + 2] & 0xF]
        yield "v3-flex-one-word", _put(v3, info, "<B", (v3[info] & 0xE1) | (1 << 1))
        # abi_arch 0: the FLEX FRE's register names trip sframe_get_reg_name's assertion
        yield "v3-flex-abi-unknown", _put(v3, 4, "<B", 0)
    attrs0 = _fre_base(v3) + _get(v3, _fde_at(v3, 0) + 12)
    yield "v3-default-retyped-flex", _put(v3, attrs0 + 3, "<B", v3[attrs0 + 3] | C.FDE_TYPE_FLEX)


def bad_segment(sec: bytes) -> bytes:
    """`sec` wrapped, with PT_GNU_SFRAME moved 8 bytes into the section (bytes that are no
    SFrame header) while the section table still points at the good section."""
    elf = bytearray(wrap(sec))
    ph = EHDR + 2 * PHDR  # the third program header is PT_GNU_SFRAME
    off, vaddr, _paddr, filesz = struct.unpack_from("<QQQQ", elf, ph + 8)
    struct.pack_into("<QQQQQ", elf, ph + 8, off + 8, vaddr + 8, vaddr + 8, filesz - 8, filesz - 8)
    return bytes(elf)


def hostile_cases() -> Iterator[tuple[str, bytes]]:
    for name, sec in hostile_sections():
        yield f"hostile/{name}", wrap(sec)
    yield "hostile/zero-size-sframe", wrap(b"")
    for tag in ("v2", "v3"):
        yield f"hostile/{tag}-bad-pt-gnu-sframe", bad_segment(_section(f"{tag}/libcorpus.so"))


def all_cases() -> Iterator[tuple[str, bytes]]:
    yield from corpus_files()
    yield from upstream_cases()
    yield from regression_cases()
    yield from hostile_cases()
