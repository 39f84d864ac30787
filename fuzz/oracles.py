"""The real SFrame readers as oracles: run `llvm-readobj --sframe` and `objdump --sframe` on a
case's ELF file, classify what they did (accept / reject / crash) and compare with what
sfcheck's profile for that reader predicts.

The readers come from Debian's archive (`bash fuzz/get-readers.sh`, into
.toolchains/readers/bin, or $SFCHECK_READERS). A profile predicts *accept* when sfcheck
reports no error-severity finding for the file under it (and can read the file), *reject*
otherwise: an error under a consumer profile means the reader refuses, crashes or misreads
(sfcheck/profiles/). A crash counts as "not accepted"; the table shows it apart.

    python -m fuzz.oracles table [--out reports/oracles-DATE.md] [--cases hostile,corpus,...]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .common import ROOT

ACCEPT, REJECT, CRASH = "accept", "reject", "crash"
TIMEOUT = 20.0  # seconds per reader run; longer is a hang (a crash class)


@dataclass(frozen=True)
class Reader:
    name: str  # the wrapper's name in the readers' bin directory
    profile: str  # the sfcheck profile that predicts it
    kind: str  # "llvm" or "objdump": how its output is read


READERS = (
    Reader("llvm-readobj-22", "llvm-22", "llvm"),
    Reader("llvm-readobj-23", "llvm-22", "llvm"),  # same outcomes as 22: see summary()
    Reader("objdump-sid", "libsframe-2.46", "objdump"),
    Reader("objdump-2.40", "libsframe-2.40", "objdump"),
)


def readers_dir() -> Path:
    return Path(os.environ.get("SFCHECK_READERS", ROOT / ".toolchains" / "readers" / "bin"))


def available(names: Iterable[str] | None = None) -> list[Reader]:
    """The readers whose wrapper is present and runs."""
    out = []
    for r in READERS:
        if names is not None and r.name not in names:
            continue
        exe = readers_dir() / r.name
        if exe.is_file() and os.access(exe, os.X_OK):
            out.append(r)
    return out


@dataclass(frozen=True)
class Outcome:
    verdict: str  # ACCEPT, REJECT or CRASH
    detail: str  # the first line that decided it (or the signal, or "timeout")


# What the readers print when they give up on a section (stderr); everything else on
# stderr is about other parts of the file and leaves the verdict at accept.
_LLVM_REJECT = re.compile(r"warning: .*(sframe|SFrame)|invalid sframe section|unexpected end "
                          r"of data|unsupported (FRE|version)")
_OBJDUMP_REJECT = re.compile(r"SFrame|sframe|file format not recognized|file truncated")
# A crash that exits normally: an assertion, LLVM's crash handler, xmalloc's failure.
_CRASH_TEXT = re.compile(r"Assertion .* failed|PLEASE submit a bug report|Stack dump:|"
                         r"out of memory allocating|internal error|Segmentation fault")


def classify(kind: str, returncode: int | None, stdout: str, stderr: str) -> Outcome:
    """The verdict of one run. `returncode` None: it timed out. Negative: killed by a signal
    (the wrappers exec the reader, so its signal is the child's)."""
    if returncode is None:
        return Outcome(CRASH, "timeout (hang)")
    if returncode < 0 or returncode >= 128:
        sig = -returncode if returncode < 0 else returncode - 128
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        m = _CRASH_TEXT.search(stderr)
        return Outcome(CRASH, name + (f": {_line(stderr, m.start())}" if m else ""))
    m = _CRASH_TEXT.search(stderr)
    if m:
        return Outcome(CRASH, _line(stderr, m.start()))
    m = (_LLVM_REJECT if kind == "llvm" else _OBJDUMP_REJECT).search(stderr)
    if m:
        return Outcome(REJECT, _line(stderr, m.start()))
    if returncode != 0:
        return Outcome(REJECT, f"exit {returncode}: " + (stderr.strip().splitlines() or [""])[0])
    if kind == "objdump" and "Contents of the SFrame section" not in stdout:
        return Outcome(REJECT, "no SFrame section dumped")
    return Outcome(ACCEPT, "")


def _line(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    line = text[start:end if end >= 0 else len(text)].strip()
    # the wrapper's path says nothing: keep the reader's message
    line = re.sub(r"^\S*/(?=[\w.-]+: )", "", line)
    return line[:160]


def run_reader(reader: Reader, path: Path, timeout: float = TIMEOUT) -> Outcome:
    exe = readers_dir() / reader.name
    try:
        p = subprocess.run([str(exe), "--sframe", str(path)], capture_output=True,
                           timeout=timeout, stdin=subprocess.DEVNULL, env=_env(),
                           preexec_fn=_no_core)
    except subprocess.TimeoutExpired:
        return classify(reader.kind, None, "", "")
    out = classify(reader.kind, p.returncode, p.stdout.decode(errors="replace"),
                   p.stderr.decode(errors="replace"))
    # the case's temporary path says nothing and would make every table differ
    return Outcome(out.verdict, out.detail.replace(str(path), "FILE"))


def _env() -> dict[str, str]:
    return dict(os.environ, LC_ALL="C")  # the messages the classification reads, in English


def _no_core() -> None:
    """No core files from crashing readers (the campaigns crash them thousands of times)."""
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@dataclass
class Prediction:
    verdict: str  # ACCEPT, REJECT or CRASH (CRASH only from per-finding effects)
    errors: list[str] = field(default_factory=list)  # the counted error rules (or load error)
    by_effect: bool = False  # from per-finding effects (sfcheck.effects), else error findings
    uncounted: list[str] = field(default_factory=list)  # error rules its reader ignores


def effects_available() -> bool:
    """Whether findings carry what the profile's reader does with them (issue 26 item 2)."""
    return importlib.util.find_spec("sfcheck.effects") is not None


def predict(elf: bytes, profile: str) -> Prediction:
    """What sfcheck says the reader will do with this file under `profile`: with per-finding
    effects, the file's verdict (takes/misreads = accept, refuses/skips = reject, crashes =
    crash); without them, reject iff an error-severity finding is reported."""
    from sfcheck.checker import Options, check_elf
    from sfcheck.result import Severity
    result = check_elf(elf, path="<case>", options=Options(profile=profile))
    if result.error is not None:
        return Prediction(REJECT, [f"load: {result.error}"])
    if effects_available():
        from sfcheck import effects as fx
        what, _n = fx.verdict(result)
        errors = sorted({f.rule for f in result.findings if fx.counted(f)
                         and f.severity == Severity.ERROR and f.effect in fx.GRAVITY})
        verdict = {fx.CRASHES: CRASH, fx.REFUSES: REJECT, fx.SKIPS: REJECT}.get(what, ACCEPT)
        rest = sorted({f.rule for f in result.findings
                       if f.severity == Severity.ERROR and f.rule not in errors})
        return Prediction(verdict, errors, by_effect=True, uncounted=rest)
    errors = sorted({f.rule for f in result.findings
                     if f.severity == Severity.ERROR and not f.waived})
    return Prediction(REJECT if errors else ACCEPT, errors)


def agrees(actual: Outcome, predicted: Prediction) -> bool:
    """Accept against not accept; with per-finding effects, a predicted crash must be one."""
    if (actual.verdict == ACCEPT) != (predicted.verdict == ACCEPT):
        return False
    return not predicted.by_effect or actual.verdict == ACCEPT or (
        (actual.verdict == CRASH) == (predicted.verdict == CRASH))


@dataclass
class Row:
    case: str
    reader: str
    actual: Outcome
    predicted: Prediction | None  # None: no such profile
    known: str = ""  # why this case cannot be predicted (UNPREDICTABLE), if listed

    @property
    def ok(self) -> bool:
        return self.predicted is None or agrees(self.actual, self.predicted)


# libsframe's native-endian path copies the FDE array and fre_len bytes of FREs without
# comparing them with the section size (sframe_decode): objdump then reads past the buffer.
# Whether that faults, trips an sframe_assert on the bytes found there, or prints them depends
# on the heap beyond the section, not on the section, so no profile can say which.
_OVERREAD = ("layout-fde-array-bounds", "layout-fde-fres-bounds", "layout-fre-bounds")
OVERREAD_WHY = ("libsframe reads past the section (native path, no size check): fault, "
                "assertion or a dump of the bytes beyond depends on the heap")
# sframe_decode allocates num_fdes entries before copying them: a huge count fails there
# ('Out of Memory', a refusal) or gets its memory and faults in the copy.
OOM_WHY = ("libsframe allocates num_fdes entries first: whether malloc refuses ('Out of "
           "Memory') or the copy faults depends on the machine's memory")
# LLVM reads the FREs right after the FDE array whatever sfh_freoff says (getFREBase):
# sfcheck's FRE findings describe the bytes at sfh_freoff, which LLVM never reads.
FREOFF_WHY = ("LLVM ignores sfh_freoff: sfcheck's FRE findings describe bytes LLVM does not "
              "read")
# layout-fde-fres-bounds measures FRE blocks against sfh_fre_len, which LLVM never reads: an
# FRE past fre_len but inside the section is dumped, one past the section refused.
FRE_LEN_WHY = ("LLVM bounds FREs by the section, not sfh_fre_len: the rule does not say which "
               "end an FRE block runs past")
# An FRE type over 2 trips sframe_fre_start_addr_size's assertion on some paths; on others
# sframe_decoder_get_fre fails and the dump leaves the function's rows out.
FRE_TYPE_WHY = ("an FRE type over 2 asserts on some of libsframe's paths and quietly drops the "
                "function's rows on others")
# libsframe stops a function's FREs at the first it cannot decode: a later FRE's assertion
# is reached or not depending on the FREs before it.
FRE_ORDER_WHY = ("libsframe stops at the first FRE it cannot decode: whether the FRE that "
                 "trips an assertion is reached depends on the FREs before it")
ANY = (ACCEPT, REJECT, CRASH)
# reader -> [(rules the section alone does not decide the outcome of, the actual verdicts
# this covers, why)]: a mismatch is listed when one of the rules was reported (counted or not).
MEMORY_DEPENDENT: dict[str, list[tuple[tuple[str, ...], tuple[str, ...], str]]] = {
    "objdump-sid": [(_OVERREAD, (ACCEPT, CRASH), OVERREAD_WHY),
                    (("layout-fde-array-bounds",), (REJECT,), OOM_WHY),
                    (("fde-fre-type",), (ACCEPT,), FRE_TYPE_WHY)],
    "objdump-2.40": [(_OVERREAD, (ACCEPT, CRASH), OVERREAD_WHY),
                     (("layout-fde-array-bounds",), (REJECT,), OOM_WHY),
                     (("fre-start-beyond-size", "fre-datawords-size"), (ACCEPT,),
                      FRE_ORDER_WHY)],
    "llvm-readobj-22": [(("layout-offsets-ignored",), ANY, FREOFF_WHY),
                        (("layout-fde-fres-bounds",), (ACCEPT,), FRE_LEN_WHY)],
    "llvm-readobj-23": [(("layout-offsets-ignored",), ANY, FREOFF_WHY),
                        (("layout-fde-fres-bounds",), (ACCEPT,), FRE_LEN_WHY)],
}
# (case glob, reader) -> why sfcheck's profile cannot predict that reader on that case.
UNPREDICTABLE: dict[tuple[str, str], str] = {}


def known_reason(case: str, reader: str, actual: Outcome | None = None,
                 predicted: Prediction | None = None) -> str:
    """Why this mismatch is not a profile error ("" if it is one)."""
    from fnmatch import fnmatch
    for (pat, r), why in UNPREDICTABLE.items():
        if r in (reader, "*") and fnmatch(case, pat):
            return why
    if actual is None or predicted is None:
        return ""
    reported = set(predicted.errors) | set(predicted.uncounted)
    for rules, verdicts, why in MEMORY_DEPENDENT.get(reader, []):
        if actual.verdict in verdicts and reported & set(rules):
            return why
    return ""


def compare(cases: Iterable[tuple[str, bytes]], readers: list[Reader],
            workdir: Path) -> Iterator[Row]:
    from sfcheck.profiles import PROFILES
    for name, elf in cases:
        path = workdir / "case.elf"
        path.write_bytes(elf)
        preds: dict[str, Prediction] = {}
        for r in readers:
            actual = run_reader(r, path)
            pred = None
            if r.profile in PROFILES:
                pred = preds.get(r.profile) or predict(elf, r.profile)
                preds[r.profile] = pred
            known = "" if pred is None or agrees(actual, pred) else known_reason(
                name, r.name, actual, pred)
            yield Row(name, r.name, actual, pred, known)


def table(rows: list[Row]) -> str:
    lines = ["| case | reader | actual | predicted | agrees | detail / error rules |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        pred = row.predicted.verdict if row.predicted else "(no profile)"
        mark = "yes" if row.ok else ("listed" if row.known else "**NO**")
        why = row.actual.detail
        if row.predicted and row.predicted.errors:
            why += (" / " if why else "") + ", ".join(row.predicted.errors)
        if row.known:
            why += f" (listed: {row.known})"
        lines.append(f"| {row.case} | {row.reader} | {row.actual.verdict} | {pred} | {mark} | "
                     f"{why.replace('|', '/')} |")
    return "\n".join(lines)


def summary(rows: list[Row]) -> str:
    out = []
    for r in sorted({row.reader for row in rows}):
        mine = [row for row in rows if row.reader == r]
        counts = {v: sum(row.actual.verdict == v for row in mine) for v in (ACCEPT, REJECT, CRASH)}
        bad = [row for row in mine if not row.ok and not row.known]
        listed = [row for row in mine if not row.ok and row.known]
        out.append(f"- {r}: {len(mine)} cases; accept {counts[ACCEPT]}, reject "
                   f"{counts[REJECT]}, crash {counts[CRASH]}; prediction mismatches "
                   f"{len(bad)}, listed as unpredictable {len(listed)}")
    by_case: dict[str, dict[str, str]] = {}
    for row in rows:
        by_case.setdefault(row.case, {})[row.reader] = row.actual.verdict
    pairs = [c for c in by_case.values() if "llvm-readobj-22" in c and "llvm-readobj-23" in c]
    if pairs:
        differ = sum(c["llvm-readobj-22"] != c["llvm-readobj-23"] for c in pairs)
        out.append(f"- llvm-readobj 23 against 22: {differ} of {len(pairs)} cases differ")
    return "\n".join(out)


def select(kinds: set[str]) -> Iterator[tuple[str, bytes]]:
    from . import oracle_cases as oc
    gens = {"corpus": oc.corpus_files, "upstream": oc.upstream_cases,
            "regression": oc.regression_cases, "hostile": oc.hostile_cases}
    for k, gen in gens.items():
        if k in kinds:
            yield from gen()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz.oracles")
    ap.add_argument("command", choices=["table"])
    ap.add_argument("--cases", default="corpus,upstream,regression,hostile")
    ap.add_argument("--readers", default=None, help="comma-separated reader names")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    readers = available(args.readers.split(",") if args.readers else None)
    if not readers:
        print(f"no readers in {readers_dir()}: run bash fuzz/get-readers.sh")
        return 2
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        rows = list(compare(select(set(args.cases.split(","))), readers, Path(tmp)))
    text = summary(rows)
    print(text)
    for row in rows:
        if not row.ok and not row.known:
            print(f"MISMATCH {row.case} {row.reader}: actual {row.actual.verdict} "
                  f"({row.actual.detail}), predicted "
                  f"{row.predicted.verdict if row.predicted else '-'} "
                  f"{row.predicted.errors if row.predicted else ''}")
    if args.out:
        args.out.write_text(f"# Real readers against sfcheck's profiles\n\n"
                            f"`python -m fuzz.oracles table` ({len(rows)} runs, "
                            f"{time.monotonic() - t0:.0f} s)\n\n{text}\n\n{table(rows)}\n")
    return 1 if any(not r.ok and not r.known for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
