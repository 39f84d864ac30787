"""sfcheck.unwind's names load on first use (PEP 562): each is the object of its module."""

from __future__ import annotations

import importlib

import pytest

import sfcheck.unwind as unwind


@pytest.mark.parametrize("name", unwind.__all__)
def test_each_name_is_its_modules_object(name: str) -> None:
    home = {"CoreFile": "core", "Thread": "notes", "Memory": "memory",
            "SparseMemory": "memory", "SFrameTable": "table", "TableSet": "table"}.get(
        name, "unwinder")
    unwind.__dict__.pop(name, None)  # as on first use
    value = getattr(unwind, name)
    assert value is getattr(importlib.import_module(f"sfcheck.unwind.{home}"), name)
    assert unwind.__dict__[name] is value  # kept: later lookups skip __getattr__


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError) as exc:
        unwind.NoSuchName  # noqa: B018
    assert str(exc.value) == "module 'sfcheck.unwind' has no attribute 'NoSuchName'"
    assert not hasattr(unwind, "core_dump")
