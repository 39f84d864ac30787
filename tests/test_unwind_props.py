"""Property tests: the unwinder terminates with a documented reason on any input."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.format import constants as C
from sfcheck.format import make_fre
from sfcheck.unwind import Registers, SFrameTable, SparseMemory, StopReason, TableSet, Unwinder

from unwind_build import SECTION_VMA, Func, chain, section_bytes

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
TEXT = 0x1000
STACK = 0x8000
STACK_SIZE = 0x400


def _ctl(reg: int | None, deref: bool) -> int:
    return ((reg or 0) << 3) | (2 if deref else 0) | (1 if reg is not None else 0)


@st.composite
def _words(draw: st.DrawFn, flex: bool, abi: int) -> tuple[int, ...]:
    """Data words biased towards plausible rules (so walks go deep), with some junk."""
    slot = st.sampled_from([-8, -16, -24, -32]) | st.integers(-64, 64)
    if flex:
        if draw(st.integers(0, 9)) == 0:
            n = draw(st.sampled_from([0, 2, 3, 4, 5, 6]))
            return tuple(draw(st.lists(st.integers(-64, 64), min_size=n, max_size=n)))
        sp, fp = (7, 6) if abi == C.ABI_AMD64_LE else ((31, 29) if abi in (1, 2) else (15, 11))
        cfa = (_ctl(draw(st.sampled_from([sp, sp, fp, 3])), draw(st.integers(0, 5)) == 0),
               draw(st.sampled_from([8, 16, 24, 32])))
        ra = draw(st.sampled_from([(), (0,), (_ctl(None, True), draw(slot))]))
        fp_rule = () if ra == (0,) and draw(st.booleans()) else \
            draw(st.sampled_from([(), (_ctl(None, True), draw(slot))]))
        if ra == (0,) and not fp_rule:
            ra = ()
        return cfa + ra + fp_rule
    n = draw(st.integers(0, 3))
    if draw(st.integers(0, 9)) == 0:
        return tuple(draw(st.lists(st.integers(-48, 48), min_size=n, max_size=n)))
    cfa = draw(st.sampled_from([8, 16, 24, 32]))
    if abi == C.ABI_S390X_BE:
        cfa = C.s390x_cfa_encode(cfa + 160)
    return (cfa, *draw(st.lists(slot, min_size=max(0, n - 1), max_size=max(0, n - 1))))


@st.composite
def funcs(draw: st.DrawFn, version: int, abi: int) -> list[Func]:
    out = []
    addr = TEXT
    for _ in range(draw(st.integers(1, 5))):
        size = draw(st.integers(1, 0x80))
        flex = version == 3 and draw(st.integers(0, 3)) == 0
        pcmask = not flex and draw(st.integers(0, 5)) == 0
        starts = {0} if draw(st.integers(0, 7)) else set()
        starts |= draw(st.sets(st.integers(0, size - 1), max_size=3))
        fres = [make_fre(s, draw(_words(flex, abi)), base_sp=draw(st.integers(0, 3)) > 0,
                         mangled_ra=draw(st.integers(0, 7)) == 0) for s in sorted(starts)]
        out.append(Func(addr, size, fres, pcmask=pcmask, rep_size=draw(st.integers(0, 20)),
                        flex=flex, signal=version == 3 and draw(st.integers(0, 9)) == 0))
        addr += size + draw(st.integers(0, 8))  # gaps between functions
    return out


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[bytes, SparseMemory, Registers, int]:
    version = draw(st.sampled_from([1, 2, 3]))
    abi = draw(st.sampled_from([1, 2, 3] if version == 1 else [1, 2, 3, 4]))
    fs = draw(funcs(version, abi))
    order = draw(st.permutations(list(range(len(fs)))))
    data = section_bytes(version, abi, fs, order=order, sorted_flag=True)
    if draw(st.integers(0, 3)) == 0:  # damage some bytes
        buf = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            buf[draw(st.integers(0, len(buf) - 1))] = draw(st.integers(0, 255))
        data = bytes(buf[:draw(st.integers(0, len(buf)))] if draw(st.booleans()) else buf)
    # The stack: words that mostly look like return addresses or stack addresses.
    mem = SparseMemory()
    text_end = max(f.addr + f.size for f in fs)
    word = st.one_of(st.integers(TEXT + 1, text_end), st.integers(TEXT + 1, text_end),
                     st.integers(STACK, STACK + STACK_SIZE).map(lambda a: a & ~7),
                     st.integers(0, (1 << 64) - 1))
    order_ = "big" if abi in (1, 4) else "little"
    for off in range(0, STACK_SIZE, 8):
        mem.add(STACK + off, draw(word).to_bytes(8, order_))
    sp = draw(st.integers(STACK, STACK + STACK_SIZE // 2)) & ~7
    regs = Registers(draw(st.integers(TEXT, text_end + 4)), sp,
                     draw(st.integers(sp, STACK + STACK_SIZE)) & ~7,
                     ra=draw(st.none() | st.integers(TEXT + 1, text_end)),
                     others={3: draw(st.integers(STACK, STACK + STACK_SIZE))})
    return data, mem, regs, draw(st.integers(1, 40))


@SETTINGS
@given(scenarios())
def test_any_input_stops_cleanly_within_the_cap(case: tuple[bytes, SparseMemory, Registers,
                                                            int]) -> None:
    data, mem, regs, cap = case
    tab = SFrameTable(data, vma=SECTION_VMA, text_ranges=[(TEXT, TEXT + 0x400)])
    walk = Unwinder([tab], mem, max_frames=cap).walk(regs).run()
    assert walk.stop is not None and isinstance(walk.stop.reason, StopReason)
    assert 1 <= len(walk.frames) <= cap
    assert walk.stop.reason is not StopReason.FRAME_CAP or len(walk.frames) == cap
    # Progress: after the innermost frame, SP strictly increases.
    sps = [f.sp for f in walk.frames]
    assert all(b > a for a, b in zip(sps[1:], sps[2:], strict=False))
    assert all(b >= a for a, b in zip(sps, sps[1:], strict=False))
    if walk.stop.reason is StopReason.MALFORMED:
        assert walk.stop.detail


@SETTINGS
@given(st.binary(max_size=200), st.integers(0, 0x200))
def test_random_bytes_as_a_section(data: bytes, pc_off: int) -> None:
    tab = SFrameTable(b"\xe2\xde" + data, vma=0, text_ranges=[(0, 0x10000)])
    frames, stop = Unwinder([tab], SparseMemory({STACK: bytes(64)}), max_frames=8).unwind(
        Registers(pc_off, STACK, STACK))
    assert 1 <= len(frames) <= 8 and isinstance(stop.reason, StopReason)


@SETTINGS
@given(depth=st.integers(1, 12), back=st.data(), via_fp=st.booleans())
def test_cyclic_stack_stops_with_cfa_not_moving_up(depth: int, back: st.DataObject,
                                                    via_fp: bool) -> None:
    """`depth` good frames, then a frame whose saved state leads back to frame j <= itself."""
    tab, mem, regs, expected = chain(depth + 1, outermost=False)
    j = back.draw(st.integers(0, depth), label="cycle target")
    _, sp_j = expected[j]
    _, sp_last = expected[depth]
    # Overwrite the last frame's saved RA to re-enter function 0, whose FRE is CFA = SP+16:
    # by itself that still moves up; make the CFA lead back down instead.
    if via_fp:
        # An FP-based CFA in the last function, with the saved FP pointing at frame j.
        f_last = Func(0x400000 + depth * 0x40, 0x40, [make_fre(0, (16, -16), base_sp=False)])
        fs = [Func(0x400000 + k * 0x40, 0x40, [make_fre(0, (8,)), make_fre(1, (16, -16))])
              for k in range(depth)] + [f_last]
        tab = SFrameTable(section_bytes(2, C.ABI_AMD64_LE, fs), vma=SECTION_VMA)
        # The frame before the last saved FP := sp_j - 16, so the last CFA = sp_j <= sp.
        mem.add(sp_last - 16, (sp_j - 16).to_bytes(8, "little"))
    else:
        # A CFA rule of SP+0 in the last function: the CFA equals SP.
        f_last = Func(0x400000 + depth * 0x40, 0x40, [make_fre(0, (0,))])
        fs = [Func(0x400000 + k * 0x40, 0x40, [make_fre(0, (8,)), make_fre(1, (16, -16))])
              for k in range(depth)] + [f_last]
        tab = SFrameTable(section_bytes(2, C.ABI_AMD64_LE, fs), vma=SECTION_VMA)
    frames, stop = Unwinder([tab], mem).unwind(regs)
    assert stop.reason is StopReason.CFA_NOT_UP
    assert [(f.pc, f.sp) for f in frames] == expected[:depth + 1]


@SETTINGS
@given(n=st.integers(1, 6), cut=st.integers(1, 15))
def test_reads_just_past_memory_end(n: int, cut: int) -> None:
    """Truncate the stack memory anywhere inside the last saved RA: "unreadable memory"."""
    tab, mem, regs, expected = chain(n + 1)
    ranges = mem.ranges()
    lo = ranges[0][0]
    # The RA of frame n-1 (0-based) lives at its CFA - 8 = expected[n][1] - 8.
    ra_slot = expected[n][1] - 8
    keep = ra_slot + 8 - min(cut, 8)
    blob = mem.read(lo, keep - lo)
    assert blob is not None
    frames, stop = Unwinder([tab], SparseMemory({lo: blob})).unwind(regs)
    assert stop.reason is StopReason.UNREADABLE
    assert [(f.pc, f.sp) for f in frames] == expected[:n]


@SETTINGS
@given(st.permutations(list(range(9))), st.sampled_from([1, 2, 3]), st.data())
def test_unsorted_table_claiming_sorted(order: list[int], version: int,
                                        data: st.DataObject) -> None:
    fs = [Func(TEXT + 0x20 * k, 0x18, [make_fre(0, (8 * (k + 1),))]) for k in range(9)]
    tab = SFrameTable(section_bytes(version, C.ABI_AMD64_LE, fs, order=order),
                      vma=SECTION_VMA)
    k = data.draw(st.integers(0, 8))
    off = data.draw(st.integers(0, 0x1F))
    row = tab.lookup(TEXT + 0x20 * k + off)
    if off < 0x18:
        assert getattr(row, "fde_index", None) == order.index(k)
        assert row.fre.words == (8 * (k + 1),)  # type: ignore[union-attr]
    else:
        assert getattr(row, "kind", None) == "no-fde"


def test_table_set_picks_the_section_by_text_range() -> None:
    a = SFrameTable(section_bytes(2, C.ABI_AMD64_LE, [Func(0x1000, 0x10, [make_fre(0, (8,))])]),
                    vma=SECTION_VMA, text_ranges=[(0x1000, 0x2000)], name="a")
    b = SFrameTable(section_bytes(2, C.ABI_AMD64_LE, [Func(0x3000, 0x10, [make_fre(0, (16,))])]),
                    vma=SECTION_VMA, text_ranges=[(0x3000, 0x4000)], name="b")
    ts = TableSet([b, a])
    assert ts.find(0x1000) is a and ts.find(0x3FFF) is b
    assert ts.find(0x2000) is None and ts.find(0xFFF) is None and ts.find(0x4000) is None
