"""The simulator's one error type: what went wrong, in which thread, at which line, in one sentence."""

from __future__ import annotations


class KernelFault(Exception):
    """A kernel did something a GPU defines as an error, or leaves undefined.

    ``kind`` is a short class ("out of bounds", "barrier", "warp collective", "launch",
    "shared memory", "local memory", "unsupported"); ``block`` and ``thread`` are (x, y, z)
    or None for a launch error; ``line`` is the kernel's source line where known.
    """

    def __init__(self, kind: str, sentence: str, *, block=None, thread=None, line: int | None = None):
        self.kind = kind
        self.sentence = sentence
        self.block = block
        self.thread = thread
        self.line = line
        super().__init__(self.describe())

    def where(self) -> str:
        parts = []
        if self.thread is not None:
            parts.append(f"thread {tuple(self.thread)} of block {tuple(self.block)}")
        if self.line:
            parts.append(f"line {self.line}")
        return ", ".join(parts)

    def describe(self) -> str:
        where = self.where()
        return f"{self.kind}{' (' + where + ')' if where else ''}: {self.sentence}"


class _OutOfBounds(Exception):
    """Raised inside a thread; the engine adds which thread and turns it into a KernelFault."""

    def __init__(self, sentence: str, line: int):
        self.sentence = sentence
        self.line = line
        super().__init__(sentence)


__all__ = ["KernelFault"]
