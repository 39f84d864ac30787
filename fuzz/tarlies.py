"""Tar headers that lie, for the `archive` harness's custom mutator (issue 27.2-3).

Byte mutation rarely produces a header that is valid except for one lie, since every
change breaks the checksum. These moves find the ustar headers of a plain tar (also a
gzip/xz tar, decompressed, changed and compressed again, and a tar stored plain in an
`ar` member, changed in place) and tell one lie with the checksum made right, or wrong
on purpose:

* a bad checksum on a header after the first (GNU tar skips to the next header),
* a negative (base-256) or impossible size, an octal size past the data,
* a pax header or GNU long name claiming a huge body (up to 2^40 bytes), inserted,
* a pax record `size=-1`, `size=x` or a huge size, inserted,
* the archive cut inside a header or a body.

Deterministic for a given (data, seed), as libFuzzer requires.
"""

from __future__ import annotations

import gzip
import lzma
import random
import zlib

BLOCK = 512
_MAX_PLAIN = 8 << 20  # a compressed seed is changed only if it expands to this or less


def headers(tar: bytes) -> list[int]:
    """Offsets of the blocks that look like ustar/GNU headers (magic at 257)."""
    return [off for off in range(0, len(tar) - BLOCK + 1, BLOCK)
            if tar[off + 257:off + 262] == b"ustar"]


def checksum(block: bytearray) -> None:
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block[:BLOCK])


def header(name: bytes, size: int, kind: bytes, base256: bool = False) -> bytes:
    """A ustar header block (GNU magic) with the checksum right."""
    block = bytearray(BLOCK)
    block[:len(name[:100])] = name[:100]
    block[100:108] = b"0000644\0"
    block[108:124] = b"0000000\0" * 2
    if base256 or not 0 <= size < 8 ** 11:
        block[124:136] = (b"\x80" + (size % (1 << 88)).to_bytes(11, "big")) if size >= 0 \
            else (size % (1 << 96)).to_bytes(12, "big")
    else:
        block[124:136] = b"%011o\0" % size
    block[136:148] = b"00000000000\0"
    block[156:157] = kind
    block[257:265] = b"ustar  \0"
    checksum(block)
    return bytes(block)


def _pax(records: dict[str, str]) -> bytes:
    body = b""
    for key, value in records.items():
        rec = f" {key}={value}\n".encode()
        n = len(rec) + 1
        while len(str(n)) + len(rec) != n:
            n += 1
        body += str(n).encode() + rec
    return header(b"././@PaxHeader", len(body), b"x") + body + bytes(-len(body) % BLOCK)


def lie(tar: bytes, rng: random.Random) -> bytes:
    """One lie told in a plain tar (bytes returned unchanged when it has no header)."""
    offs = headers(tar)
    if not offs:
        return tar
    buf = bytearray(tar)
    at = rng.choice(offs)
    block = bytearray(buf[at:at + BLOCK])
    move = rng.randrange(7)
    if move == 0 and len(offs) > 1:  # bad checksum after the first header
        at = rng.choice(offs[1:])
        buf[at + 148:at + 156] = b"%06o\0 " % rng.randrange(8 ** 6)
        return bytes(buf)
    if move == 1:  # negative size, base-256
        block[124:136] = (-rng.choice((1, 512, 1 << 40, 1 << 80)) % (1 << 96)).to_bytes(12, "big")
    elif move == 2:  # impossible or past-the-data size
        block[124:136] = rng.choice((b"\x80" + b"\xff" * 11, b"77777777777\0",
                                     b"%011o\0" % (len(tar) * 4)))
    elif move in (3, 4):  # a huge header body, claimed before a real member
        kind = b"x" if move == 3 else b"L"
        size = rng.choice((1 << 20, (1 << 20) + 1, 1 << 30, 1 << 40))
        ins = header(b"././@PaxHeader" if kind == b"x" else b"././@LongLink", size, kind,
                     base256=rng.random() < 0.3)
        return bytes(buf[:at]) + ins + bytes(rng.randrange(4) * BLOCK) + bytes(buf[at:])
    elif move == 5:  # a pax size record that is not a size
        value = rng.choice(("-1", "x", "1_0", " 1", str(1 << 70), str(len(tar) * 8)))
        return bytes(buf[:at]) + _pax({"size": value}) + bytes(buf[at:])
    else:  # cut inside a header or a body
        return bytes(buf[:at + rng.randrange(1, 2 * BLOCK)])
    checksum(block)
    buf[at:at + BLOCK] = block
    return bytes(buf)


def _ar_tar_member(data: bytes) -> tuple[int, int] | None:
    """(offset, size) of the first plain tar member of an ar archive (a .deb's data.tar)."""
    pos = 8
    while pos + 60 <= len(data):
        try:
            size = int(data[pos + 48:pos + 58].decode().strip() or "0")
        except (UnicodeDecodeError, ValueError):
            return None
        start = pos + 60
        if data[start + 257:start + 262] == b"ustar":
            return start, size
        pos = start + size + (size & 1)
    return None


def mutate(data: bytes, rng: random.Random) -> bytes | None:
    """A lie told in whichever tar `data` holds; None if it holds none we can reach."""
    if data[257:262] == b"ustar":
        return lie(data, rng)
    if data.startswith(b"!<arch>\n"):
        found = _ar_tar_member(data)
        if found is None:
            return None
        start, size = found
        inner = data[start:start + size]
        changed = lie(inner, rng)
        if len(changed) != len(inner):  # keep the ar framing: same-size lies only
            changed = (changed + bytes(len(inner)))[:len(inner)]
        return data[:start] + changed + data[start + size:]
    if data.startswith(b"\x1f\x8b"):
        plain, pack = _inflated(zlib.decompressobj(16 + zlib.MAX_WBITS), data), gzip.compress
    elif data.startswith(b"\xfd7zXZ\x00"):
        plain, pack = _inflated(lzma.LZMADecompressor(), data), lzma.compress
    else:
        return None
    if plain is None or plain[257:262] != b"ustar":
        return None
    return pack(lie(plain, rng))


def _inflated(decompressor: zlib._Decompress | lzma.LZMADecompressor,
              data: bytes) -> bytes | None:
    """The first _MAX_PLAIN bytes of a compressed tar, or None (corrupt, or larger)."""
    try:
        out = decompressor.decompress(data, _MAX_PLAIN + 1)
    except (zlib.error, lzma.LZMAError, EOFError, ValueError):
        return None
    return None if len(out) > _MAX_PLAIN else out
