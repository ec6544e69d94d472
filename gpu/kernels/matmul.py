"""C = A @ B for float32 matrices, in three steps: arithmetic intensity and the roofline ridge.

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
BK = 8  # depth of a shared tile: (128 + 128) x 8 floats = 8 KB, loaded 4 elements per thread
A_PAD = 4  # the A tile is stored transposed; 4 extra words per row put a warp's stores in 32 different banks
# NVVM needs a literal shared-array shape: `BM + A_PAD` computed inside the kernel is typed
# int64 and rejected (the simulator accepts it), so the padded width is a module constant.
BM_PADDED = BM + A_PAD


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
    """Step 3, register tiling: each thread computes an 8 × 8 tile of C from registers.

    The block loads a BM × BK tile of A and a BK × BN tile of B (4 elements per thread
    each), then, for each k, every thread copies 8 values of A and 8 of B from shared
    memory into registers and does all 64 multiply-adds between them. Shared-memory
    traffic per FLOP falls 8-fold, and each block reuses each loaded element 128 times,
    so the kernel moves from memory-bound towards the FP32 roof. A thread's outputs are
    16 rows and 16 columns apart, so a warp's shared reads and C writes stay contiguous.
    """
    sa = cuda.shared.array((BK, BM_PADDED), float32)  # A tile, transposed: sa[k, m]
    sb = cuda.shared.array((BK, BN), float32)
    acc = cuda.local.array((TM, TN), float32)
    a_reg = cuda.local.array(TM, float32)
    b_reg = cuda.local.array(TN, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tid = ty * THREADS_X + tx
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    rows, inner = a.shape
    cols = b.shape[1]
    for m in range(TM):
        for n in range(TN):
            acc[m, n] = 0.0
    for k0 in range(0, inner, BK):
        for e in range(tid, BM * BK, THREADS_X * THREADS_Y):  # neighbouring threads read along a row of A
            m = e // BK
            k = e % BK
            sa[k, m] = a[row0 + m, k0 + k] if row0 + m < rows and k0 + k < inner else float32(0.0)
        for e in range(tid, BK * BN, THREADS_X * THREADS_Y):  # ... and along a row of B
            k = e // BN
            n = e % BN
            sb[k, n] = b[k0 + k, col0 + n] if k0 + k < inner and col0 + n < cols else float32(0.0)
        cuda.syncthreads()  # both tiles are loaded before anyone multiplies
        for k in range(BK):
            for m in range(TM):
                a_reg[m] = sa[k, ty + THREADS_Y * m]
            for n in range(TN):
                b_reg[n] = sb[k, tx + THREADS_X * n]
            for m in range(TM):
                for n in range(TN):
                    acc[m, n] += a_reg[m] * b_reg[n]
        cuda.syncthreads()  # everyone is done with the tiles before they are overwritten
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


__all__ = ["BK", "BM", "BN", "NAIVE_BLOCK", "THREADS_X", "THREADS_Y", "TILE", "TM", "TN",
           "matmul_naive_kernel", "matmul_register_kernel", "matmul_shared_kernel"]
