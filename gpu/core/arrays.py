"""Input arrays, made one way for every experiment: reproducible from a seed."""

from __future__ import annotations

import numpy as np


def vector_inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two float32 vectors a and b of uniform [0, 1) values, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)


def tiled_vector_inputs(n: int, seed: int = 0, distinct: int = 2**20) -> tuple[np.ndarray, np.ndarray]:
    """Like ``vector_inputs`` but only ``distinct`` random values, repeated to length ``n``.

    Why: a sweep up to 2^30 elements would spend seconds per size drawing random numbers
    that the timing never looks at; a 4 MiB block repeated is as good for an add.
    """
    a, b = vector_inputs(min(n, distinct), seed)
    return np.resize(a, n), np.resize(b, n)
