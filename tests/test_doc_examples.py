"""Every shell example in README.md and docs/*.md runs, against the installed `sfcheck`.

The blocks are extracted from the Markdown (tests/doc_examples.py) and run in document
order, one `bash` script per block (`set -eo pipefail`), in a temporary directory per
document where `corpus/` is the checkout's corpus; a block's status must be the one its
`<!-- exit: N -->` note states (0 without one). The notes are described in
docs/developing.md. Install commands are never run (`<!-- not-run: why -->`): CI's
.ci/run performs the install itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from archives import LIB_V3, dpkg_deb, rpmbuild
from doc_examples import DOCS, KEYS, Block, all_blocks, blocks
from helpers import ROOT

BIN = Path(sys.executable).parent
# What `needs:` may name besides a program on PATH: a package the test builds, with the
# program that builds it.
FIXTURES = {"deb": "dpkg-deb", "rpm": "rpmbuild"}
LIB = "usr/lib/x86_64-linux-gnu/libcorpus.so.1"
SHELL_BLOCKS = [b for b in all_blocks() if b.shell]


class Workspace:
    """One document's directory: `base/work` is the examples' cwd, `base` holds the
    packages `../*.deb` names, `base/home` is $HOME."""

    def __init__(self, base: Path) -> None:
        self.base, self.work, self.home = base, base / "work", base / "home"
        self.work.mkdir()
        self.home.mkdir()
        (self.work / "corpus").symlink_to(ROOT / "corpus")
        self.done = -1  # index of the last block handled, in document order
        self.fixtures: set[str] = set()

    def env(self) -> dict[str, str]:
        return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                "HOME": str(self.home), "NO_COLOR": "1", "COLUMNS": "100"}

    def fixture(self, name: str) -> None:
        """A package holding corpus/v3/libcorpus.so, where the examples look for one."""
        if name in self.fixtures:
            return
        if name == "deb":
            deb = dpkg_deb(self.base / "build", {LIB: LIB_V3}, name="libcorpus1")
            shutil.copy(deb, self.base / "libcorpus1_1.0-1_amd64.deb")
        elif name == "rpm":
            rpm = rpmbuild(self.base / "build", {LIB: LIB_V3}, name="libcorpus1")
            dest = self.home / "rpmbuild" / "RPMS" / "x86_64"
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(rpm, dest / rpm.name)
        self.fixtures.add(name)

    def missing(self, block: Block) -> str | None:
        for need in block.notes.get("needs", "").split():
            program = FIXTURES.get(need, need)
            if shutil.which(program, path=self.env()["PATH"]) is None:
                return f"{program} is not installed"
        return None

    def run(self, block: Block) -> subprocess.CompletedProcess[str]:
        for need in block.notes.get("needs", "").split():
            if need in FIXTURES:
                self.fixture(need)
        cwd = ROOT if block.notes.get("cwd") == "checkout" else self.work
        return subprocess.run(["bash", "-c", "set -eo pipefail\n" + block.script], cwd=cwd,
                              env=self.env(), capture_output=True, text=True, timeout=300)


_spaces: dict[Path, Workspace] = {}


def _workspace(doc: Path, factory: pytest.TempPathFactory) -> Workspace:
    if doc not in _spaces:
        _spaces[doc] = Workspace(factory.mktemp(doc.stem))
    return _spaces[doc]


def _catch_up(space: Workspace, doc_blocks: list[Block], upto: int) -> None:
    """Handle the blocks before `upto` as a reader following the page would: write the
    files, run the runnable examples (their own tests check their status)."""
    for i in range(space.done + 1, upto):
        b = doc_blocks[i]
        if "file" in b.notes:
            path = space.work / b.notes["file"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(b.text)
        elif b.shell and "not-run" not in b.notes and not space.missing(b):
            space.run(b)
        space.done = i


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda b: b.id)
def test_example_runs_with_its_stated_status(block: Block,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    if "not-run" in block.notes:
        assert block.notes["not-run"], f"{block.id}: not-run needs a reason"
        res = subprocess.run(["bash", "-n", "-c", block.script], capture_output=True, text=True)
        assert res.returncode == 0, f"{block.id}: not valid shell: {res.stderr}"
        pytest.skip(f"not run: {block.notes['not-run']}")
    if not (BIN / "sfcheck").exists():
        pytest.skip(f"sfcheck is not installed beside {sys.executable}")
    doc_blocks = blocks(block.doc)
    index = next(i for i, b in enumerate(doc_blocks) if b.line == block.line)
    space = _workspace(block.doc, tmp_path_factory)
    _catch_up(space, doc_blocks, index)
    reason = space.missing(block)
    if reason:
        pytest.skip(f"{block.id}: {reason}")
    res = space.run(block)
    space.done = max(space.done, index)
    expected = int(block.notes.get("exit", "0"))
    assert res.returncode == expected, (
        f"{block.id}: exit {res.returncode}, the document says {expected}\n"
        f"$ {block.script}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")


def test_notes_are_known_and_well_formed() -> None:
    for b in all_blocks():
        assert set(b.notes) <= KEYS, f"{b.id}: unknown note {set(b.notes) - KEYS}"
        assert re.fullmatch(r"\d+", b.notes.get("exit", "0")), f"{b.id}: exit must be a number"
        for need in b.notes.get("needs", "").split():
            assert need in FIXTURES or re.fullmatch(r"[\w.+-]+", need), f"{b.id}: {need!r}"
        assert "file" not in b.notes or not b.shell, f"{b.id}: a file note names data, not sh"
        assert b.notes.get("cwd", "checkout") == "checkout", f"{b.id}: cwd can only be checkout"


def test_install_commands_are_marked_not_run() -> None:
    """Installing is CI's job (.ci/run); an example must never install into this machine."""
    for b in SHELL_BLOCKS:
        if re.search(r"\bpipx? install\b|\bapt(-get)? install\b", b.script):
            assert "not-run" in b.notes, f"{b.id}: an install example must be marked not-run"


def test_readme_opens_with_a_short_quick_start() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.M)
    assert sections[1].startswith("Quick start\n"), "the README's first section is Quick start"
    shown = [line for line in sections[1].splitlines()[1:] if not line.startswith("<!--")]
    assert len(shown) <= 25, f"the quick start is {len(shown)} lines (25 at most)"
    quick = [b for b in blocks(ROOT / "README.md") if b.line <= len(sections[0].splitlines())
             + len(sections[1].splitlines())]
    runs = " ".join(b.script for b in quick if b.shell)
    for step in ("-Wa,--gsframe", "sfcheck unwind --core", "--waivers", ".deb"):
        assert step in runs, f"the quick start lacks {step}"


def test_notes_bind_to_the_block_right_below_them(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("<!-- exit: 1 -->\n<!-- needs: gcc -->\n```sh\nfalse\n```\n"
                   "<!-- exit: 2 -->\n\n```console\n$ sfcheck a\noutput\n$ sfcheck b\n```\n"
                   "<!-- file: w.toml -->\n~~~toml\nx = 1\n~~~\n")
    first, second, third = blocks(doc)
    assert (first.line, first.notes, first.script) == (3, {"exit": "1", "needs": "gcc"},
                                                       "false\n")
    assert second.notes == {} and second.script == "sfcheck a\nsfcheck b\n"  # blank line: unbound
    assert (third.lang, third.notes, third.text, third.shell) == ("toml", {"file": "w.toml"},
                                                                  "x = 1\n", False)


# Pages other helpers' branches add (CI formats, rpmlint); linked before they land.
PENDING = {"docs/ci.md", "docs/rpmlint.md"}


def _anchors(doc: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    heads = re.findall(r"^#+ (.+)$", doc.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in heads}


def test_relative_links_reach_a_file_and_heading() -> None:
    for doc in DOCS:
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            if str(dest.relative_to(ROOT)) in PENDING:
                continue
            assert dest.exists(), f"{doc.name}: link to a missing file: {target}"
            if anchor and dest.suffix == ".md":
                assert anchor in _anchors(dest), f"{doc.name}: no heading for {target}"
