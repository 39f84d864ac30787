"""Renderers of one result model (sfcheck.result.Result): text, JSON, SARIF, JUnit.

Every renderer is `render(result, out, opts)`; `RENDERERS` maps a `--format` name to
the module that holds it, imported only when that format is asked for.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TextIO

from ..result import Result, Severity

# --format name -> module of this package with `render(result, out, opts)`.
RENDERERS = {"text": "text", "json": "json_report", "sarif": "sarif", "junit": "junit"}


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """What a renderer needs beyond the result; machine formats ignore the display fields."""

    fail_on: str = "error"  # error|warning|info|none
    exit_status: int = 0
    show: Severity = Severity.INFO  # text: lowest severity printed (JSON/SARIF/JUnit: all)
    colour: bool = False
    summary: bool = True  # text: the summary after a multi-file scan
    single: bool = False  # text: the scan was one ELF file (the lint use)


def render(fmt: str, result: Result, out: TextIO, opts: ReportOptions) -> None:
    module = importlib.import_module(f"{__name__}.{RENDERERS[fmt]}")
    module.render(result, out, opts)
