"""The CUDA kernels. The vector-add kernel is the article's, line for line in spirit.

Kernels are compiled once per process (Numba caches the specialisation on the
dispatcher) and, on hardware, cached on disk with ``cache=True``.
"""

from __future__ import annotations

import time

from gpu.backend import BACKEND, cuda

# The one specialisation every experiment uses: three C-contiguous float32 vectors.
VECTOR_ADD_SIGNATURE = "void(float32[::1], float32[::1], float32[::1])"


@cuda.jit(cache=not BACKEND.simulated)
def vector_add_kernel(a, b, c):
    """c[i] = a[i] + b[i], one thread per element."""
    tx = cuda.threadIdx.x  # thread index inside its block
    bx = cuda.blockIdx.x  # block index inside the grid
    bw = cuda.blockDim.x  # threads per block
    position = tx + bx * bw
    if position < a.size:  # the last block may run past the end of the data
        c[position] = a[position] + b[position]


def blocks_for(n: int, threads_per_block: int) -> int:
    """Blocks needed to give every one of ``n`` elements a thread (ceil division)."""
    return (n + threads_per_block - 1) // threads_per_block


def compile_vector_add() -> float:
    """Compile (or load from Numba's cache) the vector-add kernel; return seconds taken.

    In the simulator there is nothing to compile and this returns 0.0. Later calls
    return almost at once because the dispatcher keeps the compiled kernel.
    """
    if BACKEND.simulated:
        return 0.0
    start = time.perf_counter()
    vector_add_kernel.compile(VECTOR_ADD_SIGNATURE)
    return time.perf_counter() - start
