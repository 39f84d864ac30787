"""The gas defect found in libgcrypt, reproduced with every gas the machine has.

libgcrypt's CFI_LEAVE macro writes `.cfi_adjust_cfa_offset -8; .cfi_def_cfa_register %rsp`
after `leave`. DWARF applies both (CFA = rsp+8 at the `ret`); gas 2.40 (v1), 2.44 (v2) and
2.47 (v3) keep the old offset in the SFrame row (rsp+16). The gate must report exactly that,
as an error, under strict and the kernel profile, and nothing else as an error; the same
function written with `.cfi_def_cfa %rsp, 8` must pass.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sfcheck.checker import Options, check_elf
from sfcheck.result import Severity

from helpers import ROOT

BODY = """\
\t.text
\t.globl\tf_leave
\t.type\tf_leave, @function
f_leave:
\t.cfi_startproc
\tpushq\t%rbp
\t.cfi_adjust_cfa_offset 8
\t.cfi_rel_offset %rbp, 0
\tmovq\t%rsp, %rbp
\t.cfi_def_cfa_register %rbp
\tsubq\t$32, %rsp
\tmovq\t%rdi, -8(%rbp)
\tleave
{epilogue}
\tret
\t.cfi_endproc
\t.size\tf_leave, .-f_leave
"""
CFI_LEAVE = "\t.cfi_adjust_cfa_offset -8\n\t.cfi_def_cfa_register %rsp"  # libgcrypt's macro
PLAIN = "\t.cfi_def_cfa %rsp, 8"
RET = 0x100D  # the `ret`: 13 bytes into f_leave, which ld puts at 0x1000

TOOLCHAINS = {  # SFrame version -> directory holding that binutils' as and ld
    1: Path("/usr/bin"),
    2: ROOT / ".toolchains" / "bin-trixie",
    3: ROOT / ".toolchains" / "bin-sid",
}


def _build(tmp: Path, version: int, epilogue: str) -> Path:
    tools = TOOLCHAINS[version]
    if not (tools / "as").exists() or not (tools / "ld").exists():
        pytest.skip(f"no binutils for SFrame v{version} at {tools} (bash corpus/get-toolchains.sh)")
    src, obj, lib = tmp / "f.s", tmp / "f.o", tmp / "libf.so"
    src.write_text(BODY.format(epilogue=epilogue))
    for argv in ([tools / "as", "--gsframe", "-o", obj, src],
                 [tools / "ld", "-shared", "-o", lib, obj]):
        subprocess.run([str(a) for a in argv], check=True, capture_output=True)
    return lib


def _errors(lib: Path, profile: str) -> list:
    res = check_elf(lib, options=Options(profile=profile))
    assert res.error is None
    return [f for f in res.findings if f.severity == Severity.ERROR]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_cfi_leave_is_the_one_error(tmp_path: Path, version: int) -> None:
    lib = _build(tmp_path, version, CFI_LEAVE)
    profiles = ["strict"] + (["kernel"] if version == 3 else [])  # the kernel reads v3 only
    for profile in profiles:
        (err,) = _errors(lib, profile)
        assert err.rule == "semantic-cfa-mismatch", (profile, err)
        assert err.location.pc == 0x1000
        assert f"[{RET:#x}, {RET + 1:#x})" in err.message
        assert "SFrame rsp+16, .eh_frame rsp+8" in err.message


@pytest.mark.parametrize("version", [1, 2, 3])
def test_same_function_with_def_cfa_passes(tmp_path: Path, version: int) -> None:
    lib = _build(tmp_path, version, PLAIN)
    assert _errors(lib, "strict") == []
