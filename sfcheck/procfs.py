"""Reading a live process through /proc: what it is (alive, zombie, kernel thread), its
mappings, its memory, and the very files it maps. Every read here may race with the
process: it can exit, unmap, or change a file at any moment; each function says what it
found instead of raising past its caller.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
from dataclasses import dataclass

from .filesnap import SnapshotError, snapshot_fd

PF_KTHREAD = 0x00200000  # include/linux/sched.h: the task is a kernel thread
DELETED = " (deleted)"  # what the kernel appends to the path of an unlinked file
_OPEN = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY


class ProcError(Exception):
    """The process cannot be read (gone, not permitted, no memory): a one-line error."""


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    perms: str
    offset: int
    path: str
    inode: int = 0

    @property
    def readable(self) -> bool:
        return self.perms[:1] == "r"

    @property
    def executable(self) -> bool:
        return self.perms[2:3] == "x"


@dataclass(frozen=True)
class Task:
    """Fields of /proc/PID/stat: the state letter, the PF_* flags and the start time (in
    clock ticks since boot: with the PID it names one process, even if the PID is reused)."""

    state: str
    flags: int
    start_time: int


def task(pid: int) -> Task | None:
    """The process's /proc/PID/stat, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields follow the last ')'.
    fields = text[text.rfind(")") + 1:].split()
    try:
        return Task(fields[0], int(fields[6]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def check_readable(pid: int) -> Task:
    """The process, if it has user memory to read; else ProcError saying what it is."""
    t = task(pid)
    if t is None:
        raise ProcError(f"no process {pid}")
    if t.state in ("Z", "X"):
        raise ProcError(f"process {pid} is a zombie (it has exited; its parent has not "
                        "reaped it yet): it has no memory left to read")
    if t.flags & PF_KTHREAD:
        raise ProcError(f"process {pid} is a kernel thread: it has no user memory, so no "
                        "objects and no SFrame")
    return t


def exited(pid: int, was: Task) -> bool:
    """Whether the process read as `was` has exited (or its PID now names another)."""
    now = task(pid)
    return now is None or now.state in ("Z", "X") or now.start_time != was.start_time


def parse_maps(text: str) -> list[Mapping]:
    out = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 5:
            continue
        lo, _, hi = parts[0].partition("-")
        try:
            out.append(Mapping(int(lo, 16), int(hi, 16), parts[1], int(parts[2], 16),
                               parts[5].strip() if len(parts) > 5 else "", int(parts[4])))
        except ValueError:
            continue
    return out


def read_maps(pid: int) -> list[Mapping]:
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            return parse_maps(os.fsdecode(fh.read()))
    except FileNotFoundError:
        raise ProcError(f"no process {pid}") from None
    except OSError as exc:
        raise ProcError(f"cannot read /proc/{pid}/maps: {exc.strerror}") from None


def open_mem(pid: int) -> int:
    try:
        return os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ProcError(f"no process {pid}") from None
    except OSError as exc:
        check_readable(pid)  # it exited or became a zombie meanwhile: say that instead
        raise ProcError(f"cannot read the memory of process {pid} ({exc.strerror}): run as "
                        "its owner with ptrace permission (see kernel.yama.ptrace_scope) or "
                        "as root") from None


def read_mem(fd: int, addr: int, size: int) -> tuple[bytearray, str]:
    """Up to `size` bytes at `addr`, and why fewer ("" when all were read). A read that
    stops early gives what came before it; an exited process reads as 0 bytes. The bytes
    are read in place (one buffer of `size`, no copy)."""
    buf = bytearray(size)
    view, done = memoryview(buf), 0
    why = ""
    while done < size:
        try:
            n = os.preadv(fd, [view[done:done + (1 << 20)]], addr + done)
        except OSError as exc:
            why = exc.strerror or str(exc)
            break
        if n == 0:
            why = "nothing more to read"
            break
        done += n
    view.release()
    del buf[done:]
    return buf, why


def is_deleted(m: Mapping) -> bool:
    """The kernel marks the path of an unlinked file; a file really named so that still
    exists as the mapped inode is not deleted."""
    if not m.path.endswith(DELETED):
        return False
    try:
        return os.stat(m.path).st_ino != m.inode
    except OSError:
        return True


def mapped_file(pid: int, m: Mapping, deleted: bool) -> bytes | mmap.mmap:
    """The bytes of the file mapped by `m`, as a sealed private copy (filesnap): through
    /proc/PID/map_files (the very inode mapped, even if deleted or replaced since; needs root
    or CAP_CHECKPOINT_RESTORE), else by its path if that is still the same inode. Raises
    ProcError with why not."""
    via = f"/proc/{pid}/map_files/{m.start:x}-{m.end:x}"
    try:
        fd = os.open(via, _OPEN)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise ProcError("its mapping is gone (unmapped, or the process exited)") from None
        if deleted:
            raise ProcError(f"deleted, and {via} cannot be opened ({exc.strerror}): run as "
                            "root to read it") from None
        fd = _open_same(m, via, exc)
    try:
        return snapshot_fd(fd)
    except SnapshotError as exc:
        raise ProcError(exc.message) from None
    finally:
        os.close(fd)


def _open_same(m: Mapping, via: str, why: OSError) -> int:
    try:
        fd = os.open(m.path, _OPEN)
    except OSError as exc:
        raise ProcError(f"cannot open it ({exc.strerror}) nor {via} ({why.strerror})") from None
    ino = os.fstat(fd).st_ino
    if ino != m.inode:
        os.close(fd)
        raise ProcError(f"replaced since it was mapped (inode {m.inode} mapped, {ino} at the "
                        f"path) and {via} cannot be opened ({why.strerror}): run as root")
    return fd


AT_BASE = 7  # include/uapi/linux/auxvec.h: the interpreter's load address


def exec_objects(pid: int) -> tuple[str | None, int | None]:
    """(path of the executable as /proc/PID/exe names it, the interpreter's load address
    from /proc/PID/auxv): the two objects binfmt_elf maps at exec, and so the only ones it
    registers SFrame for. None where it cannot be read (the process exited, a kernel thread,
    no permission); an auxv in another word size than ours (a compat process) is not read."""
    try:
        exe: str | None = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = None
    base = None
    try:
        with open(f"/proc/{pid}/auxv", "rb") as fh:
            raw = fh.read(1 << 16)
    except OSError:
        raw = b""
    word = struct.calcsize("@L")
    for off in range(0, len(raw) - 2 * word + 1, 2 * word):
        key, value = struct.unpack_from("@LL", raw, off)
        if key == AT_BASE:
            base = value or None  # 0: a static executable, no interpreter
            break
    return exe, base
