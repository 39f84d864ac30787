"""Rewrites the parts of README.md and docs/*.md that mirror the command line, from the
command line itself, so the documentation cannot drift from it.

A generated region is

    <!-- generated: WHAT -->
    ...
    <!-- end -->

where WHAT is `commands` (the commands of `sfcheck --help`), `profiles` (`sfcheck
profiles` as a table), `rules` (`sfcheck rules` counted per group and severity), `rules GROUP`
(that group's rules), `exit-status` (the exit status list of `sfcheck check --help`),
`options COMMAND` (that command's options and their help) or `output ARGS...` (what
`sfcheck ARGS...` prints, run from the current directory: a checkout).

    python -m sfcheck.docgen            rewrite README.md and docs/*.md in place
    python -m sfcheck.docgen --check    exit 1 naming the files that differ
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import cli

REGION = re.compile(r"(<!-- generated: (?P<what>[^>]*?) -->\n)(?P<body>.*?)(<!-- end -->)",
                    re.S)
# The environment generated output is produced in: no colour, a fixed width.
OUTPUT_ENV = {"NO_COLOR": "1", "COLUMNS": "100"}


def _cli_output(argv: list[str]) -> str:
    """What `sfcheck ARGV` prints on stdout, run in this process (argparse's --help
    exits through SystemExit)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cli.main(argv)
    return out.getvalue()


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def profiles(printed: str | None = None) -> list[str]:
    """`sfcheck profiles` (or `printed`, text in its layout) as a table: its columns start
    where its header's words do; a line with an empty first column continues the row above;
    a `Sources:` list after the table (NAME: SOURCE) becomes a column of its own."""
    lines = (_cli_output(["profiles"]) if printed is None else printed).splitlines()
    header = lines[0]
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=  ))\S", header)]
    spans = list(zip(starts, [*starts[1:], None], strict=True))
    names = [header[a:b].strip().lower() for a, b in spans]
    rows: list[list[str]] = []
    i = 1
    while i < len(lines) and lines[i].strip():
        cells = [lines[i][a:b].strip() for a, b in spans]
        if cells[0] or not rows:
            rows.append(cells)
        else:  # a wrapped cell
            rows[-1] = [f"{old} {new}".strip() for old, new in zip(rows[-1], cells, strict=True)]
        i += 1
    sources: dict[str, str] = {}
    notes: list[str] = []
    name = None
    for line in lines[i:]:
        if line.strip() == "Sources:":
            name = ""
        elif name is not None and re.match(r"  \S", line):
            name, _, text = line.strip().partition(": ")
            sources[name] = text
        elif name and line.startswith("    "):
            sources[name] += " " + line.strip()
        elif line.strip():
            name = None
            notes.append(line.strip())
    if sources:
        names.append("source")
        rows = [[*r, sources.get(r[0], "-")] for r in rows]
    for r in rows:
        r[0] = f"`{r[0]}`"
    return [*_table(names, rows), *([""] + [" ".join(notes)] if notes else [])]


def _rule_lines() -> dict[str, list[tuple[str, str, str]]]:
    """`sfcheck rules`: group -> (id, severity, title) in the order printed."""
    groups: dict[str, list[tuple[str, str, str]]] = {}
    group = ""
    for line in _cli_output(["rules"]).splitlines():
        if not line.startswith(" "):
            group = line.rstrip(":")
            groups[group] = []
        else:
            rule_id, severity, title = line.split(None, 2)
            groups[group].append((rule_id, severity, title))
    return groups


def rules(group: str | None = None) -> list[str]:
    """`sfcheck rules` counted per group and default severity; or one group's rules."""
    groups = _rule_lines()
    if group is not None:
        if group not in groups:
            raise ValueError(f"no rule group {group!r} (one of {', '.join(groups)})")
        return _table(["rule", "severity", "what it says"],
                      [[f"`{i}`", sev, title] for i, sev, title in groups[group]])
    counts: dict[str, dict[str, int]] = {}
    for name, members in groups.items():
        counts[name] = {}
        for _, severity, _ in members:
            counts[name][severity] = counts[name].get(severity, 0) + 1
    severities = sorted({s for c in counts.values() for s in c},
                        key=["error", "warning", "info"].index)
    rows = [[f"`{g}`", str(sum(c.values())), *(str(c.get(s, 0)) for s in severities)]
            for g, c in counts.items()]
    rows.append(["all", str(sum(int(r[1]) for r in rows)),
                 *(str(sum(c.get(s, 0) for c in counts.values())) for s in severities)])
    return _table(["group", "rules", *severities], rows)


def exit_status() -> list[str]:
    """The `exit status:` list of `sfcheck check --help`, and the note after it."""
    text = _cli_output(["check", "--help"])
    lines = text[text.index("exit status:"):].splitlines()[1:]
    rows: list[list[str]] = []
    after: list[str] = []
    for line in lines:
        m = re.match(r"\s*(\d+)\s+(.*)", line)
        if m and not after:
            rows.append([m[1], m[2]])
        elif line.startswith("    ") and rows and not after:
            rows[-1][1] += " " + line.strip()
        elif line.strip():
            after.append(line.strip())
    return [*_table(["status", "meaning"], rows), *([""] + [" ".join(after)] if after else [])]


def options(command: str) -> list[str]:
    """A command's options as its --help gives them (invocation and help text)."""
    parser = cli.build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    cmd = sub.choices[command]
    fmt = cmd._get_formatter()
    rows = [[f"`{fmt._format_action_invocation(a)}`", fmt._expand_help(a)]
            for a in cmd._actions if a.option_strings and a.help != argparse.SUPPRESS
            and not isinstance(a, argparse._HelpAction)]
    return _table(["option", "meaning"], rows)


def commands() -> list[str]:
    """The commands `sfcheck --help` lists, with their one-line help."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    rows = [[f"`sfcheck {a.dest}`", a.help or ""] for a in sub._choices_actions]
    return _table(["command", "what it does"], rows)


def output(args: list[str]) -> list[str]:
    """What `sfcheck ARGS` prints (stdout, then stderr) in a fenced block, in a fresh
    process as a user runs it, without trailing blanks."""
    env = {**os.environ, **OUTPUT_ENV}
    res = subprocess.run([sys.executable, "-m", "sfcheck", *args], capture_output=True,
                         text=True, env=env, timeout=120)
    body = (res.stdout + res.stderr).rstrip("\n")
    # Trailing blanks (objdump's columns) are dropped: editors strip them from Markdown.
    return ["```text", *(line.rstrip() for line in body.splitlines()), "```"]


GENERATORS: dict[str, Callable[[list[str]], list[str]]] = {
    "commands": lambda _: commands(),
    "profiles": lambda _: profiles(),
    "rules": lambda a: rules(a[0] if a else None),
    "exit-status": lambda _: exit_status(),
    "options": lambda a: options(a[0]),
    "output": lambda a: output(a[1:] if a and a[0] == "sfcheck" else a),
}


def render(what: str) -> str:
    kind, *args = shlex.split(what)
    if kind not in GENERATORS:
        raise ValueError(f"unknown generated region {what!r} (one of {', '.join(GENERATORS)})")
    return "\n".join(GENERATORS[kind](args)) + "\n"


def rewrite(text: str) -> str:
    return REGION.sub(lambda m: m[1] + render(m["what"]) + m[4], text)


def default_files(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sfcheck.docgen",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 naming the files that differ")
    parser.add_argument("files", nargs="*", type=Path,
                        help="default: README.md and docs/*.md of the current directory")
    args = parser.parse_args(argv)
    stale = []
    for path in args.files or default_files(Path.cwd()):
        if not path.exists():
            continue
        old = path.read_text(encoding="utf-8")
        new = rewrite(old)
        if new != old:
            stale.append(str(path))
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"out of date: {', '.join(stale)}; run `python -m sfcheck.docgen`",
              file=sys.stderr)
        return 1
    for name in stale:
        print(f"rewrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
