"""sfcheck.record: the plain classes that replaced dataclasses and typing.NamedTuple on the
start-up path (issue 16) behave as those did where sfcheck and its tests rely on it."""

from __future__ import annotations

import dataclasses
import pickle
import typing

import pytest

from sfcheck.format.model import FDE, FRE, Header, make_fre
from sfcheck.profiles import PROFILES
from sfcheck.record import NamedTuple, Record, replace
from sfcheck.result import FileResult, Finding, Location, Result, Severity, Skipped


def _finding(**loc: object) -> Finding:
    return Finding("fde-overlap", Severity.ERROR, "m", Location("a.so", ".sframe", **loc))


def test_equality_hash_and_repr_are_a_dataclass_s() -> None:
    @dataclasses.dataclass(frozen=True)
    class Location:  # the dataclass Location was, for its repr
        path: str
        section: str | None = None
        offset: int | None = None
        fde: int | None = None
        pc: int | None = None
        fre: int | None = None
        fre_pc: int | None = None
        function: str | None = None

    f = _finding(fde=3, pc=0x10)
    assert f == _finding(fde=3, pc=0x10) and hash(f) == hash(_finding(fde=3, pc=0x10))
    assert f != _finding(fde=4, pc=0x10) and f != ("fde-overlap",)
    expected = repr(Location("a.so", ".sframe", fde=3, pc=0x10)).split(".<locals>.")[-1]
    assert repr(f.location) == expected
    assert repr(f).startswith("Finding(rule='fde-overlap', severity=<Severity.ERROR: 2>, ")
    with pytest.raises(TypeError):
        hash(Skipped())  # mutable, as an eq dataclass: unhashable
    assert Skipped(1) == Skipped(1) and Skipped(1) != Skipped(2)


def test_fields_left_out_of_comparison_and_repr() -> None:
    assert make_fre(0, [8]) == FRE(0, make_fre(0, [8]).info, (8,), offset=40)  # offset
    assert FDE(0, 4, 1, offset=8) == FDE(0, 4, 1) and FDE(0, 4, 1) != FDE(0, 5, 1)
    h = Header(2, 4, 3, 0, -8, 1, 1, 2, 0, 20, False)
    assert h.size == 28 and h.fdes_start == 28 and h.fres_end == 50 and h.pcrel
    assert "size" not in repr(h) and repr(h).endswith("big_endian=False, auxhdr=b'')")
    profile = PROFILES["kernel"]  # eq=False: identity
    assert profile == profile and profile != replace(profile)
    assert hash(profile) == object.__hash__(profile)


def test_replace_asdict_fields_and_pickle() -> None:
    f = _finding(pc=0x10)
    assert replace(f, waived="r") == dataclasses.replace(f, waived="r")
    assert replace(f, waived="r").waived == "r" and f.waived is None
    with pytest.raises(TypeError):
        replace(f, nosuch=1)
    h = Header(2, 4, 3, 0, -8, 1, 1, 2, 0, 20, False)
    moved = dataclasses.replace(h, freoff=24)  # derived slots are recomputed, not copied
    assert moved.fres_start == 52 and moved.num_fdes == 1
    assert [x.name for x in dataclasses.fields(Skipped)] == ["non_elf", "links", "special"]
    res = FileResult("a.so", [f])
    assert dataclasses.asdict(res)["findings"][0]["location"]["pc"] == 0x10
    result = Result([res], Skipped(2))
    assert pickle.loads(pickle.dumps(result)) == result  # worker processes send these


def test_a_record_must_name_its_fields() -> None:
    with pytest.raises(TypeError):
        class Bad(Record):  # noqa: F841
            __slots__ = "x"


def test_named_tuple_is_typing_s() -> None:
    def make(base: type) -> type:
        class Row(base):  # type: ignore[misc, valid-type]
            """Doc."""

            pc: int
            cfa: object
            limit: str | None = None

            @property
            def twice(self) -> int:
                return self.pc * 2
        return Row

    ours, theirs = make(NamedTuple), make(typing.NamedTuple)  # type: ignore[arg-type]
    a, b = ours(1, 2), theirs(1, 2)
    assert isinstance(a, tuple) and a == b and hash(a) == hash(b) and repr(a) == repr(b)
    assert a.twice == 2 and ours.__doc__ == "Doc." and a._replace(pc=3) == (3, 2, None)
    assert ours._fields == theirs._fields and ours._field_defaults == {"limit": None}
    assert ours.__qualname__ == theirs.__qualname__
    with pytest.raises(TypeError):
        class Late(NamedTuple):  # type: ignore[misc, valid-type]  # noqa: F841
            a: int = 0
            b: int
