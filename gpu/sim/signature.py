"""``@cuda.jit("void(float32[:], int32)")``: Numba's signature strings, read by a grammar of our own.

numba-cuda ``eval()``s a signature string as Python; the simulator never evaluates one. It
parses this grammar (whitespace anywhere between tokens) and accepts what it describes:

    signature := [type] "(" [type ("," type)* [","]] ")"
    type      := NAME ["[" dim ("," dim)* "]"]       NAME: a Numba scalar type (void, float32, f4, ...)
    dim       := ":" | "::1"

The simulator types nothing (values are NumPy's), so a parsed signature only has to be
valid; anything else is a TypeError saying what is wrong and where.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Numba's scalar type names and their short aliases (numba.core.types: float32 = f4, ...).
SCALARS = frozenset({
    "void", "none", "boolean", "bool_", "b1",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "intp", "uintp", "intc", "uintc",
    "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8",
    "float16", "float32", "float64", "f2", "f4", "f8", "complex64", "complex128", "c8", "c16",
})
MAX_SIGNATURE_CHARS = 1_000  # a kernel's signature is a line; anything longer is not one
_TOKEN = re.compile(r"\s*(::1|[A-Za-z_][A-Za-z0-9_]*|[()\[\],:])")


@dataclass(frozen=True)
class ArgType:
    """One type of a signature: a scalar (``ndim`` 0) or an array of that scalar with ``ndim`` dimensions."""

    scalar: str
    ndim: int = 0


@dataclass(frozen=True)
class Signature:
    returns: ArgType | None  # None where the string names no return type: "(float32[:],)"
    args: tuple[ArgType, ...]


def _tokens(text: str) -> list[str]:
    out, at = [], 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        match = _TOKEN.match(text, at)
        if match is None:
            raise TypeError(f"signature {text!r}: {text[at:].strip()[:20]!r} at character {at} is not a type, "
                            "a bracket, a comma or a colon")
        out.append(match.group(1))
        at = match.end()
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            found = "the end" if token is None else repr(token)
            want = repr(expected) if expected else "a type"
            raise TypeError(f"signature {self.text!r}: expected {want}, found {found}")
        self.at += 1
        return token

    def type_(self) -> ArgType:
        name = self.take()
        if name not in SCALARS:
            raise TypeError(f"signature {self.text!r}: {name!r} is not a type Numba's signatures name (float32, int32, "
                            "uint8, float64[:], ...)")
        if self.peek() != "[":
            return ArgType(name)
        self.take("[")
        ndim = 0
        while True:
            dim = self.take()
            if dim not in (":", "::1"):
                raise TypeError(f"signature {self.text!r}: an array dimension is ':' or '::1', not {dim!r}")
            ndim += 1
            if self.peek() == ",":
                self.take(",")
                continue
            self.take("]")
            return ArgType(name, ndim)

    def signature(self) -> Signature:
        returns = None if self.peek() == "(" else self.type_()
        self.take("(")
        args: list[ArgType] = []
        while self.peek() != ")":
            args.append(self.type_())
            if self.peek() == ",":
                self.take(",")
            elif self.peek() != ")":
                self.take(")")  # raises: names what was found instead
        self.take(")")
        if self.peek() is not None:
            raise TypeError(f"signature {self.text!r}: {self.peek()!r} after the closing ')'")
        return Signature(returns, tuple(args))


def parse(text: str) -> Signature:
    """The signature ``text`` describes; TypeError naming what is wrong. Never evaluates anything."""
    if not isinstance(text, str):
        raise TypeError(f"a signature is a string such as 'void(float32[:])', not {type(text).__name__}")
    if len(text) > MAX_SIGNATURE_CHARS:
        raise TypeError(f"a signature of {len(text):,} characters; a kernel's is far shorter")
    return _Parser(text).signature()


def accept(signatures) -> None:
    """Check ``@cuda.jit``'s first argument: a string, a list or tuple of them, or Numba type objects (not strings,
    already built by Python, not evaluated here)."""
    items = signatures if isinstance(signatures, (list, tuple)) else [signatures]
    for item in items:
        if isinstance(item, str):
            parse(item)
        elif type(item).__module__.split(".")[0] != "numba":
            raise TypeError(f"a signature is a string such as 'void(float32[:])' or a Numba type, not {item!r}")


__all__ = ["ArgType", "Signature", "accept", "parse"]
