"""tests/mutation.py refuses argument lists it would run wrongly, before any work."""

from __future__ import annotations

import mutation
import pytest


@pytest.mark.parametrize("argv", [
    ["--mutants", "a", "b", "format"],  # the group swallowed as a mutant name
    ["--mutants", "a"],  # no group
    ["format", "dwarf", "--mutants", "a"],  # a mutant belongs to one group
    ["no-such-group"],
    ["format", "dwarf", "--resume", "t"],  # a tree holds one group's run
    ["--collect", "t"],
    ["format", "--keep", "d", "--resume", "t"],  # --keep makes a tree, --resume reuses one
    ["format", "dwarf", "--keep", "d"],  # one tree, reconfigured per group: only one resumable
    ["--keep", "d"],
    ["format", "--timeout-multiplier", "0.9"],  # a survivor would be stopped as a timeout
    ["format", "--timeout-multiplier", "nan"],
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


def _fake_python(tmp_path, fails: int):  # noqa: ANN001, ANN202
    """A 'python' beside a fake mutmut that fails its first `fails` calls, then prints diffs."""
    (tmp_path / "calls").write_text("0")
    script = tmp_path / "python"
    script.write_text(
        "#!/bin/sh\n"
        f"n=$(cat {tmp_path}/calls); echo $((n + 1)) > {tmp_path}/calls\n"
        f"if [ \"$n\" -lt {fails} ]; then echo truncated meta >&2; exit 1; fi\n"
        "cat >/dev/null; echo '{\"m\": \"diff\"}'\n")
    script.chmod(0o755)
    return str(tmp_path / "mutmut")


def test_diffs_are_read_again_when_a_live_run_rewrites_its_meta(tmp_path) -> None:  # noqa: ANN001
    assert mutation._diffs(tmp_path, _fake_python(tmp_path, 2), ["m"]) == {"m": "diff"}
    assert (tmp_path / "calls").read_text().strip() == "3"


def test_diffs_that_never_read_end_in_one_line(tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit, match="diffs in .* failed:\ntruncated meta"):
        mutation._diffs(tmp_path, _fake_python(tmp_path, 3), ["m"])


def test_equivalence_entries_that_name_no_mutant_of_a_mutated_module_are_stale() -> None:
    known = {"sfcheck.a.x_old__mutmut_1": "why", "sfcheck.a.xǁCǁm__mutmut_2": "why",
             "sfcheck.a.x_f__mutmut_1": "why", "sfcheck.b.x_g__mutmut_1": "why"}
    states = {"sfcheck.a.x_f__mutmut_1": "survived", "sfcheck.a.xǁCǁm__mutmut_1": "killed"}
    # sfcheck.b was not mutated in this run: its entries are not judged
    assert mutation.stale_equivalents(known, states) == [
        "sfcheck.a.x_old__mutmut_1", "sfcheck.a.xǁCǁm__mutmut_2"]


def test_a_tree_of_another_group_is_not_resumed(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001, E501
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pyproject.toml").write_text("[project]\n" + mutation._config(*mutation.GROUPS["walk"]))
    # refused before mutmut is looked for (CI's test install has none)
    assert mutation.main(["format", "--resume", str(tree), "-o", str(tmp_path / "r.md")]) == 2
    assert "is not a run of the group format" in capsys.readouterr().err


def test_a_directory_that_holds_no_run_is_not_resumed(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001, E501
    assert mutation.main(["walk", "--resume", str(tmp_path), "-o", str(tmp_path / "r.md")]) == 2
    assert "is not a run of the group walk" in capsys.readouterr().err


def test_a_kept_tree_is_not_overwritten(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001, E501
    (tmp_path / "tree").mkdir()
    assert mutation.main(["walk", "--keep", str(tmp_path), "-o", str(tmp_path / "r.md")]) == 2
    assert "tree exists: resume it with --resume" in capsys.readouterr().err


def test_timeout_multiplier_is_written_once_into_a_tree(tmp_path) -> None:  # noqa: ANN001
    config = tmp_path / "pyproject.toml"
    config.write_text("[project]\nname = 'x'\n" + mutation._config(["m.py"], ["t.py"]))
    mutation._set_timeout(tmp_path, None)  # not given: mutmut's default stays
    assert "timeout_multiplier" not in config.read_text()
    mutation._set_timeout(tmp_path, 3.0)
    mutation._set_timeout(tmp_path, 4.0)  # a second resume replaces it
    text = config.read_text()
    assert text.count("timeout_multiplier") == 1
    assert text.endswith("timeout_multiplier = 4.0\n")
    assert text.index("[tool.mutmut]") < text.index("timeout_multiplier")
    assert mutation._config(["m.py"], ["t.py"], 2.0).endswith("timeout_multiplier = 2.0\n")
    args = mutation.parse_args(["format", "--timeout-multiplier", "1"])
    assert args.timeout_multiplier == 1.0
