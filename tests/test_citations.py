"""What `sfcheck explain` and `sfcheck profiles NAME` show cites sources a user can open: the
spec, an upstream file at a version, a message-id or URL; never a file of this project that the
installed package does not hold (the team's notes, the README, docs/)."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from sfcheck import profiles
from sfcheck.rules import registry

# A cited document of ours: any *.md/*.rst/*.txt name, or a path into the checkout outside
# the package (docs, tests, reports, the fuzz harnesses, benchmarks, the corpus build) or the
# shared notes.
_NOTE = re.compile(r"[\w./-]*\.(?:md|rst|txt)\b"
                   r"|\b(?:docs|tests|reports|shared|fuzz|bench|corpus)/[\w./-]+")
# A path into sfcheck's own package: must exist in the installed package.
_OWN = re.compile(r"\bsfcheck/[\w./-]+\.\w+")


def _texts() -> list[tuple[str, str]]:
    out = [(f"rule {r.id}", f"{r.explanation} {r.hint}") for r in registry.RULES.values()]
    for p in profiles.PROFILES.values():
        out.append((f"profile {p.name}", "\n".join(profiles.describe(p))))
    return out


def _bad_citations(text: str) -> list[str]:
    bad = _NOTE.findall(text)
    package = resources.files("sfcheck")
    for path in _OWN.findall(text):
        if not package.joinpath(path.removeprefix("sfcheck/")).is_file():
            bad.append(path)
    return bad


@pytest.mark.parametrize(("where", "text"), _texts(), ids=[w for w, _ in _texts()])
def test_user_text_cites_only_sources_a_user_can_open(where: str, text: str) -> None:
    assert _bad_citations(text) == [], f"{where} cites a file users do not have"


def test_the_check_catches_a_note_citation() -> None:
    assert _bad_citations("over-reads the heap (sframe-format.md 2)") == ["sframe-format.md"]
    assert _bad_citations("see docs/kernel-readers.md") != []
    assert _bad_citations("see sfcheck/no_such_module.py") == ["sfcheck/no_such_module.py"]
    assert _bad_citations("built by fuzz/oracle_cases.py") == ["fuzz/oracle_cases.py"]
    assert _bad_citations("as sfcheck/readers/v3series.py models it") == []
    # upstream files, URLs and message-ids are what the texts should cite
    assert _bad_citations("binutils 2.46 libsframe/sframe.c, sframe_decode") == []
    assert _bad_citations("lkml.iu.edu/2602.1/04596.html") == []
