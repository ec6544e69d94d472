"""The one output gate: text that a learner or an imported file controls, made safe to show.

Source lines, array and function names, fault sentences, device names and keys reach a
terminal or a page through ``shown``. Control characters (C0, DEL, C1: an ANSI escape
starts with one) and Unicode's format characters (the bidi overrides and isolates that
reorder what a reader sees, zero-width joiners, the BOM) are shown escaped, as ``\\x1b``
or ``\\u202e``, never raw; every other character is kept. JSON output needs none of this:
``json.dumps`` escapes control characters itself, and its reader is a program.
"""

from __future__ import annotations

import unicodedata

# Categories shown escaped: Cc (controls: C0, DEL, C1), Cf (format: bidi overrides and isolates, zero-width
# characters, the BOM), Cs (lone surrogates, which a terminal cannot print), Zl/Zp (line and paragraph separators).
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SAFE_ASCII = frozenset(chr(c) for c in range(0x20, 0x7F))


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def shown(text: object, *, newlines: bool = False) -> str:
    """``text`` (``str()`` of it) with every control and format character escaped.

    ``newlines=True`` keeps ``\\n`` as a line break (a multi-line report); otherwise it is
    escaped too, so one quoted value stays on one line. A tab is kept either way.
    """
    text = text if isinstance(text, str) else str(text)
    if all(ch in _SAFE_ASCII for ch in text):  # the common case, checked in C-speed loops
        return text
    out = []
    for ch in text:
        if ch in _SAFE_ASCII or ch == "\t" or (newlines and ch == "\n"):
            out.append(ch)
        elif unicodedata.category(ch) in _ESCAPED_CATEGORIES:
            out.append(_escape(ch))
        else:
            out.append(ch)
    return "".join(out)


def is_safe(text: str, *, newlines: bool = False) -> bool:
    """True when ``shown(text)`` would change nothing (for tests and assertions)."""
    return shown(text, newlines=newlines) == text


__all__ = ["is_safe", "shown"]
