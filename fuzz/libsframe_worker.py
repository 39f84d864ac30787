"""Child process that feeds sections to one binutils libsframe through ctypes.

    python -m fuzz.libsframe_worker /path/to/libsframe.so.N
    python fuzz/libsframe_worker.py /path/to/libsframe.so.N --replay FILE [PC...]

Runs apart from the fuzzer so that a crash of libsframe (SIGSEGV, an
sframe_assert abort) kills only this process; faulthandler then names the
call in progress (the `call_*` function) on stderr. Each section is copied so
that it ends exactly at a PROT_NONE page: a read past the end of the caller's
buffer faults instead of going unnoticed.

Protocol on stdin/stdout: request = u32 length, u32 number of PCs, the
section, then the PCs (i64 each, section-relative); reply = u32 length +
marshal of (decode error, num_fidx, funcdescs, fres, lookups), see `handle`.
libsframe is GPLv3+: it is loaded at run time from the path given, never vendored.
"""

from __future__ import annotations

import ctypes as ct
import faulthandler
import marshal
import mmap
import struct
import sys

MAX_FDES = 48  # FDEs and FREs asked for per section (num_fidx may be anything)
MAX_FRES = 256
PAGE = mmap.PAGESIZE
REGION = 1 << 20  # largest section accepted
PROT_NONE = 0


def guarded_region(size: int) -> int:
    """`size` writable bytes followed by a PROT_NONE page; returns the guard's address
    (a section copied to end there makes every read past it fault)."""
    libc = ct.CDLL(None, use_errno=True)
    libc.mmap.restype = ct.c_void_p
    libc.mmap.argtypes = [ct.c_void_p, ct.c_size_t, ct.c_int, ct.c_int, ct.c_int, ct.c_long]
    libc.mprotect.argtypes = [ct.c_void_p, ct.c_size_t, ct.c_int]
    base = libc.mmap(None, size + PAGE, mmap.PROT_READ | mmap.PROT_WRITE,
                     mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if base in (None, ct.c_void_p(-1).value):
        raise OSError("mmap failed")
    if libc.mprotect(base + size, PAGE, PROT_NONE) != 0:
        raise OSError("mprotect failed")
    return base + size


class Api:
    """The three API generations: 2.40 (libsframe.so.0), 2.44 (.so.1), 2.46+ (.so.3)."""

    def __init__(self, path: str) -> None:
        lib = self.lib = ct.CDLL(path)
        self.v3 = hasattr(lib, "sframe_decoder_get_funcdesc_v3")
        self.v2 = hasattr(lib, "sframe_decoder_get_funcdesc_v2")
        # sframe_frame_row_entry: u32 start, data words (12 bytes; 24 from 2.46), u8 info.
        self.words_len = 24 if self.v3 else 12
        self.fre_size = 4 + self.words_len + 4
        vp, u32p, i32p, i64p, u8p = (ct.c_void_p, ct.POINTER(ct.c_uint32),
                                     ct.POINTER(ct.c_int32), ct.POINTER(ct.c_int64),
                                     ct.POINTER(ct.c_uint8))
        lib.sframe_decode.restype = vp
        lib.sframe_decode.argtypes = [ct.c_void_p, ct.c_size_t, ct.POINTER(ct.c_int)]
        lib.sframe_decoder_free.argtypes = [ct.POINTER(vp)]
        lib.sframe_decoder_free.restype = None
        lib.sframe_decoder_get_num_fidx.restype = ct.c_uint32
        lib.sframe_decoder_get_num_fidx.argtypes = [vp]
        lib.sframe_decoder_get_fre.argtypes = [vp, ct.c_uint, ct.c_uint, ct.c_void_p]
        lib.sframe_decoder_get_fre.restype = ct.c_int
        lib.sframe_find_fre.argtypes = [vp, ct.c_int64 if self.v3 else ct.c_int32, ct.c_void_p]
        lib.sframe_find_fre.restype = ct.c_int
        if self.v3:
            lib.sframe_decoder_get_funcdesc_v3.argtypes = [vp, ct.c_uint, u32p, u32p, i64p, u8p,
                                                           u8p, u8p]
        if self.v2:
            lib.sframe_decoder_get_funcdesc_v2.argtypes = [vp, ct.c_uint, u32p, u32p, i32p, u8p,
                                                           u8p]
        if hasattr(lib, "sframe_decoder_get_funcdesc"):
            lib.sframe_decoder_get_funcdesc.argtypes = [vp, ct.c_uint, u32p, u32p, i32p, u8p]
        self.guard = guarded_region(REGION)  # the first byte that faults
        self.fre = ct.create_string_buffer(self.fre_size + 64)


def call_decode(api: Api, data: bytes) -> tuple[int | None, int]:
    addr = api.guard - len(data)
    ct.memmove(addr, data, len(data))
    err = ct.c_int(0)
    ctx = api.lib.sframe_decode(ct.c_void_p(addr), len(data), ct.byref(err))
    return ctx, err.value


def call_num_fidx(api: Api, ctx: int) -> int:
    return api.lib.sframe_decoder_get_num_fidx(ctx)


def call_funcdesc(api: Api, ctx: int, i: int, version: int) -> tuple:
    n, size, info, info2, rep = (ct.c_uint32(), ct.c_uint32(), ct.c_uint8(), ct.c_uint8(),
                                 ct.c_uint8())
    if api.v3 and version >= 3:
        start64 = ct.c_int64()
        err = api.lib.sframe_decoder_get_funcdesc_v3(ctx, i, ct.byref(n), ct.byref(size),
                                                     ct.byref(start64), ct.byref(info),
                                                     ct.byref(info2), ct.byref(rep))
        start = start64.value
    else:
        start32 = ct.c_int32()
        if api.v2 and version >= 2:
            err = api.lib.sframe_decoder_get_funcdesc_v2(ctx, i, ct.byref(n), ct.byref(size),
                                                         ct.byref(start32), ct.byref(info),
                                                         ct.byref(rep))
        else:
            err = api.lib.sframe_decoder_get_funcdesc(ctx, i, ct.byref(n), ct.byref(size),
                                                      ct.byref(start32), ct.byref(info))
        start = start32.value
    return (err, n.value, size.value, start, info.value, info2.value, rep.value)


def _fre_tuple(api: Api, err: int) -> tuple:
    raw = api.fre.raw
    start = struct.unpack_from("=I", raw, 0)[0]
    return (err, start, raw[4 + api.words_len], raw[4:4 + api.words_len])


def call_get_fre(api: Api, ctx: int, i: int, j: int) -> tuple:
    ct.memset(api.fre, 0, len(api.fre))
    err = api.lib.sframe_decoder_get_fre(ctx, i, j, api.fre)
    return _fre_tuple(api, err)


def call_find_fre(api: Api, ctx: int, pc: int) -> tuple:
    ct.memset(api.fre, 0, len(api.fre))
    if not api.v3:
        pc = (pc + (1 << 31)) % (1 << 32) - (1 << 31)  # the int32 the old API takes
    err = api.lib.sframe_find_fre(ctx, pc, api.fre)
    return _fre_tuple(api, err)


def call_free(api: Api, ctx: int) -> None:
    p = ct.c_void_p(ctx)
    api.lib.sframe_decoder_free(ct.byref(p))


def handle(api: Api, data: bytes, pcs: list[int]) -> tuple:
    """(decode error, num_fidx, [(i, funcdesc...)], [(i, j, fre...)], [(pc, fre...)]).

    A decode error of 0 with a NULL context is reported as -1."""
    ctx, err = call_decode(api, data)
    if not ctx:
        return (err or -1, 0, [], [], [])
    version = data[2] if len(data) > 2 else 0
    nf = call_num_fidx(api, ctx)
    fdes, fres = [], []
    for i in range(min(nf, MAX_FDES)):
        fd = call_funcdesc(api, ctx, i, version)
        fdes.append((i, *fd))
        if fd[0] == 0:
            for j in range(min(fd[1], MAX_FRES - len(fres))):
                fres.append((i, j, *call_get_fre(api, ctx, i, j)))
    lookups = [(pc, *call_find_fre(api, ctx, pc)) for pc in pcs]
    call_free(api, ctx)
    return (err, nf, fdes, fres, lookups)


def serve(api: object, handle_fn, region: int = REGION) -> int:  # type: ignore[no-untyped-def]
    """The worker's main: `--replay FILE [PC...]` for a person (or gdb --args), else
    requests on stdin answered on stdout (also used by glibc_worker.py)."""
    faulthandler.enable(file=sys.stderr, all_threads=False)
    if len(sys.argv) > 3 and sys.argv[2] == "--replay":
        data = open(sys.argv[3], "rb").read()  # noqa: SIM115
        print(handle_fn(api, data, [int(x, 0) for x in sys.argv[4:]]))
        return 0
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return 0
        n, npcs = struct.unpack("<II", head)
        data = inp.read(n)
        pcs = list(struct.unpack(f"<{npcs}q", inp.read(8 * npcs))) if npcs else []
        reply = marshal.dumps(handle_fn(api, data[:region], pcs))
        out.write(struct.pack("<I", len(reply)) + reply)
        out.flush()


def main() -> int:
    return serve(Api(sys.argv[1]), handle)


if __name__ == "__main__":
    sys.exit(main())
