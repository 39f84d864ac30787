"""Differential harness logic for the reader models (sfcheck/readers/): mutated sections
through a model and through sfcheck's reference table at many PCs.

Every disagreement or model fault is recorded under the key `<kind>:<cause>` (the smallest
input per key, as SFCHECK_FUZZ_FINDINGS/<key>.bin with a `#sfdiff` line, the way the
libsframe harness does); kinds are sfcheck/readers/compare.py's (wrong-row, uninit, past,
lookup-fails, div0, gap-row, walker, refused is not recorded), causes name the reader
defect. An exception from the model or the reference is an sfcheck finding as in every
harness. The campaign report lists each key with its time to first find.
"""

from __future__ import annotations

from pathlib import Path

VMA = 0x400000

# cause -> the row of docs/kernel-readers.md's table it rediscovers (2023 RFC reader).
KNOWN_RFC2023 = {
    "unsorted-accepted": "#1 SORTED test precedence bug: unsorted table searched",
    "phantom-fde": "#2 binary search reads one FDE past the table",
    "found-uninit": "#3 `found` uninitialised (PC below the first function)",
    "last-f-uninit": "#4 `last_f` uninitialised (no FREs / first FRE after the PC)",
    "pcmask-last-fre": "#5 PCMASK test compiled out: last FRE always used",
    "cfa-unsigned": "#7 1-/2-byte CFA offset read unsigned",
    "fre-start-s32": "#8 ADDR4 FRE start >= 2^31 read into an s32",
    "no-size-check": "#9 FDE size never read (gaps, past the last function)",
    "fre-order": "#10 FRE order never checked",
    "no-bounds": "#11 no bounds: reads outside the section",
    "ra-uninit": "#13 walker: `ra` uninitialised when the RA offset is 0",
    "no-direction-check": "#14 walker: no CFA-direction check, no frame cap",
}
KNOWN_V3 = {
    "rep-size-zero": "PCMASK rep_size 0: division by zero (passes full validation)",
    "rule-cfa-offset-warn": "flex RA/FP rule 'CFA + offset' reaches WARN_ON_ONCE in the walker",
}
# Not recorded: a refused registration, and a walk guard doing its job.
IGNORED_KINDS = ("refused", "walk-stops")


def _disagreements(target: str, data: bytes):  # type: ignore[no-untyped-def]
    from sfcheck.readers import compare
    if target == "kernel_rfc2023":
        return list(compare.run_rfc2023(data, VMA))
    # Full validation first (what CONFIG_SFRAME_VALIDATION kernels accept), else without.
    found = list(compare.run_v3(data, VMA, validate=True))
    if any(d.kind == compare.REFUSE for d in found):
        found = list(compare.run_v3(data, VMA))
    return found


def keys(target: str, data: bytes) -> list[str]:
    out = []
    for d in _disagreements(target, data):
        if d.kind in IGNORED_KINDS:
            continue
        key = f"{d.kind}:{d.cause or 'other'}"
        if key not in out:
            out.append(key)
    return out


def known(target: str) -> dict[str, str]:
    return KNOWN_RFC2023 if target == "kernel_rfc2023" else KNOWN_V3


def harness(target: str, fuzzing: bool):  # type: ignore[no-untyped-def]
    """(test_one_input, custom_mutator, run) of a model target's script; `fuzzing`: the
    script runs as the fuzzer, so sfcheck is imported with atheris instrumentation."""
    import os

    from . import common
    with common.instrumented_imports(fuzzing):
        from sfcheck.readers import compare  # noqa: F401
    from . import mutator
    from .differential import Recorder
    test = Harness(target, Recorder(os.environ.get("SFCHECK_FUZZ_FINDINGS"), target))

    def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
        return mutator.mutate(data, max_size, seed)

    return test, custom_mutator, lambda: common.run(target, test, custom_mutator)


class Harness:
    """test_one_input for one model target, recording keys like the libsframe harness."""

    def __init__(self, target: str, recorder) -> None:  # type: ignore[no-untyped-def]
        self.target = target
        self.recorder = recorder

    def __call__(self, data: bytes) -> None:
        for k in keys(self.target, data):
            if self.recorder is not None:
                self.recorder.note(k.split(":", 1)[0], k, data)


def process_findings(job, findings: Path, budget: float) -> list[dict]:  # type: ignore[no-untyped-def]
    """Minimise each recorded key against the model; rows with the time to first find."""
    table = known(job.target)

    def describe(key: str) -> dict:
        cause = key.split(":", 1)[1]
        return {"status": "known" if cause in table else "reader",
                "note": f"`{key}`: {table.get(cause, 'not in the known list')}"}

    from .differential import keyed_rows
    return keyed_rows(job, findings, budget, lambda d: keys(job.target, d), describe)
