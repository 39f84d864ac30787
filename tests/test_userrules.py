"""The rules for what users trip on, on files built here: a C++ object with COMDAT groups
(lld and gold refuse to link it), .rela.sframe relocation types, a vDSO carrying .sframe,
SFrame versions mixed within one scan, and the .sframe/.eh_frame sizes."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import jsonschema
import pytest
from elftools.elf.elffile import ELFFile

from sfcheck.checker import check_elf
from sfcheck.cli import main
from sfcheck.elf.loader import load_elf
from sfcheck.report import json_report
from sfcheck.result import Finding, Severity
from sfcheck.rules import elf as E
from sfcheck.scan import ScanConfig, scan

from helpers import CORPUS, ROOT

TOOLCHAINS = {2: ROOT / ".toolchains" / "bin-trixie", 3: ROOT / ".toolchains" / "bin-sid"}
NEW_RULES = {E.COMDAT_RELOC.id, E.RELOC_TYPE.id, E.VDSO_SFRAME.id, E.MIXED_VERSIONS.id}

CXX_A = """template <typename T> T twice(T x) { return x + x; }
inline int helper(int x) { return x * 3; }
int use(int x) { return twice(x) + helper(x); }
"""
CXX_B = CXX_A.replace("use(", "use2(") + "int main() { return 0; }\n"
VDSO_C = """int __vdso_getcpu(unsigned *cpu) { if (cpu) *cpu = 0; return 0; }
long __vdso_time(long *t) { if (t) *t = 1; return 1; }
"""


def _tools(version: int) -> Path:
    tools = TOOLCHAINS[version]
    if not (tools / "as").exists() or not (tools / "ld").exists():
        pytest.skip(f"no binutils for SFrame v{version} at {tools} (bash corpus/get-toolchains.sh)")
    for cc in ("gcc", "g++"):
        if shutil.which(cc) is None:
            pytest.skip(f"{cc} not installed")
    return tools


def _run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True)


def _cxx_object(tmp: Path, version: int, name: str, source: str) -> Path:
    src, obj = tmp / f"{name}.cc", tmp / f"{name}.o"
    src.write_text(source)
    done = _run("g++", "-O1", "-fno-inline", "-ffunction-sections", "-B", f"{_tools(version)}/",
                "-Wa,--gsframe", "-c", src, "-o", obj)
    assert done.returncode == 0, done.stderr
    return obj


def _of(findings: list[Finding], rule: str) -> list[Finding]:
    return [f for f in findings if f.rule == rule]


# -- COMDAT groups --------------------------------------------------------------------------

@pytest.mark.parametrize("version", [2, 3])
def test_comdat_object_fires_naming_the_groups_and_linkers(tmp_path: Path, version: int) -> None:
    obj = _cxx_object(tmp_path, version, "a", CXX_A)
    res = check_elf(obj)
    (f,) = _of(res.findings, E.COMDAT_RELOC.id)
    assert f.severity == Severity.WARNING
    assert "_Z6helperi" in f.message and "_Z5twiceIiET_S0_" in f.message
    assert "2 relocations" in f.message and "lld and gold" in f.message
    assert f.location.offset == 0x1c  # the first FDE's start field: helper's


def test_gold_refuses_what_the_rule_names_and_gnu_ld_links_it(tmp_path: Path) -> None:
    """The claim the rule makes, run for real: gold stops, BFD ld drops the FDEs."""
    if shutil.which("ld.gold") is None:
        pytest.skip("gold not installed (apt-get install binutils-gold)")
    tools = _tools(2)
    a, b = _cxx_object(tmp_path, 2, "a", CXX_A), _cxx_object(tmp_path, 2, "b", CXX_B)
    gold = _run("g++", "-fuse-ld=gold", a, b, "-o", tmp_path / "gold.out")
    assert gold.returncode != 0 and "discarded section" in gold.stderr
    bfd = _run("g++", "-B", f"{tools}/", a, b, "-o", tmp_path / "bfd.out")
    assert bfd.returncode == 0, bfd.stderr
    assert not _of(check_elf(tmp_path / "bfd.out").findings, E.COMDAT_RELOC.id)


def test_c_object_without_groups_is_quiet(tmp_path: Path) -> None:
    tools = _tools(2)
    src, obj = tmp_path / "c.c", tmp_path / "c.o"
    src.write_text("int f(int x) { return x + 1; }\nint g(int x) { return f(x) * 2; }\n")
    done = _run("gcc", "-O1", "-ffunction-sections", "-B", f"{tools}/", "-Wa,--gsframe", "-c",
                src, "-o", obj)
    assert done.returncode == 0, done.stderr
    res = check_elf(obj)
    assert res.sections and not NEW_RULES & {f.rule for f in res.findings}


# -- relocation types -----------------------------------------------------------------------

def test_v3_x86_object_notes_zig_at_info(tmp_path: Path) -> None:
    obj = _cxx_object(tmp_path, 3, "a", CXX_A)
    (f,) = _of(check_elf(obj).findings, E.RELOC_TYPE.id)
    assert f.severity == Severity.INFO
    assert "3 relocations of type R_X86_64_PC64" in f.message and "zig" in f.message


def test_v2_object_has_no_relocation_finding(tmp_path: Path) -> None:
    obj = _cxx_object(tmp_path, 2, "a", CXX_A)
    assert not _of(check_elf(obj).findings, E.RELOC_TYPE.id)


def _patch_first_reloc(obj: Path, rtype: int | None = None, offset: int | None = None) -> None:
    """Rewrite the first .rela.sframe entry's type or r_offset in place."""
    data = bytearray(obj.read_bytes())
    with obj.open("rb") as fh:
        sec = ELFFile(fh).get_section_by_name(".rela.sframe")
        at = sec["sh_offset"]
    r_offset, r_info = struct.unpack_from("<QQ", data, at)
    if rtype is not None:
        r_info = (r_info >> 32) << 32 | rtype
    struct.pack_into("<QQ", data, at, r_offset if offset is None else offset, r_info)
    obj.write_bytes(bytes(data))


def test_absolute_type_in_v2_warns_naming_what_ld_reads(tmp_path: Path) -> None:
    obj = _cxx_object(tmp_path, 2, "a", CXX_A)
    _patch_first_reloc(obj, rtype=10)  # R_X86_64_32 where gas writes R_X86_64_PC32
    (f,) = _of(check_elf(obj).findings, E.RELOC_TYPE.id)
    assert f.severity == Severity.WARNING
    assert "1 relocation of type R_X86_64_32 " in f.message
    assert "GNU ld reads R_X86_64_PC32" in f.message and f.location.offset == 0x1c


def test_relocation_off_the_start_fields_warns(tmp_path: Path) -> None:
    obj = _cxx_object(tmp_path, 2, "a", CXX_A)
    _patch_first_reloc(obj, offset=0x20)  # inside FDE 0, not its start field
    (f,) = _of(check_elf(obj).findings, E.RELOC_TYPE.id)
    assert "not on an FDE start field" in f.message and f.location.offset == 0x20


def test_pc32_in_a_v3_section_warns(tmp_path: Path) -> None:
    obj = _cxx_object(tmp_path, 3, "a", CXX_A)
    _patch_first_reloc(obj, rtype=2)  # R_X86_64_PC32 on v3's 64-bit start field
    findings = _of(check_elf(obj).findings, E.RELOC_TYPE.id)
    assert [f.severity for f in findings] == [Severity.WARNING]  # no zig note beside it
    assert "R_X86_64_PC32" in findings[0].message and "reads R_X86_64_PC64" in findings[0].message


# -- vDSO -----------------------------------------------------------------------------------

def _shared(tmp: Path, version: int, name: str, script: str, *ld: str) -> Path:
    src, lds, out = tmp / "v.c", tmp / f"{name}.map", tmp / f"{name}.so"
    src.write_text(VDSO_C)
    lds.write_text(script)
    done = _run("gcc", "-O2", "-fPIC", "-shared", "-nostdlib", "-B", f"{_tools(version)}/",
                "-Wa,--gsframe", f"-Wl,--version-script={lds}", *ld, src, "-o", out)
    assert done.returncode == 0, done.stderr
    return out


LINUX_26 = "LINUX_2.6 { global: __vdso_getcpu; __vdso_time; local: *; };\n"


def test_vdso_with_v2_sframe_warns(tmp_path: Path) -> None:
    so = _shared(tmp_path, 2, "vdso", LINUX_26, "-Wl,-soname,linux-vdso.so.1")
    (f,) = _of(check_elf(so).findings, E.VDSO_SFRAME.id)
    assert f.severity == Severity.WARNING
    assert "soname linux-vdso.so.1" in f.message and "v2" in f.message


def test_vdso_by_its_versions_with_v3_and_segment_is_info(tmp_path: Path) -> None:
    so = _shared(tmp_path, 3, "vdso", LINUX_26)  # no soname: found by LINUX_2.6
    (f,) = _of(check_elf(so).findings, E.VDSO_SFRAME.id)
    assert f.severity == Severity.INFO and "LINUX_* versions" in f.message


def test_ordinary_library_is_no_vdso(tmp_path: Path) -> None:
    so = _shared(tmp_path, 2, "libx", "LIBX_1.0 { global: __vdso_time; local: *; };\n",
                 "-Wl,-soname,libx.so.1")
    res = check_elf(so)
    assert res.sections and not _of(res.findings, E.VDSO_SFRAME.id)


# -- mixed versions, sizes ------------------------------------------------------------------

V2_LIB, V3_LIB = CORPUS / "v2" / "lib.o", CORPUS / "v3" / "lib.o"


def test_mixed_versions_is_one_scan_finding(tmp_path: Path) -> None:
    shutil.copy(V2_LIB, tmp_path / "a.o")
    shutil.copy(V3_LIB, tmp_path / "b.o")
    result = scan([str(tmp_path)])
    (f,) = result.findings
    assert f.rule == E.MIXED_VERSIONS.id and f.severity == Severity.WARNING
    assert "v2 in 1 file" in f.message and "v3 in 1 file" in f.message
    assert f.location.path == ""
    assert all(f.rule != E.MIXED_VERSIONS.id for r in result.files for f in r.findings)
    assert not scan([str(V3_LIB), str(CORPUS / "v3" / "drap.o")]).findings


def test_mixed_versions_off_with_its_rule(tmp_path: Path) -> None:
    from sfcheck.checker import Options

    config = ScanConfig(Options(disable={E.MIXED_VERSIONS.id}))
    assert not scan([str(V2_LIB), str(V3_LIB)], config).findings


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit", "github", "gitlab"])
def test_every_format_shows_the_scan_finding(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "out"
    status = main(["check", "-j", "1", "--format", fmt, "-o", str(out), str(V2_LIB),
                   str(V3_LIB)])
    assert status == 0  # a warning: below the default --fail-on error
    text = out.read_text()
    assert E.MIXED_VERSIONS.id in text and "v2 in 1 file" in text
    if fmt == "text":
        assert f"sfcheck: warning: [{E.MIXED_VERSIONS.id}] SFrame v2 in 1 file" in text
    if fmt == "json":
        doc = json.loads(text)
        jsonschema.validate(doc, json_report.schema(), cls=jsonschema.Draft202012Validator)
        assert [f["rule"] for f in doc["findings"]] == [E.MIXED_VERSIONS.id]
        assert doc["summary"]["findings"]["warning"] >= 1
    if fmt == "sarif":  # code scanning refuses a result without a location
        (scan_result,) = [r for r in json.loads(text)["runs"][0]["results"]
                          if r["ruleId"] == E.MIXED_VERSIONS.id]
        art = scan_result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert art["uri"].endswith("corpus/v2/lib.o")


def test_scan_finding_counts_for_fail_on() -> None:
    only = ["--enable", E.MIXED_VERSIONS.id]
    for group in ("header", "layout", "fde", "fre", "elf", "semantic", "defect"):
        only += ["--disable", group]
    gate = ["check", "-q", "-j", "1", "--fail-on", "warning", *only]
    assert main([*gate, str(V2_LIB), str(V3_LIB)]) == 1
    assert main([*gate, str(V3_LIB)]) == 0
    assert main(["check", "-q", "-j", "1", *only, str(V2_LIB), str(V3_LIB)]) == 0


def _eh_frame_size(path: Path) -> int:
    with path.open("rb") as fh:
        return ELFFile(fh).get_section_by_name(".eh_frame")["sh_size"]


def test_sizes_per_file_and_in_the_summary(tmp_path: Path) -> None:
    lib = CORPUS / "v3" / "libcorpus.so"
    res = check_elf(lib)
    assert res.eh_frame_size == _eh_frame_size(lib)
    out = tmp_path / "r.json"
    main(["check", "-q", "--format", "json", "-o", str(out), str(lib), str(V3_LIB)])
    doc = json.loads(out.read_text())
    want_sf = sum(s["size"] for f in doc["files"] for s in f["sections"])
    want_eh = _eh_frame_size(lib) + _eh_frame_size(V3_LIB)
    assert [f["eh_frame_size"] for f in doc["files"]] == [_eh_frame_size(lib),
                                                            _eh_frame_size(V3_LIB)]
    summary = doc["summary"]
    assert (summary["sframe_bytes"], summary["eh_frame_bytes"]) == (want_sf, want_eh)
    assert summary["sframe_to_eh_frame"] == round(want_sf / want_eh, 4)
    text = tmp_path / "r.txt"
    main(["check", "-q", "-o", str(text), str(lib), str(V3_LIB)])
    assert f"(.sframe/.eh_frame {want_sf / want_eh:.2f})" in text.read_text()


def test_file_without_sframe_has_no_size_figure(tmp_path: Path) -> None:
    """The .eh_frame figure is for weighing .sframe: a file without SFrame has none."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    src, obj = tmp_path / "n.c", tmp_path / "n.o"
    src.write_text("int f(int x) { return x + 1; }\n")
    assert _run("gcc", "-O1", "-c", src, "-o", obj).returncode == 0
    assert _eh_frame_size(obj) > 0
    res = check_elf(obj)
    assert not res.sections and res.eh_frame_size is None


# -- the corpus -----------------------------------------------------------------------------

def _corpus_elves() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.read_bytes()[:4] ==
                  b"\x7fELF")


def test_corpus_shows_none_of_the_problems_it_lacks() -> None:
    """Nothing in corpus/ was built with COMDAT groups or as a vDSO, none has a relocation
    type GNU ld misreads: only v3 x86-64 objects (R_X86_64_PC64, zig's gap) get a note."""
    seen = []
    for path in _corpus_elves():
        res = check_elf(path)
        for f in res.findings:
            if f.rule in NEW_RULES:
                seen.append((path.relative_to(CORPUS).as_posix(), f.rule, f.severity))
    zig = [s for s in seen if s[1] == E.RELOC_TYPE.id and s[2] == Severity.INFO]
    assert seen == zig
    with_pc64 = []
    for path in _corpus_elves():
        with path.open("rb") as fh:
            elf = ELFFile(fh)
            rela = elf.get_section_by_name(".rela.sframe")
            if elf["e_machine"] == "EM_X86_64" and rela is not None and any(
                    r["r_info_type"] == 24 for r in rela.iter_relocations()):
                with_pc64.append(path.relative_to(CORPUS).as_posix())
    assert sorted(s[0] for s in zig) == with_pc64 and with_pc64


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_one_version_directory_is_not_mixed(version: str) -> None:
    assert not scan([str(CORPUS / version)]).findings


def test_the_whole_corpus_is_mixed() -> None:
    (f,) = scan([str(CORPUS)]).findings
    assert f.rule == E.MIXED_VERSIONS.id
    assert all(f"v{v} in " in f.message for v in (1, 2, 3))


GROUPED_ASM = """\t.section .text.foo,"axG",@progbits,foo_grp{kind}
\t.globl foo
\t.type foo, @function
foo:
\t.cfi_startproc
\tret
\t.cfi_endproc
\t.size foo, .-foo
"""


@pytest.mark.parametrize(("kind", "fires"), [(",comdat", True), ("", False)])
def test_only_comdat_groups_count(tmp_path: Path, kind: str, fires: bool) -> None:
    """A plain section group (no GRP_COMDAT) is never discarded for a duplicate."""
    tools = _tools(2)
    src, obj = tmp_path / "g.s", tmp_path / "g.o"
    src.write_text(GROUPED_ASM.format(kind=kind))
    done = _run(tools / "as", "--gsframe", "-o", obj, src)
    assert done.returncode == 0, done.stderr
    found = _of(check_elf(obj).findings, E.COMDAT_RELOC.id)
    assert bool(found) == fires
    if fires:
        assert "(foo_grp)" in found[0].message


def test_vdso_by_its_soname_alone(tmp_path: Path) -> None:
    so = _shared(tmp_path, 2, "vdso", "VDSO_X { global: __vdso_time; local: *; };\n",
                 "-Wl,-soname,linux-gate.so.1")
    (f,) = _of(check_elf(so).findings, E.VDSO_SFRAME.id)
    assert "soname linux-gate.so.1" in f.message


@pytest.mark.parametrize(("path", "rtype"), [("aarch64/v1/asm.o", 261),
                                             ("aarch64/v3/asm.o", 260), ("s390x/v3/asm.o", 23)])
def test_gas_start_relocations_of_each_abi_pass(path: str, rtype: int) -> None:
    """What gas writes on aarch64 (PREL32 for v1, PREL64 for v3) and s390x (PC64) is what
    the rule expects: the types are read, and none is reported."""
    info = load_elf(CORPUS / path)
    assert {r.type for r in info.facts.relocs} == {rtype}
    assert not _of(check_elf(CORPUS / path).findings, E.RELOC_TYPE.id)


# -- damaged tables -------------------------------------------------------------------------

def _section_spans(path: Path, names: tuple[str, ...]) -> list[tuple[int, int]]:
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        return [(s["sh_offset"], s["sh_size"]) for s in elf.iter_sections()
                if (s.name in names or s["sh_type"] == "SHT_GROUP") and s["sh_size"]]


def test_damaged_group_reloc_dynamic_and_version_tables_never_raise(tmp_path: Path) -> None:
    """Bytes flipped in the tables elf/groups.py reads. Tables only it reads (groups,
    .dynamic, version definitions) never make the file unreadable: a damaged fact is left
    empty.
    Relocations and symbols the loader also applies give at most a one-line error."""
    import random

    obj = _cxx_object(tmp_path, 3, "a", CXX_A)
    so = _shared(tmp_path, 3, "vdso", LINUX_26, "-Wl,-soname,linux-vdso.so.1")
    rng = random.Random(26)
    for path, names, own in ((obj, (), True), (so, (".dynamic", ".gnu.version_d"), True),
                             (obj, (".rela.sframe", ".symtab", ".strtab"), False)):
        clean = path.read_bytes()
        spans = _section_spans(path, names)
        assert spans
        for _ in range(150):
            data = bytearray(clean)
            for _ in range(rng.randint(1, 8)):
                off, size = rng.choice(spans)
                data[off + rng.randrange(size)] = rng.randrange(256)
            res = check_elf(bytes(data), path=str(path))
            if own:
                assert res.error is None, res.error
            else:
                assert res.error is None or "\n" not in res.error


@pytest.mark.parametrize("kind", ["group", "dynamic", "verdef"])
def test_a_table_past_the_end_of_the_file_leaves_its_fact_empty(tmp_path: Path,
                                                                 kind: str) -> None:
    if kind == "group":
        path = _cxx_object(tmp_path, 2, "a", CXX_A)
        want = "SHT_GROUP"
    else:
        path = _shared(tmp_path, 2, "vdso", LINUX_26, "-Wl,-soname,linux-vdso.so.1")
        want = {"dynamic": "SHT_DYNAMIC", "verdef": "SHT_GNU_verdef"}[kind]
    data = bytearray(path.read_bytes())
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        shoff, shentsize = elf["e_shoff"], elf["e_shentsize"]
        hit = [i for i, s in enumerate(elf.iter_sections()) if s["sh_type"] == want]
    for i in hit:  # Elf64_Shdr.sh_size at +32
        struct.pack_into("<Q", data, shoff + i * shentsize + 32, 1 << 40)
    res = check_elf(bytes(data), path=str(path))
    assert hit and res.error is None and res.sections
    if kind == "group":
        assert not _of(res.findings, E.COMDAT_RELOC.id)
    else:  # each of soname and versions alone still says vDSO
        (f,) = _of(res.findings, E.VDSO_SFRAME.id)
        assert ("LINUX_* versions" if kind == "dynamic" else "soname") in f.message


@pytest.mark.parametrize(("path", "covers"), [("*", True), ("*lib.o", False)])
def test_a_star_waiver_covers_the_scan_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               path: str, covers: bool) -> None:
    """A finding about the files together is at the empty path: `path = "*"` waives it."""
    waivers = tmp_path / "w.toml"
    waivers.write_text(f'[[waiver]]\nrule = "{E.MIXED_VERSIONS.id}"\npath = "{path}"\n'
                       'reason = "v2 and v3 on purpose"\n')
    only = ["--enable", E.MIXED_VERSIONS.id]
    for group in ("header", "layout", "fde", "fre", "elf", "semantic", "defect"):
        only += ["--disable", group]
    out = tmp_path / "r.json"
    status = main(["check", "-j", "1", "--fail-on", "warning", "--waivers", str(waivers),
                   "--format", "json", "-o", str(out), *only, str(V2_LIB), str(V3_LIB)])
    doc = json.loads(out.read_text())
    (f,) = doc["findings"]
    assert status == (0 if covers else 1)
    assert f["waived"] is covers and (doc["unused_waivers"] == []) is covers
    assert doc["summary"]["waived"] == (1 if covers else 0)
    main(["check", "-j", "1", "--no-color", "--waivers", str(waivers), *only, str(V2_LIB),
          str(V3_LIB)])
    text = capsys.readouterr().out
    assert ("(waived: v2 and v3 on purpose)" in text) is covers
