"""The archive harness's seeds: small real archives (ar, tar, compressed tar, .deb, a tar
in a tar, an RPM when rpmbuild is installed) holding ELF files.

Apart from the harness (fuzz/archive.py) so that fuzz/common.py, which writes every
target's seeds, need not import a harness.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Sequence


def build(elves: Sequence[bytes]) -> list[tuple[str, bytes]]:
    """Small real archives of `elves` (ELF files' bytes, at least one): names for the seed
    files, and bytes."""

    def tar(entries: list[tuple[str, bytes]], mode: str = "w") -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode=mode) as tf:  # type: ignore[call-overload]
            for name, body in entries:
                info = tarfile.TarInfo(name)
                info.size = len(body)
                tf.addfile(info, io.BytesIO(body))
            link = tarfile.TarInfo("./usr/lib/link.so")
            link.type, link.linkname = tarfile.SYMTYPE, "x.so"
            tf.addfile(link)
        return buf.getvalue()

    def ar(members: list[tuple[str, bytes]]) -> bytes:
        out = [b"!<arch>\n"]
        for name, body in members:
            out.append((name + "/").encode().ljust(16) + b"0".ljust(12) + b"0".ljust(6)
                       + b"0".ljust(6) + b"100644".ljust(8) + str(len(body)).encode().ljust(10)
                       + b"`\n" + body + (b"\n" if len(body) % 2 else b""))
        return b"".join(out)

    files = [(f"./usr/lib/x{i}.so", e) for i, e in enumerate(elves)]
    lib = ar([("a.o", elves[0]), ("a.o", elves[-1]), ("notes.txt", b"x")])
    data_tar = tar([*files, ("./usr/lib/libx.a", lib), ("./usr/share/doc/README", b"doc")])
    control = tar([("./control", b"Package: t\n")])
    seeds = [("ar", lib), ("tar", data_tar), ("tgz", tar(files, "w:gz")),
             ("txz", tar(files[:1], "w:xz")),
             ("deb", ar([("debian-binary", b"2.0\n"), ("control.tar", control),
                         ("data.tar", data_tar)])),
             ("nested", tar([("./pkgs/t.tar", tar(files[:1]))]))]
    rpmbuild = shutil.which("rpmbuild")
    if rpmbuild:  # an RPM as rpm writes it (lead, signature, header, cpio payload)
        with tempfile.TemporaryDirectory() as tmp:
            spec = os.path.join(tmp, "t.spec")
            with open(os.path.join(tmp, "x.so"), "wb") as f:
                f.write(elves[0])
            with open(spec, "w") as f:
                f.write(f"Name: t\nVersion: 1\nRelease: 1\nSummary: t\nLicense: MIT\n"
                        f"BuildArch: noarch\n%description\nt\n%install\n"
                        f"mkdir -p %{{buildroot}}/usr/lib\ncp {tmp}/x.so %{{buildroot}}/usr/lib/\n"
                        f"%files\n/usr/lib/x.so\n")
            proc = subprocess.run(
                [rpmbuild, "-bb", "--quiet", "--nodeps", "--define", f"_topdir {tmp}",
                 "--define", "_binary_payload w9.gzdio", "--define", "__os_install_post %{nil}",
                 "--define", "debug_package %{nil}", "--define", "_build_id_links none",
                 spec], capture_output=True, check=False)
            built = [os.path.join(d, n) for d, _, ns in os.walk(os.path.join(tmp, "RPMS"))
                     for n in ns if n.endswith(".rpm")] if proc.returncode == 0 else []
            for path in built[:1]:
                with open(path, "rb") as f:
                    seeds.append(("rpm", f.read()))
    return seeds
