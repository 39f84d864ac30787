"""Renderers of one result model (sfcheck.result.Result): text, JSON, SARIF, JUnit, and
GitHub workflow commands and GitLab Code Quality for CI.

Every renderer is `render(result, out, opts)`; `RENDERERS` maps a `--format` name to
the module that holds it, imported only when that format is asked for.
"""

from __future__ import annotations

from ..record import Record
from ..result import Result, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import TextIO

# --format name -> module of this package with `render(result, out, opts)`.
RENDERERS = {"text": "text", "json": "json_report", "sarif": "sarif", "junit": "junit",
             "github": "github", "gitlab": "gitlab"}
# Formats whose every entry becomes an alert, annotation or issue in a CI service: they
# list what --show lets through (default warning), as text does.
CI_FORMATS = ("sarif", "github", "gitlab")


class ReportOptions(Record, frozen=True):
    """What a renderer needs beyond the result; machine formats ignore the display fields."""

    __slots__ = ("fail_on", "exit_status", "show", "colour", "summary", "single")

    def __init__(self, fail_on: str = "error", exit_status: int = 0,
                 show: Severity = Severity.INFO, colour: bool = False, summary: bool = True,
                 single: bool = False) -> None:
        self.fail_on = fail_on  # error|warning|info|none
        self.exit_status = exit_status
        self.show = show  # text and CI_FORMATS: lowest severity listed (JSON/JUnit: all)
        self.colour = colour
        self.summary = summary  # text: the summary after a multi-file scan
        self.single = single  # text: the scan was one ELF file (the lint use)


def render(fmt: str, result: Result, out: TextIO, opts: ReportOptions) -> None:
    import importlib

    module = importlib.import_module(f"{__name__}.{RENDERERS[fmt]}")
    module.render(result, out, opts)
