"""What a scan reads: files, trees, path lists and archives (.deb, .rpm, .a, tar).

Archive readers (ar.py, deb.py, rpm.py, tar.py) yield entries; expand.py applies the
safety rules of limits.py to them and keeps the ELF members; walk.py lists inputs.
"""

from .expand import ARCHIVE_KINDS, HEAD_SIZE, Member, archive_members, classify
from .limits import ArchiveError, Limits
from .walk import Input, read_path_list, walk

__all__ = ["ARCHIVE_KINDS", "HEAD_SIZE", "ArchiveError", "Input", "Limits", "Member",
           "archive_members", "classify", "read_path_list", "walk"]
