"""`sfcheck unwind` on files that change under the reader (issue 27): the core, or a file the
core maps, truncated while sfcheck reads it. Neither is mapped into sfcheck, so there is no
SIGBUS (exit 135, no message; -7 for a child killed by it): a core that changed is a one-line
error naming it (exit 2); a mapped file that changed is that file's warning and its entry in
`unreadable`, and the walk goes on.

The races are made deterministic: each test runs sfcheck in a child process with
`fileio.open_regular` (through which FileView opens a file) patched to truncate the victim to 0
bytes right after the reader named (found by its function in the call stack) opened it; and
`fileio.map_regular`, should a reader map the file again, right after it mapped it, when a
read of the map is a SIGBUS."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sfcheck.elf.loader import load_elf
from sfcheck.unwind.table import SFrameTable

from unwind_build import auxv, core_bytes, nt_file, prstatus

ROOT = Path(__file__).resolve().parents[1]
PIE = ROOT / "corpus" / "v2" / "exe_pie"
BIAS = 0x555555554000
STACK = 0x7FFF00000000

# argv: VICTIM READER [sfcheck arguments]. READER is the qualified name of a function that
# must be in the call stack when VICTIM is opened ("A!B": A there and B not), or "walk": the
# core is truncated when the first thread's walk starts (after it was opened and parsed).
# With a "+" before READER, VICTIM grows by 1 MiB of zeros then instead of being truncated.
HOOK = """
import os, re, sys
from sfcheck import fileio
victim, reader = sys.argv[1], sys.argv[2].lstrip("+")
grow = sys.argv[2].startswith("+")
def change():
    if grow:
        with open(victim, "ab") as f:
            f.write(bytes(1 << 20))
    else:
        os.truncate(victim, 0)
    print("HOOK: truncated" if not grow else "HOOK: grew", victim, file=sys.stderr)
want, _, unless = reader.partition("!")
# tests/mutation.py runs these tests on mutmut's tree, where CoreFile.open runs as
# CoreFile.x\u01c1CoreFile\u01c1open__mutmut_orig (or _N for a mutant) and a function f as x_f__...
MUTMUT = re.compile(r"(?<!\\w)x(?:\u01c1\\w+\u01c1|_)(\\w+?)__mutmut_(?:orig|\\d+)$")
def plain(qualname):
    return MUTMUT.sub(r"\\1", qualname)
mapping = []
def maybe_truncate(path):
    if os.fsdecode(path) != victim or mapping:
        return
    names, f = set(), sys._getframe(2)
    while f is not None:
        names.add(plain(f.f_code.co_qualname))
        f = f.f_back
    if want in names and unless not in names:
        change()
opened = fileio.open_regular
def open_truncating(path):
    got = opened(path)
    maybe_truncate(path)
    return got
mapped = fileio.map_regular
def map_truncating(path):
    mapping.append(path)
    try:
        got = mapped(path)
    finally:
        mapping.pop()
    maybe_truncate(path)
    return got
fileio.open_regular, fileio.map_regular = open_truncating, map_truncating
if reader == "walk":
    from sfcheck.unwind import unwinder
    walk, walked = unwinder.Unwinder.unwind, []
    def first_walk(self, *args, **kw):
        if not walked:
            walked.append(victim)  # the first walk only
            change()
        return walk(self, *args, **kw)
    unwinder.Unwinder.unwind = first_walk
from sfcheck.cli import main
sys.exit(main(["unwind", *sys.argv[3:]]))
"""


def _symbols() -> tuple[int, int]:
    """main's address in exe_pie and its e_entry (from the ELF file, not the unwinder)."""
    from elftools.elf.elffile import ELFFile

    with open(PIE, "rb") as f:
        elf = ELFFile(f)
        syms = elf.get_section_by_name(".symtab")
        main = next(s["st_value"] for s in syms.iter_symbols() if s.name == "main")
        return main, elf["e_entry"]


def _gap() -> int:
    """A PC in exe_pie's text that no FDE covers (padding between two functions)."""
    info = load_elf(PIE)
    sec = info.sections[0]
    tab = SFrameTable(sec.data, sec.vma, 0, [(r.start, r.end) for r in info.text_ranges])
    spans = sorted((s, e) for s, e, _k in tab._index)
    return next(e for (_s, e), (s2, _e2) in zip(spans, spans[1:], strict=False) if e < s2)


def _core(tmp_path: Path, nt: bool = True) -> tuple[Path, Path]:
    """A copy of exe_pie (the file to truncate) and a core of it loaded at BIAS, its text
    not dumped (read from the file, as the kernel's cores need): thread 1 stopped at main
    (a walk through SFrame), thread 2 in padding no FDE covers (the walk looks at the code
    bytes there for a signal trampoline: a read of the mapped file). `nt=False`: no NT_FILE
    note (the executable comes from --exe)."""
    exe = tmp_path / "exe"
    shutil.copy(PIE, exe)
    main, entry = _symbols()
    info = load_elf(PIE)
    maps = [(BIAS + s.vaddr - s.vaddr % 4096, BIAS + (s.vaddr + s.memsz + 4095) // 4096 * 4096,
             s.offset - s.offset % 4096, str(exe)) for s in info.load_segments]
    notes = (prstatus(42, BIAS + main, STACK) + prstatus(43, BIAS + _gap(), STACK)
             + (nt_file(maps) if nt else b"") + auxv({9: BIAS + entry}))
    stack = (BIAS + main + 1).to_bytes(8, "little") * 4
    core = tmp_path / "core"
    core.write_bytes(core_bytes(notes, [(STACK, stack)]))
    return core, exe


def _run(tmp_path: Path, victim: Path, reader: str, *args: str
         ) -> subprocess.CompletedProcess[str]:
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK)
    return subprocess.run([sys.executable, str(hook), str(victim), reader, *args],
                          capture_output=True, text=True, env=dict(os.environ), timeout=120)


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("HOOK: ")]


def test_untouched(tmp_path: Path) -> None:
    """The core the other tests truncate, walked with nothing truncated: what they differ
    from (and proof that the hook alone changes nothing). Both walks end normally."""
    core, exe = _core(tmp_path)
    proc = _run(tmp_path, exe, "nothing", "--core", str(core), "--max-frames", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    got = json.loads(proc.stdout)
    assert got["unreadable"] == [] and all(m["error"] is None for m in got["modules"])
    first, second = got["threads"]
    assert first["frames"][0]["symbol"] == "main" and first["stop"]["reason"] == "frame cap"
    assert second["stop"]["reason"] == "no FDE for PC"


@pytest.mark.parametrize("reader", ["CoreFile.open", "walk"])
@pytest.mark.parametrize("fmt", [[], ["--json"]])
def test_core_truncated_is_one_line_exit_2(tmp_path: Path, reader: str,
                                           fmt: list[str]) -> None:
    """The core truncated right after it is opened (its headers and notes lost), or once it
    is parsed, when the walk reads the stack: one line naming the core, exit 2."""
    core, _exe = _core(tmp_path)
    size = core.stat().st_size
    proc = _run(tmp_path, core, reader, "--core", str(core), *fmt)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)  # SIGBUS: -7
    assert "HOOK: truncated" in proc.stderr
    lines = _errors(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith(
        f"sfcheck unwind: error: {core}: changed while read: {size} bytes when opened, "
        "0 bytes when byte "), proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("reader", ["load_elf", "CoreFile._read_mapped_file", "Symbols.load"])
def test_mapped_file_truncated_is_that_files_warning(tmp_path: Path, reader: str) -> None:
    """The executable truncated right after it is opened to read its SFrame sections
    (load_elf), the code bytes the core does not hold (a read of mapped memory), or its
    symbols: the walk of both threads completes, the file is named as changed while read
    (a warning; in JSON, its module's error or its `unreadable` entry), and the exit status
    is what the walks give, 0 here (README: an unreadable mapped file is a warning)."""
    core, exe = _core(tmp_path)
    size = exe.stat().st_size
    changed = f"changed while read: {size} bytes when opened, 0 bytes when byte "
    proc = _run(tmp_path, exe, reader, "--core", str(core), "--max-frames", "3")
    assert proc.returncode == 0, (proc.returncode, proc.stderr)  # SIGBUS: -7
    assert "HOOK: truncated" in proc.stderr
    warnings = _errors(proc.stderr)
    assert len(warnings) == 1 and warnings[0].startswith(
        f"sfcheck unwind: warning: {exe}: {changed}"), proc.stderr
    assert proc.stdout.count("Stopped at frame #") == 2, proc.stdout
    assert "Summary: 2 threads walked" in proc.stdout

    shutil.copy(PIE, exe)
    proc = _run(tmp_path, exe, reader, "--core", str(core), "--max-frames", "3", "--json")
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert "HOOK: truncated" in proc.stderr and _errors(proc.stderr) == [], proc.stderr
    got = json.loads(proc.stdout)
    assert got["summary"]["walked"] == 2 and got["summary"]["errors"] == 0
    module = next(m for m in got["modules"] if m["path"] == str(exe))
    noted = [u["reason"] for u in got["unreadable"] if u["path"] == str(exe)]
    if reader == "load_elf":  # no SFrame: both walks stop in code without SFrame
        assert module["error"].startswith(changed) and noted == []
        assert got["summary"]["no_sframe"] == 2
    else:
        assert module["error"] is None and len(noted) == 1 and noted[0].startswith(changed)
        assert got["threads"][0]["stop"]["reason"] == "frame cap"
    if reader == "Symbols.load":
        assert got["threads"][0]["frames"][0]["symbol"] is None


def test_executable_truncated_while_its_entry_is_read(tmp_path: Path) -> None:
    """No NT_FILE note, the executable from --exe: truncated right after it is opened to
    read e_entry (its load bias), once its SFrame sections were read. That module's error;
    the walks end in code without SFrame (exit 0)."""
    core, exe = _core(tmp_path, nt=False)
    proc = _run(tmp_path, exe, "load_modules!_load", "--core", str(core), "--exe", str(exe),
                "--json")
    assert proc.returncode == 0, (proc.returncode, proc.stderr)  # SIGBUS: -7
    assert "HOOK: truncated" in proc.stderr and "Traceback" not in proc.stderr
    got = json.loads(proc.stdout)
    module = next(m for m in got["modules"] if m["path"] == str(exe))
    assert module["error"].startswith("cannot read e_entry: changed while read"), module
    assert got["summary"]["no_sframe"] == 2


@pytest.mark.parametrize("reader", ["+CoreFile.open", "+walk", "+load_elf",
                                    "+CoreFile._read_mapped_file", "+Symbols.load"])
def test_growing_files_are_read_as_they_were(tmp_path: Path, reader: str) -> None:
    """A core or a mapped file that grows while read (a core still being written, a
    library appended to) is read as it was when opened: the same walks and output as
    when nothing changes."""
    core, exe = _core(tmp_path)
    args = ["--core", str(core), "--max-frames", "3"]
    before = _run(tmp_path, exe, "nothing", *args)
    victim = core if reader in ("+CoreFile.open", "+walk") else exe
    proc = _run(tmp_path, victim, reader, *args)
    assert "HOOK: grew" in proc.stderr
    assert (proc.returncode, proc.stdout, _errors(proc.stderr)) == (0, before.stdout, [])
