"""Consumer profiles on .o files (issue 13 item 2): runtime readers are asked what the
linker will make of the object, readers that read objects judge the object itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sfcheck.checker import Options, check_elf
from sfcheck.elf.loader import load_elf
from sfcheck.format.decode import decode_header
from sfcheck.profiles import PROFILES
from sfcheck.result import Severity
from sfcheck.rules.linkable import object_severity, runtime_only

from helpers import CORPUS, ROOT

OBJECTS = {1: CORPUS / "v1" / "lib.o", 2: CORPUS / "v2" / "lib.o", 3: CORPUS / "v3" / "lib.o"}
RUNTIME = [name for name, p in PROFILES.items() if runtime_only(p)]
DIRECT = [name for name, p in PROFILES.items() if p.consumer and not runtime_only(p)]


def _findings(path: Path | bytes, profile: str) -> dict[str, Severity]:
    res = check_elf(path, options=Options(profile=profile))
    assert res.error is None
    return {f.rule: f.severity for f in res.findings}


def test_runtime_profiles_are_the_kernel_and_glibc() -> None:
    assert {"kernel", "glibc-2.42"} <= set(RUNTIME)
    assert {"libsframe-2.46", "llvm-22"} <= set(DIRECT)


@pytest.mark.parametrize("profile", RUNTIME)
@pytest.mark.parametrize("version", sorted(OBJECTS))
def test_runtime_reader_never_errors_on_an_object(profile: str, version: int) -> None:
    got = _findings(OBJECTS[version], profile)
    assert "header-version-unsupported" not in got
    assert not any(s == Severity.ERROR for s in got.values())
    # ... but says what the linked output will be, when the reader does not take it.
    readable = version in PROFILES[profile].versions
    assert ("object-version-unsupported" in got) == (not readable)
    if not readable:
        assert got["object-version-unsupported"] == Severity.WARNING


@pytest.mark.parametrize("profile", RUNTIME)
def test_linked_files_keep_the_consumer_error(profile: str) -> None:
    """The same question on a linked file is the reader's own: still an error."""
    version = next(v for v in (1, 2, 3) if v not in PROFILES[profile].versions)
    linked = CORPUS / f"v{version}" / "libcorpus.so"
    got = _findings(linked, profile)
    assert got["header-version-unsupported"] == Severity.ERROR
    assert "object-version-unsupported" not in got


@pytest.mark.parametrize("profile", DIRECT)
def test_readers_of_objects_judge_the_object(profile: str) -> None:
    """llvm-readobj and objdump read .o files themselves: nothing is softened."""
    version = next(v for v in (1, 2, 3) if v not in PROFILES[profile].versions)
    got = _findings(OBJECTS[version], profile)
    assert got["header-version-unsupported"] == Severity.ERROR
    assert "object-version-unsupported" not in got


def test_empty_counts_object_is_normal_for_the_kernel(tmp_path: Path) -> None:
    """gas writes num_fdes = 0 when it skips every function (libgcrypt's
    sha256-avx2-bmi2-amd64.o): ld merges it into nothing, the kernel never sees it."""
    gas = ROOT / ".toolchains" / "bin-sid" / "as"
    if not gas.exists():
        pytest.skip("no binutils 2.47 gas: run corpus/get-toolchains.sh")
    src = tmp_path / "e.s"
    src.write_text("\t.text\n\t.globl f\nf:\n\t.cfi_startproc\n\tpush %rbp\n"
                   "\t.cfi_escape 0x16,0x10,0x01,0x00\n\tpop %rbp\n\tret\n\t.cfi_endproc\n")
    obj = tmp_path / "e.o"
    subprocess.run([str(gas), "--gsframe", "-o", str(obj), str(src)], check=True,
                   capture_output=True)
    h = decode_header(load_elf(obj).sections[0].data)
    assert h.version == 3 and h.num_fdes == 0 and h.num_fres == 0
    got = _findings(obj, "kernel")
    assert "header-empty-counts" not in got
    assert not any(s == Severity.ERROR for s in got.values())


def test_object_severities_keep_content_overrides_only() -> None:
    kernel = PROFILES["kernel"]
    # FDE/FRE contents are copied by ld as they are: the reader's verdict holds.
    assert object_severity(kernel, "fde-pcmask-rep-size", Severity.WARNING) \
        == kernel.severity("fde-pcmask-rep-size", Severity.WARNING) == Severity.ERROR
    # Header and layout are rewritten by ld: the strict severity, not the reader's.
    assert kernel.severity("layout-trailing-bytes", Severity.ERROR) == Severity.WARNING
    assert object_severity(kernel, "layout-trailing-bytes", Severity.ERROR) == Severity.ERROR
    assert kernel.severity("elf-not-sorted", Severity.ERROR) is None
    assert object_severity(kernel, "elf-not-sorted", Severity.ERROR) == Severity.ERROR
