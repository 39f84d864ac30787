"""tests/mutation.py refuses argument lists it would run wrongly, before any work."""

from __future__ import annotations

import mutation
import pytest


@pytest.mark.parametrize("argv", [
    ["--mutants", "a", "b", "format"],  # the group swallowed as a mutant name
    ["--mutants", "a"],  # no group
    ["format", "dwarf", "--mutants", "a"],  # a mutant belongs to one group
    ["no-such-group"],
])
def test_refused_before_running(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        mutation.parse_args(argv)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_one_group_with_its_mutants_is_taken() -> None:
    args = mutation.parse_args(["format", "--mutants", "a", "b"])
    assert (args.groups, args.mutants) == (["format"], ["a", "b"])
