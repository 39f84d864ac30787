"""How names from files and archives appear in reports (text and JUnit).

File and member names are bytes; sfcheck holds them as `str` decoded with
`surrogateescape` (a byte 0xXX that is not UTF-8 becomes U+DCXX). Text lines must not
carry a newline or escape sequence from a name (it would forge a report line or drive the
terminal), nor a character that reorders or breaks the displayed line: the bidirectional
controls (U+200E/F, U+202A-E, U+2066-9: "Trojan Source", CVE-2021-42574) and the line and
paragraph separators U+2028/9. XML cannot carry control characters or lone surrogates. The
rule, the same in text and JUnit: a backslash becomes `\\\\`; a C0 control or DEL `\\xNN`
(NN < 80); an undecodable byte `\\xNN` of that byte (NN >= 80); a C1 control, a bidi
control or separator above, any other lone surrogate and U+FFFE/U+FFFF `\\uNNNN`;
everything else is kept. It is lossless:
the escaped form reads back to the original bytes. JSON and SARIF carry the `str`
itself: JSON's `\\udcXX` escape keeps the byte (see README).
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069"
                     "\ud800-\udfff\ufffe\uffff]")


def _one(m: re.Match[str]) -> str:
    ch = m.group()
    if ch == "\\":
        return "\\\\"
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the original byte
        return f"\\x{code - 0xDC00:02x}"
    if code >= 0x80:  # C1, bidi control, separator, other lone surrogate, U+FFFE/U+FFFF
        return f"\\u{code:04x}"
    return f"\\x{code:02x}"


def escape(text: str) -> str:
    """`text` with nothing that could break a line or an XML document (see module doc)."""
    return _UNSAFE.sub(_one, text)
