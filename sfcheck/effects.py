"""What a reader does with a finding under a consumer profile, and the verdict over a file.

Under `--profile NAME` every finding carries one effect (the profile's data in
sfcheck/profiles/, per rule, with defaults per rule group):

  refuses    the reader rejects the section or its registration;
  skips      the reader drops the section (a dumper warns and goes on; the kernel removes
             a section whose lookup faulted);
  crashes    the reader aborts, faults, divides by zero or hits a kernel warning;
  misreads   the reader takes it and unwinds (or prints) something wrong;
  nothing    the reader never looks at it.

A finding whose effect is *nothing* is shown but not counted against the reader: the
exit status and the verdict ignore it. Under `strict` no finding has an effect, and
everything counts as before.
"""

from __future__ import annotations

from .result import FileResult, Finding, Result, Severity

REFUSES, SKIPS, CRASHES, MISREADS, NOTHING = "refuses", "skips", "crashes", "misreads", "nothing"
EFFECTS = (REFUSES, SKIPS, CRASHES, MISREADS, NOTHING)
# The verdict a file gets from its counted effects, in the order the reader meets them: a
# section refused at its header (or registration) is never read further, so nothing after
# can crash it (objdump refuses a v1 header before its layout could fault; the kernel
# looks nothing up in a section it did not register); then a crash, a dropped section, a
# wrong answer.
GRAVITY = (REFUSES, CRASHES, SKIPS, MISREADS)
TAKES = "takes"
# How `sfcheck explain` and `sfcheck profiles NAME` word each effect.
EFFECT_TEXT = {REFUSES: "refuses the section", SKIPS: "skips the section", CRASHES: "crashes",
               MISREADS: "misreads it", NOTHING: "nothing (shown, not counted)"}
VERDICT_TEXT = {CRASHES: "would crash", REFUSES: "would refuse", SKIPS: "would skip the section",
                MISREADS: "would misread", TAKES: "would take"}


def counted(f: Finding) -> bool:
    """Whether a finding counts for --fail-on and the verdict: not waived, and not one the
    profile's reader never looks at."""
    return f.waived is None and f.effect != NOTHING


def verdict(res: FileResult) -> tuple[str, int]:
    """(verdict, findings against the file): the first effect (GRAVITY) among the counted error
    findings and how many of those there are (of any effect), or TAKES and 0. The verdict
    follows the default --fail-on error: a warning that names an effect is shown with it
    but does not turn a file into a refusal."""
    hits = [f.effect for f in res.findings
            if counted(f) and f.severity == Severity.ERROR and f.effect in GRAVITY]
    for effect in GRAVITY:
        if effect in hits:
            return effect, len(hits)
    return TAKES, 0


def verdict_text(profile: str, res: FileResult) -> str:
    """`kernel: would refuse (3 findings)` / `kernel: would take`."""
    what, n = verdict(res)
    text = f"{profile}: {VERDICT_TEXT[what]}"
    if n:
        text += f" ({n} finding{'s' if n != 1 else ''})"
    return text


def judged(res: FileResult) -> bool:
    """Whether the file has a verdict: it was read and holds SFrame bytes."""
    return res.error is None and any(not s.nobits for s in res.sections)


def verdicts(result: Result) -> dict[str, int]:
    """Files per verdict over a scan, gravest first, every verdict present."""
    counts = dict.fromkeys((TAKES, *GRAVITY), 0)
    for res in result.files:
        if judged(res):
            counts[verdict(res)[0]] += 1
    return counts


def ci_severity(f: Finding) -> Severity:
    """The level a CI format gives a finding: one the reader never looks at is a note
    there, so it neither fails a code-scanning check nor reads as a blocker."""
    return Severity.INFO if f.effect == NOTHING else f.severity


def note(f: Finding, profile: str | None) -> str:
    """What the text and CI renderers add after a finding's message under a profile."""
    if profile is None or f.effect is None:
        return ""
    if f.effect == NOTHING and f.severity == Severity.ERROR:
        return f" ({profile}: nothing, not counted)"
    return f" ({profile}: {f.effect})"
