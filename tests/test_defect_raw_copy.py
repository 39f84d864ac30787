"""defect.check_raw_copy reads the FDE start fields column-wise (format.fde_table) instead
of decoding up to 4,096 FDE records one by one: the same finding (or none), with the same
counts, as the per-FDE reading, on corpus sections with damaged records and flags and
symbols placed at the stored or the field-relative starts."""

from __future__ import annotations

import random
from types import SimpleNamespace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.elf.loader import load_elf
from sfcheck.elf.model import FuncSymbol
from sfcheck.errors import DecodeError
from sfcheck.format.decode import Decoder, decode_header
from sfcheck.rules.defect import check_raw_copy
from sfcheck.walk.context import SectionContext

from helpers import CORPUS

SECTIONS = [(s.vma, s.data) for p in sorted(CORPUS.rglob("*"))
            if p.is_file() and "src" not in p.parts and p.read_bytes()[:4] == b"\x7fELF"
            for s in load_elf(p.read_bytes(), str(p)).sections if len(s.data) > 28]

def reference(data: bytes, h, vma: int, starts: set[int]) -> tuple[int, int, int] | None:
    """(as stored, as field-relative, FDEs looked at), one FDE record at a time."""
    try:
        dec = Decoder(data)
        fdes = [dec.fde(i, with_fres=False).start for i in range(min(h.num_fdes, 4096))]
    except DecodeError:
        return None
    return (sum(h.func_start(i, f, vma, field_relative=False) in starts
                for i, f in enumerate(fdes)),
            sum(h.func_start(i, f, vma, field_relative=True) in starts
                for i, f in enumerate(fdes)), len(fdes))

@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pick=st.integers(0, 10_000), seed=st.integers(0, 2**32 - 1),
       flips=st.integers(0, 4), field=st.booleans())
def test_same_as_decoding_each_record(pick: int, seed: int, flips: int, field: bool) -> None:
    vma, data = SECTIONS[pick % len(SECTIONS)]
    raw = bytearray(data)
    rng = random.Random(seed)
    raw[3] &= ~0x4  # no PCREL flag: the check applies
    for _ in range(flips):
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    data = bytes(raw)
    try:
        h = decode_header(data)
    except DecodeError:
        return
    if h.pcrel or not h.num_fdes:
        return
    # Symbols where the section's starts point, read one way or the other.
    first = reference(data, h, vma, set())
    syms: list[FuncSymbol] = []
    if first is not None:
        dec = Decoder(data)
        for i in range(min(h.num_fdes, 4096)):
            if rng.random() < 0.8:
                pc = h.func_start(i, dec.fde(i, with_fres=False).start, vma,
                                  field_relative=field)
                syms.append(FuncSymbol(pc, 1, f"f{i}"))
    starts = {s.addr for s in syms}
    want = reference(data, h, vma, starts)
    info = SimpleNamespace(e_type="ET_DYN", cfi=SimpleNamespace(symbols=tuple(syms)))
    ctx = SectionContext("f", ".sframe", vma, data)
    got = check_raw_copy(ctx, h, info)  # type: ignore[arg-type]
    fired = (want is not None and want[1] >= max(1, want[2] // 2) and want[1] > want[0]
             and bool(starts))
    assert got == fired
    if fired:
        assert want is not None
        assert f"({want[1]} of {want[2]} FDEs, {want[0]} as stored)" in ctx.findings[0].message

def test_fires_on_field_relative_starts() -> None:
    """Else the comparison above only ever compares two "no"s."""
    fired = 0
    for vma, data in SECTIONS:
        raw = bytearray(data)
        raw[3] &= ~0x4
        h = decode_header(bytes(raw))
        if not h.num_fdes:
            continue
        dec = Decoder(bytes(raw))
        syms = tuple(FuncSymbol(h.func_start(i, dec.fde(i, with_fres=False).start, vma,
                                             field_relative=True), 1, "f")
                     for i in range(h.num_fdes))
        info = SimpleNamespace(e_type="ET_DYN", cfi=SimpleNamespace(symbols=syms))
        fired += check_raw_copy(SectionContext("f", ".sframe", vma, bytes(raw)), h,
                                info)  # type: ignore[arg-type]
    assert fired > 10
