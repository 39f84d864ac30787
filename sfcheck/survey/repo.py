"""List the packages of a repository: a Debian archive (`dists/SUITE/COMPONENT/binary-ARCH/
Packages[.gz|.xz]` and its pool), an RPM repository (`repodata/repomd.xml` -> primary),
or a plain directory of packages. The index is hostile input: a malformed one is a
one-line RepoError, and a file name that leaves the repository root is refused."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
from collections.abc import Iterator
from typing import BinaryIO
from xml.etree import ElementTree

import zstandard

from ..errors import SfcheckError
from ..record import Record

MAX_INDEX_BYTES = 1 << 30  # a decompressed index larger than this is refused
PACKAGE_SUFFIXES = (".deb", ".udeb", ".ddeb", ".rpm")
_INDEX_NAMES = ("Packages", "Packages.xz", "Packages.gz")  # preference order


class RepoError(SfcheckError):
    """A repository or index that cannot be read; the message names the file."""


class PackageRef(Record):
    """One package of a repository, with its metadata from the index."""

    __slots__ = ("repo", "path", "name", "version", "source", "architecture", "suite",
                 "digest", "size")

    def __init__(self, repo: str, path: str, name: str, version: str = "", source: str = "",
                 architecture: str = "", suite: str = "", digest: str | None = None,
                 size: int | None = None) -> None:
        self.repo = repo  # the repository root, as given
        self.path = path  # relative to the root, normalised
        self.name = name
        self.version = version
        self.source = source or name
        self.architecture = architecture
        self.suite = suite  # Debian suite (dists/SUITE), "" elsewhere
        self.digest = digest  # SHA-256 from the index (None: computed from the file)
        self.size = size

    @property
    def abspath(self) -> str:
        return os.path.join(self.repo, self.path)


def inside(root: str, relpath: str) -> str:
    """`relpath` normalised; RepoError if it (or a symlink on its way) leaves `root`."""
    if not relpath or relpath.startswith("/") or "\0" in relpath:
        raise RepoError(f"{root}: index names a file outside the repository: {relpath!r}")
    norm = os.path.normpath(relpath)
    if norm == ".." or norm.startswith("../"):
        raise RepoError(f"{root}: index names a file outside the repository: {relpath!r}")
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(root, norm))
    if not real.startswith(real_root + os.sep):
        raise RepoError(f"{root}: {relpath!r} resolves outside the repository (symlink?)")
    return norm


def read_index(path: str) -> bytes:
    """An index file's bytes, decompressed by its suffix, at most MAX_INDEX_BYTES."""
    try:
        with open(path, "rb") as f:
            raw: BinaryIO = f
            if path.endswith(".gz"):
                raw = gzip.GzipFile(fileobj=f)
            elif path.endswith(".xz"):
                raw = lzma.LZMAFile(f)  # noqa: SIM115  (closed with f)
            elif path.endswith(".zst"):
                raw = zstandard.ZstdDecompressor().stream_reader(f)  # type: ignore[assignment]
            elif path.endswith(".bz2"):
                raw = bz2.BZ2File(f)
            data = raw.read(MAX_INDEX_BYTES + 1)
    except (OSError, EOFError, lzma.LZMAError, zstandard.ZstdError, ValueError) as exc:
        raise RepoError(f"{path}: cannot read index: {type(exc).__name__}: {exc}") from None
    if len(data) > MAX_INDEX_BYTES:
        raise RepoError(f"{path}: index larger than {MAX_INDEX_BYTES} bytes decompressed")
    return data


def packages(repo: str) -> Iterator[PackageRef]:
    """Every package of `repo` (a Debian or RPM repository, or a directory)."""
    if not os.path.isdir(repo):
        raise RepoError(f"{repo}: not a directory")
    if os.path.isdir(os.path.join(repo, "dists")):
        yield from debian_packages(repo)
    elif os.path.isfile(os.path.join(repo, "repodata", "repomd.xml")):
        yield from rpm_packages(repo)
    else:
        yield from directory_packages(repo)


# --- Debian ---------------------------------------------------------------------------

def debian_indexes(repo: str) -> Iterator[tuple[str, str]]:
    """(suite, index file) for each dists/SUITE/.../binary-ARCH directory, one file each."""
    dists = os.path.join(repo, "dists")
    for root, dirs, files in os.walk(dists):
        dirs.sort()
        if not os.path.basename(root).startswith("binary-"):
            continue
        name = next((n for n in _INDEX_NAMES if n in files), None)
        if name is None:
            continue
        suite = os.path.relpath(root, dists).split(os.sep)[0]
        yield suite, os.path.join(root, name)


def debian_packages(repo: str) -> Iterator[PackageRef]:
    found = False
    for suite, index in debian_indexes(repo):
        found = True
        text = read_index(index).decode("utf-8", "replace")
        for n, stanza in enumerate(re.split(r"\n\s*\n", text)):
            if stanza.strip():
                yield _deb_ref(repo, suite, index, n, parse_stanza(stanza, index))
    if not found:
        raise RepoError(f"{repo}: dists/ holds no binary-*/Packages index")


def parse_stanza(stanza: str, index: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = None
    for line in stanza.splitlines():
        if line[:1] in (" ", "\t"):
            if key is None:
                raise RepoError(f"{index}: continuation line before any field: {line[:60]!r}")
            fields[key] += "\n" + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep or not key or " " in key:
            raise RepoError(f"{index}: not a 'Field: value' line: {line[:60]!r}")
        fields[key.lower()] = value.strip()
    return fields


def _deb_ref(repo: str, suite: str, index: str, n: int, f: dict[str, str]) -> PackageRef:
    for key in ("package", "filename"):
        if key not in f:
            raise RepoError(f"{index}: stanza {n + 1} has no {key.capitalize()} field")
    digest = f.get("sha256")
    if digest is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", digest):
        raise RepoError(f"{index}: stanza {n + 1} ({f['package']}): bad SHA256 {digest[:80]!r}")
    size = f.get("size")
    source = f.get("source", "").split(" ")[0]
    return PackageRef(repo, inside(repo, f["filename"]), f["package"], f.get("version", ""),
                      source, f.get("architecture", ""), suite,
                      digest.lower() if digest else None,
                      int(size) if size and size.isdigit() else None)


# --- RPM ------------------------------------------------------------------------------

_RPM_NS = "{http://linux.duke.edu/metadata/common}"
_REPO_NS = "{http://linux.duke.edu/metadata/repo}"
_RPMFMT_NS = "{http://linux.duke.edu/metadata/rpm}"


def _xml(data: bytes, path: str) -> ElementTree.Element:
    if b"<!DOCTYPE" in data[:4096] or b"<!ENTITY" in data:
        raise RepoError(f"{path}: XML with a DTD or entities is refused")
    try:
        return ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise RepoError(f"{path}: malformed XML: {exc}") from None


def rpm_packages(repo: str) -> Iterator[PackageRef]:
    repomd = os.path.join(repo, "repodata", "repomd.xml")
    root = _xml(read_index(repomd), repomd)
    href = None
    for data in root.iter(f"{_REPO_NS}data"):
        if data.get("type") == "primary":
            loc = data.find(f"{_REPO_NS}location")
            href = None if loc is None else loc.get("href")
    if not href:
        raise RepoError(f"{repomd}: no primary metadata listed")
    primary = os.path.join(repo, inside(repo, href))
    for n, pkg in enumerate(_xml(read_index(primary), primary).iter(f"{_RPM_NS}package")):
        if pkg.get("type", "rpm") != "rpm":
            continue
        yield _rpm_ref(repo, primary, n, pkg)


def _rpm_ref(repo: str, primary: str, n: int, pkg: ElementTree.Element) -> PackageRef:
    def text(tag: str) -> str:
        el = pkg.find(f"{_RPM_NS}{tag}")
        return (el.text or "").strip() if el is not None else ""

    name = text("name")
    loc = pkg.find(f"{_RPM_NS}location")
    if not name or loc is None or not loc.get("href"):
        raise RepoError(f"{primary}: package {n + 1} has no name or location")
    ver = pkg.find(f"{_RPM_NS}version")
    version = ""
    if ver is not None:
        epoch = ver.get("epoch", "0")
        version = (f"{epoch}:" if epoch not in ("", "0") else "") + \
            f"{ver.get('ver', '')}-{ver.get('rel', '')}"
    digest = None
    ck = pkg.find(f"{_RPM_NS}checksum")
    if ck is not None and ck.get("type") == "sha256" and ck.text:
        digest = ck.text.strip().lower()
        if not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise RepoError(f"{primary}: package {name}: bad sha256 {digest[:80]!r}")
    srpm = ""
    fmt = pkg.find(f"{_RPM_NS}format")
    if fmt is not None:
        el = fmt.find(f"{_RPMFMT_NS}sourcerpm")
        if el is not None and el.text:
            # name-version-release.src.rpm: the name is all but the last two fields.
            srpm = el.text.strip().removesuffix(".src.rpm").rsplit("-", 2)[0]
    return PackageRef(repo, inside(repo, loc.get("href", "")), name, version, srpm,
                      text("arch"), "", digest)


# --- plain directories ----------------------------------------------------------------

def directory_packages(repo: str) -> Iterator[PackageRef]:
    """Packages (by suffix) and ELF files under a directory, metadata from the file name
    (`name_version_arch.deb`, `name-version-release.arch.rpm`), symlinks not followed."""
    for root, dirs, files in os.walk(repo):
        dirs.sort()
        for fname in sorted(files):
            full = os.path.join(root, fname)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            rel = os.path.relpath(full, repo)
            if not fname.endswith(PACKAGE_SUFFIXES) and not _is_elf(full):
                continue
            yield PackageRef(repo, rel, *_name_from_file(fname))


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _name_from_file(fname: str) -> tuple[str, str, str, str]:
    """(name, version, source, architecture) guessed from a package file name."""
    for suffix in (".deb", ".udeb", ".ddeb"):
        if fname.endswith(suffix):
            parts = fname.removesuffix(suffix).split("_")
            if len(parts) == 3:
                return parts[0], parts[1], parts[0], parts[2]
    if fname.endswith(".rpm"):
        base, _, arch = fname.removesuffix(".rpm").rpartition(".")
        bits = base.rsplit("-", 2)
        if len(bits) == 3:
            return bits[0], f"{bits[1]}-{bits[2]}", bits[0], arch
    return fname, "", fname, ""


