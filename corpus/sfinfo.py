#!/usr/bin/env python3
"""sfinfo.py FILE... -- one tab-separated line per ELF file about its .sframe.

Columns: file, elf type, machine, .sframe sh_type, sh_size, SFrame version,
flags, abi, num_fdes, PT_GNU_SFRAME p_filesz (or '-').
A missing .sframe section gives 'none'; a 0-byte one gives version '-'.
Used by build.sh to check the version byte of what each toolchain produced
and to write MANIFEST.tsv. Standalone (stdlib only), handles ELF32/64, LE/BE.
"""
import struct
import sys

PT_GNU_SFRAME = 0x6474E554
ET = {1: "REL", 2: "EXEC", 3: "DYN"}
EM = {62: "x86_64", 183: "aarch64", 22: "s390x"}


def info(path):
    with open(path, "rb") as f:
        d = f.read()
    if d[:4] != b"\x7fELF":
        raise ValueError("not ELF")
    is64 = d[4] == 2
    e = "<" if d[5] == 1 else ">"
    if is64:
        (e_type, e_machine, _v, _entry, e_phoff, e_shoff, _fl, _eh, e_phentsize,
         e_phnum, e_shentsize, e_shnum, e_shstrndx) = struct.unpack_from(e + "HHIQQQIHHHHHH", d, 16)
    else:
        (e_type, e_machine, _v, _entry, e_phoff, e_shoff, _fl, _eh, e_phentsize,
         e_phnum, e_shentsize, e_shnum, e_shstrndx) = struct.unpack_from(e + "HHIIIIIHHHHHH", d, 16)

    def shdr(i):
        o = e_shoff + i * e_shentsize
        if is64:
            name, typ, _f, _a, off, size = struct.unpack_from(e + "IIQQQQ", d, o)
        else:
            name, typ, _f, _a, off, size = struct.unpack_from(e + "IIIIII", d, o)
        return name, typ, off, size

    _n, _t, stroff, _s = shdr(e_shstrndx)
    sec = None
    for i in range(e_shnum):
        name, typ, off, size = shdr(i)
        end = d.index(b"\0", stroff + name)
        if d[stroff + name:end] == b".sframe":
            sec = (typ, off, size)
            break
    pt = "-"
    for i in range(e_phnum):
        o = e_phoff + i * e_phentsize
        if is64:
            p_type, _f, _off, _va, _pa, p_filesz = struct.unpack_from(e + "IIQQQQ", d, o)
        else:
            p_type, _off, _va, _pa, p_filesz = struct.unpack_from(e + "IIIII", d, o)
        if p_type == PT_GNU_SFRAME:
            pt = str(p_filesz)
    row = [path, ET.get(e_type, str(e_type)), EM.get(e_machine, str(e_machine))]
    if sec is None:
        return row + ["none", "-", "-", "-", "-", "-", pt]
    typ, off, size = sec
    row += [f"{typ:#x}", str(size)]
    if size < 28:
        return row + ["-", "-", "-", "-", pt]
    magic, ver, flags, abi = struct.unpack_from(e + "HBBB", d, off)
    nfde, = struct.unpack_from(e + "I", d, off + 8)
    if magic != 0xDEE2:
        return row + ["badmagic", f"{flags:#04x}", str(abi), str(nfde), pt]
    return row + [str(ver), f"{flags:#04x}", str(abi), str(nfde), pt]


def main(argv):
    rc = 0
    for p in argv[1:]:
        try:
            print("\t".join(info(p)))
        except (ValueError, struct.error, OSError) as exc:
            print(f"{p}\terror: {exc}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
