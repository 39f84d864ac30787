"""Write Debian packages and a repository index (Packages, Packages.xz) from bytes, with
no Debian tool: the test suite, the demo and the benchmark build repositories with it.
The .deb format: an ar archive of debian-binary, control.tar.xz and data.tar.xz
(deb(5)); dpkg-deb reads what this writes."""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass
class Pkg:
    name: str
    version: str
    files: dict[str, bytes] = field(default_factory=dict)  # path in the package -> bytes
    source: str = ""
    arch: str = "amd64"


def _tar_xz(entries: dict[str, bytes], mode: int = 0o644) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        dirs = sorted({os.path.dirname(p) for p in entries} - {""})
        seen: set[str] = set()
        for d in dirs:
            parts = d.split("/")
            for k in range(1, len(parts) + 1):
                sub = "/".join(parts[:k])
                if sub not in seen:
                    seen.add(sub)
                    info = tarfile.TarInfo("./" + sub)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
                    tar.addfile(info)
        for path, data in sorted(entries.items()):
            info = tarfile.TarInfo("./" + path)
            info.size, info.mtime = len(data), 0
            info.mode = 0o755 if data.startswith(b"\x7fELF") else mode
            tar.addfile(info, io.BytesIO(data))
    return lzma.compress(buf.getvalue(), preset=0)


def _ar(members: list[tuple[str, bytes]]) -> bytes:
    out = [b"!<arch>\n"]
    for name, data in members:
        out.append(f"{name:<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode())
        out.append(data + (b"\n" if len(data) % 2 else b""))
    return b"".join(out)


def deb_bytes(pkg: Pkg) -> bytes:
    control = (f"Package: {pkg.name}\nVersion: {pkg.version}\nArchitecture: {pkg.arch}\n"
               f"Maintainer: sfcheck tests <tests@example.org>\n"
               + (f"Source: {pkg.source}\n" if pkg.source else "")
               + f"Description: {pkg.name} (sfcheck survey test package)\n").encode()
    return _ar([("debian-binary", b"2.0\n"), ("control.tar.xz", _tar_xz({"control": control})),
                ("data.tar.xz", _tar_xz(pkg.files))])


def write_repo(root: str, suites: dict[str, Iterable[Pkg]], component: str = "main") -> None:
    """A repository at `root`: pool/COMPONENT/<letter>/<source>/<name>_<version>_<arch>.deb
    and dists/SUITE/COMPONENT/binary-ARCH/Packages{,.xz} per suite and architecture."""
    for suite, pkgs in suites.items():
        stanzas: dict[str, list[str]] = {}
        for pkg in pkgs:
            src = pkg.source or pkg.name
            rel = f"pool/{component}/{src[0]}/{src}/{pkg.name}_{pkg.version}_{pkg.arch}.deb"
            full = os.path.join(root, rel)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            data = deb_bytes(pkg)
            with open(full, "wb") as f:
                f.write(data)
            stanzas.setdefault(pkg.arch, []).append(
                f"Package: {pkg.name}\nVersion: {pkg.version}\nArchitecture: {pkg.arch}\n"
                + (f"Source: {pkg.source}\n" if pkg.source else "")
                + f"Filename: {rel}\nSize: {len(data)}\n"
                f"SHA256: {hashlib.sha256(data).hexdigest()}\n")
        for arch, entries in stanzas.items():
            d = os.path.join(root, "dists", suite, component, f"binary-{arch}")
            os.makedirs(d, exist_ok=True)
            text = "\n".join(entries).encode()
            with open(os.path.join(d, "Packages"), "wb") as f:
                f.write(text)
            with open(os.path.join(d, "Packages.xz"), "wb") as f:
                f.write(lzma.compress(text))
