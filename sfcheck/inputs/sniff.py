"""What kind of input a file is, from its first bytes (no archive library imported).

`sfcheck FILE` on a plain ELF file must not pay for tarfile, arpy and
zstandard; they load only when a file's head says it is an archive.
"""

from __future__ import annotations

from ..elf.constants import ELF_MAGIC

HEAD_SIZE = 512  # enough for every magic, including tar's at offset 257

AR_MAGIC = b"!<arch>\n"
THIN_MAGIC = b"!<thin>\n"
DEB_FIRST_MEMBER = b"debian-binary"
RPM_MAGIC = b"\xed\xab\xee\xdb"
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.zst", ".tzst", ".tar.zstd",
                ".tar.bz2", ".tbz2", ".tbz")


def is_deb_head(head: bytes) -> bool:
    """An ar archive whose first member is `debian-binary` (what dpkg-deb writes)."""
    return head.startswith(AR_MAGIC) and head[8:8 + 16].rstrip(b" /") == DEB_FIRST_MEMBER


def is_rpm_head(head: bytes) -> bool:
    return head.startswith(RPM_MAGIC)


def is_tar_head(head: bytes) -> bool:
    """An uncompressed tar: POSIX/GNU `ustar` magic in the first header block."""
    return head[257:262] == b"ustar"


def classify(head: bytes, name: str) -> str:
    """'elf', an archive kind ('deb', 'rpm', 'ar', 'tar'), 'thin' (a thin ar archive) or
    'other', from the first bytes."""
    if head.startswith(ELF_MAGIC):
        return "elf"
    if is_deb_head(head):
        return "deb"
    if head.startswith(AR_MAGIC):
        return "ar"
    if head.startswith(THIN_MAGIC):
        return "thin"  # members are other files (in a build tree, scanned as themselves)
    if is_rpm_head(head):
        return "rpm"
    if is_tar_head(head) or name.lower().endswith(TAR_SUFFIXES):
        return "tar"
    return "other"
