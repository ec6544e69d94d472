"""Sum of N float32 values, in steps from the obvious kernel to one near the memory's limit.

The atomic steps add into ``total`` (one float32, zeroed before the launch), so any
number of blocks can take part. What changes is how many atomics there are and how a
block combines its values before its one atomic: the lessons are synchronisation,
divergence and warp shuffles. The two-pass step then drops atomics altogether: blocks
write partial sums, a second launch adds them up, in the same order every run.
"""

from __future__ import annotations

from numba import float32

from gpu.core.backend import BACKEND, cuda
from gpu.core.launch_spec import Launch

MAX_THREADS_PER_BLOCK = 1024  # shared arrays need a size known at compile time: the most a block can have
WARP_SIZE = 32
MAX_WARPS = MAX_THREADS_PER_BLOCK // WARP_SIZE  # one partial sum per warp of the largest block
FULL_MASK = 0xFFFFFFFF  # every lane of the warp takes part in the shuffle


@cuda.jit(cache=not BACKEND.simulated)
def reduce_atomic_kernel(x, total):
    """Step 1, global atomics: every thread adds its element straight into ``total``.

    Correct and short, but all N atomics hit one address, so the memory system
    serialises them: the kernel runs at the speed of one address's atomic unit, not of
    the memory. The sum's order is whatever order the atomics land in.
    """
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(total, 0, x[i])


@cuda.jit(cache=not BACKEND.simulated)
def reduce_tree_kernel(x, total):
    """Step 2, a shared-memory tree: each block sums its values in shared memory, then one atomic.

    Each thread writes its element to shared memory; ``syncthreads`` makes every write
    visible before anyone reads. Then half the threads add the other half's values, and
    again, log2(block) times. The active threads are always the low ``stride`` ones
    (sequential addressing), so whole warps stay busy or idle together (no divergence
    inside a warp) and neighbouring threads read neighbouring words (no bank conflicts).
    N / block atomics instead of N. Threads per block must be a power of two.
    """
    partial = cuda.shared.array(MAX_THREADS_PER_BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    value = float32(0.0)
    if i < x.size:
        value = x[i]
    partial[tid] = value
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if tid < stride:
            partial[tid] += partial[tid + stride]
        cuda.syncthreads()  # every addition of this level lands before the next level reads it
        stride //= 2
    if tid == 0:
        cuda.atomic.add(total, 0, partial[0])


@cuda.jit(device=True)
def warp_sum(value):
    """The sum of ``value`` over the 32 lanes of a warp, in lane 0 (5 shuffles, no shared memory)."""
    offset = WARP_SIZE // 2
    while offset > 0:
        value += cuda.shfl_down_sync(FULL_MASK, value, offset)
        offset //= 2
    return value


@cuda.jit(device=True)
def block_sum(value):
    """The sum of ``value`` over the block, in thread 0: warp sums, then the first warp sums those."""
    warp_sums = cuda.shared.array(MAX_WARPS, float32)
    lane = cuda.threadIdx.x % WARP_SIZE
    warp = cuda.threadIdx.x // WARP_SIZE
    value = warp_sum(value)
    if lane == 0:
        warp_sums[warp] = value
    cuda.syncthreads()  # every warp's sum is in shared memory before warp 0 reads them
    if warp == 0:
        value = float32(0.0)
        if lane < cuda.blockDim.x // WARP_SIZE:
            value = warp_sums[lane]
        value = warp_sum(value)
    return value


@cuda.jit(device=True)
def block_sum_into(total, value):
    """Add the block's values to ``total`` with one atomic (thread 0's, holding the block's sum)."""
    value = block_sum(value)
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(total, 0, value)


@cuda.jit(cache=not BACKEND.simulated)
def reduce_shuffle_kernel(x, total):
    """Step 3, warp shuffles: lanes of a warp add each other's registers directly.

    ``shfl_down_sync`` reads a register of the lane ``offset`` further on, so a warp sums
    32 values in 5 steps with no shared memory and no ``syncthreads``. Shared memory and
    one barrier remain only to combine the block's warp sums. Still one atomic per block.
    Threads per block must be a multiple of 32. (Not in Numba's CUDA simulator, which has
    no warp shuffles; Kernel Lab's simulator runs it.)
    """
    i = cuda.grid(1)
    value = float32(0.0)
    if i < x.size:
        value = x[i]
    block_sum_into(total, value)


@cuda.jit(cache=not BACKEND.simulated)
def reduce_grid_stride_kernel(x, total):
    """Step 4, a grid-stride loop: a fixed grid, each thread first sums many elements in a register.

    Launched with just enough blocks to fill the GPU once, each thread walks the array
    one grid width at a time, so reads stay coalesced and most additions happen in
    registers; the block's warps then combine with shuffles and one atomic. A handful of
    atomics in total instead of one per element or per small block: the kernel is now
    limited by memory bandwidth. (Not in Numba's CUDA simulator: it uses warp shuffles.)
    """
    value = float32(0.0)
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        value += x[i]
    block_sum_into(total, value)


@cuda.jit(cache=not BACKEND.simulated)
def reduce_partials_kernel(x, partials):
    """Step 5, pass 1 of 2: the grid-stride loop of step 4, but each block writes its sum, no atomic.

    ``partials[b]`` is block b's sum; the second pass (``reduce_final_kernel``, launched
    after this one on the same stream) adds them up. No atomics anywhere: every run adds
    in the same order, so the result has the same bits every time, whatever the hardware
    schedules first. The price is a second launch and one more trip through memory for
    the partials (a few KiB: one float32 per block of one wave).
    """
    value = float32(0.0)
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        value += x[i]
    value = block_sum(value)
    if cuda.threadIdx.x == 0:
        partials[cuda.blockIdx.x] = value


@cuda.jit(cache=not BACKEND.simulated)
def reduce_final_kernel(partials, count, total):
    """Step 5, pass 2 of 2: one block adds the first ``count`` partial sums and writes the total.

    ``count`` (int32) is a scalar argument: the number of blocks pass 1 ran, so one
    partials buffer could serve any grid up to its size. Each thread sums every
    blockDim-th partial in a register, then the block combines as before and thread 0
    writes (not adds) the total.
    """
    value = float32(0.0)
    for i in range(cuda.threadIdx.x, count, cuda.blockDim.x):
        value += partials[i]
    value = block_sum(value)
    if cuda.threadIdx.x == 0:
        total[0] = value


LOADS_IN_FLIGHT = 8  # independent loads per thread per trip: 8 × 4 bytes × 2,048 threads = 64 KiB in flight per SM


@cuda.jit(cache=not BACKEND.simulated)
def reduce_unrolled_kernel(x, total):
    """Step 6, eight loads in flight: step 4's grid-stride loop, unrolled into 8 independent sums.

    Step 4 adds each element into one register, so a thread's next load waits behind the
    previous addition's operand: about one load in flight per thread, too few bytes in
    flight per SM to cover the memory's latency at full bandwidth. Here each trip issues
    ``LOADS_IN_FLIGHT`` = 8 loads, one grid width apart (each still coalesced across the
    warp), into 8 separate accumulators: no load depends on another, so all 8 are in
    flight together. The tail (fewer than 8 grid widths left) goes one grid width at a
    time. The 8 sums are added pairwise, then the block combines with warp shuffles and
    one atomic, as in step 4. (Not in Numba's CUDA simulator: it uses warp shuffles.)

    What the compiler says (ptxas, CUDA 13.5, sm_90): 32 registers, no spills, 128
    bytes of shared memory: 8 blocks of 256 threads per SM, 100% theoretical occupancy, as step 4;
    the SASS issues the trip's eight ``LDG`` before its first ``FADD``. Its speed is measured
    by ``make gpu-first-look`` on a GPU, not here.
    """
    n = x.size
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = float32(0.0)
    while i + 7 * stride < n:  # all 8 loads of this trip are in bounds: issued together, no checks between
        s0 += x[i]
        s1 += x[i + stride]
        s2 += x[i + 2 * stride]
        s3 += x[i + 3 * stride]
        s4 += x[i + 4 * stride]
        s5 += x[i + 5 * stride]
        s6 += x[i + 6 * stride]
        s7 += x[i + 7 * stride]
        i += LOADS_IN_FLIGHT * stride
    while i < n:  # the tail: under 8 grid widths left
        s0 += x[i]
        i += stride
    block_sum_into(total, ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))


# What the experiments launch each kernel with (gpu/core/launch_spec.py; the compile gate
# compiles every signature here for every target): x and a one-element total, 256 threads.
# The two-pass step's second kernel takes the partials, their count (an int32 scalar) and the total.
LAUNCHES = {
    **{
        name: Launch(("void(float32[::1], float32[::1])",), threads_per_block=256)
        for name in (
            "reduce_atomic_kernel", "reduce_tree_kernel", "reduce_shuffle_kernel", "reduce_grid_stride_kernel",
            "reduce_partials_kernel", "reduce_unrolled_kernel",
        )
    },
    "reduce_final_kernel": Launch(("void(float32[::1], int32, float32[::1])",), threads_per_block=256),
}


__all__ = [
    "reduce_atomic_kernel", "reduce_final_kernel", "reduce_grid_stride_kernel", "reduce_partials_kernel",
    "reduce_shuffle_kernel", "reduce_tree_kernel", "reduce_unrolled_kernel",
]
