"""Harness `section`: bytes -> decode -> every rule -> dump -> unwind a few PCs.

Properties (an AssertionError is a finding):
* only sfcheck's own error types escape (anything else propagates: a finding);
* the unwinder stops within its frame cap, with SP never moving down;
* a section the checker finds clean (no error finding) never makes the dumper
  raise DecodeError, nor the unwinder stop on malformed data: the validator is
  sound with respect to sfcheck's own consumers;
* encode(decode(x)) == x for clean sections;
* the checker's fast pass (walk/fast, tried on every table size) reports exactly
  what the reference pass reports, checked on one input in FAST_EVERY (chosen by content,
  so a finding replays).

Every input is checked on the reference pass (every FDE through rules/fde.py and fre.py,
instrumented): its coverage is what steers. The fast pass is the checker's accelerator,
uninstrumented; on fuzzed headers its per-header shape verdicts (one probe check_fde per
combination of the column values present) made the check step 3.8x as costly on average
(408 vs 108 us per input, uninstrumented) when every table of 16 FDEs or more took it.

    python fuzz/section.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
import zlib

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

# Coverage of the format, rules, unwind and dump code steers the fuzzer; the glue around
# them (options, results, profiles, error types) and the ELF and .eh_frame readers this
# harness never reaches stay uninstrumented. So does the checker's accelerator (walk/fre_patterns,
# walk/fde_shapes, walk/fast, the FDE-table columns): it only decides which FDEs the reference
# rules would pass silently, the equivalence test pins it to them, and its per-header
# caches, rebuilt for every fuzzed header, made instrumentation cost 2.4x the exec rate
# (1,666 -> 625-714 exec/s on the same seeds); a crash in it is still a finding.
# Plumbing and pure data stay out too: the findings context (per-rule caps, severity
# cache), the rule registry, the model's bit-field accessors, constants and the ABI
# table. Their branches repeat conditions the rules branch on; context, model and ABI
# made 107 + 133 + 42 of the ~2,500 branch callbacks per execution (counted: see
# reports/fuzz-section-rate-2026-11-26.md).
GLUE = ("sfcheck.checker", "sfcheck.result", "sfcheck.profiles", "sfcheck.errors",
        "sfcheck.elf", "sfcheck.elf.loader", "sfcheck.elf.headers", "sfcheck.elf.relocations",
        "sfcheck.elf.symbols", "sfcheck.elf.model", "sfcheck.elf.constants",
        "sfcheck.dwarf.cfi", "sfcheck.dwarf.ehframe",
        "sfcheck.walk.fre_patterns", "sfcheck.walk.fde_shapes", "sfcheck.walk.fast",
        "sfcheck.format.fde_table",
        "sfcheck.walk.context", "sfcheck.rules.registry", "sfcheck.format.model",
        "sfcheck.format.constants", "sfcheck.format.abi")

# Branch coverage only: comparison tracing was 324 of ~1,400 callbacks per execution and
# feeds nothing but libFuzzer's table of compared values, which only its byte mutations
# use; the structure-aware mutator and the dictionary supply those values. Same seed,
# 300 s side by side: +13% executions, the same edges, features and replayed lines
# (reports/fuzz-section-rate-2026-11-26.md). SFCHECK_FUZZ_DATAFLOW=1 turns it back on.
with common.instrumented_imports(__name__ == "__main__", exclude=GLUE, dataflow=False):
    from sfcheck.checker import check_section_bytes
    from sfcheck.dump.objdump import dump_text
    from sfcheck.errors import DecodeError, EncodeError, SfcheckError
    from sfcheck.format.decode import decode
    from sfcheck.format.encode import encode
    from sfcheck.result import FileResult, Severity
    from sfcheck.unwind import Registers, SFrameTable, SparseMemory, StopReason, Unwinder
    from sfcheck.walk import section as section_pass

# The mutator works on its own uninstrumented copy of sfcheck: see common.plain_import.
mutator = common.plain_import("fuzz.mutator", __name__ == "__main__")

VMA = 0x400000
STACK = 0x7FFF0000
MAX_FRAMES = 12
PROBE_FDES = 3
MASK = (1 << 64) - 1
FAST_EVERY = 64  # one input in this many also takes the fast pass, compared with the reference
REFERENCE = sys.maxsize  # FAST_MIN that sends every FDE through the reference pass


def _stack(pcs: list[int], big_endian: bool) -> SparseMemory:
    """256 bytes of stack whose words alternate return addresses and stack addresses,
    so walks take several steps through the section's own functions."""
    words = _STACK_WORDS.copy()
    if pcs:
        words[1::2] = [(pcs[k % len(pcs)] + 1) & MASK for k in range(16)]
    return SparseMemory({STACK: struct.pack((">" if big_endian else "<") + "32Q", *words)})


_STACK_WORDS = [STACK + 16 * (k + 1) for k in range(32)]


def _check(data: bytes, fast_min: int) -> FileResult:
    """check_section_bytes with the fast pass taken from `fast_min` FDEs on."""
    old = section_pass.FAST_MIN
    section_pass.FAST_MIN = fast_min
    try:
        return check_section_bytes(data, vma=VMA)
    finally:
        section_pass.FAST_MIN = old


def check_clean(data: bytes) -> bool:
    """Run every rule; True when the section has no error finding."""
    result = _check(data, REFERENCE)
    if zlib.crc32(data) % FAST_EVERY == 0:
        fast = _check(data, 0)
        assert fast.findings == result.findings, "the fast pass's findings differ"
        assert fast.sections == result.sections, "the fast pass's section summary differs"
    return result.error is None and not any(
        f.severity >= Severity.ERROR for f in result.findings)


def test_one_input(data: bytes) -> None:
    # The project's own error types may escape; anything else is a finding.
    with contextlib.suppress(SfcheckError):
        _one(data)


def _one(data: bytes) -> None:
    clean = bool(data) and check_clean(data)  # empty: a warning, and nothing to read
    try:
        lines = sum(1 for _ in dump_text(data, VMA))
    except DecodeError as exc:
        if clean:
            raise AssertionError(f"clean section, but the dumper stops: {exc}") from None
        lines = 0
    assert lines >= 0
    if clean:
        try:
            again = encode(decode(data))
        except DecodeError as exc:
            raise AssertionError(f"clean section that does not decode: {exc}") from None
        except EncodeError as exc:
            raise AssertionError(f"clean section that does not re-encode: {exc}") from None
        assert again == data, "clean section does not round-trip through encode(decode())"
    _unwind(data, clean)


def _probe_pcs(table: SFrameTable) -> tuple[list[int], bool]:
    """PCs in the first few functions (start, last row, last byte) and the byte order.
    The FDEs come from the table's own cache, so the walks do not decode them again."""
    h = table.header
    if h is None:
        return [VMA, VMA + 1], False
    pcs: list[int] = []
    for i in range(min(PROBE_FDES, h.num_fdes)):
        try:
            fde = table.fde(i)
        except DecodeError:
            break
        start = h.func_start(i, fde.start, VMA) & MASK
        pcs.append(start)
        if fde.fres:
            pcs.append((start + fde.fres[-1].start) & MASK)
        if fde.size:
            pcs.append((start + fde.size - 1) & MASK)
    return pcs or [VMA], h.big_endian


def _unwind(data: bytes, clean: bool) -> None:
    table = SFrameTable(data, vma=VMA, text_ranges=TEXT)
    pcs, big = _probe_pcs(table)
    unwinder = Unwinder([table], _stack(pcs, big), max_frames=MAX_FRAMES)
    for pc in pcs[:4]:
        walk = unwinder.walk(Registers(pc, STACK, STACK + 64, ra=pc + 1)).run()
        stop = walk.stop
        assert stop is not None
        assert 1 <= len(walk.frames) <= MAX_FRAMES, "walk exceeded its frame cap"
        sps = [f.sp for f in walk.frames]
        assert all(b >= a for a, b in zip(sps, sps[1:], strict=False)), "SP moved down"
        if clean and stop.reason is StopReason.MALFORMED:
            raise AssertionError(f"clean section, but the unwinder stops on malformed data: "
                                 f"{stop.detail}")


TEXT = [(VMA - 0x10000, VMA + 0x100000)]


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    return mutator.mutate(data, max_size, seed)

if __name__ == "__main__":
    common.run("section", test_one_input, custom_mutator)
