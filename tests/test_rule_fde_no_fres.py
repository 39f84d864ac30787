"""fde-no-fres: an FDE without FREs, read by what its version says it means."""

from __future__ import annotations

import pytest

from sfcheck.checker import Options, check_elf, check_section_bytes
from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.result import Severity

from helpers import CORPUS


def _section(version: int, info2: int = 0, abi: int = C.ABI_AMD64_LE) -> bytes:
    fres = (make_fre(0, [8]), make_fre(1, [16]))
    fdes = [FDE(start=0x100, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1), fres=fres),
            FDE(start=0x140, size=0x20, info=fde_info(C.FRE_TYPE_ADDR1), fres=(),
                info2=info2),
            FDE(start=0x160, size=0x40, info=fde_info(C.FRE_TYPE_ADDR1), fres=fres)]
    return encode(build_section(version, abi, fdes))


def _no_fres(data: bytes, profile: str = "strict") -> list:
    res = check_section_bytes(data, options=Options(profile=profile))
    return [f for f in res.findings if f.rule == "fde-no-fres"]


@pytest.mark.parametrize("version", [1, 2])
def test_v1_v2_warn(version: int) -> None:
    got = _no_fres(_section(version))
    assert [(f.severity, f.location.fde) for f in got] == [(Severity.WARNING, 1)]
    assert "no meaning" in got[0].message


def test_v3_default_is_an_outermost_frame() -> None:
    got = _no_fres(_section(3))
    assert [(f.severity, f.location.fde) for f in got] == [(Severity.INFO, 1)]
    assert "outermost" in got[0].message


def test_v3_flex_warns() -> None:
    got = _no_fres(_section(3, info2=C.FDE_TYPE_FLEX))
    assert [(f.severity, f.location.fde) for f in got] == [(Severity.WARNING, 1)]


def test_only_the_empty_fde() -> None:
    """The other FDEs have rows: nothing else fires on this section (v3 is clean)."""
    res = check_section_bytes(_section(3))
    assert {f.rule for f in res.findings} == {"fde-no-fres"}


def test_real_gas_246_output_is_not_an_error() -> None:
    """gas 2.46 emits v3 DEFAULT FDEs without FREs (outermost frames such as _start):
    info, never a warning or an error."""
    path = CORPUS / "v3" / "exe_static_O0"
    if not path.exists():
        pytest.skip(f"{path} not in this checkout")
    got = [f for f in check_elf(str(path)).findings if f.rule == "fde-no-fres"]
    assert got and {f.severity for f in got} == {Severity.INFO}
