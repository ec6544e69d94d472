"""How the experiments launch a kernel: its argument types and its block size.

Every module that defines ``@cuda.jit`` kernels declares, beside them::

    LAUNCHES = {"my_kernel": Launch(("void(float32[::1], float32[::1])",), threads_per_block=256)}

one entry per kernel, with every signature an experiment launches it with (the types of
its arguments as Numba sees them: a C-contiguous float32 vector is ``float32[::1]``, a
matrix ``float32[:, ::1]``) and the threads per block it is launched with. The compile
gate (``tests/test_compile_gate.py``) compiles every kernel it finds in ``gpu/`` with
each signature for every target, and fails on a kernel that has no entry; ``python -m
gpu compile`` and the pages show occupancy at ``threads_per_block``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Launch:
    """Signatures an experiment launches one kernel with, and its threads per block."""

    signatures: tuple[str, ...]
    threads_per_block: int

    def __post_init__(self):
        if isinstance(self.signatures, str) or not self.signatures:
            raise ValueError(f"signatures must be a non-empty tuple of strings, got {self.signatures!r}")
        if not 1 <= self.threads_per_block <= 1024:
            raise ValueError(f"threads_per_block must be 1 to 1024, got {self.threads_per_block}")


__all__ = ["Launch"]
