"""Where imports may go (issue 25): the fuzz harnesses import each other without a loop,
and the engines the command line drives hold no argparse code (sfcheck/cli/ does)."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT


def _fuzz_imports(path: Path) -> set[str]:
    """The fuzz/ modules `path` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from . import x / from .x import y
                found.update([node.module.split(".")[0]] if node.module
                             else [a.name for a in node.names])
            elif node.module == "fuzz":
                found.update(a.name for a in node.names)
            elif node.module and node.module.startswith("fuzz."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names
                         if a.name.startswith("fuzz."))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every module from which an import chain leads back to it, with one such chain."""
    out = []
    for start in sorted(graph):
        seen: set[str] = set()
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for dep in sorted(graph.get(node, ())):
                if dep == start:
                    out.append([*path, start])
                    stack.clear()
                    break
                if dep not in seen:
                    seen.add(dep)
                    stack.append((dep, [*path, dep]))
    return out


def test_cycle_finder_finds_a_loop_and_only_a_loop() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c", "a"], ["b", "c", "a", "b"], ["c", "a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}) == []


def test_fuzz_harnesses_import_each_other_without_a_loop() -> None:
    modules = {p.stem: p for p in (ROOT / "fuzz").glob("*.py")}
    graph = {name: _fuzz_imports(p) & set(modules) - {name} for name, p in modules.items()}
    assert graph["libsframe"] and graph["archive"]  # the harnesses' imports were read
    assert cycles(graph) == []


# The engines behind `check`, `dump`, `unwind` and `proc`, and the survey engine.
ENGINES = ["scan.py", "scan_worker.py", "proc.py", "procfs.py", "checker.py", "dump", "unwind",
           "survey"]


def _imports_argparse(path: Path) -> bool:
    return any(isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names)
               or isinstance(node, ast.ImportFrom) and node.module == "argparse"
               for node in ast.walk(ast.parse(path.read_text())))


def test_engines_hold_no_argparse_code() -> None:
    package = ROOT / "sfcheck"
    files = [f for e in ENGINES for f in ([package / e] if e.endswith(".py")
                                          else sorted((package / e).rglob("*.py")))]
    assert len(files) > len(ENGINES)
    assert _imports_argparse(package / "cli" / "unwind.py")  # where the parsers went
    users = [str(f.relative_to(package)) for f in files if _imports_argparse(f)]
    assert users == []
