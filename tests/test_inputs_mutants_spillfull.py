"""A spill file that cannot grow (a full disk, a file-size limit): the first failing write
is refused in one line, with nothing held back in a buffer to fail later at close. Written
for the survivors of the inputs mutation group (issue 29)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sfcheck
from sfcheck.inputs.spill import SpillDir

# RLIMIT_FSIZE set in a child only: writes past 1000 bytes fail there with EFBIG; 1050
# bytes fit any write buffer, so a buffered copy would fail only at close
_CHILD = """
import io, resource, signal
from sfcheck.inputs import ArchiveError
from sfcheck.inputs.spill import SpillDir
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
with SpillDir() as spill:
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
    try:
        spill.write([b"x" * 100], io.BytesIO(b"y" * 950))
    except ArchiveError as exc:
        print(exc)
"""


def test_file_size_limit_refused_in_one_line(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # the same copy without the limit, here: it holds every byte (and mutmut, which picks
    # a mutant's tests by the functions they call in-process, then runs this test)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with SpillDir() as spill:
        assert Path(spill.write([b"x" * 100], io.BytesIO(b"y" * 950))).read_bytes() == (
            b"x" * 100 + b"y" * 950)
    root = str(Path(sfcheck.__file__).parent.parent)
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": root,
           "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-W", "error", "-c", _CHILD], env=env,
                          capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr, done.stdout) == (
        0, "", f"cannot write a temporary copy of a large member under {tmp_path} "
               "(set TMPDIR): File too large\n")
    assert list(tmp_path.iterdir()) == []  # the partial copy and the scan directory gone
