"""argparse value types shared by the subcommands."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    """An integer >= 1, decimal or 0x-hex."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value
