"""The checker on hostile input: it never raises, its output is bounded, and its memory
stays proportional to the input, whatever the bytes say."""

from __future__ import annotations

import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.checker import Options, check_elf, check_section_bytes
from sfcheck.profiles import PROFILES
from sfcheck.rules import RULES
from sfcheck.walk.context import MAX_PER_RULE

from helpers import CORPUS
from strategies import mutated_sections

# Per section: at most MAX_PER_RULE findings per rule plus one "N more" line per rule.
BOUND = len(RULES) * (MAX_PER_RULE + 1)
SLOW = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _bounded(res) -> None:
    assert len(res.findings) <= BOUND * max(1, len(res.sections))
    assert all(f.rule in RULES for f in res.findings)


@SLOW
@given(st.binary(max_size=2048), st.sampled_from(sorted(PROFILES)))
def test_any_bytes_as_a_section(data: bytes, profile: str) -> None:
    _bounded(check_section_bytes(data, options=Options(profile=profile)))


@SLOW
@given(mutated_sections())
def test_mutated_sections(data: bytes) -> None:
    _bounded(check_section_bytes(data))


ELF = (CORPUS / "v2" / "exe_pie").read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_elf_headers_and_tables(data) -> None:
    """Damage in the ELF header, program headers or section header table."""
    raw = bytearray(ELF)
    shoff = int.from_bytes(raw[0x28:0x30], "little")
    regions = [(0, 0x40), (0x40, 0x40 + 13 * 56), (shoff, len(raw))]
    for _ in range(data.draw(st.integers(1, 6))):
        lo, hi = data.draw(st.sampled_from(regions))
        raw[data.draw(st.integers(lo, hi - 1))] = data.draw(st.integers(0, 255))
    res = check_elf(bytes(raw))
    if res.error is None:
        _bounded(res)
    else:
        assert res.error and "\n" not in res.error


def test_memory_does_not_follow_the_counts() -> None:
    """A 64-byte section claiming 2^32-1 FDEs and FREs costs kilobytes, not gigabytes."""
    from sfcheck.format import constants as C
    header = bytearray(28)
    header[0:2] = C.MAGIC_LE
    header[2], header[3], header[4] = 3, 0x05, C.ABI_AMD64_LE
    header[6] = 0xF8  # fixed RA -8
    header[8:12] = (0xFFFFFFFF).to_bytes(4, "little")  # num_fdes
    header[12:16] = (0xFFFFFFFF).to_bytes(4, "little")  # num_fres
    header[16:20] = (0xFFFFFFF0).to_bytes(4, "little")  # fre_len
    data = bytes(header) + bytes(range(36))
    tracemalloc.start()
    try:
        res = check_section_bytes(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.findings
    assert peak < 1 << 20
