"""The simulator's one error type: what went wrong, in which thread, at which line, in one sentence."""

from __future__ import annotations


class KernelFault(Exception):
    """A kernel did something a GPU defines as an error, or leaves undefined.

    ``kind`` is a short class ("out of bounds", "barrier", "warp collective", "launch",
    "shared memory", "local memory", "loop limit", "undefined", "unsupported"); ``block`` and ``thread`` are (x, y, z)
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


class NegativeIndexWrapped(UserWarning):
    """A negative index wrapped to the array's end, as Numba compiles it (once per line per launch).

    Not an error: Numba wraps an index in [-size, 0) as Python does. A warning because the same
    index in CUDA C addresses memory before the array, and it is rarely what was meant.
    """

    def __init__(self, line: int, index: int, axis: int, size: int):
        self.line, self.index, self.axis, self.size = line, index, axis, size
        super().__init__(
            f"line {line}: index {index} on axis {axis} wrapped to {index + size} (that axis has {size}); Numba "
            "wraps a negative index once, as Python does, where CUDA C would address memory before the array"
        )


class DividedByZero(UserWarning):
    """A division by zero gave what a compiled kernel gives (once per line per launch).

    Not an error: numba-cuda compiles kernels with NumPy's error model, where an integer's quotient and remainder by
    zero are 0 and a float's are IEEE's. A warning because it is rarely what was meant, and in CUDA C an integer
    division by zero is undefined.
    """

    def __init__(self, line: int, op: str, value):
        self.line, self.op, self.value = line, op, value
        kind = "an integer's" if isinstance(value, int) else "a float's"
        super().__init__(
            f"line {line}: {op} by zero gave {value!r}, {kind} result as Numba compiles it (NumPy's error model: no "
            "error is raised); in CUDA C an integer division by zero is undefined"
        )


# The warnings a verdict (gpu/sandbox/harness.py) and a trace (gpu/trace/record.py) repeat as notes: right as Numba
# compiles the kernel, rarely what was meant
NOTES = (NegativeIndexWrapped, DividedByZero)

__all__ = ["NOTES", "DividedByZero", "KernelFault", "NegativeIndexWrapped"]
