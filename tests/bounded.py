"""Run sfcheck in a subprocess under resource limits and report its peak memory.

The hostile-input tests assert bounds with limits (RLIMIT_CPU, RLIMIT_AS), never with a
clock: a run that exceeds them is killed or fails, whatever the machine's load.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

MiB = 1 << 20


@dataclass
class Run:
    status: int  # exit status, or -signal if killed
    stdout: str
    stderr: str
    peak_rss: int  # bytes: the largest of the process and its waited-for children


def run_sfcheck(args: list[str], cpu_seconds: int = 60, address_space: int = 2048 * MiB,
                stdin: bytes | None = None, cwd: Path | None = None) -> Run:
    """`python -m sfcheck ARGS` with RLIMIT_CPU and RLIMIT_AS set (workers inherit them)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    env = dict(os.environ)  # conftest's PYTHONPATH: bench/ and fuzz/, never the checkout
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "sfcheck", *args], stdout=out,
                                stderr=err, stdin=subprocess.PIPE if stdin is not None
                                else subprocess.DEVNULL, preexec_fn=limit, env=env, cwd=cwd)
        if stdin is not None:
            assert proc.stdin is not None
            proc.stdin.write(stdin)
            proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
        out.seek(0)
        err.seek(0)
        return Run(proc.returncode, out.read().decode("utf-8", "replace"),
                   err.read().decode("utf-8", "replace"), usage.ru_maxrss * 1024)


def one_line_error(run: Run) -> str:
    """The single stderr line of an input error (asserting there is exactly one)."""
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    return lines[0]
