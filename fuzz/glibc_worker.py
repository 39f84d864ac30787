"""Child process that feeds sections to glibc's SFrame reader through ctypes.

    python fuzz/glibc_worker.py /path/to/libglibc-sframe.so
    python fuzz/glibc_worker.py /path/to/libglibc-sframe.so --replay FILE [PC...]

The library is glibc's own `sysdeps/generic/sframe-read.c` (__sframe_decode, __sframe_find_fre
and the offset getters; glibc 2.42+, SFrame v2), built at fuzz time from Debian's
glibc-source package by fuzz/get-glibc-sframe.sh; LGPL code is loaded at run time, never
vendored. Like libsframe_worker.py, each section ends exactly at a PROT_NONE page, so a read
past the end of the buffer faults (glibc passes no size to its decoder at all), and a crash
(SIGSEGV, SIGFPE from `% rep_block_size`) kills only this process; faulthandler names the
`call_*` function in progress. Same request/reply framing as libsframe_worker.py; the reply is
marshal of (decode result, [(pc, find result, fre start, fre info, base reg, cfa, cfa err,
ra, ra err, fp, fp err)]), PCs section-relative.
"""

from __future__ import annotations

import ctypes as ct
import mmap
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from libsframe_worker import guarded_region, serve  # noqa: E402  (same framing, guard page)

PAGE = mmap.PAGESIZE
REGION = 1 << 20
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
        self.guard = guarded_region(REGION)
        self.ctx = ct.create_string_buffer(CTX_SIZE)
        self.fre = ct.create_string_buffer(FRE_SIZE)


def call_decode(api: Api, data: bytes) -> int:
    addr = api.guard - len(data)
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


def handle(api: Api, data: bytes, pcs: list[int]) -> tuple:
    rc = call_decode(api, data)
    if rc:
        return (rc, [])
    return (rc, [call_find_fre(api, pc) for pc in pcs])


def main() -> int:
    return serve(Api(sys.argv[1]), handle, REGION)


if __name__ == "__main__":
    sys.exit(main())
