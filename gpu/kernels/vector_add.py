"""The CUDA kernels. The vector-add kernel is the article's, line for line in spirit.

Kernels are compiled once per process (Numba caches the specialisation on the
dispatcher) and, on hardware, cached on disk with ``cache=True``.
"""

from __future__ import annotations

import time

from gpu.core.backend import BACKEND, cuda
from gpu.core.launch_spec import Launch

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


# Elements each thread of vector_add_ilp_kernel adds. A memory system as fast as HBM3e
# needs many bytes in flight to reach its bandwidth (Little's law: bytes in flight =
# bandwidth x latency); four independent loads of a and of b per thread, issued before
# any add, put four times as many in flight as the article's kernel does.
ELEMENTS_PER_THREAD = 4


@cuda.jit(cache=not BACKEND.simulated)
def vector_add_ilp_kernel(a, b, c):
    """c = a + b with each thread adding 4 elements, one grid width apart.

    Not the article's kernel: the Scaling page shows it beside that one to explain how
    libraries reach the last part of the bandwidth. Neighbouring threads still touch
    neighbouring elements, so every load stays coalesced. Launch with
    blocks_for(n, threads_per_block * ELEMENTS_PER_THREAD) blocks.
    """
    n = a.size
    width = cuda.gridDim.x * cuda.blockDim.x  # threads in the grid
    i0 = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    i1 = i0 + width
    i2 = i1 + width
    i3 = i2 + width
    if i3 < n:  # all four in range (every thread but those of the last wave)
        a0 = a[i0]
        a1 = a[i1]
        a2 = a[i2]
        a3 = a[i3]
        b0 = b[i0]
        b1 = b[i1]
        b2 = b[i2]
        b3 = b[i3]
        c[i0] = a0 + b0
        c[i1] = a1 + b1
        c[i2] = a2 + b2
        c[i3] = a3 + b3
    else:  # the last wave: each element guarded on its own (i3 is past the end here)
        if i0 < n:
            c[i0] = a[i0] + b[i0]
        if i1 < n:
            c[i1] = a[i1] + b[i1]
        if i2 < n:
            c[i2] = a[i2] + b[i2]



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


# --- launch-configuration kernels (the Launch config page) ---------------------------

# Columns of the indexing probe's per-thread record, in order.
PROBE_FIELDS = ("tx", "bx", "bw", "position", "warp", "masked", "elements")


@cuda.jit(cache=not BACKEND.simulated)
def indexing_probe_kernel(a, b, c, record):
    """The article's kernel, plus a record of what each thread saw and did.

    ``record`` is int32 of shape (threads launched, len(PROBE_FIELDS)); row
    ``tx + bx * bw`` belongs to that thread (every launched thread has exactly one).
    """
    tx = cuda.threadIdx.x
    bx = cuda.blockIdx.x
    bw = cuda.blockDim.x
    position = tx + bx * bw
    record[position, 0] = tx
    record[position, 1] = bx
    record[position, 2] = bw
    record[position, 3] = position
    record[position, 4] = tx // cuda.warpsize  # warp within the block
    if position < a.size:  # the guard: the last block may run past the end of the data
        c[position] = a[position] + b[position]
        record[position, 5] = 0
        record[position, 6] = 1
    else:
        record[position, 5] = 1  # masked off: this thread does nothing
        record[position, 6] = 0


@cuda.jit(cache=not BACKEND.simulated)
def grid_stride_probe_kernel(a, b, c, record, handled_by, hits):
    """A grid-stride vector add that records who handled what.

    Each thread starts at its global index and steps by the whole grid's width, so a
    fixed number of blocks covers any N. ``handled_by[i]`` receives the global thread
    index that added element i; ``hits[i]`` counts how often element i was added
    (exactly once when the loop is right). ``record`` as in indexing_probe_kernel,
    with "elements" = how many elements the thread added.
    """
    tx = cuda.threadIdx.x
    bx = cuda.blockIdx.x
    bw = cuda.blockDim.x
    thread = tx + bx * bw
    stride = bw * cuda.gridDim.x  # threads in the whole grid
    count = 0
    for i in range(thread, a.size, stride):
        c[i] = a[i] + b[i]
        handled_by[i] = thread
        cuda.atomic.add(hits, i, 1)
        count += 1
    record[thread, 0] = tx
    record[thread, 1] = bx
    record[thread, 2] = bw
    record[thread, 3] = thread
    record[thread, 4] = tx // cuda.warpsize
    record[thread, 5] = 1 if count == 0 else 0  # idle: more threads than elements
    record[thread, 6] = count


@cuda.jit(cache=not BACKEND.simulated)
def vector_add_grid_stride_kernel(a, b, c):
    """c[i] = a[i] + b[i] with a fixed grid: each thread strides by the grid's width."""
    tx = cuda.threadIdx.x
    bx = cuda.blockIdx.x
    bw = cuda.blockDim.x
    stride = bw * cuda.gridDim.x  # threads in the whole grid
    for i in range(tx + bx * bw, a.size, stride):
        c[i] = a[i] + b[i]


def compile_grid_stride_vector_add() -> float:
    """Compile the grid-stride vector add for float32 vectors; seconds taken (0.0 simulated)."""
    if BACKEND.simulated:
        return 0.0
    start = time.perf_counter()
    vector_add_grid_stride_kernel.compile(VECTOR_ADD_SIGNATURE)
    return time.perf_counter() - start


# What the experiments launch each kernel with (gpu/core/launch_spec.py; the compile gate
# compiles every signature here for every target). Block size: the pages' default.
LAUNCHES = {
    "vector_add_kernel": Launch(("void(float32[::1], float32[::1], float32[::1])",), threads_per_block=256),
    "vector_add_ilp_kernel": Launch(("void(float32[::1], float32[::1], float32[::1])",), threads_per_block=256),
    "vector_add_grid_stride_kernel": Launch(("void(float32[::1], float32[::1], float32[::1])",), threads_per_block=256),
    "indexing_probe_kernel": Launch(
        ("void(float32[::1], float32[::1], float32[::1], int32[:, ::1])",), threads_per_block=256
    ),
    "grid_stride_probe_kernel": Launch(
        ("void(float32[::1], float32[::1], float32[::1], int32[:, ::1], int32[::1], int32[::1])",),
        threads_per_block=256,
    ),
}
