"""The fenced blocks of README.md and docs/*.md, with the notes written before them.

A note is an HTML comment on the line(s) right above a fence, `<!-- key: value -->`
(docs/developing.md lists the keys). The blocks are read from the Markdown every time,
never copied into the tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOTE = re.compile(r"<!--\s*([\w-]+)\s*(?::\s*(.*?))?\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)\s*([\w-]*)")
KEYS = {"exit", "needs", "not-run", "file", "cwd", "generated", "end"}
SHELL = {"sh", "bash", "shell", "console"}


@dataclass
class Block:
    doc: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    @property
    def shell(self) -> bool:
        return self.lang in SHELL

    @property
    def script(self) -> str:
        """The commands: a console block's `$ ` lines, or a sh block whole."""
        if self.lang != "console":
            return self.text
        return "".join(line[2:] + "\n" for line in self.text.splitlines()
                       if line.startswith("$ "))


def blocks(doc: Path) -> list[Block]:
    out: list[Block] = []
    lines = doc.read_text(encoding="utf-8").splitlines()
    notes: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        note = NOTE.match(line.strip()) if line.lstrip().startswith("<!--") else None
        fence = FENCE.match(line)
        if note:
            notes[note[1]] = note[2] or ""
        elif fence:
            end = next((j for j in range(i + 1, len(lines))
                        if lines[j].startswith(fence[1]) and not lines[j].strip(fence[1][0])),
                       len(lines))
            out.append(Block(doc, i + 1, fence[2], "".join(x + "\n" for x in lines[i + 1:end]),
                             {k: v for k, v in notes.items() if k not in ("generated", "end")}))
            notes = {}
            i = end
        else:
            notes = {}
        i += 1
    return out


def all_blocks() -> list[Block]:
    return [b for doc in DOCS for b in blocks(doc)]
