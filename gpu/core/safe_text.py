"""Text from a learner or an imported file, made safe to print on a terminal or a page.

A device name, a key or a message read from an uploaded check file may hold control
characters (an ANSI escape that recolours or clears a terminal, a carriage return that
overwrites a line) or Unicode bidi controls (which reorder what a reader sees). ``safe_text``
shows each such character escaped (``\\x1b``, ``\\u202e``) and leaves everything else as is.
"""

from __future__ import annotations

import unicodedata

# Unicode's bidirectional formatting characters (embeddings, overrides, isolates, marks):
# they change the order a reader sees without being visible themselves.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _unsafe(ch: str) -> bool:
    # Cc: C0/C1 controls and DEL; Cf: format characters (bidi, zero-width joiners); Zl/Zp: line breaks
    return ch in BIDI_CONTROLS or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")


def safe_text(s: str) -> str:
    """``s`` with every control, format (bidi) and line-separator character shown escaped."""
    if s.isprintable() and not any(ch in BIDI_CONTROLS for ch in s):
        return s
    return "".join(_escaped(ch) if _unsafe(ch) else ch for ch in s)


__all__ = ["BIDI_CONTROLS", "safe_text"]
