"""Mutation testing of sfcheck's modules with mutmut, in one command, within a time budget.

    python tests/mutation.py [--budget SECONDS] [--jobs N] [--examples N] [GROUP ...]
    python tests/mutation.py GROUP --mutants NAME ...   # only these mutants
    python tests/mutation.py GROUP --keep DIR ...  then  GROUP --resume DIR/tree ...  # go on

Each group is a set of modules and the test files that cover them (GROUPS). The script copies
the committed tree (`git archive HEAD`) to a temporary directory, runs `mutmut run` there per
group (a group stops at its share of the budget; mutants not reached are counted as not run),
and writes the score and every survivor to reports/mutation-DATE.md. Mutants that only change
the prose of a message (mutmut's "XX" wrapping or a case change of a str literal with a letter
and a space that is not compared, looked up or a key) are counted apart, since no test should
pin the wording of every message; a changed name, key, separator, format or bytes literal is
judged like any other mutant. Property tests run at most --examples examples per
mutant (SFCHECK_MUTATION_EXAMPLES, read by tests/conftest.py): at their own counts one
surviving mutant costs minutes. Not in the per-push CI (minutes per group); needs
the `test` extra plus mutmut (`pip install mutmut`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAD_FILE = ".mutation-head"  # in a kept tree: the commit it was archived from



def _top_level(directory: str) -> list[str]:
    """The modules directly in `directory` (not in its packages), as only_mutate paths."""
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / directory).glob("*.py"))


def _matching(pattern: str) -> list[str]:
    """The test files named by `pattern` (a group's mutant-killing files join when added)."""
    return sorted(f"tests/{p.name}" for p in (ROOT / "tests").glob(pattern))


def _present(*names: str) -> list[str]:
    """The test files of `names` that exist (new mutant-killing files join when added)."""
    return [f"tests/{n}" for n in names if (ROOT / "tests" / n).exists()]


# tests/test_fastpath_equivalence.py takes about six minutes, 90 % of it in its three
# byte-flipping loops (300 copies of a 400-FDE section per case); its other tests, selected by
# node id, compare the two paths in under a minute and keep one survivor's run short
_FAST_EQUIVALENCE = [f"tests/test_fastpath_equivalence.py::{t}" for t in (
    "test_generated_sections", "test_damaged_sections", "test_fast_path_used_on_clean_sections",
    "test_aliased_blocks_before_clean_ones", "test_real_sections_present", "test_real_sections",
    "test_function_range_shortcut", "test_dump_generated_and_damaged",
    "test_blocks_out_of_table_order")]
_RULES_MUTANTS = _matching("test_rules_mutants_*.py")
_SEMANTIC_MUTANTS = _matching("test_semantic_mutants_*.py")
_WALK_MUTANTS = _present("test_walk_mutants.py", "test_rules_mutants_cached.py",
                         "test_walk_mutants_table.py", "test_walk_mutants_columns.py",
                         "test_walk_mutants_order.py", "test_walk_mutants_abi.py",
                         "test_walk_mutants_cap.py", "test_walk_mutants_bigtable.py",
                         "test_walk_mutants_section.py", "test_walk_mutants_joins.py")

# group -> (modules to mutate, test files that cover them)
GROUPS: dict[str, tuple[list[str], list[str]]] = {
    "waivers": (["sfcheck/waivers.py"], ["tests/test_waivers.py", "tests/test_waivers_parse.py",
                                         "tests/test_gate_edges.py"]),
    "inputs": (["sfcheck/inputs/*"], ["tests/test_inputs.py", "tests/test_gate_edges.py",
                                      "tests/test_elf_packages.py", "tests/test_tar_headers.py",
                                      "tests/test_tmpdir.py", "tests/test_inputs_lazy_names.py",
                                      "tests/test_inputs_mutants_tar.py",
                                      "tests/test_inputs_mutants_walk.py",
                                      "tests/test_inputs_mutants_packages.py",
                                      "tests/test_inputs_mutants_spill.py",
                                      "tests/test_inputs_mutants_rpm.py",
                                      "tests/test_inputs_mutants_expand.py",
                                      "tests/test_inputs_mutants_limits.py",
                                      "tests/test_inputs_mutants_headers.py",
                                      "tests/test_inputs_mutants_spillfull.py",
                                      *_present("test_inputs_mutants_literals.py")]),
    "format": (["sfcheck/format/*"], ["tests/test_format_units.py", "tests/test_format_props.py",
                                      "tests/test_fde_table.py", "tests/test_layout_blocks.py",
                                      "tests/test_fre_blocks_nexts.py", "tests/test_fre_info.py",
                                      "tests/test_fre_rules.py", "tests/test_encode_fre.py",
                                      "tests/test_walk_paths.py",
                                      "tests/test_format_locations.py",
                                      "tests/test_fre_blocks_decoder.py",
                                      "tests/test_format_mutants_encode.py",
                                      "tests/test_format_mutants_decode.py",
                                      *_present("test_format_mutants_literals.py")]),
    # mutmut matches only_mutate with fnmatch, whose `*` crosses `/`: "sfcheck/rules/*.py"
    # would mutate rules/semantic/ too (its own group), so the top-level modules are listed
    "rules": (_top_level("sfcheck/rules"),
              ["tests/test_rules.py", "tests/test_elf_rules.py", "tests/test_rule_locations.py",
               "tests/test_rule_fde_no_fres.py", "tests/test_rule_versions.py",
               "tests/test_rule_location_catalogue.py", "tests/test_profiles.py",
               "tests/test_profiles_objects.py", "tests/test_coverage.py",
               "tests/test_defect_raw_copy.py", "tests/test_catalog_order.py",
               "tests/test_citations.py", "tests/test_fast_classes.py",
               "tests/test_elf_shipped.py", "tests/test_cross_check_nobits.py",
               "tests/test_userrules.py", "tests/test_gate_edges.py", "tests/test_context.py",
               "tests/test_layout_blocks.py", "tests/test_semantic.py",
               # _any_flex_decoded, _any_flex's reference, is run by these tests alone
               "tests/test_models_fast_flex.py",
               *_FAST_EQUIVALENCE, *_RULES_MUTANTS]),
    # the fast path (the C walk, _frewalk.c, is built by the script, not mutated)
    "walk": (_top_level("sfcheck/walk"),
             ["tests/test_fast_classes.py", "tests/test_frewalk.py", "tests/test_walk_paths.py",
              "tests/test_semantic_shared_walk.py", "tests/test_rules.py",
              "tests/test_context.py", "tests/test_ranges.py", "tests/test_layout_blocks.py",
              "tests/test_rule_versions.py", "tests/test_rule_location_catalogue.py",
              "tests/test_coverage.py", "tests/test_defect_raw_copy.py",
              *_FAST_EQUIVALENCE, *_WALK_MUTANTS]),
    "semantic": (["sfcheck/rules/semantic/*"], ["tests/test_semantic.py",
                                                "tests/test_semantic_units.py",
                                                "tests/test_semantic_settle.py",
                                                "tests/test_semantic_bounds.py",
                                                "tests/test_semantic_shared_walk.py",
                                                "tests/test_xcheck_fast.py",
                                                "tests/test_semantic_tiles.py",
                                                *_SEMANTIC_MUTANTS]),
    # the .eh_frame reader apart: its corpus-wide comparison with pyelftools makes each mutant slow
    "dwarf": (["sfcheck/dwarf/cfi.py", "sfcheck/dwarf/expr.py", "sfcheck/dwarf/leb128.py",
               "sfcheck/dwarf/linear.py"],
              ["tests/test_dwarf_cfi.py", "tests/test_dwarf_expr.py", "tests/test_ehframe.py",
               "tests/test_xcheck_fast_expr.py", "tests/test_dwarf_mutants_linear.py"]),
    "ehframe": (["sfcheck/dwarf/ehframe.py", "sfcheck/dwarf/callframe.py",
                 "sfcheck/dwarf/cursor.py"],
                ["tests/test_ehframe_pointers.py", "tests/test_dwarf_cfi.py",
                 "tests/test_ehframe.py", "tests/test_semantic_bounds.py",
                 "tests/test_ehframe_mutants_exec.py", "tests/test_ehframe_mutants_reader.py",
                 "tests/test_ehframe_mutants_pointers.py", "tests/test_ehframe_mutants_glue.py",
                 # the C reader (built by the script) against the Python one: where read_columns
                 # takes the C path, this comparison is what sees a mutant of the reference
                 "tests/test_cfirun.py", *_present("test_ehframe_mutants_literals.py")]),
    # the walk on hand-built tables and stacks; core files, modules and sysroots apart: their
    # tests build programs and cores (about a minute for the files, per surviving mutant)
    "unwind": (["sfcheck/unwind/__init__.py", "sfcheck/unwind/abi.py",
                "sfcheck/unwind/memory.py", "sfcheck/unwind/sigframe.py",
                "sfcheck/unwind/table.py", "sfcheck/unwind/unwinder.py"],
               ["tests/test_unwind_semantics.py",
                "tests/test_unwind_props.py",
                "tests/test_unwind_sigframe.py",
                "tests/test_unwind_sigframe_regs.py",
                "tests/test_unwind_lazy_names.py",
                "tests/test_unwind_memory.py",
                "tests/test_unwind_stops.py",
                "tests/test_unwind_table.py",
                *_present("test_unwind_mutants_table.py", "test_unwind_mutants_walk.py",
                          "test_unwind_mutants_literals.py")]),
    "unwind-core": (["sfcheck/unwind/core.py", "sfcheck/unwind/modules.py",
                     "sfcheck/unwind/notes.py", "sfcheck/unwind/sysroot.py"],
                    ["tests/test_unwind_cores.py", "tests/test_unwind_changed.py",
                     *_present("test_unwind_mutants_core_notes.py",
                               "test_unwind_mutants_core_modules.py",
                               "test_unwind_mutants_core_literals.py")]),
}
STATES = ("killed", "survived", "no tests", "timeout", "suspicious", "skipped", "not checked",
          "segfault")
_STRING_ONLY = re.compile(r"XX|\"|'")
# "mutant: why it is equivalent" per line; such a survivor is counted apart, with its reason.
# A reason starting "import-time" marks a mutant no test run can see: the function ran while
# the module was imported (a table, a cached value), before mutmut switched the mutant on.
EQUIVALENTS = Path(__file__).with_name("mutation_equivalent.txt")


def _equivalents() -> dict[str, str]:
    out = {}
    for line in EQUIVALENTS.read_text().splitlines():
        name, sep, why = line.partition(": ")
        if sep and not line.startswith("#"):
            out[name.strip()] = why.strip()
    return out


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def _only_mutate(modules: list[str]) -> str:
    """The config line naming a group's modules: also what tells a kept tree's group."""
    return f"only_mutate = {_toml_list(modules)}"


def _config(modules: list[str], tests: list[str], timeout: float | None = None) -> str:
    return ("\n[tool.mutmut]\nsource_paths = [\"sfcheck\"]\n"
            f"{_only_mutate(modules)}\n"
            f"pytest_add_cli_args_test_selection = {_toml_list(tests)}\n"
            "pytest_add_cli_args = [\"-p\", \"no:cacheprovider\", \"-x\", \"-q\"]\n"
            "also_copy = [\"tests\", \"corpus\", \"bench\", \"fuzz\"]\n"
            + _timeout_line(timeout))


def _timeout_line(timeout: float | None) -> str:
    # mutmut stops a mutant after (tests' time + 1 s) * multiplier * 2 CPU seconds, or half
    # that in wall-clock time, the multiplier 15 by default: 20 minutes for a mutant that
    # loops under 40 s of tests. A surviving mutant runs the same tests, 1x their measured time
    # on an idle machine but several times that beside other work: below the default, a
    # timeout on a loaded machine may be a survivor (layout.check_trailing 4 was, at 1.5 beside
    # a load of 7), so a reduced multiplier's timeouts are to be applied by hand.
    return "" if timeout is None else f"timeout_multiplier = {timeout}\n"


def _set_timeout(work: Path, timeout: float | None) -> None:
    """Set a kept tree's mutmut timeout multiplier (mutmut then rejudges only its timeouts)."""
    if timeout is None:
        return
    config = work / "pyproject.toml"
    base, sep, ours = config.read_text().partition("\n[tool.mutmut]")
    ours = "".join(ln for ln in ours.splitlines(keepends=True)
                   if not ln.startswith("timeout_multiplier ="))
    config.write_text(base + sep + ours + _timeout_line(timeout))


def _message_only(diff: str) -> bool:
    """A mutant that changes message text only: each changed line differs from the original in
    string literals alone, each of them prose (a str, not bytes, with a letter and a space)
    that is not compared, looked up or used as a key, and equal to the original once mutmut's
    XX markers are dropped and case is ignored. A changed separator, name, key, format or
    bytes literal changes what the code does: such a mutant is judged like any other."""
    minus = [ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    if not minus or len(minus) != len(plus):
        return False
    return all(_text_only(a, b) for a, b in zip(minus, plus, strict=True))


# tokens beside a literal that make it data: compared, looked up, a key, an index
_DATA_NEIGHBOURS = {"==", "!=", "in", "is", "not", "[", "]", ":"}


def _tokens(line: str) -> list[tokenize.TokenInfo]:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if tok.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER,
                                tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
                out.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a line of a statement that goes on: its tokens so far are what is compared
    return out


def _text_only(old: str, new: str) -> bool:
    a, b = _tokens(old), _tokens(new)
    if len(a) != len(b) or not a:
        return False
    changed = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x.string != y.string]
    for i in changed:
        x, y = a[i], b[i]
        if x.type != tokenize.STRING or y.type != tokenize.STRING:
            return False
        prefix = re.match(r"[A-Za-z]*", x.string).group().lower()
        body = x.string[len(prefix):]
        if "b" in prefix or not (re.search(r"[A-Za-z]", body) and re.search(r"\s", body)):
            return False
        if _STRING_ONLY.sub("", x.string).lower() != _STRING_ONLY.sub("", y.string).lower():
            return False
        beside = {a[j].string for j in (i - 1, i + 1) if 0 <= j < len(a)}
        if beside & _DATA_NEIGHBOURS:
            return False
    return bool(changed)


def _run_group(work: Path, mutmut: str, name: str, budget: float, jobs: int,
               examples: int, only: list[str], timeout: float | None = None) -> dict:
    modules, tests = GROUPS[name]
    shutil.rmtree(work / "mutants", ignore_errors=True)
    pyproject = work / "pyproject.toml"
    base = pyproject.read_text().split("\n[tool.mutmut]")[0]
    pyproject.write_text(base + _config(modules, tests, timeout))
    # The directory must exist before mutmut starts: a path entry that is missing at the
    # first import is cached as having no finder, and mutmut's own sys.path entry for
    # it would then be skipped too (the tests would import the installed sfcheck).
    (work / "mutants").mkdir()
    return _mutmut(work, mutmut, name, budget, jobs, examples, only, "wb")


def _mutmut(work: Path, mutmut: str, name: str, budget: float, jobs: int,
            examples: int, only: list[str], mode: str) -> dict:
    """Run mutmut in a configured tree for `budget` seconds; mutants it judged before (a
    resumed run) keep their verdicts, mutmut only runs those without one."""
    start = time.monotonic()
    with open(work / f"mutmut-{name}.log", mode) as log:
        env = dict(os.environ, SFCHECK_MUTATION_EXAMPLES=str(examples))
        # Each mutant runs in a fresh fork that imports the mutated modules and the test
        # files; without cached bytecode every one compiles them again (decode.py alone
        # holds ~1100 mutant functions) and pytest rewrites every test file's asserts.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # Tests that run `python -m sfcheck` in a child process (bounds, one-line errors)
        # would import the installed sfcheck, never the mutant: the mutated tree comes first
        # on their path, and MUTANT_UNDER_TEST, which mutmut sets, reaches them too.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(work / "mutants"), env.get("PYTHONPATH")) if p)
        proc = subprocess.Popen([mutmut, "run", "--max-children", str(jobs), *only], cwd=work,
                                env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(budget)
            finished = True
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 15)
            proc.wait()
            finished = False
    result = _collect(work, mutmut, time.monotonic() - start, finished)
    # mutmut exits non-zero when its first runs fail (a test red on the unmutated tree, a
    # collection error): no mutant is judged, and the run must not read as complete
    result["failed"] = None
    if finished and proc.returncode != 0:
        tail = (work / f"mutmut-{name}.log").read_bytes()[-4000:].decode(errors="replace")
        result["failed"] = f"mutmut exited with {proc.returncode}"
        print(f"{name}: {result['failed']}; the end of its log:\n{tail}", file=sys.stderr)
    return result


# One process for every diff (`mutmut show` per survivor costs seconds each).
_DIFFS = """import json, sys
from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant
names = json.load(sys.stdin)
json.dump({n: get_diff_for_mutant(n, path=find_mutant(n).path) for n in names}, sys.stdout)
"""


def _collect(work: Path, mutmut: str, seconds: float, finished: bool) -> dict:
    """The states of the group's mutants in `work`, survivors with their diffs."""
    results = subprocess.run([mutmut, "results", "--all", "true"], cwd=work,
                             capture_output=True, text=True).stdout
    states = {}
    for line in results.splitlines():
        mutant, _, state = line.strip().rpartition(": ")
        if mutant:
            states[mutant] = state
    alive = [m for m, state in states.items() if state in ("survived", "no tests")]
    diffs = _diffs(work, mutmut, alive)
    counts = dict.fromkeys(STATES + ("equivalent", "import-time"), 0)
    survivors, equivalents, messages = [], [], 0
    known = _equivalents()
    for mutant, state in states.items():
        counts[state] = counts.get(state, 0) + 1
        if state in ("survived", "no tests"):
            diff = f"# {mutant}\n{diffs[mutant]}"
            if _message_only(diff):
                messages += 1
                counts[state] -= 1
            elif mutant in known:
                counts["import-time" if known[mutant].startswith("import-time")
                       else "equivalent"] += 1
                counts[state] -= 1
                equivalents.append((mutant, known[mutant]))
            else:
                survivors.append((mutant, state, diff))
    return {"counts": counts, "survivors": survivors, "equivalents": equivalents,
            "messages": messages, "seconds": seconds, "finished": finished,
            "stale": stale_equivalents(known, states)}


def _module(mutant: str) -> str:
    """`pkg.mod.x_func__mutmut_3` or `pkg.mod.xǁClassǁmeth__mutmut_3` -> `pkg.mod`."""
    return re.split(r"\.x(?:_|ǁ)", mutant, maxsplit=1)[0]


def stale_equivalents(known: dict[str, str], states: dict[str, str]) -> list[str]:
    """Entries of tests/mutation_equivalent.txt for a module this run mutated that name no
    mutant of it: the function was renamed or edited, and the entry no longer excuses
    anything (its mutant, under a new name or number, is judged again)."""
    modules = {_module(m) for m in states}
    return sorted(n for n in known if _module(n) in modules and n not in states)


def _diffs(work: Path, mutmut: str, alive: list[str], tries: int = 3) -> dict[str, str]:
    """Each mutant's diff. --collect on a run still going can read a meta file mutmut is
    rewriting (a truncated JSON): the read is tried again before it fails."""
    for attempt in range(tries):
        done = subprocess.run([str(Path(mutmut).with_name("python")), "-c", _DIFFS], cwd=work,
                              input=json.dumps(alive), capture_output=True, text=True)
        if done.returncode == 0:
            return json.loads(done.stdout)
        if attempt + 1 < tries:
            time.sleep(1)
    raise SystemExit(f"mutation.py: reading the mutants' diffs in {work} failed:\n"
                     f"{done.stderr[-2000:]}")


def _completion(r: dict) -> str:
    if r.get("failed"):
        return f"no ({r['failed']})"
    return "yes" if r["finished"] else "no (budget)"


def _score(counts: dict) -> tuple[int, int]:
    judged = counts["killed"] + counts["survived"] + counts["no tests"] + counts["timeout"]
    return counts["killed"] + counts["timeout"], judged  # a timeout is a detected change


def _report(out: Path, results: dict[str, dict], budget: float, examples: int,
            head: str) -> None:
    today = datetime.date.today().isoformat()
    lines = [f"# Mutation testing, {today}", "",
             f"`python tests/mutation.py` at {head} (mutmut, budget {budget:.0f} s per "
             f"group, property tests capped at {examples} examples). Score = killed (or timed "
             "out) / mutants judged, message-text mutants "
             "apart; 'no tests' means no selected test runs the mutated function.", "",
             "| group | killed | survived | equivalent | import-time | no tests | timeout | "
             "message-only | not run | score | time | complete |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        c = r["counts"]
        killed, judged = _score(c)
        score = f"{100 * killed / judged:.1f} %" if judged else "-"
        lines.append(f"| {name} | {c['killed']} | {c['survived']} | {c['equivalent']} | "
                     f"{c['import-time']} | "
                     f"{c['no tests']} | {c['timeout']} | {r['messages']} | "
                     f"{c['not checked']} | {score} | {r['seconds']:.0f} s | "
                     f"{_completion(r)} |")
    for name, r in results.items():
        if r.get("stale"):
            lines += ["", f"## Stale entries in tests/mutation_equivalent.txt: {name}", "",
                      "Their module was mutated, but no mutant has their name (a function "
                      "renamed or edited): judge the mutant again under its new name.", ""]
            lines += [f"- `{mutant}`" for mutant in r["stale"]]
        if r["equivalents"]:
            lines += ["", f"## Equivalent and import-time mutants: {name} "
                      "(tests/mutation_equivalent.txt)", ""]
            lines += [f"- `{mutant}`: {why}" for mutant, why in r["equivalents"]]
        if not r["survivors"]:
            continue
        lines += ["", f"## Survivors: {name}", ""]
        for mutant, state, diff in r["survivors"]:
            body = "\n".join(ln for ln in diff.splitlines()[1:] if not ln.startswith("@@"))
            lines += [f"### `{mutant}` ({state})", "", "```diff", body.strip(), "```", ""]
    out.write_text("\n".join(lines) + "\n")


def _head() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # no `choices`: argparse (3.11) rejects the empty default of nargs="*" against them
    parser.add_argument("groups", nargs="*", metavar="GROUP", default=[],
                        help=f"groups to run (default: all): {', '.join(GROUPS)}")
    parser.add_argument("--budget", type=float, default=600, help="seconds per group")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--examples", type=int, default=25,
                        help="most hypothesis examples per property test and mutant")
    parser.add_argument("--timeout-multiplier", type=float, metavar="X",
                        help="mutmut's timeout_multiplier (default 15: a looping mutant runs "
                        "15 times its tests' time before it is stopped; below that, on a "
                        "loaded machine a survivor may be stopped too and count as a timeout)")
    parser.add_argument("--mutants", nargs="+", default=[], metavar="NAME",
                        help="run only these mutants of the GROUP (e.g. to check that new "
                        "tests kill a run's survivors); the others count as not run")
    parser.add_argument("--collect", type=Path, metavar="TREE",
                        help="only report the one GROUP already run in TREE (a run stopped "
                        "before its report: the tree is left when the script is killed)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="build the mutated tree in DIR/tree and keep it, so that a run "
                        "its budget stopped can be resumed")
    parser.add_argument("--resume", type=Path, metavar="TREE",
                        help="go on with the one GROUP's run in TREE (kept by --keep, or "
                        "left by a killed run) for --budget seconds: mutants already judged "
                        "keep their verdicts; the report covers them all")
    parser.add_argument("-o", "--output", type=Path,
                        default=ROOT / "reports" / f"mutation-{datetime.date.today()}.md")
    args = parser.parse_args(argv)
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        parser.error(f"unknown group {', '.join(unknown)} (groups: {', '.join(GROUPS)})")
    if (args.resume or args.collect) and len(args.groups) != 1:
        parser.error("--resume and --collect need exactly one GROUP")
    if args.keep and (args.resume or args.collect):
        parser.error("--keep makes a new tree: not with --resume or --collect")
    if args.keep and len(args.groups) != 1:
        # every group reconfigures the one tree: only the last would stay resumable
        parser.error("--keep needs exactly one GROUP")
    if args.timeout_multiplier is not None and not args.timeout_multiplier >= 1:
        # below 1 mutmut's wall-clock limit, multiplier x (the tests' time + 1 s), is shorter
        # than a surviving mutant's one run of those tests: it would count as a timeout
        parser.error("--timeout-multiplier must be at least 1")
    if args.mutants and len(args.groups) != 1:
        # `--mutants A B GROUP` reads GROUP as a mutant name: every group would run with none
        parser.error("--mutants needs exactly one GROUP, written before it: "
                     "mutation.py GROUP --mutants NAME ...")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.resume:
        # the tree runs its own tests at its own commit; only its modules must be the group's
        config = args.resume / "pyproject.toml"
        configured = config.read_text().partition("\n[tool.mutmut]")[2] if config.is_file() else ""
        if _only_mutate(GROUPS[args.groups[0]][0]) not in configured.splitlines():
            print(f"mutation: {args.resume} is not a run of the group {args.groups[0]}",
                  file=sys.stderr)
            return 2
    if args.keep and (args.keep / "tree").exists():
        print(f"mutation: {args.keep / 'tree'} exists: resume it with --resume, or keep the "
              "new run elsewhere", file=sys.stderr)
        return 2
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent))
    if mutmut is None:
        print("mutation: mutmut is not installed here (pip install mutmut)", file=sys.stderr)
        return 2
    results = {}
    if args.collect:
        (name,) = args.groups
        results[name] = _collect(args.collect, mutmut, 0, False)
        _report(args.output, results, args.budget, args.examples, "(collected)")
        print(f"report: {args.output}")
        return 0
    if args.resume:
        (name,) = args.groups
        work = args.resume
        head = (work / HEAD_FILE).read_text().strip() if (work / HEAD_FILE).exists() else "?"
        _set_timeout(work, args.timeout_multiplier)
        results[name] = _mutmut(work, mutmut, name, args.budget, args.jobs, args.examples,
                                args.mutants, "ab")
        _report(args.output, results, args.budget, args.examples, f"{head}, resumed")
        print(f"report: {args.output}")
        return 0
    head = _head()  # what is measured: the tree is archived now, the report written later
    with contextlib.ExitStack() as stack:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            tmp = str(args.keep)
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="sfcheck-mutation-"))
        work = Path(tmp) / "tree"
        work.mkdir()
        (work / HEAD_FILE).write_text(head + "\n")
        archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "x", "-C", str(work)], input=archive, check=True)
        # the C walk is gitignored; tests/test_walk_paths.py fails without it where it can
        # be built, and mutmut copies the built module into its mutants/ tree
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=work,
                       stdout=subprocess.DEVNULL, check=True)
        for name in args.groups or list(GROUPS):
            results[name] = _run_group(work, mutmut, name, args.budget, args.jobs,
                                       args.examples, args.mutants, args.timeout_multiplier)
            c = results[name]["counts"]
            killed, judged = _score(c)
            print(f"{name}: {killed}/{judged} killed, {results[name]['messages']} message-only",
                  flush=True)
            # after each group: a stop keeps them
            _report(args.output, results, args.budget, args.examples, head)
    print(f"report: {args.output}")
    if args.keep:
        print(f"tree kept: {work} (a group stopped by its budget goes on with "
              f"`tests/mutation.py GROUP --resume {work} -o ...`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
