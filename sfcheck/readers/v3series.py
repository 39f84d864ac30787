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

import struct
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from operator import le, lt

from ..format import constants
from ..format.abi import ABIS
from ..format.fre_info_table import COUNT, DATA_LEN, WORD_SIZE
from ..format.fre_rules import RegRule
from ..format.model import FDE
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
    big = data[:2] == constants.MAGIC_BE  # the kernel reads its own byte order: take the section's
    mem = Bytes(data, big)
    try:
        magic, version, flags = mem.uint(0, 2, "preamble"), mem.uint(2, 1, ""), \
            mem.uint(3, 1, "")
        abi, fp_off, ra_off = mem.uint(4, 1, ""), mem.sint(5, 1, ""), mem.sint(6, 1, "")
        auxhdr, num_fdes, num_fres = mem.uint(7, 1, ""), mem.uint(8, 4, ""), mem.uint(12, 4, "")
        fre_len, fdeoff, freoff = mem.uint(16, 4, ""), mem.uint(20, 4, ""), mem.uint(24, 4, "")
    except PastSection:
        return Outcome(REFUSED, f"{READER} cannot copy the 28-byte header (-EFAULT)")
    need = constants.F_FDE_SORTED | constants.F_FDE_FUNC_START_PCREL
    why = None
    if magic != constants.MAGIC or version != constants.VERSION_3 or flags & need != need or auxhdr:
        why = ("bad/unsupported sframe header: " + (
            f"magic {magic:#06x}" if magic != constants.MAGIC else f"version {version}"
            if version != constants.VERSION_3 else f"flags {flags:#x} lack SORTED or PCREL"
            if flags & need != need else f"auxhdr_len {auxhdr}"))
    elif not num_fdes or not num_fres:
        why = f"no FDE/FRE entries (num_fdes {num_fdes}, num_fres {num_fres})"
    elif len(data) <= constants.HEADER_SIZE:
        why = "header doesn't fit in section"
    else:
        fdes = constants.HEADER_SIZE + fdeoff
        fres, fres_end = constants.HEADER_SIZE + freoff, constants.HEADER_SIZE + freoff + fre_len
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


def _datawords(sec: Registered, fde: tuple, info: int, words: Sequence[int], i: int,
               j: int) -> tuple[RegRule, RegRule | None, RegRule | None] | None:
    """__read_fre_datawords and the rule set-up: None for an outermost row."""
    if not words:
        return None
    abi = ABIS.get(sec.abi, ABIS[constants.ABI_AMD64_LE])
    fde_type = fde[5] & 0x1F
    rest = list(words)
    if fde_type == constants.FDE_TYPE_DEFAULT:
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
    if fde_type != constants.FDE_TYPE_FLEX:
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


# An FRE as the FDE's FRE scan reads it: (FRE info byte, data words); with the FDE type,
# what a lookup reads its rules from (FreKey).
FreRow = tuple[int, tuple[int, ...]]
FreKey = tuple[int, FreRow]
_UNREAD = object()


class Memo:
    """The lookup derived for a checker that probes many PCs of one registration: the same
    outcomes as the reference lookup (memo=None), from records decoded once. The bytes and
    the registration never change, so:
    * when the function starts are in order (non-decreasing), the binary search, which then
      meets no disorder, ends at the last start at or below the PC: a bisection;
    * an FDE's FREs are read once, in order, up to the first that faults (a read fault, or a
      start not after the previous one); the scan of a lookup is then a bisection of the
      starts before that point, and meets the fault only if every start before it is at or
      below the PC offset;
    * each FDE record is kept, and each row's rules by what they are read from (the FDE
      type, the FRE info byte and the data words: _datawords reads nothing else but the
      section's header, and the FDE and FRE indices only name a fault); a fault is kept
      per row, for its message."""

    def __init__(self, data: bytes, sec: Registered) -> None:
        self.mem = Bytes(data, sec.big_endian)
        self.sec = sec
        self.addrs = _ordered_starts(data, sec)  # None: out of order, the reference search
        self.fdes: dict[int, tuple[int, int, int, int, int, int, int] | _Fault] = {}
        # FDE record -> (FRE starts, each FRE's FreRow, the fault where the scan stops or None)
        self.fres: dict[int, tuple[list[int], Sequence[FreRow], Exception | None]] = {}
        self.rules: dict[FreKey, tuple[RegRule, RegRule | None, RegRule | None] | None] = {}
        self.faults: dict[tuple[int, int], _Fault] = {}

    def lookup(self, ip: int) -> Outcome:
        sec = self.sec
        try:
            if self.addrs is None:
                i = _find_fde(self.mem, sec, ip)
            else:
                i = bisect_right(self.addrs, ip) - 1
                if i < 0:
                    raise _Fault(EINVAL, f"{ip:#x} is below every function")
            fde = self.record(i)
            if not fde[0] <= ip < fde[0] + fde[1]:
                return _gap(ip, i, fde)
            ip_off = _ip_off(ip, i, fde)
            if isinstance(ip_off, Outcome):
                return ip_off
            starts, rows, fault = self._fres(i, fde)
            k = bisect_right(starts, ip_off)  # the FRE the scan stops at (starts ascend)
            if k == len(starts) and fault is not None:
                raise _Fault(fault.kind, fault.detail) if isinstance(fault, _Fault) else fault
            if not k:
                return _no_fre(i, fde, ip_off)
            return _row(i, k - 1, self._rules(i, k - 1, fde, rows[k - 1]))
        except _Fault as exc:
            return Outcome(exc.kind, exc.detail)
        except PastSection as exc:  # cannot happen after registration: kept as a model fault
            return Outcome(PAST, f"{READER} {exc}")

    def record(self, i: int) -> tuple[int, int, int, int, int, int, int]:
        """FDE `i`'s record as __read_fde reads it, read once (its fault raised again)."""
        fde = self.fdes.get(i)
        if fde is None:
            try:
                fde = self.fdes[i] = _read_fde(self.mem, self.sec, i)
            except _Fault as exc:
                self.fdes[i] = exc
                raise
        elif isinstance(fde, _Fault):
            raise _Fault(fde.kind, fde.detail)
        return fde

    def clean(self, i: int) -> tuple[tuple[int, int, int, int, int, int, int], list[int],
                                     Sequence[FreRow]] | None:
        """FDE `i`'s record, its FRE starts and each FRE's FreRow, when a lookup
        in the function chooses its row by the starts alone: the record reads, it is not
        PCMASK, and every FRE reads, in strictly increasing order. None otherwise."""
        try:
            fde = self.record(i)
        except (_Fault, PastSection):
            return None
        if fde[4] & 0x10:
            return None
        starts, rows, fault = self._fres(i, fde)
        return None if fault is not None else (fde, starts, rows)

    def clean_from(self, i: int, ref: FDE, starts: list[int],
                   rows: Sequence[FreRow]
                   ) -> tuple[tuple[int, int, int, int, int, int, int], list[int],
                              Sequence[FreRow]] | None:
        """clean(i), given FDE `i` as format/decode.Decoder read it from the same bytes:
        `ref` its record, `starts` and `rows` its FREs' starts and (info byte, data words)
        (unwind/table.SFrameTable.rows). Its decode succeeding means
        every read the model makes of the record and its FREs is in bounds with the same
        values (the attribute record within fre_len, FRE type <= 2, no size code 3, each
        FRE within fres_end: the registration puts fres_end inside the section and
        auxhdr_len at 0), so where the function start is in the text, the FDE is not
        PCMASK and every FRE start is at most the size and after the previous one, the
        model reads what `ref` holds and the result is taken from it (and kept, as clean()
        keeps its reads). Otherwise clean() reads."""
        addrs = self.addrs
        if addrs is None or i in self.fres or ref.info & 0x10:
            return self.clean(i)
        addr, size = addrs[i], ref.size
        lo, hi = self.sec.text
        if not lo <= addr < hi or (starts and (starts[-1] > size or not all(
                map(lt, starts, islice(starts, 1, None))))):
            return self.clean(i)
        fde = (addr, size, ref.fre_off + ATTR_SIZE, ref.num_fres, ref.info, ref.info2,
               ref.rep_size)
        self.fdes[i] = fde
        self.fres[i] = (starts, rows, None)
        return fde, starts, rows

    def row_rules(self, i: int, j: int) -> tuple[RegRule, RegRule | None, RegRule | None] | None:
        """The rules a lookup that lands on FRE `j` of FDE `i` answers with; None when it
        answers otherwise (an outermost row, or a fault reading the data words). Only for
        an FDE clean() returns."""
        fde = self.record(i)
        try:
            return self._rules(i, j, fde, self._fres(i, fde)[1][j])
        except _Fault:
            return None

    def _fres(self, i: int, fde: tuple) -> tuple[list[int], Sequence[FreRow],
                                                 Exception | None]:
        got = self.fres.get(i)
        if got is None:
            starts: list[int] = []
            rows: list[FreRow] = []
            fault: Exception | None = None
            sec, data = self.sec, self.mem.data
            pos, end, order = sec.fres + fde[2], sec.fres_end, self.mem.order
            fre_type, pcmask, fsize = fde[4] & 0xF, fde[4] & 0x10, fde[1]
            asz = 1 << fre_type if fre_type <= 2 else 0
            for j in range(fde[3]):  # each FRE read is bounded by fres_end
                # An FRE _read_fre takes without a fault, read in place; anything else
                # (a fault on the way) goes to _read_fre itself.
                fre = None
                if asz and pos + asz + 1 <= end:
                    start = int.from_bytes(data[pos:pos + asz], order)
                    info = data[pos + asz]
                    size = asz + 1 + DATA_LEN[info]
                    if (pcmask or start <= fsize) and WORD_SIZE[info] and pos + size <= end:
                        fre = start, size, info, _WORDS[order, WORD_SIZE[info], COUNT[info]] \
                            .unpack_from(data, pos + asz + 1)
                if fre is None:
                    try:
                        fre = _read_fre(self.mem, sec, fde, pos, i, j)
                    except (_Fault, PastSection) as exc:
                        fault = exc
                        break
                start, size, info, words = fre
                if starts and start <= starts[-1]:
                    fault = _unordered(i, j, start, starts[-1])
                    break
                starts.append(start)
                rows.append((info, tuple(words)))
                pos += size
            got = self.fres[i] = (starts, rows, fault)
        return got

    def _rules(self, i: int, j: int, fde: tuple, row: FreRow
               ) -> tuple[RegRule, RegRule | None, RegRule | None] | None:
        """FRE `j` of FDE `i` (read as `row`): its rules, or its fault raised again."""
        key = (fde[5] & 0x1F, row)
        rules = self.rules.get(key, _UNREAD)
        if rules is not _UNREAD:
            return rules  # type: ignore[return-value]
        fault = self.faults.get((i, j))
        if fault is not None:
            raise _Fault(fault.kind, fault.detail)
        try:
            rules = self.rules[key] = _datawords(self.sec, fde, row[0], row[1], i, j)
        except _Fault as exc:
            self.faults[i, j] = exc
            raise
        return rules


# (byte order, data-word width in bytes, count) -> the signed words' Struct
_WORDS = {(order, width, n): struct.Struct(("<" if order == "little" else ">")
                                           + {1: "b", 2: "h", 4: "i"}[width] * n)
          for order in ("little", "big") for width in (1, 2, 4) for n in range(16)}


def _ordered_starts(data: bytes, sec: Registered) -> list[int] | None:
    """Every FDE's function start address as _find_fde computes it, if they never
    decrease; None otherwise (or if the FDE array is not all inside `data`)."""
    end = sec.fdes + sec.num_fdes * FDE_SIZE
    if sec.fdes < 0 or end > len(data):
        return None
    fields = struct.iter_unpack(">q8x" if sec.big_endian else "<q8x", data[sec.fdes:end])
    base = sec.vma + sec.fdes
    addrs = [(base + k * FDE_SIZE + v) & _ULONG for k, (v,) in enumerate(fields)]
    return addrs if all(map(le, addrs, islice(addrs, 1, None))) else None


def lookup(data: bytes, sec: Registered, ip: int, memo: Memo | None = None) -> Outcome:
    """sframe_find_user(ip) for an ip inside the registered text. With `memo` (made from the
    same `data` and `sec`), the same outcome from records decoded once per registration
    (Memo.lookup; tests/test_readers.py holds the two equal)."""
    if memo is not None:
        return memo.lookup(ip)
    mem = Bytes(data, sec.big_endian)
    try:
        i = _find_fde(mem, sec, ip)
        fde = _read_fde(mem, sec, i)
        if not fde[0] <= ip < fde[0] + fde[1]:
            return _gap(ip, i, fde)
        return _find_fre(mem, sec, i, fde, ip)
    except _Fault as exc:
        return Outcome(exc.kind, exc.detail)
    except PastSection as exc:  # cannot happen after registration: kept as a model fault
        return Outcome(PAST, f"{READER} {exc}")


def _find_fde(mem: Bytes, sec: Registered, ip: int) -> int:
    low, high = 0, sec.num_fdes - 1
    lo_addr, hi_addr = 0, (1 << 64) - 1
    found = None
    while low <= high:
        mid = low + (high - low) // 2
        base = sec.fdes + mid * FDE_SIZE
        addr = (sec.vma + base + mem.sint(base, 8, "")) & ((1 << 64) - 1)
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


def _find_fre(mem: Bytes, sec: Registered, i: int, fde: tuple, ip: int) -> Outcome:
    ip_off = _ip_off(ip, i, fde)
    if isinstance(ip_off, Outcome):
        return ip_off
    pos, prev, prev_j = sec.fres + fde[2], None, -1
    for j in range(fde[3]):
        start, size, info, words = _read_fre(mem, sec, fde, pos, i, j)
        pos += size
        if prev is not None and start <= prev[0]:
            raise _unordered(i, j, start, prev[0])
        if start > ip_off:
            break
        prev, prev_j = (start, info, words), j
    if prev is None:
        return _no_fre(i, fde, ip_off)
    return _row(i, prev_j, _datawords(sec, fde, prev[1], prev[2], i, prev_j))


def _gap(ip: int, i: int, fde: tuple) -> Outcome:
    return Outcome(EINVAL, f"{ip:#x} is in a gap after function {fde[0]:#x} (size "
                   f"{fde[1]:#x})", i)


def _ip_off(ip: int, i: int, fde: tuple) -> int | Outcome:
    ip_off = (ip - fde[0]) & 0xFFFFFFFF
    if fde[4] & 0x10:
        if fde[6] == 0:
            return Outcome(DIV0, f"FDE {i} is PCMASK with rep_size 0: `ip_off %= rep_size` "
                           "divides by zero in the kernel (no check, and full validation "
                           "does not look at rep_size)", i)
        ip_off %= fde[6]
    return ip_off


def _unordered(i: int, j: int, start: int, prev: int) -> _Fault:
    return _Fault(EFAULT, f"FDE {i}: FRE {j} starts at {start:#x}, not after {prev:#x} (the "
                  "section is removed)")


def _no_fre(i: int, fde: tuple, ip_off: int) -> Outcome:
    why = "has no FREs" if not fde[3] else f"has no FRE at or before offset {ip_off:#x}"
    return Outcome(EINVAL, f"FDE {i} {why}", i)


def _row(i: int, j: int, rules: tuple[RegRule, RegRule | None, RegRule | None] | None
         ) -> Outcome:
    if rules is None:
        return Outcome(ROW, "", i, j, outermost=True)
    return Outcome(ROW, "", i, j, *rules)
