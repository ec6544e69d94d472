"""A 256-bin histogram of uint8 data, step by step: where atomics contend.

Every step adds into ``hist`` (256 uint32 counts, zeroed before the launch). How fast
they run depends on the data: when many threads hit the same bin at once, their
atomics serialise, so the data's distribution is part of the experiment.
"""

from __future__ import annotations

from numba import uint32

from gpu.core.backend import BACKEND, cuda
from gpu.core.launch_spec import Launch

BINS = 256  # one bin per uint8 value


@cuda.jit(cache=not BACKEND.simulated)
def histogram_global_kernel(data, hist):
    """Step 1, global atomics: one thread per element adds 1 to its bin in device memory.

    Every count is an atomic on one of only 256 addresses in device memory. With
    uniform data they spread out; with skewed data thousands of threads queue on the
    same few addresses, and with a single value on one.
    """
    i = cuda.grid(1)
    if i < data.size:
        cuda.atomic.add(hist, data[i], uint32(1))


@cuda.jit(cache=not BACKEND.simulated)
def histogram_shared_kernel(data, hist):
    """Step 2, per-block shared histograms: count in shared memory, merge once per block.

    Each block keeps its own 256 counts in shared memory (zeroed, then ``syncthreads``),
    walks the data with a grid-stride loop (a fixed grid of one wave of blocks), and
    counts with shared-memory atomics, which are much cheaper and contend only within
    the block. At the end each block adds its non-zero bins to ``hist``: at most 256
    global atomics per block instead of one per element.
    """
    local = cuda.shared.array(BINS, uint32)
    tid = cuda.threadIdx.x
    for b in range(tid, BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()  # every bin is zero before anyone counts
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        cuda.atomic.add(local, data[i], uint32(1))
    cuda.syncthreads()  # every count of this block is in before the merge
    for b in range(tid, BINS, cuda.blockDim.x):
        if local[b] > 0:
            cuda.atomic.add(hist, b, local[b])


# What the experiments launch each kernel with (gpu/core/launch_spec.py; the compile gate
# compiles every signature here for every target): uint8 data, 256 uint32 bins, 256 threads.
LAUNCHES = {
    name: Launch(("void(uint8[::1], uint32[::1])",), threads_per_block=256)
    for name in ("histogram_global_kernel", "histogram_shared_kernel")
}


__all__ = ["BINS", "histogram_global_kernel", "histogram_shared_kernel"]
