"""SectionContext's parts: the input is read-only, the pass state is what the properties
read and write, and the sink locates findings in the input."""

from __future__ import annotations

from array import array
from collections import Counter

import pytest

from sfcheck.rules import layout as layout_rules
from sfcheck.walk.context import FindingSink, PassState, Ranges, SectionContext, SectionInput


def test_input_fields_are_the_inputs_and_read_only() -> None:
    ctx = SectionContext("lib.so", ".sframe", 0x4000, b"\xe2\xde", relocatable=True)
    assert ctx.input == SectionInput("lib.so", ".sframe", 0x4000, b"\xe2\xde", True)
    assert (ctx.path, ctx.name, ctx.vma, ctx.data, ctx.relocatable) == (
        "lib.so", ".sframe", 0x4000, b"\xe2\xde", True)
    with pytest.raises(AttributeError):
        ctx.data = b""  # a check never replaces the bytes it was given


def test_state_fields_read_and_write_the_pass_state() -> None:
    ctx = SectionContext("x", ".sframe", 0, b"", ranges=[(5, 1, 0)])
    assert isinstance(ctx.pass_state, PassState)
    assert list(ctx.ranges) == [(5, 1, 0)]
    ctx.fres_walked = True
    ctx.block_ends = [9]
    ctx.ranges = []
    assert (ctx.pass_state.fres_walked, ctx.pass_state.block_ends, ctx.pass_state.ranges) == (
        True, [9], [])


def test_findings_are_located_in_the_input() -> None:
    ctx = SectionContext("lib.so", ".sframe.2", 0, b"")
    ctx.emit(layout_rules.EMPTY, "num_fdes is 0", offset=8)
    [f] = ctx.findings
    assert (f.location.path, f.location.section, f.location.offset) == ("lib.so", ".sframe.2", 8)


def test_severity_decided_once_per_rule_and_severity(monkeypatch) -> None:
    """A damaged section emits thousands of findings of a few rules: the sink decides each
    (rule, severity)'s reported severity once and reuses it."""
    ctx = SectionContext("x", ".sframe", 0, b"")
    calls = []
    real = FindingSink._decide

    def counting(self, rule, severity):
        calls.append((rule.id, severity))
        return real(self, rule, severity)

    monkeypatch.setattr(FindingSink, "_decide", counting)
    for k in range(3):
        ctx.emit(layout_rules.EMPTY, "num_fdes is 0", offset=k)
        ctx.emit(layout_rules.FRE_OVERLAP, "overlap", offset=k)
    assert calls == [("layout-no-fdes", layout_rules.EMPTY.severity),
                     ("layout-fre-overlap", layout_rules.FRE_OVERLAP.severity)]
    assert [f.location.offset for f in ctx.findings] == [0, 0, 1, 1, 2, 2]


def test_defaults_and_what_the_caller_hands_in() -> None:
    """The parts' defaults (a linked file's section, nothing walked yet), and what a caller
    hands in is used as given: a Ranges from an earlier walk is shared, not copied per
    profile (1M FDEs: 12 MB a copy), a findings list is the one appended to."""
    assert SectionInput("x", ".sframe", 0, b"").relocatable is False
    state = PassState()
    assert (list(state.ranges), state.fres_walked, state.block_ends) == ([], False, None)
    assert isinstance(state.ranges, Ranges)
    fresh = SectionContext("x", ".sframe", 0, b"")  # a profile's context: nothing walked
    assert (fresh.relocatable, fresh.fres_walked, fresh.block_ends) == (False, False, None)
    ranges = Ranges([(0x1000, 0x20, 0)])
    kept: list = []
    counts: Counter = Counter()
    decided: dict = {}
    ctx = SectionContext("x", ".sframe", 0, b"", findings=kept, ranges=ranges,
                         fres_walked=True, counts=counts, decided=decided,
                         claimed={"layout-fre-overlap"})
    assert ctx.ranges is ranges
    assert ctx.fres_walked is True
    ctx.emit(layout_rules.EMPTY, "num_fdes is 0", offset=8)
    ctx.emit(layout_rules.FRE_OVERLAP, "claimed by a known defect", offset=8)
    assert kept == ctx.findings and [f.rule for f in kept] == ["layout-no-fdes"]
    assert counts == Counter({"layout-no-fdes": 1})
    assert decided == {("layout-no-fdes", layout_rules.EMPTY.severity): layout_rules.EMPTY.severity,
                       ("layout-fre-overlap", layout_rules.FRE_OVERLAP.severity):
                       layout_rules.FRE_OVERLAP.severity}


def test_ranges_keep_64_bit_starts_in_an_array() -> None:
    """Ranges hold starts as signed 64-bit and sizes as 32-bit array items (CODES): a start
    above 2**32 stays in the array, as FDE numbers do once an FDE is skipped; only a value
    that fits neither turns its column into a list."""
    r = Ranges()
    r.add(1 << 40, 0x20, 0)
    r.add((1 << 40) + 0x40, 0x20, 2)  # FDE 1 skipped: entries are numbered from here on
    assert (type(r.pcs), type(r.sizes)) == (array, array)
    assert (r.pcs.typecode, r.sizes.typecode, r.fdes.typecode) == ("q", "I", "q")
    assert list(r) == [(1 << 40, 0x20, 0), ((1 << 40) + 0x40, 0x20, 2)]
    r.add(0, 1 << 40, 3)  # a hand-made size past 2**32
    assert type(r.sizes) is list and type(r.pcs) is array
    assert list(r)[-1] == (0, 1 << 40, 3)
