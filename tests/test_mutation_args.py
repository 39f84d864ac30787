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


@pytest.mark.parametrize(("result", "shown"), [
    ({"finished": True, "failed": None}, "yes"),
    ({"finished": False, "failed": None}, "no (budget)"),
    # mutmut's first runs failed: nothing judged, never "complete"
    ({"finished": True, "failed": "mutmut exited with 1"}, "no (mutmut exited with 1)"),
])
def test_a_run_is_complete_only_when_mutmut_finished_cleanly(result: dict, shown: str) -> None:
    assert mutation._completion(result) == shown
