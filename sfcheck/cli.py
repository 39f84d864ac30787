"""Command line: `sfcheck dump ...` (and, as they land, the checker's commands)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from . import __version__
from .dump.json_out import dump_json
from .dump.objdump import dump_text
from .elf import ElfError, ElfSFrameInfo, load_elf
from .errors import DecodeError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

_BFD_NAMES = {("EM_X86_64", 64, True): "elf64-x86-64", ("EM_386", 32, True): "elf32-i386",
              ("EM_AARCH64", 64, True): "elf64-littleaarch64",
              ("EM_AARCH64", 64, False): "elf64-bigaarch64", ("EM_S390", 64, False): "elf64-s390"}


def bfd_name(info: ElfSFrameInfo) -> str:
    """The format name objdump prints on its `file format` line."""
    key = (info.e_machine, info.elfclass, info.little_endian)
    endian = "little" if info.little_endian else "big"
    return _BFD_NAMES.get(key, f"elf{info.elfclass}-{endian}")


def parse_address(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an address: {text!r} (decimal or 0x-hex)") from None
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"address out of range: {text}")
    return value


class _Out:
    """stdout/stderr writers; keeps the exit status."""

    def __init__(self) -> None:
        self.status = EXIT_OK

    def err(self, path: str, message: str, status: int) -> None:
        print(f"{path}: error: {message}", file=sys.stderr)
        self.status = max(self.status, status)

    def note(self, path: str, message: str) -> None:
        print(f"{path}: {message}", file=sys.stderr)


def _sections(path: str, args: argparse.Namespace, out: _Out):
    """(name, vma, bytes) for each SFrame section of `path`, or None after reporting."""
    if args.raw:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            out.err(path, f"cannot read file: {exc.strerror or exc}", EXIT_USAGE)
            return None
        return None, [(args.section or ".sframe", args.vma, data)]
    try:
        info = load_elf(path)
    except ElfError as exc:
        out.err(path, exc.message, EXIT_USAGE)
        return None
    found = [(s.name, s.vma, s.data) for s in info.sections
             if args.section is None or s.name == args.section]
    if not found:
        out.note(path, "no SFrame section")
    return info, found


def cmd_dump(args: argparse.Namespace) -> int:
    out = _Out()
    files = []
    for path in args.files:
        got = _sections(path, args, out)
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
            print(f"\n{path}:     file format {bfd_name(info)}\n")
        for name, vma, data in sections:
            if not data:
                out.note(path, f"section {name} is empty: no SFrame data")
                continue
            try:
                for line in dump_text(data, vma, name):
                    print(line)
            except DecodeError as exc:
                sys.stdout.flush()
                out.err(path, f"{name}: SFrame decode failure: {exc}", EXIT_FINDINGS)
    if args.json:
        json.dump({"sfcheck_version": __version__, "files": files}, sys.stdout, indent=2)
        print()
    return out.status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sfcheck", description="Validate, dump and fuzz SFrame stack-trace sections.",
        epilog="Exit status: 0 success, 1 findings or undecodable SFrame data, "
               "2 usage error or unreadable/non-ELF file.")
    parser.add_argument("--version", action="version", version=f"sfcheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    dump = sub.add_parser(
        "dump", help="print SFrame sections as `objdump --sframe` does",
        description="Print every SFrame section of each FILE in the text `objdump --sframe` "
                    "prints (binutils 2.46 style, for v1, v2 and v3), or as JSON.")
    dump.add_argument("files", nargs="+", metavar="FILE")
    dump.add_argument("--raw", action="store_true",
                      help="FILE holds a bare SFrame section, not an ELF file")
    dump.add_argument("--vma", type=parse_address, default=0, metavar="ADDR",
                      help="section address for --raw (decimal or 0x-hex; default 0)")
    dump.add_argument("--section", metavar="NAME", help="only the section called NAME")
    dump.add_argument("--json", action="store_true", help="JSON instead of text")
    dump.set_defaults(func=cmd_dump)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.vma and not args.raw:
        parser.error("--vma applies to --raw sections only (ELF files give the address)")
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except BrokenPipeError:  # `sfcheck dump big.so | head`
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
