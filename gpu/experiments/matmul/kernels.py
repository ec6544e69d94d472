"""C = A @ B for float32 matrices, step by step: arithmetic intensity and the roofline ridge.

Each output element is a dot product of length K, accumulated in float32 in k order
(the GPU compiler fuses each multiply-add into one FMA). What changes from step to step
is how often each element of A and B is fetched from device memory: N times (naive),
N / 16 times (shared tiles), N / 128 times per block plus reuse from registers
(register tiling).
"""

from __future__ import annotations

from numba import float32

from gpu.core.backend import BACKEND, cuda
from gpu.core.launch_spec import Launch

NAIVE_BLOCK = 16  # 16 x 16 = 256 threads per block for the naive kernel
TILE = 16  # shared tiles of 16 x 16: 256 threads, 2 KB of shared memory for the two tiles

# Register tiling: each thread computes TM x TN outputs; 16 x 16 threads compute a
# BM x BN = 128 x 128 block of C. 64 accumulators per thread fit in registers (255 max),
# and each value loaded from shared memory feeds 8 multiply-adds instead of 1.
TM = 8
TN = 8
THREADS_X = 16
THREADS_Y = 16
BM = THREADS_Y * TM  # 128 rows of C per block
BN = THREADS_X * TN  # 128 columns of C per block
BK = 8  # depth of a shared tile: (128 + 128) x 8 floats = 8 KB per buffer, two buffers
THREADS = THREADS_X * THREADS_Y
LOADS_A = BM * BK // THREADS  # 4 elements of A per thread per tile
LOADS_B = BK * BN // THREADS  # 4 elements of B per thread per tile
A_ROWS_PER_PASS = THREADS // BK  # 32 rows of A loaded per pass of the block's threads
B_ROWS_PER_PASS = THREADS // BN  # 2 rows of B per pass


@cuda.jit(cache=not BACKEND.simulated)
def matmul_naive_kernel(a, b, c):
    """Step 1, naive: one thread per element of C reads a row of A and a column of B.

    x spans columns of C, so a warp reads 32 neighbouring elements of a row of B
    (coalesced) and the same element of A (a broadcast). Every element of A and B is
    read N times from device memory (caches help, but the kernel stays memory-bound).
    """
    col, row = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


@cuda.jit(cache=not BACKEND.simulated)
def matmul_shared_kernel(a, b, c):
    """Step 2, shared tiles (the numba-cuda documentation's fast_matmul idea).

    The block loads a TILE × TILE tile of A and one of B into shared memory (each thread
    one element of each), waits, and every thread does TILE multiply-adds from shared
    memory; a second ``syncthreads`` keeps the tiles until all threads are done. Each
    element of A and B now comes from device memory N / TILE times instead of N times.
    Tiles past the matrix's edge are filled with zeros, which add nothing.
    """
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for k0 in range(0, a.shape[1], TILE):
        sa[ty, tx] = a[row, k0 + tx] if row < a.shape[0] and k0 + tx < a.shape[1] else float32(0.0)
        sb[ty, tx] = b[k0 + ty, col] if k0 + ty < b.shape[0] and col < b.shape[1] else float32(0.0)
        cuda.syncthreads()  # both tiles are loaded before anyone multiplies
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()  # everyone is done with the tiles before they are overwritten
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc


@cuda.jit(cache=not BACKEND.simulated)
def matmul_register_kernel(a, b, c):
    """Step 3, register tiling: each thread computes an 8 × 8 tile of C from registers, and the next tiles load while
    it does.

    The block works on a BM × BN = 128 × 128 block of C, BK = 8 columns of A and rows of
    B at a time. For each k every thread copies 8 values of A and 8 of B from shared
    memory into registers and does all 64 multiply-adds between them: shared-memory
    traffic per FLOP falls 8-fold, and each block reuses each loaded element 128 times,
    so the kernel moves from memory-bound towards the FP32 roof. A thread's outputs are
    16 rows and 16 columns apart, so a warp's shared reads and C writes stay contiguous.

    Two changes the compiler's report asked for. The shared tiles are laid out
    ``sa[m, ty, k]`` and ``sb[k, n, tx]`` so that in the inner loop only ``ty``, ``tx``
    and ``k`` vary and ``m`` and ``n`` are constants: the PTX reads all 16 values
    through two base addresses plus constant offsets (``[%rd405+64]``, ...). The first
    version indexed ``sa[k, ty + 16 m]`` and its PTX kept 16 separate 64-bit addresses
    live across the loop: 196 registers per thread, one 256-thread block per SM on sm_90. And the loads are
    prefetched: while the block multiplies one pair of tiles
    from shared memory, each thread's 4 + 4 loads of the next pair are already in flight
    into registers, stored into the other half of double-buffered shared tiles after the
    multiply-adds; one ``syncthreads`` per tile instead of two. Every element is still
    a dot product accumulated in k order.

    What the compiler says (ptxas, CUDA 12.9, sm_90): 122 registers, no spills, 16,384
    bytes of shared memory (two buffers): 2 blocks of 256 threads per SM (registers
    bind), 25% theoretical occupancy, twice the resident warps of the 196-register
    version (1 block, 12.5%). More warps and loads in flight are expected to hide more
    latency; ``gpu check`` measures the step against cuBLAS on a GPU.
    """
    sa = cuda.shared.array((2, TM, THREADS_Y, BK), float32)  # sa[buf, m, ty, k] = A[row0 + ty + 16 m, k0 + k]
    sb = cuda.shared.array((2, BK, TN, THREADS_X), float32)  # sb[buf, k, n, tx] = B[k0 + k, col0 + tx + 16 n]
    acc = cuda.local.array((TM, TN), float32)
    a_reg = cuda.local.array(TM, float32)
    b_reg = cuda.local.array(TN, float32)
    a_next = cuda.local.array(LOADS_A, float32)  # this thread's share of the next tiles, in flight
    b_next = cuda.local.array(LOADS_B, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tid = ty * THREADS_X + tx
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    rows, inner = a.shape
    cols = b.shape[1]
    a_row = tid // BK  # this thread loads A[row0 + a_row + 32 j, k0 + a_k]: 8 neighbours read 32 bytes of a row
    a_k = tid % BK
    b_k = tid // BN  # ... and B[k0 + b_k + 2 j, col0 + b_col]: a warp reads 128 bytes of a row
    b_col = tid % BN
    for m in range(TM):
        for n in range(TN):
            acc[m, n] = 0.0
    tiles = (inner + BK - 1) // BK
    for j in range(LOADS_A):  # the first tiles, into buffer 0
        r = row0 + a_row + A_ROWS_PER_PASS * j
        a_next[j] = a[r, a_k] if r < rows and a_k < inner else float32(0.0)
    for j in range(LOADS_B):
        q = b_k + B_ROWS_PER_PASS * j
        b_next[j] = b[q, col0 + b_col] if q < inner and col0 + b_col < cols else float32(0.0)
    for j in range(LOADS_A):
        r = a_row + A_ROWS_PER_PASS * j
        sa[0, r // THREADS_Y, r % THREADS_Y, a_k] = a_next[j]
    for j in range(LOADS_B):
        sb[0, b_k + B_ROWS_PER_PASS * j, b_col // THREADS_X, b_col % THREADS_X] = b_next[j]
    cuda.syncthreads()  # the first tiles are in shared memory
    for t in range(tiles):
        buf = t % 2
        k0 = (t + 1) * BK
        if t + 1 < tiles:  # issue the next tiles' loads; they complete during the multiply-adds below
            for j in range(LOADS_A):
                r = row0 + a_row + A_ROWS_PER_PASS * j
                a_next[j] = a[r, k0 + a_k] if r < rows and k0 + a_k < inner else float32(0.0)
            for j in range(LOADS_B):
                q = k0 + b_k + B_ROWS_PER_PASS * j
                b_next[j] = b[q, col0 + b_col] if q < inner and col0 + b_col < cols else float32(0.0)
        for k in range(BK):
            for m in range(TM):
                a_reg[m] = sa[buf, m, ty, k]
            for n in range(TN):
                b_reg[n] = sb[buf, k, n, tx]
            for m in range(TM):
                for n in range(TN):
                    acc[m, n] += a_reg[m] * b_reg[n]
        if t + 1 < tiles:  # into the other buffer: its last readers finished before the previous syncthreads
            for j in range(LOADS_A):
                r = a_row + A_ROWS_PER_PASS * j
                sa[1 - buf, r // THREADS_Y, r % THREADS_Y, a_k] = a_next[j]
            for j in range(LOADS_B):
                sb[1 - buf, b_k + B_ROWS_PER_PASS * j, b_col // THREADS_X, b_col % THREADS_X] = b_next[j]
        cuda.syncthreads()  # the next tiles are in, and everyone is done with these before they are overwritten
    for m in range(TM):
        for n in range(TN):
            row = row0 + ty + THREADS_Y * m
            col = col0 + tx + THREADS_X * n
            if row < rows and col < cols:
                c[row, col] = acc[m, n]


# What the experiments launch each kernel with (gpu/core/launch_spec.py; the compile gate
# compiles every signature here for every target): C = A @ B on square float32 matrices.
_MATMUL = ("void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",)
LAUNCHES = {
    "matmul_naive_kernel": Launch(_MATMUL, threads_per_block=NAIVE_BLOCK * NAIVE_BLOCK),
    "matmul_shared_kernel": Launch(_MATMUL, threads_per_block=TILE * TILE),
    "matmul_register_kernel": Launch(_MATMUL, threads_per_block=THREADS_X * THREADS_Y),
}


__all__ = ["BK", "BM", "BN", "LOADS_A", "LOADS_B", "NAIVE_BLOCK", "THREADS_X", "THREADS_Y", "TILE", "TM", "TN",
           "matmul_naive_kernel", "matmul_register_kernel", "matmul_shared_kernel"]
