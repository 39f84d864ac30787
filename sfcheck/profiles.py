"""Consumer profiles: which SFrame sections a given reader (kernel, glibc, libsframe, LLVM) accepts."""

from __future__ import annotations

PROFILE_NAMES: tuple[str, ...] = ("strict", "kernel", "glibc-2.42", "libsframe-2.46", "llvm-22")
