"""Inputs that change under the reader (issue 27.1): a file truncated while it is checked
is that file's error ("changed while read", exit 2), never a SIGBUS that kills the scan
(exit 135 with -j1, 70 with -j2, the other files' findings lost). The race is made
deterministic: the file is truncated right after the checker opened it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sfcheck import fileio
from sfcheck.fileio import FileChangedError, FileView
from sfcheck.inputs import Limits
from sfcheck.scan import ScanConfig, scan

from archives import BAD, LIB_V3, tar_bytes

# Run sfcheck with FileView patched to truncate VICTIM to 4 KiB once it is open (workers
# are forked, so they inherit the patch).
HOOK = """
import os, sys
from sfcheck import fileio
victim = sys.argv[1]
opened = fileio.FileView.__init__
def truncating(self, path):
    opened(self, path)
    if self.label == victim:
        os.truncate(victim, 4096)
fileio.FileView.__init__ = truncating
from sfcheck.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("jobs", [1, 2])
def test_truncated_file_is_one_files_error_and_the_scan_goes_on(tmp_path: Path,
                                                                jobs: int) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(20):  # more than one batch of 16: -j 2 runs a worker pool
        shutil.copy(BAD, tree / f"f{i:02}.so")
    victim = tree / "f05.so"
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK)
    proc = subprocess.run([sys.executable, str(hook), str(victim), "check", "-j", str(jobs),
                           "--format", "json", str(tree)], capture_output=True, text=True,
                          env=dict(os.environ), timeout=300)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "BrokenProcessPool" not in proc.stderr
    files = json.loads(proc.stdout)["files"]
    assert len(files) == 20
    bad = [f for f in files if f.get("error")]
    assert [f["path"] for f in bad] == [str(victim)]
    assert bad[0]["error"].startswith("changed while read: 9816 bytes when opened, 4096")
    # Every other file keeps its findings (BAD has errors).
    assert all(any(x["severity"] == "error" for x in f["findings"])
               for f in files if not f.get("error"))


def test_truncated_spilled_member(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An archive member copied to a temporary file (above spill_bytes) and truncated
    there while it is checked: the member's error; the next member is still checked."""
    opened = FileView.__init__

    def truncating(self: FileView, path: str) -> None:
        opened(self, path)
        if self.label.endswith(".member") and "first" not in truncating.__dict__:
            truncating.__dict__["first"] = True
            os.truncate(path, 100)

    monkeypatch.setattr(fileio.FileView, "__init__", truncating)
    tar = tmp_path / "p.tar"
    tar.write_bytes(tar_bytes([("./a.so", LIB_V3.read_bytes()), ("./b.so", BAD.read_bytes())]))
    res = scan([str(tar)], ScanConfig(jobs=1, limits=Limits(spill_bytes=4096))).files
    assert [r.member for r in res] == ["./a.so", "./b.so"]
    assert res[0].error is not None and res[0].error.startswith("changed while read")
    assert res[1].error is None and res[1].worst() is not None


def test_fileview_reads_like_bytes_and_says_when_the_file_shrank(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40
    path = tmp_path / "f"
    path.write_bytes(data)
    with FileView(path) as view:
        assert len(view) == len(data)
        for key in (slice(0, 4), slice(5000, 20000), slice(-10, None), slice(3, 3),
                    slice(None, None)):
            assert view[key] == data[key], key
        assert view[7] == data[7] and view[-1] == data[-1]
        with pytest.raises(IndexError):
            view[len(data)]
        os.truncate(path, 1000)
        assert view[:1000] == data[:1000]
        with pytest.raises(FileChangedError, match="changed while read: 10240 bytes when "
                                                   "opened, 1000 bytes when byte 1000"):
            view[:2000]
