"""What every subcommand's parser shares: argparse value types and the help formatter."""

from __future__ import annotations

import argparse
import os
import sys


def positive(text: str) -> int:
    """An integer >= 1, decimal or 0x-hex."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def parse_address(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an address: {text!r} (decimal or 0x-hex)") from None
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"address out of range: {text}")
    return value


def _terminal_columns() -> int:
    """What shutil.get_terminal_size() gives as columns: $COLUMNS, else stdout's terminal,
    else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        columns = 0
    return columns or 80


class Formatter(argparse.HelpFormatter):
    """argparse's formatter at the same width, without importing shutil (and with it bz2,
    lzma, zlib): argparse makes one for every argument added, so every run paid for it."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _terminal_columns() - 2 if width is None else width)


class RawDescriptionFormatter(argparse.RawDescriptionHelpFormatter, Formatter):
    pass
