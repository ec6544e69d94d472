"""CPU implementations of c = a + b, from the article's Python loop to parallel Numba.

Each takes (a, b, c) and writes c in place, so all are timed the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numba
import numpy as np

CpuAdd = Callable[[np.ndarray, np.ndarray, np.ndarray], None]
# A run's Python loop runs fully only if its estimate fits this; otherwise it is estimated.
PYTHON_LOOP_BUDGET_S = 10.0


def python_loop(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """The article's vector_add_cpu: one element at a time, in the interpreter."""
    for i in range(len(a)):
        c[i] = a[i] + b[i]


def numpy_add(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """NumPy's vectorised add, writing into c (no temporary)."""
    np.add(a, b, out=c)


@numba.njit(cache=True)
def numba_loop(a, b, c):  # pragma: no cover - compiled
    """The Python loop compiled by Numba for one CPU core."""
    for i in range(a.size):
        c[i] = a[i] + b[i]


@numba.njit(parallel=True, cache=True)
def numba_parallel_loop(a, b, c):  # pragma: no cover - compiled
    """The same loop split across CPU cores with prange."""
    for i in numba.prange(a.size):
        c[i] = a[i] + b[i]


# Name -> implementation, in the order pages and reports show them.
IMPLEMENTATIONS: dict[str, CpuAdd] = {
    "python": python_loop,
    "numpy": numpy_add,
    "numba": numba_loop,
    "numba-parallel": numba_parallel_loop,
}

LABELS = {
    "python": "Python loop (article)",
    "numpy": "NumPy",
    "numba": "Numba @njit",
    "numba-parallel": "Numba @njit(parallel=True)",
}

_COMPILED = {"numba": numba_loop, "numba-parallel": numba_parallel_loop}


def compile_cpu(name: str) -> float:
    """Compile (or load from cache) a Numba CPU implementation; seconds taken, 0 if none."""
    dispatcher = _COMPILED.get(name)
    if dispatcher is None:
        return 0.0
    start = time.perf_counter()
    dispatcher.compile("void(float32[::1], float32[::1], float32[::1])")
    return time.perf_counter() - start


def estimate_python_loop_s(n: int, probe_n: int = 20_000) -> float:
    """Estimate the Python loop's seconds for n elements from a short probe.

    Times the loop on ``min(n, probe_n)`` elements and scales linearly (the loop does
    the same work per element). Returns seconds.
    """
    m = max(1, min(n, probe_n))
    a = np.ones(m, dtype=np.float32)
    c = np.empty_like(a)
    start = time.perf_counter()
    python_loop(a, a, c)
    return (time.perf_counter() - start) * n / m
