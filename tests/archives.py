"""Builders of real (and deliberately broken) archives for the scan tests.

`.deb` and `.rpm` come from dpkg-deb and rpmbuild when present (the tests skip with the
reason otherwise); tar comes from tarfile's writer; `ar` from a small writer here (so
hostile headers can be made) or from binutils' ar.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import textwrap
from pathlib import Path

import pytest

from helpers import CORPUS

LIB_V3 = CORPUS / "v3" / "libcorpus.so"
EXE_V2 = CORPUS / "v2" / "exe_pie"
LIB_V1 = CORPUS / "v1" / "libcorpus.so"
BAD = CORPUS / "bad" / "lld_2obj.so"
OBJ_V3 = CORPUS / "v3" / "lib.o"


_PACKAGE = {"rpmbuild": "rpm", "dpkg-deb": "dpkg", "ar": "binutils", "tar": "tar"}


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not installed (Debian: apt-get install {_PACKAGE[tool]})")
    return path


def ar_header(name: bytes, size: int | bytes, mode: bytes = b"100644") -> bytes:
    size_field = size if isinstance(size, bytes) else str(size).encode()
    return (name.ljust(16) + b"0".ljust(12) + b"0".ljust(6) + b"0".ljust(6) + mode.ljust(8)
            + size_field.ljust(10) + b"`\n")


def ar_bytes(members: list[tuple[str, bytes]]) -> bytes:
    """A System V ar archive (names up to 15 bytes, as dpkg-deb writes them)."""
    out = [b"!<arch>\n"]
    for name, data in members:
        out.append(ar_header(name.encode() + b"/", len(data)) + data
                   + (b"\n" if len(data) % 2 else b""))
    return b"".join(out)


def tar_bytes(entries: list[tarfile.TarInfo | tuple[str, bytes]], mode: str = "w") -> bytes:
    """A tar archive; (name, data) makes a regular file, a TarInfo anything else."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:  # type: ignore[call-overload]
        for e in entries:
            if isinstance(e, tarfile.TarInfo):
                tf.addfile(e)
            else:
                info = tarfile.TarInfo(e[0])
                info.size = len(e[1])
                tf.addfile(info, io.BytesIO(e[1]))
    return buf.getvalue()


def link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def zstd_tar(entries: list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(tar_bytes(entries))


def deb_bytes(data_tar: bytes, name: str = "data.tar") -> bytes:
    """A .deb around a given data.tar (for layouts dpkg-deb would refuse to build)."""
    control = tar_bytes([("./control", b"Package: t\nVersion: 1\nArchitecture: amd64\n")])
    return ar_bytes([("debian-binary", b"2.0\n"), ("control.tar", control), (name, data_tar)])


def build_tree(root: Path, files: dict[str, Path | bytes], links: dict[str, str] | None = None
               ) -> None:
    for rel, src in files.items():
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(src.read_bytes() if isinstance(src, Path) else src)
    for rel, target in (links or {}).items():
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.symlink_to(target)


def dpkg_deb(tmp: Path, files: dict[str, Path | bytes], compression: str = "xz",
             links: dict[str, str] | None = None, name: str = "t") -> Path:
    """A real .deb built by dpkg-deb with -Z compression."""
    tool = need("dpkg-deb")
    root = tmp / f"deb-{name}-{compression}"
    build_tree(root, files, links)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: 1.0\nArchitecture: amd64\nMaintainer: T <t@example.org>\n"
        "Description: sfcheck test package\n")
    out = tmp / f"{name}_1.0_amd64.{compression}.deb"
    subprocess.run([tool, f"-Z{compression}", "--root-owner-group", "-b", str(root), str(out)],
                   check=True, capture_output=True)
    return out


def rpmbuild(tmp: Path, files: dict[str, Path | bytes], payload: str = "w19.zstdio",
             links: dict[str, str] | None = None, name: str = "t") -> Path:
    """A real binary .rpm built by rpmbuild with the given _binary_payload."""
    tool = need("rpmbuild")
    top = tmp / f"rpm-{name}-{payload}"
    src = top / "SOURCES"
    build_tree(src, files, links)
    install = "\n".join(
        [f"mkdir -p %{{buildroot}}/{Path(rel).parent}\ncp -a {src}/{rel} %{{buildroot}}/{rel}"
         for rel in [*files, *(links or {})]])
    spec = top / "t.spec"
    spec.write_text(textwrap.dedent("""\
        Name: {name}
        Version: 1.0
        Release: 1
        Summary: sfcheck test package
        License: MIT
        BuildArch: x86_64
        %description
        sfcheck test package
        %install
        {install}
        %files
        {files}
        """).format(name=name, install=install,
                    files="\n".join("/" + rel for rel in [*files, *(links or {})])))
    defines = {"_topdir": str(top), "_binary_payload": payload, "__strip": "/bin/true",
               "__os_install_post": "%{nil}", "debug_package": "%{nil}",
               "_build_id_links": "none"}
    args = [tool, "-bb", "--quiet", "--nodeps"]
    for k, v in defines.items():
        args += ["--define", f"{k} {v}"]
    subprocess.run([*args, str(spec)], check=True, capture_output=True)
    (built,) = (top / "RPMS").glob("*/*.rpm")
    return built


def sparse_tar(tmp: Path, size: int, fmt: str = "gnu") -> bytes:
    """A tar (GNU tar --sparse) holding one file of `size` bytes that are almost all hole:
    a few KB on disk and in the archive, `size` bytes when read back."""
    tool = need("tar")
    src = tmp / "sparse-src"
    src.mkdir(exist_ok=True)
    big = src / "big.bin"
    with big.open("wb") as f:
        f.write(b"data")
        f.truncate(size)
    out = tmp / f"sparse-{fmt}.tar"
    subprocess.run([tool, f"--format={fmt}", "--sparse", "-cf", str(out), "-C", str(src),
                    "big.bin"], check=True, capture_output=True)
    big.unlink()
    return out.read_bytes()
