"""Model of the Linux V3-series user-space SFrame reader (not in mainline).

Source read: dylanbhatch/linux:kernel/unwind/sframe.c@3231d5c5 (sframe_add_section,
sframe_read_header, sframe_validate_section, __find_fde, __find_fre, __read_fre, the
data-word readers), written here from that reading. Kept as the reader has it, because the
point is to predict it:
* registration needs magic, v3, SORTED and FDE_FUNC_START_PCREL, auxhdr_len 0, non-zero
  counts, the header inside the section and the FRE sub-section after the FDE array and
  inside the section; with CONFIG_SFRAME_VALIDATION every FDE and FRE is read once;
* the binary search meets disorder only on its path (-EFAULT), then a gap check (-EINVAL);
* the FRE scan requires strictly increasing starts (-EFAULT) and takes the last FRE at or
  before the PC; none is -EINVAL (so is an FDE without FREs);
* PCMASK computes `ip_off %= rep_size` with no zero check, and full validation never
  looks at rep_size: rep_size 0 passes it and divides by zero at the first lookup.
-EFAULT from a lookup removes the section from the process (sframe_find_user).

Registration: binfmt_elf at exec for the executable and its interpreter, or the
stacktrace_setup system call of Steven Rostedt's RFC ("[RFC][PATCH] unwind: Add
stacktrace_setup system call", 2026-04-29, on top of Jens Remus's v13; SYSCALL_DEFINE5 in
the same file at 3231d5c5), which hands user-space ranges to the same sframe_add_section.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..format import constants as C
from ..format.abi import ABIS
from ..format.fre_rules import RegRule
from ..wording import plural
from .outcome import DIV0, EFAULT, EINVAL, PAST, REFUSED, ROW, Bytes, Outcome, PastSection

READER = "the kernel (V3 series)"
FDE_SIZE, ATTR_SIZE = 16, 5
# Revisions of the registration check of a function start against text_end.
TEXT_END_REJECTS_EQUAL = "3231d5c5"  # func_addr >= text_end rejected
TEXT_END_ACCEPTS_EQUAL = "d56647db"  # only func_addr > text_end rejected


@dataclass(frozen=True, slots=True)
class Registered:
    vma: int
    big_endian: bool
    text: tuple[int, int]  # [text_start, text_end)
    fdes: int  # section offsets
    num_fdes: int
    fres: int
    fres_end: int
    ra_off: int
    fp_off: int
    abi: int


class _Fault(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


# stacktrace_setup's operations (include/uapi/linux/stacktrace.h of the RFC).
STACKTRACE_REGISTER_SFRAME, STACKTRACE_UNREGISTER_SFRAME = 1, 2
_ULONG = (1 << 64) - 1


def stacktrace_setup(op: int, addr_start: int, addr_length: int, text_start: int,
                     text_length: int) -> tuple[tuple[int, int], tuple[int, int]] | Outcome:
    """The [sframe_start, sframe_end) and [text_start, text_end) a registration through
    stacktrace_setup hands to sframe_add_section, or the -EINVAL it returns first: an op
    other than register (unregister registers nothing), or a start or end of 0. Each end
    is start + length in an unsigned long: a length that wraps the end to 0 is refused
    here, one that wraps it below the start passes these checks (the header check then
    refuses it, header_end >= sframe_end)."""
    if op != STACKTRACE_REGISTER_SFRAME:
        what = "removes a registration" if op == STACKTRACE_UNREGISTER_SFRAME else \
            f"op {op} is neither register nor unregister (-EINVAL)"
        return Outcome(REFUSED, f"stacktrace_setup {what}: nothing registered")
    sframe = (addr_start & _ULONG, (addr_start + addr_length) & _ULONG)
    text = (text_start & _ULONG, (text_start + text_length) & _ULONG)
    if not all((*sframe, *text)):
        return Outcome(REFUSED, f"{READER} refuses to register the section (-EINVAL): "
                       "zero-length sframe/text address (a start or start + length is 0)")
    return sframe, text


def register(data: bytes, vma: int, text: tuple[int, int], validate: bool = False,
             revision: str = TEXT_END_REJECTS_EQUAL) -> Registered | Outcome:
    """sframe_add_section's header read (and, with `validate`, sframe_validate_section)."""
    big = data[:2] == C.MAGIC_BE  # the kernel reads its own byte order: take the section's
    mem = Bytes(data, big)
    try:
        magic, version, flags = mem.uint(0, 2, "preamble"), mem.uint(2, 1, ""), \
            mem.uint(3, 1, "")
        abi, fp_off, ra_off = mem.uint(4, 1, ""), mem.sint(5, 1, ""), mem.sint(6, 1, "")
        auxhdr, num_fdes, num_fres = mem.uint(7, 1, ""), mem.uint(8, 4, ""), mem.uint(12, 4, "")
        fre_len, fdeoff, freoff = mem.uint(16, 4, ""), mem.uint(20, 4, ""), mem.uint(24, 4, "")
    except PastSection:
        return Outcome(REFUSED, f"{READER} cannot copy the 28-byte header (-EFAULT)")
    need = C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL
    why = None
    if magic != C.MAGIC or version != C.VERSION_3 or flags & need != need or auxhdr:
        why = ("bad/unsupported sframe header: " + (
            f"magic {magic:#06x}" if magic != C.MAGIC else f"version {version}"
            if version != C.VERSION_3 else f"flags {flags:#x} lack SORTED or PCREL"
            if flags & need != need else f"auxhdr_len {auxhdr}"))
    elif not num_fdes or not num_fres:
        why = f"no FDE/FRE entries (num_fdes {num_fdes}, num_fres {num_fres})"
    elif len(data) <= C.HEADER_SIZE:
        why = "header doesn't fit in section"
    else:
        fdes = C.HEADER_SIZE + fdeoff
        fres, fres_end = C.HEADER_SIZE + freoff, C.HEADER_SIZE + freoff + fre_len
        if fres < fdes + num_fdes * FDE_SIZE or fres_end > len(data):
            why = (f"inconsistent FDE/FRE offsets (FDEs end at {fdes + num_fdes * FDE_SIZE:#x}, "
                   f"FREs [{fres:#x}, {fres_end:#x}), section {len(data):#x})")
    if why:
        return Outcome(REFUSED, f"{READER} refuses to register the section (-EINVAL): {why}")
    sec = Registered(vma, big, text, fdes, num_fdes, fres, fres_end, ra_off, fp_off, abi)
    if validate:
        bad = _validate(Bytes(data, big), sec, revision)
        if bad is not None:
            return bad
    return sec


def _validate(mem: Bytes, sec: Registered, revision: str) -> Outcome | None:
    """sframe_validate_section (CONFIG_SFRAME_VALIDATION): any failure refuses the section."""
    prev = 0
    for i in range(sec.num_fdes):  # num_fdes * 16 bytes lie inside the section (header check)
        try:
            fde = _read_fde(mem, sec, i, revision)
            if fde[0] <= prev:
                raise _Fault(EFAULT, f"FDE {i} not sorted (start {fde[0]:#x} after "
                             f"{prev:#x})")
            prev = fde[0]
            pos, last = sec.fres + fde[2], None
            for j in range(fde[3]):  # each FRE read is bounded by fres_end
                start, size, info, words = _read_fre(mem, sec, fde, pos, i, j)
                _datawords(sec, fde, info, words, i, j)
                pos += size
                if last is not None and start <= last:
                    raise _Fault(EFAULT, f"FDE {i}: FRE {j} not sorted")
                last = start
        except _Fault as exc:
            return Outcome(REFUSED, f"{READER} with CONFIG_SFRAME_VALIDATION refuses the "
                           f"section: {exc.detail}", i)
    return None


def _read_fde(mem: Bytes, sec: Registered, i: int,
              revision: str = TEXT_END_REJECTS_EQUAL) -> tuple[int, int, int, int, int, int, int]:
    """(func_addr, size, fres_off after the attribute record, fres_num, info, info2,
    rep_size) of FDE `i`, as __read_fde checks it."""
    base = sec.fdes + i * FDE_SIZE
    try:
        start = mem.sint(base, 8, "")
        size, fda = mem.uint(base + 8, 4, ""), mem.uint(base + 12, 4, "")
    except PastSection:
        raise _Fault(EFAULT, f"FDE {i} is outside the section") from None
    addr = (sec.vma + base + start) & ((1 << 64) - 1)
    lo, hi = sec.text
    past = addr > hi if revision == TEXT_END_ACCEPTS_EQUAL else addr >= hi
    if addr < lo or past:
        raise _Fault(EINVAL, f"FDE {i}: function start {addr:#x} outside the text "
                     f"[{lo:#x}, {hi:#x})")
    if sec.fres + fda + ATTR_SIZE > sec.fres_end:
        raise _Fault(EINVAL, f"FDE {i}: attribute record at FRE offset {fda:#x} past fres_end")
    at = sec.fres + fda
    num, info = mem.uint(at, 2, ""), mem.uint(at + 2, 1, "")
    info2, rep = mem.uint(at + 3, 1, ""), mem.uint(at + 4, 1, "")
    return addr, size, fda + ATTR_SIZE, num, info, info2, rep


def _read_fre(mem: Bytes, sec: Registered, fde: tuple, pos: int, i: int,
              j: int) -> tuple[int, int, int, list[int]]:
    """__read_fre: (ip_off, size, info, data words) of the FRE at section offset `pos`."""
    fre_type, pcmask = fde[4] & 0xF, bool(fde[4] & 0x10)
    if fre_type > 2:
        raise _Fault(EFAULT, f"FDE {i}: FRE type {fre_type}")
    asz = 1 << fre_type
    if pos + asz + 1 > sec.fres_end:
        raise _Fault(EFAULT, f"FDE {i} FRE {j}: past fres_end")
    start = mem.uint(pos, asz, "")
    if not pcmask and start > fde[1]:
        raise _Fault(EFAULT, f"FDE {i} FRE {j}: start {start:#x} beyond the function size "
                     f"{fde[1]:#x}")
    info = mem.uint(pos + asz, 1, "")
    count, code = (info >> 1) & 0xF, (info >> 5) & 3
    if code > 2:
        raise _Fault(EFAULT, f"FDE {i} FRE {j}: data-word size code 3")
    wsz = 1 << code
    if pos + asz + 1 + count * wsz > sec.fres_end:
        raise _Fault(EFAULT, f"FDE {i} FRE {j}: data words past fres_end")
    words = [mem.sint(pos + asz + 1 + k * wsz, wsz, "") for k in range(count)]
    return start, asz + 1 + count * wsz, info, words


def _datawords(sec: Registered, fde: tuple, info: int, words: list[int], i: int,
               j: int) -> tuple[RegRule, RegRule | None, RegRule | None] | None:
    """__read_fre_datawords and the rule set-up: None for an outermost row."""
    if not words:
        return None
    abi = ABIS.get(sec.abi, ABIS[C.ABI_AMD64_LE])
    fde_type = fde[5] & 0x1F
    rest = list(words)
    if fde_type == C.FDE_TYPE_DEFAULT:
        cfa = RegRule(abi.fp if not info & 1 else abi.sp, rest.pop(0), False)
        ra, fp = sec.ra_off, sec.fp_off
        if not ra and rest:
            ra = rest.pop(0)
        if not fp and rest:
            fp = rest.pop(0)
        if rest:
            raise _Fault(EFAULT, f"FDE {i} FRE {j}: {plural(len(rest), 'data word')} left over")
        return cfa, RegRule(None, ra, True) if ra else None, RegRule(None, fp, True) if fp \
            else None
    if fde_type != C.FDE_TYPE_FLEX:
        raise _Fault(EFAULT, f"FDE {i}: FDE type {fde_type}")
    if len(rest) < 2:
        raise _Fault(EFAULT, f"FDE {i} FRE {j}: flex FRE with {plural(len(rest), 'data word')}")
    mask = (1 << (8 * (1 << ((info >> 5) & 3)))) - 1
    ctl, off = rest.pop(0) & mask, rest.pop(0)
    out: list[RegRule | None] = []
    for fixed in (sec.ra_off, sec.fp_off):
        c, o = (2 if fixed else 0), fixed
        if len(rest) >= 2:
            c = rest.pop(0) & mask
            if c:
                o = rest.pop(0)
            else:
                c = 2 if fixed else 0
        out.append(None if not c and not o else RegRule(c >> 3 if c & 1 else None, o,
                                                        bool(c & 2)))
    if rest:
        raise _Fault(EFAULT, f"FDE {i} FRE {j}: {plural(len(rest), 'data word')} left over")
    if not ctl & 1:
        raise _Fault(EINVAL, f"FDE {i} FRE {j}: CFA rule is not register-based")
    return RegRule(ctl >> 3, off, bool(ctl & 2)), out[0], out[1]


class Memo:
    """What lookups in one registration have read so far: the bytes and the registration
    never change, so a checker probing many PCs decodes each function start, FDE, FRE and
    data-word set once. A fault is kept and raised afresh where the reader meets it again;
    a read outside the section is never kept (it is redone, and raises)."""

    def __init__(self, data: bytes, sec: Registered) -> None:
        self.mem = Bytes(data, sec.big_endian)
        self.sec = sec
        self.addrs: dict[int, int] = {}  # FDE record -> function start address
        self.fdes: dict[int, tuple[int, int, int, int, int, int, int] | _Fault] = {}
        # FDE record -> its FREs read so far, in order; the fault at the next one, if any
        self.fres: dict[int, list[tuple[int, int, int, list[int]]]] = {}
        self.fre_faults: dict[int, _Fault] = {}
        self.rules: dict[tuple[int, int], tuple[RegRule, RegRule | None, RegRule | None]
                         | None | _Fault] = {}


def lookup(data: bytes, sec: Registered, ip: int, memo: Memo | None = None) -> Outcome:
    """sframe_find_user(ip) for an ip inside the registered text. `memo` (made from the
    same `data` and `sec`) carries decoded records between lookups."""
    if memo is None:
        memo = Memo(data, sec)
    try:
        i = _find_fde(memo, ip)
        fde = memo.fdes.get(i)
        if fde is None:
            try:
                fde = memo.fdes[i] = _read_fde(memo.mem, sec, i)
            except _Fault as exc:
                memo.fdes[i] = exc
                raise
        elif isinstance(fde, _Fault):
            raise _Fault(fde.kind, fde.detail)
        if not fde[0] <= ip < fde[0] + fde[1]:
            return Outcome(EINVAL, f"{ip:#x} is in a gap after function {fde[0]:#x} (size "
                           f"{fde[1]:#x})", i)
        return _find_fre(memo, i, fde, ip)
    except _Fault as exc:
        return Outcome(exc.kind, exc.detail)
    except PastSection as exc:  # cannot happen after registration: kept as a model fault
        return Outcome(PAST, f"{READER} {exc}")


def _find_fde(memo: Memo, ip: int) -> int:
    sec = memo.sec
    low, high = 0, sec.num_fdes - 1
    lo_addr, hi_addr = 0, (1 << 64) - 1
    found = None
    while low <= high:
        mid = low + (high - low) // 2
        addr = memo.addrs.get(mid)
        if addr is None:
            base = sec.fdes + mid * FDE_SIZE
            addr = memo.addrs[mid] = (sec.vma + base + memo.mem.sint(base, 8, "")) & (
                (1 << 64) - 1)
        if ip >= addr:
            if addr < lo_addr:
                raise _Fault(EFAULT, f"FDE {mid} out of order on the binary-search path "
                             "(the section is removed)")
            lo_addr, found, low = addr, mid, mid + 1
        else:
            if addr > hi_addr:
                raise _Fault(EFAULT, f"FDE {mid} out of order on the binary-search path "
                             "(the section is removed)")
            hi_addr, high = addr, mid - 1
    if found is None:
        raise _Fault(EINVAL, f"{ip:#x} is below every function")
    return found


def _find_fre(memo: Memo, i: int, fde: tuple, ip: int) -> Outcome:
    sec = memo.sec
    ip_off = (ip - fde[0]) & 0xFFFFFFFF
    if fde[4] & 0x10:
        if fde[6] == 0:
            return Outcome(DIV0, f"FDE {i} is PCMASK with rep_size 0: `ip_off %= rep_size` "
                           "divides by zero in the kernel (no check, and full validation "
                           "does not look at rep_size)", i)
        ip_off %= fde[6]
    pos, prev, prev_j = sec.fres + fde[2], None, -1
    seen = memo.fres.setdefault(i, [])
    for j in range(fde[3]):
        if j < len(seen):
            fre = seen[j]
        else:  # FRE j's position depends only on FREs 0..j-1: read it once
            fault = memo.fre_faults.get(i)
            if fault is not None:
                raise _Fault(fault.kind, fault.detail)
            try:
                fre = _read_fre(memo.mem, sec, fde, pos, i, j)
            except _Fault as exc:
                memo.fre_faults[i] = exc
                raise
            seen.append(fre)
        start, size, info, words = fre
        pos += size
        if prev is not None and start <= prev[0]:
            raise _Fault(EFAULT, f"FDE {i}: FRE {j} starts at {start:#x}, not after "
                         f"{prev[0]:#x} (the section is removed)")
        if start > ip_off:
            break
        prev, prev_j = (start, info, words), j
    if prev is None:
        why = "has no FREs" if not fde[3] else f"has no FRE at or before offset {ip_off:#x}"
        return Outcome(EINVAL, f"FDE {i} {why}", i)
    key = (i, prev_j)
    if key in memo.rules:
        rules = memo.rules[key]
        if isinstance(rules, _Fault):
            raise _Fault(rules.kind, rules.detail)
    else:
        try:
            rules = memo.rules[key] = _datawords(sec, fde, prev[1], prev[2], i, prev_j)
        except _Fault as exc:
            memo.rules[key] = exc
            raise
    if rules is None:
        return Outcome(ROW, "", i, prev_j, outermost=True)
    return Outcome(ROW, "", i, prev_j, *rules)
