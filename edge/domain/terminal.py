"""Text shown on an operator's terminal: a value someone else chose (a project's name, a
customer reference, an address) must not drive the terminal. An escape sequence could recolour
or clear the screen, rewrite the title or, on some terminals, answer back as if typed; a bidi
override or a zero-width character could make one value read as another; a newline could forge
a line of output. Each such character is written as its escape instead (``\\x1b``, ``\\u202e``),
so the operator sees that it is there.
"""

from __future__ import annotations

import unicodedata
from typing import Any

# control (C0, DEL, C1), format (bidi overrides, zero-width ...), line and paragraph separators
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})


def printable(text: str) -> str:
    if text.isprintable():  # the common case: nothing to do
        return text
    return "".join(_escape(ch) if unicodedata.category(ch) in _HIDDEN else ch for ch in text)


def escaped(value: Any) -> Any:
    """``value`` (decoded JSON) with every string in it ``printable``, keys too."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {escaped(k): escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escaped(v) for v in value]
    return value


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
