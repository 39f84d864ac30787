"""The ELF layer's one way in for the rules: sfcheck/rules/ imports sfcheck.elf.model and
nothing else of sfcheck/elf/, and the model imports nothing of the loader's side."""

from __future__ import annotations

import ast
from pathlib import Path

import sfcheck

PACKAGE = Path(sfcheck.__file__).parent


def _imports(path: Path) -> set[str]:
    """Absolute names of the sfcheck modules `path` imports from."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)  # `from ..elf import model`
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {n for n in out if n.startswith("sfcheck.")}


def _elf_imports(paths: list[Path]) -> dict[str, set[str]]:
    return {str(p.relative_to(PACKAGE)): {n for n in _imports(p)
                                          if n == "sfcheck.elf" or n.startswith("sfcheck.elf.")}
            for p in paths}


def test_rules_import_only_the_model() -> None:
    got = _elf_imports(sorted((PACKAGE / "rules").rglob("*.py")))
    assert any("sfcheck.elf.model" in names for names in got.values())  # the walk sees them
    wrong = {path: names - {"sfcheck.elf.model"} - {f"sfcheck.elf.model.{n}" for n in
                                                     _model_names()}
             for path, names in got.items()}
    assert {path: names for path, names in wrong.items() if names} == {}


def _model_names() -> set[str]:
    from sfcheck.elf import model

    return set(vars(model))


def test_the_model_imports_nothing_of_the_loader() -> None:
    names = _elf_imports([PACKAGE / "elf" / "model.py"])["elf/model.py"]
    assert names <= {"sfcheck.elf.constants", "sfcheck.elf.constants.SHT_GNU_SFRAME"}
