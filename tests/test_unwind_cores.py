"""`sfcheck unwind` on synthetic cores: hostile paths, non-regular files, many threads.

Cores are written by tests/unwind_build.py from the ELF core layout; the executable is
the corpus' static v2 build (corpus/v2/exe_static), whose first function starts with the
x86-64 entry FRE (CFA = SP + 8, RA at CFA - 8): a stack filled with `start + 1` return
addresses is then an unbounded chain of frames, each 8 bytes above the last.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfcheck.cli import unwind as cli
from sfcheck.elf.loader import load_elf
from sfcheck.unwind import Unwinder
from sfcheck.unwind.core import CoreFile
from sfcheck.unwind.table import SFrameTable

from unwind_build import auxv, core_bytes, note, nt_file, prstatus, prstatus_raw

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / "corpus" / "v2" / "exe_static"
STACK = 0x7FFF00000000


def _first_function() -> tuple[int, int, SFrameTable]:
    info = load_elf(EXE)
    sec = info.sections[0]
    tab = SFrameTable(sec.data, sec.vma, 0, [(r.start, r.end) for r in info.text_ranges])
    start = min(s for s, _e, _k in tab._index)
    from elftools.elf.elffile import ELFFile

    with open(EXE, "rb") as f:
        entry = ELFFile(f)["e_entry"]
    return start, entry, tab


def _chain_core(threads: int, stack_words: int, pid: int = 1000) -> bytes:
    start, entry, _ = _first_function()
    stack = (start + 1).to_bytes(8, "little") * stack_words
    notes = b"".join(prstatus(pid + k, start, STACK + 8 * (k % stack_words))
                     for k in range(threads))
    return core_bytes(notes + auxv({9: entry}), [(STACK, stack)])


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    status = cli.main(args)
    got = capsys.readouterr()
    return status, got.out, got.err


def test_threads_walked_in_order_with_summary(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    core = tmp_path / "core"
    core.write_bytes(_chain_core(3, 40))
    status, out, _ = _run(["--core", str(core), "--exe", str(EXE), "--json",
                           "--max-frames", "10"], capsys)
    got = json.loads(out)
    assert status == 0
    assert [t["pid"] for t in got["threads"]] == [1000, 1001, 1002]
    start, _, _ = _first_function()
    for k, t in enumerate(got["threads"]):
        assert [f["sp"] for f in t["frames"]] == [STACK + 8 * k + 8 * i for i in range(10)]
        assert t["frames"][1]["pc"] == start + 1 and t["stop"]["reason"] == "frame cap"
    assert got["summary"] == {"threads": 3, "walked": 3, "frames": 30, "outermost": 0,
                              "no_sframe": 0, "no_sframe_modules": [], "errors": 0,
                              "not_walked": 0, "non_elf": 0}
    # The frame budget over all threads: the third thread is not walked.
    status, out, _ = _run(["--core", str(core), "--exe", str(EXE), "--max-frames", "10",
                           "--max-total-frames", "20"], capsys)
    assert status == 0
    assert out.count("Stopped at frame #9 (") == 2
    assert "Thread 3 (LWP 1002): not walked" in out
    assert out.rstrip().endswith("0 stopped on an error, 1 not walked (frame budget)")
    # A walk that reads past the stack is an error: exit 1 (the worst thread decides).
    status, out, _ = _run(["--core", str(core), "--exe", str(EXE)], capsys)
    assert status == 1 and "unreadable memory" in out


def test_non_regular_core_and_exe_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    core = tmp_path / "core"
    core.write_bytes(_chain_core(1, 4))
    for args in (["--core", "/dev/zero"], ["--core", str(fifo)], ["--core", str(tmp_path)],
                 ["--core", str(core), "--exe", "/dev/zero"],
                 ["--core", str(core), "--exe", str(fifo)]):
        status, out, err = _run(args, capsys)
        assert status == 2, args
        assert len(err.strip().splitlines()) == 1 and "not a regular file" in err, err
        assert out == ""


def test_core_is_neither_mapped_nor_read_whole(tmp_path: Path) -> None:
    """A sparse 4 GiB core (the notes up front, the rest a hole) costs neither time nor
    memory: run under RLIMIT_AS with a core larger than the limit. The core is read at
    offsets (issue 27: a map of it was a SIGBUS when it was truncated meanwhile)."""
    core = tmp_path / "core"
    core.write_bytes(_chain_core(2, 64))
    with open(core, "r+b") as f:
        f.truncate(4 << 30)
    # Mapping the core would take 4 GiB of address space, reading it whole 4 GiB of memory:
    # neither fits in 1 GiB.
    res, rss = _limited(["--core", str(core), "--exe", str(EXE), "--max-frames", "16"],
                        address_space=1 << 30, cpu=60)
    assert res.returncode == 0, res.stderr
    assert "Summary: 2 threads walked, 32 frames" in res.stdout
    assert rss < 300 << 20, rss


def _limited(args: list[str], address_space: int, cpu: int
             ) -> tuple[subprocess.CompletedProcess[str], int]:
    """`sfcheck unwind ARGS` in a child under RLIMIT_AS and RLIMIT_CPU; (result, peak RSS
    in bytes as the child measured it)."""
    code = ("import resource, sys\nfrom sfcheck.cli import unwind as cli\ntry:\n"
            f"    status = cli.main({args!r})\nfinally:\n"
            # VmHWM: this address space's peak; ru_maxrss would also keep the peak of the
            # one exec replaced (pytest's, when it forked this child).
            "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
            "    print('MAXRSS', hwm[0].split()[1], file=sys.stderr)\nsys.exit(status)\n")

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         preexec_fn=limits, timeout=10 * cpu, cwd=ROOT)
    rss = [int(line.split()[1]) * 1024 for line in res.stderr.splitlines()
           if line.startswith("MAXRSS ")]
    return res, rss[0] if rss else -1


def test_thousands_of_threads_stay_bounded(tmp_path: Path) -> None:
    """20,000 threads on one deep stack: the frame budget over all threads bounds the
    work (each thread alone could walk 512 frames); memory stays under the address-space
    limit and CPU under the CPU limit (limits of the child, not timings)."""
    n = 20_000
    core = tmp_path / "core"
    core.write_bytes(_chain_core(n, 1024))
    res, rss = _limited(["--core", str(core), "--exe", str(EXE), "--json"],
                        address_space=1 << 30, cpu=120)
    assert res.returncode in (0, 1), res.stderr[-2000:]
    assert rss < 300 << 20, rss
    print(f"{n} threads: peak RSS {rss >> 20} MiB")
    got = json.loads(res.stdout)
    s = got["summary"]
    assert got["threads_in_core"] == n and s["threads"] == n
    assert s["frames"] == cli.DEFAULT_MAX_TOTAL_FRAMES
    assert s["not_walked"] > 0 and s["walked"] + s["not_walked"] == n


def _sysroot_core(tmp_path: Path) -> tuple[Path, Path, dict[str, int]]:
    """A sysroot with a regular file, a symlink out of it (absolute and by `..`) and a
    FIFO; a secret file outside; the core maps each by an NT_FILE path."""
    root = tmp_path / "root"
    (root / "lib").mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.write_bytes(b"SECRET!!" * 512)
    (root / "lib" / "ok.so").write_bytes(b"INSIDE!!" * 512)
    (root / "lib" / "abs.so").symlink_to(secret)  # re-rooted: ROOT/<secret path>, absent
    (root / "lib" / "up.so").symlink_to("../../../../../../../../" + str(secret).lstrip("/"))
    (root / "lib" / "via.so").symlink_to("/lib/ok.so")  # inside: ROOT/lib/ok.so
    os.mkfifo(root / "lib" / "fifo.so")
    paths = {"/lib/ok.so": 0x10000, "/../../../../../../../.." + str(secret): 0x20000,
             "/lib/abs.so": 0x30000, "/lib/up.so": 0x40000, "/lib/via.so": 0x50000,
             "/lib/fifo.so": 0x60000, "/lib/../../../../../.." + str(secret): 0x70000}
    notes = prstatus(7, 0x10010, STACK) + nt_file(
        [(addr, addr + 0x1000, 0, p) for p, addr in paths.items()])
    core = tmp_path / "core"
    core.write_bytes(core_bytes(notes, [(STACK, bytes(64))]))
    return root, core, paths


def test_sysroot_confines_core_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, core_path, paths = _sysroot_core(tmp_path)
    from sfcheck.unwind.sysroot import PathResolver

    core = CoreFile.open(str(core_path), PathResolver(str(root)))
    reads = {p: core.read(addr, 8) for p, addr in paths.items()}
    assert reads["/lib/ok.so"] == b"INSIDE!!" and reads["/lib/via.so"] == b"INSIDE!!"
    assert b"SECRET!!" not in reads.values()
    assert reads["/lib/fifo.so"] is None and "FIFO" in core.unreadable["/lib/fifo.so"]

    status, out, err = _run(["--core", str(core_path), "--sysroot", str(root), "--json"],
                            capsys)
    got = json.loads(out)
    refused = {r["path"]: r["reason"] for r in got["refused"]}
    dotdot = [p for p in paths if "/../" in p]
    assert sorted(refused) == sorted(dotdot)
    assert all("'..'" in r for r in refused.values())
    errors = {m["path"]: m["error"] for m in got["modules"]}
    assert all(errors[p].startswith("refused:") for p in dotdot)
    assert errors["/lib/up.so"] == "file not found"  # clamped at the root: not the secret
    assert "FIFO" in errors["/lib/fifo.so"]
    # Text output says which mapped files were refused: one warning for the kind.
    status, out, err = _run(["--core", str(core_path), "--sysroot", str(root)], capsys)
    assert f"warning: 2 mapped files: refused: '..' in a path from the core ({dotdot[0]}, " \
        f"{dotdot[1]})" in err, err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(threads=st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1),
                                  st.integers(0, 2**64 - 1)), max_size=40),
       stack=st.binary(max_size=512), use_chain=st.booleans())
def test_every_thread_walk_terminates(threads: list[tuple[int, int, int]], stack: bytes,
                                      use_chain: bool) -> None:
    """Any registers, any stack bytes, any number of threads: every walk ends with a
    reason within the frame cap, and the core parses without raising."""
    start, _, tab = _first_function()
    if use_chain:  # a plausible stack, so walks go deep
        stack = (start + 1).to_bytes(8, "little") * 64 + stack
    notes = b"".join(prstatus(k + 1, pc if k % 2 else start + pc % 64, STACK + sp % 1024, fp)
                     for k, (pc, sp, fp) in enumerate(threads))
    core = CoreFile.parse(core_bytes(notes, [(STACK, stack)]))
    assert len(core.threads) == len(threads)
    unwinder = Unwinder([tab], core, max_frames=100)
    for t in core.threads:
        frames, stop = unwinder.unwind(t.registers)
        assert 1 <= len(frames) <= 100 and stop.reason is not None
        assert all(b.sp > a.sp for a, b in zip(frames[1:], frames[2:], strict=False)) \
            or any(f.signal for f in frames)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_mutated_core_parses_or_errors(data: st.DataObject) -> None:
    from sfcheck.errors import ElfError

    blob = bytearray(_chain_core(3, 8))
    for _ in range(data.draw(st.integers(1, 6))):
        pos = data.draw(st.integers(0, len(blob) - 1))
        blob[pos] = data.draw(st.integers(0, 255))
    try:
        core = CoreFile.parse(bytes(blob))
    except ElfError:
        return
    for t in core.threads:
        frames, stop = Unwinder([], core).unwind(t.registers)
        assert len(frames) == 1


def test_aarch64_core_registers_and_pac_mask() -> None:
    """An aarch64 core: pc, sp, x29 (FP) and x30 (LR) come from pr_reg; the insn_mask of
    NT_ARM_PAC_MASK (a "LINUX" note) is what signed return addresses are stripped of."""
    from sfcheck.cli.unwind import _pac_mask
    from sfcheck.format import constants as C

    regs = [0x1000 + i for i in range(31)] + [0x7F00, 0x401234, 0]
    pac = note(0x406, (0xFF7F << 48).to_bytes(8, "little") + (0xFF7F << 48).to_bytes(8, "little"),
               b"LINUX\0")
    core = CoreFile.parse(core_bytes(prstatus_raw(9, regs) + pac, [], machine=183))
    assert core.abi == C.ABI_AARCH64_LE
    r = core.threads[0].registers
    assert (r.pc, r.sp, r.fp, r.ra) == (0x401234, 0x7F00, 0x1000 + 29, 0x1000 + 30)
    assert r.others[19] == 0x1000 + 19
    assert core.pac_mask == 0xFF7F << 48 and _pac_mask(core) == 0xFF7F << 48
    bare = CoreFile.parse(core_bytes(prstatus_raw(9, regs), [], machine=183))
    assert bare.pac_mask is None and _pac_mask(bare) == ((1 << 16) - 1) << 48


def test_s390x_core_general_and_floating_point_registers() -> None:
    """A big-endian s390x core: psw addr, r15 (SP), r11 (FP), r14 (RA) from NT_PRSTATUS; the
    FPRs from the NT_PRFPREG note that follows it (f2 is DWARF 17), for -O0 code that keeps
    the caller's FP there."""
    from sfcheck.format import constants as C

    gprs = [0x100 + i for i in range(16)]
    fprs = [0x200 + i for i in range(16)]
    fp_desc = bytes(8) + b"".join(v.to_bytes(8, "big") for v in fprs)
    notes = (prstatus_raw(5, [0x0705, 0x1000A0, *gprs], order="big")
             + note(2, fp_desc, order="big")
             + prstatus_raw(6, [0x0705, 0x1000B0, *gprs], order="big"))
    core = CoreFile.parse(core_bytes(notes, [], machine=22, order="big"))
    assert core.abi == C.ABI_S390X_BE and [t.pid for t in core.threads] == [5, 6]
    r = core.threads[0].registers
    assert (r.pc, r.sp, r.fp, r.ra) == (0x1000A0, gprs[15], gprs[11], gprs[14])
    assert r.others[17] == fprs[2] and r.others[16] == fprs[0] and r.others[20] == fprs[1]
    assert 17 not in core.threads[1].registers.others  # its own note is missing


PIE = ROOT / "corpus" / "v2" / "exe_pie"
PIE_BIAS = 0x555555554000


def _pie_main() -> int:
    """`main`'s address in exe_pie, from its symbol table (not from the unwinder)."""
    from elftools.elf.elffile import ELFFile

    with open(PIE, "rb") as f:
        syms = ELFFile(f).get_section_by_name(".symtab")
        return next(s["st_value"] for s in syms.iter_symbols() if s.name == "main")


def _pie_core(tmp_path: Path, entry: bool, extra: list[tuple[int, int, int, str]]) -> Path:
    """A core of corpus/v2/exe_pie loaded at PIE_BIAS (its four PT_LOADs mapped as the kernel
    maps them), plus `extra` NT_FILE mappings; one thread stopped at main's first
    instruction (CFA = SP + 8), its return address pointing just past main's start."""
    info = load_elf(PIE)
    main = _pie_main()
    loads = [(PIE_BIAS + s.vaddr - s.vaddr % 4096,
              PIE_BIAS + (s.vaddr + s.memsz + 4095) // 4096 * 4096,
              s.offset - s.offset % 4096, str(PIE)) for s in info.load_segments]
    notes = prstatus(42, PIE_BIAS + main, STACK) + nt_file(loads + extra)
    if entry:
        from elftools.elf.elffile import ELFFile

        with open(PIE, "rb") as f:
            notes += auxv({9: PIE_BIAS + ELFFile(f)["e_entry"]})
    core = tmp_path / "core"
    stack = (PIE_BIAS + main + 1).to_bytes(8, "little") * 4
    core.write_bytes(core_bytes(notes, [(STACK, stack)]))
    return core


@pytest.mark.parametrize("entry", [True, False])
def test_stray_lower_mapping_of_the_executable_does_not_move_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: bool) -> None:
    """The program also mapped its own first page at a lower address (issue 24: frame #0
    came out as `_fini+0x555455553d8d` and the summary blamed a file that has SFrame, exit
    0). The bias is that of the mapping the other PT_LOADs line up with (and AT_ENTRY's)."""
    core = _pie_core(tmp_path, entry, [(0x10000, 0x11000, 0, str(PIE))])
    status, out, _ = _run(["--core", str(core), "--json"], capsys)
    got = json.loads(out)
    exe = next(m for m in got["modules"] if m["path"] == str(PIE))
    assert exe["bias"] == PIE_BIAS
    frames = got["threads"][0]["frames"]
    assert frames[0]["symbol"] == "main" and frames[0]["offset"] == 0
    assert frames[0]["func_start"] == PIE_BIAS + _pie_main()  # found in the SFrame table
    assert len(frames) >= 2 and got["summary"]["no_sframe_modules"] == []
    status, out, _ = _run(["--core", str(core)], capsys)
    assert f"#0  {PIE_BIAS + _pie_main():#018x} in main ({PIE})\n" in out


def test_non_elf_mappings_are_counted_not_warned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Locale archives and caches are mapped files but no objects: one count in the
    summary, no warning each (issue 24: 13 `not an ELF file` lines for a shell)."""
    data = []
    for k in range(5):
        f = tmp_path / f"LC_{k}"
        f.write_bytes(b"locale data" * 100)
        data.append((0x20000 + 0x1000 * k, 0x21000 + 0x1000 * k, 0, str(f)))
    core = _pie_core(tmp_path, True, data)
    status, out, err = _run(["--core", str(core)], capsys)
    assert "not an ELF" not in err and "LC_" not in err, err
    assert out.rstrip().endswith("; 5 mapped files not ELF (data)"), out
    status, out, _ = _run(["--core", str(core), "--json"], capsys)
    got = json.loads(out)
    assert got["summary"]["non_elf"] == 5
    assert sum(m["not_elf"] for m in got["modules"]) == 5


def test_million_file_mappings_stay_bounded(tmp_path: Path) -> None:
    """An NT_FILE note listing 1,000,000 missing files (issue 24: 1M warning lines, 65 MB;
    226 MB of JSON; 676 MB RSS): one warning per kind with a count, bounded JSON, RSS under
    300 MB."""
    n = 1_000_000
    maps = [(0x10000000 + 0x1000 * i, 0x10001000 + 0x1000 * i, 0, f"/nonexistent/lib{i}.so")
            for i in range(n)]
    core = tmp_path / "core"
    core.write_bytes(core_bytes(prstatus(7, 0x10000010, STACK) + nt_file(maps),
                                [(STACK, bytes(64))]))
    del maps
    from sfcheck.unwind.core import MAX_FILE_MAPPINGS

    for json_out in (False, True):
        args = ["--core", str(core)] + (["--json"] if json_out else [])
        res, rss = _limited(args, address_space=2 << 30, cpu=120)
        assert res.returncode == 0, res.stderr[-2000:]
        assert rss < 300 << 20, rss
        warnings = [x for x in res.stderr.splitlines() if not x.startswith("MAXRSS")]
        assert warnings[0].endswith(f"NT_FILE lists {n} file mappings; only the first "
                                    f"{MAX_FILE_MAPPINGS} are used")
        if not json_out:
            assert warnings[1] == (
                f"sfcheck unwind: warning: {MAX_FILE_MAPPINGS} mapped files: file not found "
                "(/nonexistent/lib0.so, /nonexistent/lib1.so, /nonexistent/lib2.so, and "
                f"{MAX_FILE_MAPPINGS - 3} more)")
            assert len(warnings) == 2 and len(res.stdout) < 2000
        else:
            assert len(warnings) == 1 and len(res.stdout) < 1 << 20
            got = json.loads(res.stdout)
            assert len(got["modules"]) == cli.MAX_JSON_MODULES
            assert got["modules_omitted"] == MAX_FILE_MAPPINGS - cli.MAX_JSON_MODULES
            assert got["mappings_dropped"] == n - MAX_FILE_MAPPINGS
        print(f"1M NT_FILE entries, json={json_out}: peak RSS {rss >> 20} MiB")


def test_paths_from_the_core_are_escaped(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A mapped path with a newline cannot forge a summary line; ESC and bidi overrides
    (U+202E) and line separators (U+2028) do not reach the terminal (issue 24)."""
    evil = "/lib/evil\nSummary: 9 thread(s) walked\x1b[31m\u2028\u202e.so"
    core = tmp_path / "core"
    core.write_bytes(core_bytes(prstatus(7, 0x10010, STACK)
                                + nt_file([(0x10000, 0x11000, 0, evil)]),
                                [(STACK, bytes(64))]))
    status, out, err = _run(["--core", str(core)], capsys)
    escaped = "/lib/evil\\x0aSummary: 9 thread(s) walked\\x1b[31m\\u2028\\u202e.so"
    assert f"#0  0x0000000000010010 in ?? ({escaped})\n" in out
    assert f"warning: {escaped}: file not found" in err
    assert not any(x.startswith("Summary: 9") for x in out.splitlines())
    for text in (out, err):
        assert not set(text) & {"\x1b", "\u2028", "\u202e"}


def test_summary_does_not_say_a_file_with_sframe_has_none(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PC in the padding between two functions of exe_pie (no FDE covers it): the walk
    stops there, and the summary says the file has SFrame but no FDE for that PC."""
    info = load_elf(PIE)
    sec = info.sections[0]
    tab = SFrameTable(sec.data, sec.vma, 0, [(r.start, r.end) for r in info.text_ranges])
    spans = sorted((s, e) for s, e, _k in tab._index)
    gap = next(e for (_s, e), (s2, _e2) in zip(spans, spans[1:], strict=False) if e < s2)
    core = _pie_core(tmp_path, True, [])
    blob = bytearray(core.read_bytes())
    old = (PIE_BIAS + _pie_main()).to_bytes(8, "little")
    at = blob.index(old)  # rip in the NT_PRSTATUS note (the stack holds main + 1)
    blob[at:at + 8] = (PIE_BIAS + gap).to_bytes(8, "little")
    core.write_bytes(bytes(blob))
    status, out, _ = _run(["--core", str(core)], capsys)
    assert status == 0
    assert out.rstrip().endswith(f"1 stopped in code without SFrame ({PIE} [has SFrame, but "
                                 "no FDE for that PC]), 0 stopped on an error"), out
