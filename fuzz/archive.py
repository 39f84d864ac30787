"""Harness `archive`: the package reader (.deb, .rpm, .a, tar, nested) on mutated archives.

Input: the archive's bytes (the seeds are small real archives holding corpus ELF files:
ar, tar, compressed tar, .deb with a static library inside, an RPM when rpmbuild is
installed). The reader runs with small limits (16 MiB expanded, 4,096 members, members
above 64 KiB spilled to a temporary directory) and, as a fuzzer, under RLIMIT_AS, so a
size field that drives an allocation shows up as a MemoryError finding (or libFuzzer's
-rss_limit_mb), a loop as a timeout.

Properties: only ArchiveError escapes; every member is within the limits (its bytes, in
memory or spilled, count against the byte cap), carries its package in its label, and
no temporary file outlives the read.

    python fuzz/archive.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import io
import os
import resource
import sys

# Last, after site-packages: an installed sfcheck (the one CI tests) wins over the checkout.
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import common  # noqa: E402

with common.instrumented_imports(__name__ == "__main__"):
    from sfcheck.inputs import ArchiveError, Limits, classify
    from sfcheck.inputs.expand import stream_members
    from sfcheck.inputs.spill import SpillDir
    from sfcheck.result import Skipped

LIMITS = Limits(max_bytes=16 << 20, max_members=4096, spill_bytes=64 << 10)
ADDRESS_SPACE = 3 << 30  # as a fuzzer: an allocation past this is a MemoryError finding


def test_one_input(data: bytes) -> None:
    kind = classify(data[:512], "")
    if kind not in ("deb", "rpm", "ar"):
        kind = "tar"  # tar (plain or compressed) is what is left to try
    skipped = Skipped()
    total = 0
    with SpillDir() as spill:
        try:
            for m in stream_members(io.BytesIO(data), "in.pkg", kind, LIMITS, skipped,
                                    spill):
                assert m.label == f"in.pkg:{m.member}", m.label
                if m.error is not None:
                    continue
                size = len(m.data) if m.data is not None else os.path.getsize(m.spill or "")
                assert (m.data is None) == (size > LIMITS.spill_bytes), size
                total += size
                assert total <= LIMITS.max_bytes, f"members hold {total} bytes, over the cap"
                if m.spill is not None:
                    spill.remove(m.spill)  # the caller's to remove, as the scan does
        except ArchiveError:
            pass
        # Copies of nested archives and half-written members are the reader's to remove.
        left = os.listdir(spill.path) if spill.path else []
        assert not left, f"temporary files left behind: {left}"


def seed_inputs() -> list[tuple[str, bytes]]:
    """Small real archives of corpus ELF files (names for the seed files, bytes)."""
    import shutil
    import subprocess
    import tarfile
    import tempfile

    elves = [p.read_bytes() for p in common.corpus_elves()[:3]]

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


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    common.run("archive", test_one_input)
