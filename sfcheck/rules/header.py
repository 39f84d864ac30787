"""Header rules: the 28-byte preamble and header, and their checks (`read_header`,
`check_header`)."""

from __future__ import annotations

from ..errors import DecodeError
from ..format import constants
from ..format.decode import byte_order, decode_header
from ..format.model import Header
from .registry import MODEL_ONLY, PROFILE_ONLY, rule

READER_VERSION = rule(
    "header-version-unsupported", "header", "error", "SFrame version not read by the reader",
    f"""Each reader decodes a fixed set of versions: the kernel V3 series only v3, glibc 2.42
    and LLVM 22 only v2, libsframe 2.46 v2 and v3. Any other version is rejected before the
    FDEs are read. {PROFILE_ONLY}""",
    "Rebuild with the toolchain that emits the version the reader takes.")
READER_FLAGS = rule(
    "header-flags-required", "header", "error", "header lacks a flag the reader needs",
    f"""The kernel needs FDE_SORTED and FDE_FUNC_START_PCREL; glibc 2.42 and libsframe's
    sframe_find_fre binary-search only sorted tables; libsframe 2.46 computes PC-relative
    starts whatever the flags. Not applied to .o files, which only linkers read. {PROFILE_ONLY}""",
    "Link with GNU ld (it sorts and sets FDE_SORTED); use binutils 2.45+ for PC-relative "
    "starts.")
READER_AUXHDR = rule(
    "header-auxhdr-rejected", "header", "error", "reader rejects an auxiliary header",
    f"""sfh_auxhdr_len must be 0 for the kernel, which refuses to register the section
    otherwise. {PROFILE_ONLY}""",
    "Write sfh_auxhdr_len = 0.")
READER_EMPTY = rule(
    "header-empty-counts", "header", "error", "reader rejects a section without FDEs or FREs",
    f"""The kernel refuses to register a section whose num_fdes or num_fres is 0.
    {PROFILE_ONLY}""",
    "Drop the empty section, or emit the FDEs it should hold.")
READER_BYTE_ORDER = rule(
    "header-byte-order-elf", "header", "error", "section byte order differs from the ELF file's",
    f"""LLVM's SFrameParser decodes a section in its ELF file's byte order, so a section whose
    magic is in the other order is refused ('invalid magic number (0xe2de)'); libsframe and
    the runtime readers take either order or see only their own. {PROFILE_ONLY}""",
    "Emit the section in the byte order of the file that holds it.")

# What libsframe's foreign-endian path (flip_sframe_fdes_with_fres) checks before swapping:
# every FDE, attribute record and FRE inside the buffer, valid FRE types and sizes, the FRE
# count and bytes used against the header, zero padding after the last FRE.
FOREIGN_WALK_RULES = frozenset((
    "layout-fde-array-bounds", "layout-fde-fres-bounds", "layout-fre-bounds", "layout-num-fres",
    "layout-fre-len", "layout-trailing-bytes", "layout-fre-overlap", "fde-fre-type",
    "fre-size-code", "fre-datawords-size", "header-auxhdr"))
READER_FOREIGN = rule(
    "header-foreign-order-refused", "header", "error",
    "reader's byte-swapping walk refuses the section",
    f"""libsframe swaps a section of the other byte order than the host's only after a bounded
    walk of every FDE and FRE (flip_sframe_fdes_with_fres): anything out of bounds, an FRE
    count or length that disagrees with the header, or nonzero bytes after the FREs make
    sframe_decode fail ('Buffer does not contain SFrame data.'), where a native-endian section
    would be read as it is. The host is taken to have the ELF file's byte order. {PROFILE_ONLY}""",
    "Fix the layout findings reported with it, or emit the section in the host's byte order.")
MODEL_REFUSED = rule(
    "header-reader-refused", "header", "error", "reader refuses to register the section",
    f"""The modelled reader's registration checks fail, so it never unwinds with this
    section. The message gives the reader's reason. {MODEL_ONLY}""",
    "Emit what the reader registers (see `sfcheck profiles NAME`).")
TOO_SHORT = rule(
    "header-too-short", "header", "error", "section too short for the SFrame header",
    """The preamble and header take 28 bytes, plus sfh_auxhdr_len bytes of auxiliary header,
    and every offset in the section counts from their end (SFrame spec, binutils 2.46
    (sourceware.org/binutils/docs-2.46/sframe-spec.html), "SFrame Header"). A shorter section
    cannot be read at all; libsframe rejects it with SFRAME_ERR_BUF_INVAL.""",
    "Regenerate the section; a truncated .sframe usually means a damaged file.")
BAD_MAGIC = rule(
    "header-bad-magic", "header", "error", "bad magic number",
    """The section must start with 0xdee2 in the target byte order (bytes e2 de for
    little-endian, de e2 for big-endian). Anything else is not SFrame data (SFrame spec,
    binutils 2.46 (sourceware.org/binutils/docs-2.46/sframe-spec.html), "SFrame Preamble").""",
    "Check that the section really holds SFrame data and was not overwritten.")
VERSION_UNKNOWN = rule(
    "header-version-unknown", "header", "error", "unknown SFrame version",
    """Versions 1, 2 and 3 exist (binutils 2.40, 2.41-2.45, 2.46+). The layout of FDEs
    depends on the version, so nothing past the header can be read for another value.""",
    "Rebuild with a released binutils; check the file for corruption.")
VERSION_OBSOLETE = rule(
    "header-version-obsolete", "header", "warning", "SFrame version 1 is obsolete",
    """Version 1 was emitted only by binutils 2.40. binutils 2.46 cannot decode it, glibc
    2.43 reads only v2 (sysdeps/generic/sframe-read.c), and the kernel series reads only v3
    (kernel/unwind/sframe.c of the V3 kernel series, v13: lkml.iu.edu/2602.1/04596.html).""",
    "Rebuild with binutils 2.46 or later (SFrame v3).")
FLAGS_UNKNOWN = rule(
    "header-flags-unknown", "header", "error", "flag bits not defined for this version",
    """Defined flags are 0x3 for v1, 0x7 for v2 and 0x5 for v3 (FRAME_POINTER was removed in
    v3). libsframe refuses to decode a section with any other bit set (sframe.c
    sframe_header_sanity_check_p).""",
    "Clear the undefined bits; they are not produced by any released toolchain.")
ABI_UNKNOWN = rule(
    "header-abi-unknown", "header", "error", "unknown ABI/arch identifier",
    """sfh_abi_arch must be 1 (aarch64 BE), 2 (aarch64 LE), 3 (AMD64) or 4 (s390x, from
    v2 errata 1). libsframe accepts other values and then asserts when dumping flex FDEs.""",
    "Use the ABI identifier of the target the code was built for.")
ABI_ENDIAN = rule(
    "header-abi-endian", "header", "error", "ABI byte order disagrees with the magic",
    """The magic gives the byte order of every field; the ABI identifier implies one too (1 and
    4 big-endian, 2 and 3 little-endian). libsframe never checks that they agree, so a
    disagreement silently decodes every field with the wrong order on some readers.""",
    "Write the section in the byte order of its ABI.")
FIXED_RA = rule(
    "header-fixed-ra", "header", "error", "fixed RA offset does not match the ABI",
    """AMD64 keeps the return address at CFA-8 and says so in sfh_cfa_fixed_ra_offset (-8);
    aarch64 and s390x track RA per FRE and must write 0. A wrong value moves every unwound
    return address (SFrame spec, binutils 2.46
    (sourceware.org/binutils/docs-2.46/sframe-spec.html), "SFrame Header" and "SFrame FRE").""",
    "Use -8 for AMD64 and 0 for aarch64 and s390x.")
FIXED_FP = rule(
    "header-fixed-fp", "header", "warning", "nonzero fixed FP offset",
    """No toolchain writes a fixed FP offset (gas always writes 0, gen-sframe.c). With a
    nonzero value every FRE's FP rule is replaced by it, which is almost never what the code
    does.""",
    "Write 0 unless every function really saves FP at the same CFA offset.")
AUXHDR = rule(
    "header-auxhdr", "header", "warning", "auxiliary header present",
    """sfh_auxhdr_len has never been used (gas writes 0). The kernel requires it to be 0 and
    libsframe's byte-swapping path refuses a nonzero value, so such sections are unreadable
    there.""",
    "Write sfh_auxhdr_len = 0.")
OBJECT_VERSION = rule(
    "object-version-unsupported", "header", "warning",
    "object's SFrame version is not one the reader takes once linked",
    """Under a runtime reader's profile (kernel, glibc) a .o is judged by what the linker will
    make of it. GNU ld merges SFrame inputs of its own version into an output of the same
    version, and copies inputs of another version raw (wrong function starts) or discards
    them. An object whose version the reader does not read therefore never contributes
    SFrame data that reader uses. A warning: the object is not broken, and the linked files
    of the package carry header-version-unsupported if they inherit the version.""",
    "Assemble with the toolchain that emits the version the reader takes.")


def check_header(ctx, h: Header) -> None:
    if h.version == constants.VERSION_1:
        ctx.emit(VERSION_OBSOLETE, "SFrame v1 (binutils 2.40); 2.46 readers reject it", offset=2)
    known = constants.FLAGS_KNOWN[h.version]
    if h.flags & ~known:
        ctx.emit(FLAGS_UNKNOWN, f"flags {h.flags:#x} have bits {h.flags & ~known:#x} undefined "
                 f"in v{h.version} (defined: {known:#x})", offset=3)
    if h.abi not in constants.ABI_NAMES or (h.version == constants.VERSION_1
                                            and h.abi == constants.ABI_S390X_BE):
        ctx.emit(ABI_UNKNOWN, f"ABI {h.abi} is not defined for v{h.version}", offset=4)
    elif constants.ABI_BIG_ENDIAN[h.abi] != h.big_endian:
        order = "big" if h.big_endian else "little"
        abi_order = "big" if constants.ABI_BIG_ENDIAN[h.abi] else "little"
        ctx.emit(ABI_ENDIAN, f"ABI {constants.ABI_NAMES[h.abi]} is {abi_order}-endian but the "
                 f"magic says {order}-endian", offset=4)
    if h.abi in constants.ABI_NAMES:
        want = -8 if h.abi == constants.ABI_AMD64_LE else 0
        if h.fixed_ra != want:
            ctx.emit(FIXED_RA, f"sfh_cfa_fixed_ra_offset is {h.fixed_ra}, "
                     f"{constants.ABI_NAMES[h.abi]} needs {want}", offset=6)
    if h.fixed_fp != 0:
        ctx.emit(FIXED_FP, f"sfh_cfa_fixed_fp_offset is {h.fixed_fp}", offset=5)
    if h.auxhdr:
        ctx.emit(AUXHDR, f"sfh_auxhdr_len is {len(h.auxhdr)}", offset=7)


def read_header(ctx) -> Header | None:
    """The header, or None after the finding that says why it cannot be read."""
    data = ctx.data
    try:
        byte_order(data)
    except DecodeError as exc:
        ctx.emit(TOO_SHORT if len(data) < 2 else BAD_MAGIC, exc.message, offset=0)
        return None
    if len(data) < constants.HEADER_SIZE:
        ctx.emit(TOO_SHORT, f"{len(data)} bytes; the header alone needs {constants.HEADER_SIZE}",
                 offset=0)
        return None
    if data[2] not in constants.VERSIONS:
        ctx.emit(VERSION_UNKNOWN, f"version byte is {data[2]}", offset=2)
        return None
    try:
        return decode_header(data)
    except DecodeError as exc:
        ctx.emit(TOO_SHORT, exc.message, offset=7)
        return None
