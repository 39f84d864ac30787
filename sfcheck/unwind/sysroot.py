"""Where a path named by a core file (NT_FILE) is read from, without leaving the sysroot.

A core is input like any other: its NT_FILE note may name `/../../etc/passwd`, or a
sysroot may hold a symlink pointing out of it. With `--sysroot DIR` a core-supplied path
is resolved the way a chroot would see it: a `..` component is refused outright, and
symlinks inside DIR are followed with their absolute targets taken relative to DIR and
`..` stopping at DIR, so the result is always inside DIR. Every refusal is recorded with
its reason for the report.
"""

from __future__ import annotations

import os
import stat

from ..errors import SfcheckError

MAX_LINKS = 40  # as the kernel's symlink limit (ELOOP)


class Refused(SfcheckError):
    """A core-supplied path that would leave the sysroot; `reason` says how."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PathResolver:
    """`resolver(core_path)` -> a local path to read, or None (`refused[path]` says why,
    for paths refused rather than simply absent)."""

    def __init__(self, sysroot: str | None, overrides: dict[str, str] | None = None) -> None:
        self.sysroot = os.path.realpath(sysroot) if sysroot is not None else None
        self.overrides = overrides if overrides is not None else {}
        self.refused: dict[str, str] = {}

    def __call__(self, path: str) -> str | None:
        if path in self.overrides:
            return self.overrides[path]
        if not path.startswith("/"):
            return None  # "[vdso]", anonymous names, "(deleted)" leftovers
        if "\0" in path:
            self.refused[path] = "NUL byte in the path"
            return None
        # An existing non-regular file is returned: opening it (fileio) refuses it and says
        # so, without blocking.
        if self.sysroot is None:
            return path if os.path.exists(path) else None
        try:
            local = confine(self.sysroot, path)
        except Refused as exc:
            self.refused[path] = exc.reason
            return None
        return local if local is not None and os.path.exists(local) else None


def confine(root: str, path: str) -> str | None:
    """`path` (absolute, as the target saw it) resolved inside the real directory `root`;
    None when a component does not exist. Raises Refused for `..` in `path` and for
    symlink loops."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Refused("'..' in a path from the core")
    todo = list(reversed(parts))
    done: list[str] = []  # components resolved so far, none of them a symlink
    links = 0
    while todo:
        name = todo.pop()
        if name == ".":
            continue
        if name == "..":  # only from a symlink target: stop at the root, as a chroot does
            if done:
                done.pop()
            continue
        here = os.path.join(root, *done, name)
        try:
            st = os.lstat(here)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_LINKS:
                raise Refused("too many levels of symbolic links")
            try:
                target = os.readlink(here)
            except OSError:
                return None
            if target.startswith("/"):
                done = []
            todo.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
            continue
        done.append(name)
    local = os.path.join(root, *done)
    # By construction inside root; checked again so that a bug here cannot escape.
    if os.path.commonpath([root, os.path.realpath(local)]) != root:
        raise Refused("resolves outside the sysroot")
    return local
