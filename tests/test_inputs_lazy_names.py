"""sfcheck.inputs loads expand.py's names on first use (PEP 562): each is expand's object."""

from __future__ import annotations

import pytest

import sfcheck.inputs as inputs
from sfcheck.inputs import expand


@pytest.mark.parametrize("name", ["ARCHIVE_KINDS", "Member", "archive_members"])
def test_lazy_names_are_expands(name: str) -> None:
    assert getattr(inputs, name) is getattr(expand, name)


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError) as exc:
        inputs.NoSuchName  # noqa: B018
    assert str(exc.value) == "module 'sfcheck.inputs' has no attribute 'NoSuchName'"
    with pytest.raises(AttributeError):
        inputs.expand_members  # noqa: B018  (close to a lazy name, not one)
