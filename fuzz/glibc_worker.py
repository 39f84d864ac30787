"""Child process that feeds sections to glibc's SFrame reader and walker through ctypes.

    python fuzz/glibc_worker.py /path/to/libglibc-sframe.so
    python fuzz/glibc_worker.py /path/to/libglibc-sframe.so --replay FILE [PC...]
    python fuzz/glibc.py --glibc=PATH --explain FILE     (the walk too, against sfcheck's)

The library is glibc's own `sysdeps/generic/sframe-read.c` (__sframe_decode, __sframe_find_fre
and the offset getters; glibc 2.42+, SFrame v2), built at fuzz time from Debian's
glibc-source package by fuzz/get-glibc-sframe.sh; LGPL code is loaded at run time, never
vendored. Like libsframe_worker.py, each section ends exactly at a PROT_NONE page, so a read
past the end of the buffer faults (glibc passes no size to its decoder at all), and a crash
(SIGSEGV, SIGFPE from `% rep_block_size`) kills only this process; faulthandler names the
`call_*` function in progress. Same request/reply framing as libsframe_worker.py; the reply is
marshal of (decode result, [(pc, find result, fre start, fre info, base reg, cfa, cfa err,
ra, ra err, fp, fp err)], walk), PCs section-relative.

The walk (libraries built with sysdeps/generic/sframe.c): when the PCs end with WALK followed
by (text start, text end, pc, sp, fp, count, stack words...), glibc's `__stacktrace_sframe`
runs from those registers over STACK_WORDS words at STACK, with the shim's stand-in for
_dl_find_object saying that [text start, text end) is one object whose SFrame section is the
one just decoded; walk = (frames returned, [return addresses]), None without a request.
Addresses are fixed (SECTION_END, STACK) so that the parent's reference walk sees the same
memory: the section still ends at a guard page, and the stack page sits in the middle of
RESERVE bytes of PROT_NONE on both sides, so any CFA or saved-slot read within +-4 GiB of
the stack (an int32 offset added to an int32-offset CFA) faults instead of reading whatever
the process has there. The shim prints the faulting address ("shim: fault at 0x...") before
faulthandler names the call. A walk is also under a CPU-time alarm (SIGVTALRM after WALK_CPU_S).
"""

from __future__ import annotations

import ctypes as ct
import mmap
import os
import signal
import struct
import sys

# Appended: imported as fuzz.glibc_worker, fuzz/ first would shadow top-level names (bench).
sys.path.append(os.path.dirname(os.path.abspath(__file__)))
from libsframe_worker import guarded_region, serve  # noqa: E402  (same framing, guard page)

PAGE = mmap.PAGESIZE
REGION = 1 << 20
WALK = -0x5746_4C41  # marks the end of the PCs and the start of a walk request
SECTION_END = 0x100_0000_0000  # the section ends here, where its guard page starts
STACK = 0x200_0000_0000
STACK_WORDS = 512
STACK_BYTES = STACK_WORDS * 8
RESERVE = 5 << 30
WALK_CPU_S = 2.0
MAP_FIXED_NOREPLACE = 0x100000
MAP_NORESERVE = 0x4000
CTX_SIZE = 64  # sframe_decoder_ctx: 28-byte header, two pointers, an int (padded)
FRE_SIZE = 32  # sframe_frame_row_entry: u32, pointer, u8 (padded)


class Api:
    def __init__(self, path: str) -> None:
        lib = ct.CDLL(path)
        vp, ip = ct.c_void_p, ct.POINTER(ct.c_int)
        # getattr: a `lib.__name` inside a class body would be name-mangled.
        self.decode = getattr(lib, "__sframe_decode")
        self.decode.argtypes, self.decode.restype = [vp, vp], ct.c_int
        self.find_fre = getattr(lib, "__sframe_find_fre")
        self.find_fre.argtypes, self.find_fre.restype = [vp, ct.c_int32, vp], ct.c_int
        self.base_reg = getattr(lib, "__sframe_fre_get_base_reg_id")
        self.base_reg.argtypes, self.base_reg.restype = [vp], ct.c_uint8
        self.offset = {}
        for name in ("cfa", "fp", "ra"):
            fn = self.offset[name] = getattr(lib, f"__sframe_fre_get_{name}_offset")
            fn.argtypes, fn.restype = [vp, vp, ip], ct.c_int32
        self.walker = getattr(lib, "__stacktrace_sframe", None)
        if self.walker is None:  # a library built before the walker was added
            self.guard = guarded_region(REGION)
        else:
            self.walker.argtypes, self.walker.restype = [vp, ct.c_int, vp], ct.c_int
            self.set_object = lib.shim_set_object
            self.set_object.argtypes = [vp, ct.c_ulong, ct.c_ulong]
            self.report_faults = lib.shim_report_faults
            self.guard = fixed_layout()
        self.last_len = 0
        self.faults_reported = False
        self.ctx = ct.create_string_buffer(CTX_SIZE)
        self.fre = ct.create_string_buffer(FRE_SIZE)


def fixed_layout() -> int:
    """Map the section region to end at SECTION_END (a guard page there) and the stack page
    inside RESERVE bytes of PROT_NONE each side; returns SECTION_END."""
    libc = ct.CDLL(None, use_errno=True)
    libc.mmap.restype = ct.c_void_p
    libc.mmap.argtypes = [ct.c_void_p, ct.c_size_t, ct.c_int, ct.c_int, ct.c_int, ct.c_long]
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_FIXED_NOREPLACE
    rw = mmap.PROT_READ | mmap.PROT_WRITE
    for addr, size, prot in ((SECTION_END - REGION, REGION, rw), (SECTION_END, PAGE, 0),
                             (STACK - RESERVE, RESERVE, 0), (STACK, STACK_BYTES, rw),
                             (STACK + STACK_BYTES, RESERVE, 0)):
        if libc.mmap(addr, size, prot, flags | (MAP_NORESERVE if not prot else 0),
                     -1, 0) != addr:
            raise OSError(f"cannot map {size:#x} bytes at {addr:#x}")
    return SECTION_END


def call_decode(api: Api, data: bytes) -> int:
    addr = api.guard - len(data)
    if api.last_len > len(data):  # the walk may read there: no bytes of an earlier input
        ct.memset(api.guard - api.last_len, 0, api.last_len - len(data))
    api.last_len = len(data)
    ct.memmove(addr, data, len(data))
    ct.memset(api.ctx, 0, CTX_SIZE)
    return api.decode(api.ctx, ct.c_void_p(addr))


def call_find_fre(api: Api, pc: int) -> tuple:
    ct.memset(api.fre, 0, FRE_SIZE)
    pc = (pc + (1 << 31)) % (1 << 32) - (1 << 31)
    rc = api.find_fre(api.ctx, pc, api.fre)
    if rc:
        return (pc, rc, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    start = struct.unpack_from("=I", api.fre.raw, 0)[0]
    info = api.fre.raw[16]
    base = api.base_reg(api.fre)
    out = [pc, rc, start, info, base]
    for name in ("cfa", "ra", "fp"):
        err = ct.c_int(0)
        val = api.offset[name](api.ctx, api.fre, ct.byref(err))
        out += [val, err.value]
    return tuple(out)


def call_walk(api: Api, data: bytes, req: list[int]) -> tuple:
    """glibc's walker from the registers in `req` over its stack words."""
    lo, hi, pc, sp, fp, count = (v % (1 << 64) for v in req[:6])
    words = [v % (1 << 64) for v in req[6:6 + STACK_WORDS]]
    words += [0] * (STACK_WORDS - len(words))
    ct.memmove(STACK, struct.pack(f"<{STACK_WORDS}Q", *words), STACK_BYTES)
    api.set_object(api.guard - len(data), lo, hi)
    frame = (ct.c_uint64 * 3)(pc, sp, fp)
    count = max(1, min(count, 256))
    ras = (ct.c_uint64 * count)()
    signal.setitimer(signal.ITIMER_VIRTUAL, WALK_CPU_S)
    try:
        n = api.walker(ras, count, frame)
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
    return (n, list(ras[:max(0, min(n, count))]))


def handle(api: Api, data: bytes, pcs: list[int]) -> tuple:
    walk_req = None
    if WALK in pcs:
        at = pcs.index(WALK)
        pcs, walk_req = pcs[:at], pcs[at + 1:]
    if api.walker is not None and not api.faults_reported:
        api.report_faults()  # after serve() enabled faulthandler, which it hands the fault to
        api.faults_reported = True
    rc = call_decode(api, data)
    if rc:
        return (rc, [], None)
    lookups = [call_find_fre(api, pc) for pc in pcs]
    walk = None
    if walk_req is not None and api.walker is not None and len(walk_req) >= 6:
        walk = call_walk(api, data, walk_req)
    return (rc, lookups, walk)


def main() -> int:
    signal.signal(signal.SIGVTALRM, signal.SIG_DFL)  # a walk past its CPU time dies of it
    return serve(Api(sys.argv[1]), handle, REGION)


if __name__ == "__main__":
    sys.exit(main())
