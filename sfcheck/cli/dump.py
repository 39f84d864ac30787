"""`sfcheck dump`: the SFrame sections of ELF files, directories and packages as
`objdump --sframe` prints them, or as JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence

from .. import __version__
from ..report.escape import (
    escape,  # names never forge lines (docs/hostile-input.md: names in reports)
)
from . import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from .args import Formatter, parse_address

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from ..elf.model import ElfSFrameInfo

_BFD_NAMES = {("EM_X86_64", 64, True): "elf64-x86-64", ("EM_386", 32, True): "elf32-i386",
              ("EM_AARCH64", 64, True): "elf64-littleaarch64",
              ("EM_AARCH64", 64, False): "elf64-bigaarch64", ("EM_S390", 64, False): "elf64-s390"}


def bfd_name(info: ElfSFrameInfo) -> str:
    """The format name objdump prints on its `file format` line."""
    key = (info.e_machine, info.elfclass, info.little_endian)
    endian = "little" if info.little_endian else "big"
    return _BFD_NAMES.get(key, f"elf{info.elfclass}-{endian}")


def add_parser(sub: argparse._SubParsersAction) -> None:
    dump = sub.add_parser(
        "dump", help="print SFrame sections as `objdump --sframe` does", formatter_class=Formatter,
        description="Print every SFrame section of each FILE in the text `objdump --sframe` "
                    "prints (binutils 2.46 style, for v1, v2 and v3), or as JSON. FILE is "
                    "what `check` takes: an ELF file, a directory, a .deb, .rpm, .a or tar.")
    dump.add_argument("files", nargs="+", metavar="FILE",
                      help="an ELF file, a directory, or a .deb, .rpm, .a or tar archive")
    dump.add_argument("--raw", action="store_true",
                      help="FILE holds a bare SFrame section, not an ELF file")
    dump.add_argument("--vma", type=parse_address, default=0, metavar="ADDR",
                      help="section address for --raw (decimal or 0x-hex; default 0)")
    dump.add_argument("--section", metavar="NAME", help="only the section called NAME")
    dump.add_argument("--json", action="store_true", help="JSON instead of text")
    dump.add_argument("--no-relocs", action="store_true",
                      help="in .o files show the stored start fields without applying "
                           ".rela.sframe (what readelf 2.44 and older print)")
    dump.set_defaults(func=run)


class _Out:
    """stdout/stderr writers; keeps the exit status."""

    def __init__(self) -> None:
        self.status = EXIT_OK

    def err(self, path: str, message: str, status: int) -> None:
        print(f"{escape(path)}: error: {escape(message)}", file=sys.stderr)
        self.status = max(self.status, status)

    def note(self, path: str, message: str) -> None:
        print(f"{escape(path)}: {escape(message)}", file=sys.stderr)


def _read_raw(path: str, out: _Out) -> bytes | None:
    """A bare section file's bytes, or None after reporting why it cannot be read."""
    from ..elf.constants import MAX_SECTION_BYTES
    from ..fileio import InputFileError, read_bounded

    try:  # regular files only, and no bigger than a section sfcheck reads
        return read_bounded(path, MAX_SECTION_BYTES)
    except InputFileError as exc:
        out.err(path, exc.message, EXIT_USAGE)
        return None


def _sections(path: str, source: str | bytes, args: argparse.Namespace, out: _Out):
    """(info, [(name, vma, bytes)]) for each SFrame section of `source` (a path, or an
    archive member's bytes labelled `path`), or None after reporting."""
    from ..elf.constants import ELF_MAGIC
    from ..elf.loader import load_elf
    from ..errors import ElfError

    if args.raw:
        data = _read_raw(path, out) if isinstance(source, str) else source
        if data is not None and data.startswith(ELF_MAGIC):
            out.err(path, "this is an ELF file; drop --raw", EXIT_USAGE)
            return None
        return None if data is None else (None, [(args.section or ".sframe", args.vma, data)])
    try:
        info = load_elf(source, name=path)
    except ElfError as exc:
        out.err(path, exc.message, EXIT_USAGE)
        return None
    found = [(s.name, s.vma, s.raw_data if args.no_relocs else s.data) for s in info.sections
             if args.section is None or s.name == args.section]
    if not info.sections:
        out.note(path, "no SFrame section")
    elif not found:  # a misspelt --section is a usage error, not a file without SFrame
        names = ", ".join(dict.fromkeys(s.name for s in info.sections))
        out.err(path, f"no SFrame section named {args.section!r} (it has {names})", EXIT_USAGE)
        return None
    return info, found


def dump_inputs(paths: Sequence[str], raw: bool, out: _Out
                ) -> Iterator[tuple[str, str | bytes]]:
    """(label, path or bytes) for every ELF image the arguments name, as `check` finds
    them: files, directories (non-ELF files skipped), and .deb/.rpm/.a/tar members."""
    from ..inputs import HEAD_SIZE, ArchiveError, Limits, classify, walk
    from ..result import Skipped

    skipped = Skipped()
    for item in walk(paths, skipped):
        if item.error:
            out.err(item.path, item.error, EXIT_USAGE)
            continue
        if raw:
            yield item.path, item.path
            continue
        try:
            with open(item.path, "rb") as f:
                kind = classify(f.read(HEAD_SIZE), item.path)
        except OSError as exc:
            out.err(item.path, f"cannot read file: {exc.strerror or exc}", EXIT_USAGE)
            continue
        if kind in ("deb", "rpm", "ar", "tar"):
            from ..inputs import archive_members  # the archive readers: only for an archive

            try:
                for m in archive_members(item.path, kind, Limits(), skipped):
                    yield m.label, m.data
            except ArchiveError as exc:
                out.err(item.path, f"archive refused: {exc}", EXIT_USAGE)
        elif kind == "elf" or item.explicit:
            yield item.path, item.path  # an explicit non-ELF file: load_elf says why


def run(args: argparse.Namespace) -> int:
    from ..dump.json_out import dump_json
    from ..dump.objdump import dump_chunks
    from ..errors import DecodeError

    out = _Out()
    files = []
    for path, source in dump_inputs(args.files, args.raw, out):
        got = _sections(path, source, args, out)
        if got is None:
            continue
        info, sections = got
        if args.json:
            files.append({"path": path, "sections": [dump_json(d, vma, name)
                                                     for name, vma, d in sections]})
            for sec in files[-1]["sections"]:
                if sec["error"]:
                    out.status = max(out.status, EXIT_FINDINGS)
            continue
        if info is not None:
            print(f"\n{escape(path)}:     file format {bfd_name(info)}\n")
        for name, vma, data in sections:
            if not data:
                out.note(path, f"section {name} is empty: no SFrame data")
                continue
            try:
                # The name is the file's (its string table): escaped like a path.
                for chunk in dump_chunks(data, vma, escape(name)):  # thousands of lines a write
                    sys.stdout.write(chunk)
                    sys.stdout.write("\n")
            except DecodeError as exc:
                sys.stdout.flush()
                out.err(path, f"{name}: SFrame decode failure: {exc}", EXIT_FINDINGS)
    if args.json:
        import json

        json.dump({"sfcheck_version": __version__, "files": files}, sys.stdout, indent=2)
        print()
    return out.status
