"""`sfcheck dump --json` against its shipped JSON Schema (sfcheck/dump/sfcheck-dump.schema.json):
every corpus file (v1, v2, v3; each ABI the corpus holds) validates, a section that fails
to decode too, and the schema is strict enough that a renamed or stray field fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from sfcheck.cli import main
from sfcheck.dump import json_out

from archives import LIB_V3
from helpers import CORPUS

VALIDATOR = jsonschema.Draft202012Validator


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    got = json_out.schema()  # through importlib.resources, as an installed copy reads it
    VALIDATOR.check_schema(got)
    return got


@pytest.fixture(scope="module")
def corpus_dump() -> dict[str, Any]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(["dump", "--json", str(CORPUS)])
    assert status == 0
    return json.loads(out.getvalue())


def _sections(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for f in doc["files"] for s in f["sections"]]


def test_every_corpus_file_validates(schema: dict[str, Any], corpus_dump: dict[str, Any]
                                     ) -> None:
    VALIDATOR(schema).validate(corpus_dump)
    headers = [s["header"] for s in _sections(corpus_dump) if s["header"]]
    assert {h["version"] for h in headers} == {1, 2, 3}
    assert {h["abi_name"] for h in headers} >= {"amd64", "aarch64-le", "s390x"}
    fres = [fre for s in _sections(corpus_dump) for fde in s["fdes"] for fre in fde["fres"]]
    # every branch of the FRE schema is exercised: outermost, default and flex rules
    assert any(fre["ra_undefined"] for fre in fres)
    assert any(isinstance(fre.get("cfa"), dict) and "base" in fre["cfa"] for fre in fres)
    assert any(isinstance(fre.get("cfa"), dict) and "deref" in fre["cfa"] for fre in fres)


def test_a_section_that_fails_to_decode_validates(schema: dict[str, Any], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from sfcheck.elf.loader import load_elf

    section = load_elf(LIB_V3).sections[0].data
    cut = tmp_path / "cut.sframe"
    cut.write_bytes(bytes(section[:len(section) - 7]))
    assert main(["dump", "--json", "--raw", str(cut)]) == 1
    doc = json.loads(capsys.readouterr().out)
    VALIDATOR(schema).validate(doc)
    (sec,) = _sections(doc)
    assert sec["error"]["message"] and sec["header"] is not None


def _renamed(obj: dict[str, Any], old: str) -> dict[str, Any]:
    return {(old + "_x" if k == old else k): v for k, v in obj.items()}


def test_schema_catches_renamed_and_stray_fields(schema: dict[str, Any],
                                                 corpus_dump: dict[str, Any]) -> None:
    validator = VALIDATOR(schema)
    sections = _sections(corpus_dump)
    i = next(k for k, s in enumerate(sections)
             if any(fre.get("cfa") and fre["fp"] for fde in s["fdes"] for fre in fde["fres"]))
    sec = sections[i]
    doc = {"sfcheck_version": "x", "files": [{"path": "p", "sections": [sec]}]}
    validator.validate(doc)
    j, k = next((j, k) for j, fde in enumerate(sec["fdes"]) for k, fre in enumerate(fde["fres"])
                if fre.get("cfa") and fre["fp"])
    broken = []
    for level, path in (("file", ["files", 0]), ("section", ["files", 0, "sections", 0]),
                        ("header", ["files", 0, "sections", 0, "header"]),
                        ("fde", ["files", 0, "sections", 0, "fdes", j]),
                        ("fre", ["files", 0, "sections", 0, "fdes", j, "fres", k]),
                        ("cfa", ["files", 0, "sections", 0, "fdes", j, "fres", k, "cfa"]),
                        ("fp", ["files", 0, "sections", 0, "fdes", j, "fres", k, "fp"])):
        for field in list(_at(doc, path)):
            bad = copy.deepcopy(doc)
            parent, key = _at(bad, path[:-1]), path[-1]
            parent[key] = _renamed(parent[key], field)
            if validator.is_valid(bad):
                broken.append(f"{level}.{field} renamed")
        bad = copy.deepcopy(doc)
        _at(bad, path)["extra"] = 1
        if validator.is_valid(bad):
            broken.append(f"{level}: a stray field")
    assert broken == []


def _at(doc: Any, path: list[Any]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def test_schema_is_package_data() -> None:
    """The schema ships with the package (CI runs this against the installed wheel)."""
    from importlib import resources

    name = Path(json_out.SCHEMA_FILE).name
    assert resources.files("sfcheck.dump").joinpath(name).is_file()
