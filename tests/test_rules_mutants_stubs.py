"""defect.check_stubs_only on hand-built ELF models: its answer and its finding whole, an FDE
at a .plt section's last byte and one past, one FDE and two, each way out (not linked, no
FDEs, no bytes, no section names, nothing but stubs) (the mutation run's survivors)."""

from __future__ import annotations

import pytest

from sfcheck.elf.model import ElfSFrameInfo, TextRange
from sfcheck.result import Severity
from sfcheck.rules.defect import check_stubs_only
from sfcheck.walk.context import SectionContext

PLT, PLT_SEC = TextRange(".plt", 0x1000, 0x1020), TextRange(".plt.sec", 0x1020, 0x1030)
TEXT, INIT = TextRange(".text", 0x1100, 0x1400), TextRange(".init", 0x1040, 0x1060)
ALL = (PLT, PLT_SEC, INIT, TEXT)


def run(ranges: list[tuple[int, int, int]], text: tuple[TextRange, ...] = ALL,
        e_type: str = "ET_DYN", data: bytes = b"\0" * 8
        ) -> tuple[bool, list[tuple[str, Severity, str]]]:
    inf = ElfSFrameInfo("lib.so", e_type, "EM_X86_64", 62, True, 64, (), (), (), text)
    ctx = SectionContext(inf.path, ".sframe", 0, data, ranges=ranges)
    fired = check_stubs_only(ctx, inf)
    return fired, [(f.rule, f.severity, f.message) for f in ctx.findings]


def stubs_only(message: str) -> tuple[bool, list[tuple[str, Severity, str]]]:
    return True, [("defect-ld-stubs-only", Severity.WARNING, message)]


def test_one_fde_on_the_last_plt_byte() -> None:
    # .text 0x300 + .init 0x20 bytes of code, names sorted
    assert run([(0x101F, 1, 0)]) == stubs_only(
        "the only FDE is for .plt, .plt.sec; 0x320 bytes of code (.init, .text) have none")


def test_two_fdes_are_counted() -> None:
    assert run([(0x1000, 0x10, 0), (0x1020, 0x10, 1)]) == stubs_only(
        "all 2 FDEs are for .plt, .plt.sec; 0x320 bytes of code (.init, .text) have none")


def test_an_fde_one_past_the_stubs_is_code() -> None:
    text = (PLT, TEXT)  # .plt ends at 0x1020, nothing after it until .text
    assert run([(0x1000, 0x10, 0), (0x1020, 1, 1)], text) == (False, [])
    assert run([(0x1000, 0x10, 0), (0x101F, 1, 1)], text) == stubs_only(
        "all 2 FDEs are for .plt; 0x300 bytes of code (.text) have none")


@pytest.mark.parametrize(("ranges", "text", "e_type", "data"), [
    ([(0x1000, 8, 0)], ALL, "ET_REL", b"\0"),          # an object: no PLT yet
    ([], ALL, "ET_DYN", b"\0"),                        # no FDE
    ([(0x1000, 8, 0)], ALL, "ET_DYN", b""),            # no bytes
    ([(0x1000, 8, 0)], (PLT, PLT_SEC), "ET_DYN", b"\0"),   # nothing but stubs
    ([(0x1100, 8, 0)], (TEXT,), "ET_DYN", b"\0"),      # no .plt section named
    ([(0x1100, 8, 0)], (), "ET_EXEC", b"\0"),          # no section names at all
])
def test_each_way_out_reports_nothing(ranges: list[tuple[int, int, int]],
                                      text: tuple[TextRange, ...], e_type: str,
                                      data: bytes) -> None:
    assert run(ranges, text, e_type, data) == (False, [])


def test_an_executable_is_checked_too() -> None:
    assert run([(0x1000, 8, 0)], (PLT, TEXT), "ET_EXEC") == stubs_only(
        "the only FDE is for .plt; 0x300 bytes of code (.text) have none")
