"""What a scan reads: files, trees, path lists and archives (.deb, .rpm, .a, tar).

Archive readers (ar.py, deb.py, rpm.py, tar.py) yield entries; expand.py applies the
safety rules of limits.py to them and keeps the ELF members; walk.py lists inputs;
sniff.py tells the kinds apart. expand.py's names load on first use (PEP 562), so a
scan of plain ELF files never imports tarfile, arpy or zstandard.
"""

from __future__ import annotations

from .limits import ArchiveError, Limits
from .sniff import HEAD_SIZE, classify
from .walk import Input, read_path_list, walk

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from .expand import ARCHIVE_KINDS, Member, archive_members

__all__ = ["ARCHIVE_KINDS", "ArchiveError", "HEAD_SIZE", "Input", "Limits", "Member",
           "archive_members", "classify", "read_path_list", "walk"]


def __getattr__(name: str) -> Any:
    if name in ("ARCHIVE_KINDS", "Member", "archive_members"):
        from . import expand
        return getattr(expand, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
