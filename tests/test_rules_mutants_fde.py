"""rules/fde.check_fde's findings whole (rule, severity, message and the FDE's location), each
at the value that fires it and the nearest that does not: FRE types past ADDR4, reserved info
bits per version, v3's info2 and FDE types, v2's padding, rep_size with and without PCMASK (v1
has none), pauth key B off aarch64, the FRE type against the function size at each step, and
FDEs without FREs per version and type (the mutation run's survivors: only rule IDs were
asserted)."""

from __future__ import annotations

import pytest

from sfcheck.format import constants as C
from sfcheck.format.model import FDE, Header
from sfcheck.result import Severity
from sfcheck.rules.fde import check_fde
from sfcheck.walk.context import SectionContext

LOC = {"fde": 2, "pc": 0x1000, "offset": 0x50}
ADDR1, ADDR2, ADDR4, PCMASK, KEY_B = 0, 1, 2, 0x10, 0x20
ERR, WARN, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


def findings(version: int = C.VERSION_3, abi: int = C.ABI_AMD64_LE, **fields) -> list[tuple]:
    h = Header(version, 0, abi, 0, -8 if abi == C.ABI_AMD64_LE else 0, 1, 1, 0, 0, 0,
               abi in (C.ABI_AARCH64_BE, C.ABI_S390X_BE))
    fde = FDE(**{"start": 0, "size": 0x40, "info": ADDR1, "num_fres": 1, **fields})
    ctx = SectionContext("f", ".sframe", 0, b"")
    check_fde(ctx, h, fde, dict(LOC))
    return [(f.rule, f.severity, f.message, f.location.offset, f.location.fde, f.location.pc)
            for f in ctx.findings]


def at(rule: str, severity: Severity, message: str) -> tuple:
    return (rule, severity, message, LOC["offset"], LOC["fde"], LOC["pc"])


@pytest.mark.parametrize("version", [C.VERSION_1, C.VERSION_2, C.VERSION_3])
def test_a_clean_fde(version: int) -> None:
    assert findings(version) == []


@pytest.mark.parametrize(("info", "found"), [
    (3, [at("fde-fre-type", ERR, "FRE type 3")]),
    (0xF, [at("fde-fre-type", ERR, "FRE type 15")]),
])
def test_fre_types_past_addr4(info: int, found: list) -> None:
    assert findings(info=info) == found


@pytest.mark.parametrize(("version", "fields", "found"), [
    (C.VERSION_3, {"info": 0x40}, ["info 0x40, info2 0x00"]),
    (C.VERSION_3, {"info": 0x80}, []),                 # v3's signal-frame flag
    (C.VERSION_2, {"info": 0x80}, ["info 0x80"]),
    (C.VERSION_1, {"info": 0x40}, ["info 0x40"]),
    (C.VERSION_3, {"info2": 0x20}, ["info 0x00, info2 0x20"]),
    (C.VERSION_3, {"info2": 0x1F}, None),              # a type, not a reserved bit
    (C.VERSION_2, {"padding": 1}, ["info 0x00, padding 0x1"]),
    (C.VERSION_2, {"info": 0x40, "padding": 0x100}, ["info 0x40, padding 0x100"]),
])
def test_reserved_bits(version: int, fields: dict, found: list[str] | None) -> None:
    got = [f for f in findings(version, **fields) if f[0] == "fde-reserved-bits"]
    assert got == [at("fde-reserved-bits", ERR, m) for m in found or ()]


@pytest.mark.parametrize(("info2", "found"), [
    (C.FDE_TYPE_FLEX, []), (2, ["FDE type 2"]), (0x1F, ["FDE type 31"]),
])
def test_v3_fde_types(info2: int, found: list[str]) -> None:
    assert findings(info2=info2) == [at("fde-type-unknown", ERR, m) for m in found]


@pytest.mark.parametrize(("version", "info", "rep_size", "found"), [
    (C.VERSION_2, PCMASK, 0, [at("fde-pcmask-rep-size", ERR, "PCMASK FDE with rep_size 0")]),
    (C.VERSION_3, PCMASK, 0, [at("fde-pcmask-rep-size", ERR, "PCMASK FDE with rep_size 0")]),
    (C.VERSION_1, PCMASK, 0, []),                      # v1 has no rep_size field
    (C.VERSION_3, PCMASK, 1, []),
    (C.VERSION_2, ADDR1, 8, [at("fde-rep-size-unused", INFO, "rep_size 8 on a PCINC FDE")]),
    (C.VERSION_3, ADDR1, 1, [at("fde-rep-size-unused", INFO, "rep_size 1 on a PCINC FDE")]),
])
def test_rep_size(version: int, info: int, rep_size: int, found: list) -> None:
    assert findings(version, info=info, rep_size=rep_size) == found


@pytest.mark.parametrize(("abi", "found"), [
    (C.ABI_AMD64_LE, [at("fde-pauth-abi", WARN, "info 0x20 selects pauth key B")]),
    (C.ABI_S390X_BE, [at("fde-pauth-abi", WARN, "info 0x20 selects pauth key B")]),
    (C.ABI_AARCH64_LE, []), (C.ABI_AARCH64_BE, []),
])
def test_pauth_key_b_off_aarch64(abi: int, found: list) -> None:
    assert findings(abi=abi, info=KEY_B) == found


@pytest.mark.parametrize(("info", "size", "found"), [
    (ADDR1, 0x100, []),                                # PCs 0..0xff: ADDR1 reaches them
    (ADDR1, 0x101, [at("fde-fre-type-small", WARN, "ADDR1 cannot address a 257-byte function")]),
    (ADDR2, 0xFF,
     [at("fde-fre-type-size", INFO, "ADDR2 for a 255-byte function (ADDR1 holds it)")]),
    (ADDR2, 0x100, []),
    (ADDR2, 0x10000, []),
    (ADDR2, 0x10001,
     [at("fde-fre-type-small", WARN, "ADDR2 cannot address a 65537-byte function")]),
    (ADDR4, 0xFFFF,
     [at("fde-fre-type-size", INFO, "ADDR4 for a 65535-byte function (ADDR2 holds it)")]),
    (ADDR4, 0x10000, []),
    (ADDR4 | PCMASK, 0x10, []),                        # a PCMASK FDE's starts repeat
])
def test_the_fre_type_against_the_function_size(info: int, size: int, found: list) -> None:
    rep = {"rep_size": 0x10} if info & PCMASK else {}
    assert findings(C.VERSION_2, info=info, size=size, **rep) == found


@pytest.mark.parametrize(("version", "info2", "found"), [
    (C.VERSION_3, C.FDE_TYPE_DEFAULT, [at("fde-no-fres", INFO, "no FREs: in v3 this marks an "
                                          "outermost frame (RA undefined over the whole "
                                          "function)")]),
    (C.VERSION_3, C.FDE_TYPE_FLEX, [at("fde-no-fres", WARN, "no FREs in a v3 FDE of type 1: the "
                                       "spec gives only DEFAULT FDEs without FREs a meaning "
                                       "(outermost frame)")]),
    (C.VERSION_2, 0, [at("fde-no-fres", WARN, "no FREs: v2 gives that no meaning, so every "
                         "lookup in the function fails")]),
    (C.VERSION_1, 0, [at("fde-no-fres", WARN, "no FREs: v1 gives that no meaning, so every "
                         "lookup in the function fails")]),
])
def test_no_fres(version: int, info2: int, found: list) -> None:
    assert findings(version, info2=info2, num_fres=0) == found
