"""errors.py's promise: every failure caused by input data is a SfcheckError. Every
exception class defined in sfcheck/ is found (each module imported, or read as source
where an optional dependency is missing) and must derive from SfcheckError unless it is
one of the few listed here, each with the reason it is not an input error."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import sfcheck
from sfcheck.errors import SfcheckError

# module.Class -> why it is not an input error
NOT_INPUT_ERRORS = {
    "sfcheck.dwarf.callframe.WorkBound": "a work bound reached: becomes the FDE's limit note",
    "sfcheck.rules.semantic.check._Stop": "the cross-check's work bound: ends the comparison",
    "sfcheck.unwind.unwinder._StepFail": "a step that cannot be taken: becomes a StopReason",
    "sfcheck.unwind.table._Bad": "an unusable FDE: becomes the lookup's miss",
    "sfcheck.readers.outcome.PastSection": "what a modelled reader does (an outcome of it)",
    "sfcheck.readers.v3series._Fault": "a modelled reader's fault (an outcome of it)",
}


def _modules() -> tuple[list[object], list[Path]]:
    """Every module of the package imported, and the files of those that need an optional
    dependency that is missing (rpmlint for the rpmlint check)."""
    imported, unimportable = [], []
    for info in pkgutil.walk_packages(sfcheck.__path__, "sfcheck."):
        if info.name.endswith(".__main__"):
            continue  # running it is its only use
        try:
            imported.append(importlib.import_module(info.name))
        except ModuleNotFoundError as exc:
            assert exc.name and not exc.name.startswith("sfcheck"), exc
            spec = importlib.util.find_spec(info.name)
            assert spec is not None and spec.origin
            unimportable.append(Path(spec.origin))
    return imported, unimportable


def _exception_classes() -> dict[str, type[BaseException]]:
    imported, _ = _modules()
    return {f"{mod.__name__}.{v.__qualname__}": v for mod in imported
            for v in vars(mod).values()
            if isinstance(v, type) and issubclass(v, BaseException)
            and v.__module__ == mod.__name__}


def test_every_input_error_is_a_sfcheck_error() -> None:
    found = _exception_classes()
    assert len(found) >= 20  # the walk reached the package (22 classes when written)
    wrong = sorted(name for name, cls in found.items()
                   if name not in NOT_INPUT_ERRORS and not issubclass(cls, SfcheckError))
    assert wrong == []
    # each listed exception still exists, and is not a SfcheckError after all
    assert sorted(n for n in NOT_INPUT_ERRORS if n not in found) == []
    assert sorted(n for n in NOT_INPUT_ERRORS if issubclass(found[n], SfcheckError)) == []


def test_the_formerly_plain_ones() -> None:
    """The classes that were plain Exceptions or ValueErrors (issue 25)."""
    found = _exception_classes()
    for name in ("sfcheck.dwarf.leb128.LebError", "sfcheck.dwarf.cursor.EhFrameError",
                 "sfcheck.dwarf.cfi.CfiError", "sfcheck.procfs.ProcError",
                 "sfcheck.filesnap.SnapshotError", "sfcheck.unwind.sysroot.Refused",
                 "sfcheck.integrations.rpmlint_map.ConfigError"):
        assert issubclass(found[name], SfcheckError), name


def test_modules_not_importable_here_define_no_exception() -> None:
    """A module that needs a missing optional dependency is read as source: a class there
    whose base names an error or exception would escape the walk above."""
    _, unimportable = _modules()
    for path in unimportable:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                assert not any(b.endswith(("Error", "Exception")) for b in bases), \
                    (path, node.name, bases)
