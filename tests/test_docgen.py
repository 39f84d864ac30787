"""The README's and docs' tables and quoted output are what the command line gives
(sfcheck/docgen.py); a difference fails with the command that fixes it."""

from __future__ import annotations

import difflib
import re

import pytest

from sfcheck import cli, docgen
from sfcheck.cli import catalogue

from doc_examples import DOCS, blocks
from helpers import ROOT


@pytest.fixture(autouse=True)
def _in_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # `output` regions run sfcheck on corpus/ paths


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_generated_regions_are_current(doc) -> None:
    old = doc.read_text(encoding="utf-8")
    new = docgen.rewrite(old)
    diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        str(doc), "generated", n=1))
    assert new == old, f"run `python -m sfcheck.docgen` to update {doc.name}:\n{diff[:4000]}"


def test_readme_has_every_cli_table() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    kinds = {m["what"] for m in docgen.REGION.finditer(text)}
    assert {"commands", "profiles", "rules", "exit-status", "options check",
            "options dump"} <= kinds


def test_command_table_has_every_subcommand() -> None:
    rows = [line for line in docgen.commands() if line.startswith("| `sfcheck ")]
    assert sorted(r.split("`")[1].split()[1] for r in rows) == sorted(cli.SUBCOMMANDS)
    assert any("| `sfcheck unwind` | backtrace every thread" in r for r in rows)


def test_output_regions_follow_the_example_they_quote() -> None:
    """An `output sfcheck ARGS` region shows what the sh block right above it runs."""
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in docgen.REGION.finditer(text):
            if not m["what"].startswith("output "):
                continue
            line = text.count("\n", 0, m.start()) + 1
            above = [b for b in blocks(doc) if b.shell and b.line < line]
            assert above, f"{doc.name}:{line}: no example above the output"
            assert above[-1].script.strip() == m["what"].removeprefix("output "), \
                f"{doc.name}:{line}: the output is not of the example above it"


def test_profile_table_has_every_profile_and_its_cells() -> None:
    from sfcheck.profiles import LISTED

    lines = docgen.profiles()
    rows = [line for line in lines if line.startswith("| `")]
    assert [r.split("|")[1].strip().strip("`") for r in rows] == [p.name for p in LISTED]
    printed = " ".join("\n".join(catalogue.profile_table()).split())
    for row in rows:  # every cell is text `sfcheck profiles` prints, wrapping undone
        cells = [c.strip().strip("`").replace("\\|", "|")
                 for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert len(cells) == len(lines[0].split("|")) - 2
        for cell in cells:
            assert cell in printed, cell
    kernel = next(r for r in rows if r.startswith("| `kernel-v13` |"))
    assert "jremus@linux.ibm.com" in kernel  # each profile's source in its own row


def test_profile_table_reads_wrapped_rows_and_a_sources_list() -> None:
    printed = ("PROFILE  VERSIONS  ALSO REJECTS\n"
               "kernel   v3        auxhdr, num_fdes/num_fres 0,\n"
               "                   equal FDE starts\n"
               "llvm-22  v2        -\n"
               "\n"
               "Sources:\n"
               "  kernel: linux:kernel/unwind/sframe.c@1234 (a long\n"
               "    source)\n"
               "  llvm-22: SFrameParser.cpp\n"
               "\n"
               "`sfcheck profiles NAME` prints more.\n")
    assert docgen.profiles(printed) == [
        "| profile | versions | also rejects | source |", "|---|---|---|---|",
        "| `kernel` | v3 | auxhdr, num_fdes/num_fres 0, equal FDE starts "
        "| linux:kernel/unwind/sframe.c@1234 (a long source) |",
        "| `llvm-22` | v2 | - | SFrameParser.cpp |", "",
        "`sfcheck profiles NAME` prints more."]


def test_rule_counts_add_up_to_the_registry() -> None:
    from sfcheck.rules import RULES

    table = docgen.rules()
    total = table[-1].split("|")
    assert total[1].strip() == "all" and int(total[2]) == len(RULES)
    errors = sum(1 for r in RULES.values() if str(r.severity) == "error")
    assert int(total[3]) == errors


def test_one_group_lists_its_rules_in_cli_order() -> None:
    from sfcheck.rules import RULES

    rows = [line for line in docgen.rules("defect") if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == [r.id for r in RULES.values()
                                               if r.group == "defect"]
    with pytest.raises(ValueError, match="no rule group"):
        docgen.rules("nonsense")


def test_exit_status_rows_are_the_help_epilog() -> None:
    rows = [line for line in docgen.exit_status() if re.match(r"\| \d+ \|", line)]
    statuses = [int(r.split("|")[1]) for r in rows]
    assert statuses == sorted(statuses) and {0, 1, 2, 70, 130} <= set(statuses)
    assert "could not be written" in rows[2]  # its wrapped continuation lines, joined


def test_options_table_lists_each_option_once_with_its_help() -> None:
    table = docgen.options("dump")
    assert "| `--no-relocs` | in .o files show the stored start fields" in "\n".join(table)
    assert not any("--help" in line for line in table)
    check = docgen.options("check")
    assert sum("`--profile {" in line for line in check) == 1


def test_rewrite_restores_a_hand_edited_region_and_rejects_unknown_kinds() -> None:
    stale = "x\n<!-- generated: rules -->\n| hand | edited |\n<!-- end -->\ny\n"
    new = docgen.rewrite(stale)
    assert "hand" not in new and "| all | " in new and new.startswith("x\n")
    assert new.endswith("<!-- end -->\ny\n")
    with pytest.raises(ValueError, match="unknown generated region"):
        docgen.rewrite("<!-- generated: nonsense -->\n<!-- end -->\n")


def test_check_mode_reports_a_stale_file_and_leaves_it(tmp_path, capsys) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("<!-- generated: rules -->\nold\n<!-- end -->\n")
    assert docgen.main(["--check", str(doc)]) == 1
    assert "python -m sfcheck.docgen" in capsys.readouterr().err
    assert "old" in doc.read_text()
    assert docgen.main([str(doc)]) == 0 and "old" not in doc.read_text()
    assert docgen.main(["--check", str(doc)]) == 0
