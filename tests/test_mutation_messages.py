"""tests/mutation.py counts a mutant apart as message-only only when it changes prose a user
reads; a changed key, separator, compared name or bytes literal is judged like any other."""

from __future__ import annotations

import mutation
import pytest

MSG = '    return GAS_OUTERMOST, "the outermost frame is not marked in SFrame"'


def _diff(old: str, new: str) -> str:
    return f"# m\n--- a.py\n+++ a.py\n@@ -1 +1 @@\n context\n-{old}\n+{new}\n"


@pytest.mark.parametrize("new", [
    MSG.replace('"the', '"XXthe').replace('SFrame"', 'SFrameXX"'),
    MSG.replace("the outermost frame is not marked in SFrame",
                "THE OUTERMOST FRAME IS NOT MARKED IN SFRAME"),
    MSG.replace("SFrame", "sframe"),
])
def test_prose_in_a_message_is_message_only(new: str) -> None:
    assert mutation._message_only(_diff(MSG, new))


@pytest.mark.parametrize(("old", "new"), [
    # a message's prose on a continued line, and one literal of several joined
    ('        "version, and GNU ld links objects of one version only",',
     '        "VERSION, AND GNU LD LINKS OBJECTS OF ONE VERSION ONLY",'),
    ('    out = "SFrame " + ", ".join(parts) + ": each reader takes one "',
     '    out = "SFrame " + ", ".join(parts) + "XX: each reader takes one XX"'),
    ('    msg = f"{n} bytes after the data"', '    msg = f"XX{n} bytes after the dataXX"'),
])
def test_message_pieces_are_message_only(old: str, new: str) -> None:
    assert mutation._message_only(_diff(old, new))


@pytest.mark.parametrize(("old", "new"), [
    # layout.check_trailing: stripping b"XX\0XX" takes 'X' bytes for padding
    ('    if tail.strip(b"\\0"):', '    if tail.strip(b"XX\\0XX"):'),
    ('    magic = rb"a b"', '    magic = rb"XXa bXX"'),
    ('    if kind == "a deb":', '    if kind == "XXa debXX":'),
    ('    if "no tests" in states:', '    if "NO TESTS" in states:'),
    ('    x = counts["no tests"]', '    x = counts["XXno testsXX"]'),
    ('    d = {"no tests": 0}', '    d = {"XXno testsXX": 0}'),
    ('    takes = ", ".join(names)', '    takes = "XX, XX".join(names)'),  # no letter
    ('    name = ".sframe"', '    name = ".SFRAME"'),  # no space: a name, not prose
    ('    return "a b", 1', '    return "a b", 2'),  # code changed beside the text
    ('    return "a b"', '    return "a c"'),  # other text, not mutmut's XX or case
    ('    return "a b"', '    return "a b"  # '),
])
def test_data_literals_and_code_are_judged(old: str, new: str) -> None:
    assert not mutation._message_only(_diff(old, new))


def test_a_diff_with_an_added_line_is_judged() -> None:
    assert not mutation._message_only(f"# m\n-{MSG}\n+{MSG}\n+    pass\n")
    assert not mutation._message_only("# m\n")
