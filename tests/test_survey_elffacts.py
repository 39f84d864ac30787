"""What the survey reads of an ELF file besides the checker's result (elffacts.py)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from sfcheck.survey.elffacts import _annobin_tools, elf_facts

from helpers import CORPUS

LIB = (CORPUS / "v3" / "libcorpus.so").read_bytes()


def test_sizes_and_producer() -> None:
    f = elf_facts(LIB)
    assert f.producer.startswith("GCC: (Debian")
    assert f.eh_frame_bytes > 0 and f.text_bytes > 0


def _note(name: bytes, desc: bytes = b"", ntype: int = 0x100) -> bytes:
    pad = b"\0" * (-len(name) % 4)
    return struct.pack("<III", len(name), len(desc), ntype) + name + pad + desc \
        + b"\0" * (-len(desc) % 4)


def test_annobin_tool_notes() -> None:
    notes = _note(b"GA$\x033p4\0") + _note(b"GA$\x05gcc 12.2.1 20221121\0") \
        + _note(b"GA*\x05annobin built by llvm 17\0")
    assert _annobin_tools(notes, "<") == ["gcc 12.2.1 20221121", "annobin built by llvm 17"]
    assert _annobin_tools(notes[:20], "<") == []  # cut short: nothing, no exception


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(LIB)), st.integers(0, len(LIB) - 1), st.integers(0, 255))
def test_hostile_bytes_never_raise(cut: int, at: int, byte: int) -> None:
    data = bytearray(LIB[:cut])
    if at < len(data):
        data[at] = byte
    f = elf_facts(bytes(data))
    assert f.eh_frame_bytes >= 0 and f.text_bytes >= 0 and f.producer
