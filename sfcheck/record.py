"""Plain value classes for the modules every `sfcheck FILE` imports, instead of dataclasses
(and `NamedTuple`, the class syntax of typing.NamedTuple without importing typing).

Creating a dataclass costs about a millisecond at import (it compiles its generated
methods), and importing `dataclasses` pulls in inspect, ast and tokenize: together most
of a small file's start-up. A `Record` subclass lists its fields in `__slots__` and
writes its own `__init__` (compiled once, into the .pyc); `Record` gives it the
dataclass behaviour the code relies on, from the field names (`fields=`, default all
slots: the constructor's arguments; further slots hold values derived from them):

* `==` compares the fields (those in `compare=`, default all) of objects of the same
  class, as a dataclass's does; `frozen=True` also hashes them (the class is then a
  dict key or set member), otherwise the object is unhashable, as an `eq` dataclass is;
  `eq=False` compares and hashes by identity.
  Frozen is a promise, not enforced: nothing assigns to a frozen record's fields after
  `__init__` (a field changed later would break the hash).
* `repr` is a dataclass's: `Name(field=value, ...)` over the fields in `shown=` (default all).
* `dataclasses.replace`, `asdict`, `fields` and `is_dataclass` work on a record (the JSON
  report, waivers and tests use them): its `__dataclass_fields__` is built on first
  access, which is the only time `dataclasses` is imported. `record.replace` does what
  `dataclasses.replace` does without importing it.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


class _LazyDataclassFields:
    """`__dataclass_fields__` of a record: the Field objects of a dataclass with the same
    field names, made on first access (only `dataclasses` itself reads it)."""

    def __get__(self, obj: object, cls: type) -> dict[str, object]:
        import dataclasses

        fields = dataclasses.make_dataclass(cls.__name__, cls._fields).__dataclass_fields__
        cls.__dataclass_fields__ = fields  # type: ignore[attr-defined]  # cached per class
        return fields


def _getter(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """A function of an object returning the tuple of those attributes (even of one)."""
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


class Record:
    __slots__ = ()
    __dataclass_fields__ = _LazyDataclassFields()
    _fields: tuple[str, ...]  # the constructor's arguments
    _key: Callable[[object], tuple[object, ...]]  # the compared fields, as a tuple
    _shown: tuple[str, ...]  # the fields repr shows

    def __init_subclass__(cls, frozen: bool = False, eq: bool = True,
                          fields: tuple[str, ...] | None = None,
                          compare: tuple[str, ...] | None = None,
                          shown: tuple[str, ...] | None = None) -> None:
        super().__init_subclass__()
        if "__slots__" not in cls.__dict__:  # a plain subclass of a record: all inherited
            return
        names: tuple[str, ...] = cls.__slots__  # type: ignore[assignment]
        if isinstance(names, str) or not names:
            raise TypeError(f"{cls.__name__}: __slots__ must be a non-empty tuple of fields")
        cls._fields = names = names if fields is None else fields
        cls._key = staticmethod(_getter(names if compare is None else compare))
        cls._shown = names if shown is None else shown
        if not eq:  # compared and hashed by identity
            cls.__eq__ = object.__eq__  # type: ignore[method-assign]
            cls.__hash__ = object.__hash__  # type: ignore[method-assign]
        elif not frozen:
            cls.__hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._key(self) == self._key(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{self.__class__.__qualname__}({fields})"


def replace(obj: Any, /, **changes: object) -> Any:
    """`dataclasses.replace` for a record (without importing dataclasses); a dataclass is
    handed to it."""
    fields: tuple[str, ...] | None = getattr(obj.__class__, "_fields", None)
    if fields is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)
    for name in changes:
        if name not in fields:
            raise TypeError(f"{obj.__class__.__qualname__} has no field {name!r}")
    return obj.__class__(**{n: changes[n] if n in changes else getattr(obj, n) for n in fields})


class _NamedTupleMeta(type):
    """Makes `class Row(NamedTuple): pc: int; ...` a collections.namedtuple with those
    fields (defaults from the class body), plus the body's methods and docstring: what
    typing.NamedTuple makes, without importing typing (2-3 ms of every start-up)."""

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> type:
        from collections import namedtuple

        if "__annotations__" not in ns:
            raise TypeError(f"{name}: record.NamedTuple reads the class annotations "
                            "(the module needs `from __future__ import annotations`)")
        fields = list(ns["__annotations__"])
        defaults = [ns[f] for f in fields if f in ns]
        if any(f in ns for f in fields[:len(fields) - len(defaults)]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        cls = namedtuple(name, fields, defaults=defaults, module=ns["__module__"])
        for key, value in ns.items():
            if key not in fields and key not in ("__module__", "__qualname__",
                                                 "__annotations__"):
                setattr(cls, key, value)
        cls.__qualname__ = ns.get("__qualname__", name)
        return cls


_NamedTupleBase = type.__new__(_NamedTupleMeta, "NamedTuple", (), {})


def NamedTuple() -> None:  # noqa: N802  (spelled as typing's)
    """Base of a named tuple class (`class Row(NamedTuple): ...`), as typing.NamedTuple."""
    raise TypeError("use NamedTuple as the base of a class")


NamedTuple.__mro_entries__ = lambda bases: (_NamedTupleBase,)  # type: ignore[attr-defined]
