"""A 5-point blur on an N × N float32 grid, in two steps: halos and reuse.

out = (centre + up + down + left + right) × 0.2 in every interior cell, added in that
order; boundary cells are copied unchanged. The multiply comes last on purpose: a
multiply followed by an add may be fused into one FMA by the GPU compiler (one
rounding instead of two), which would change the last bit. With only additions and a
final multiply nothing can fuse, so the GPU's result is bit-identical to NumPy's.
"""

from __future__ import annotations

import numpy as np
from numba import float32

from gpu.core.backend import BACKEND, cuda
from gpu.core.launch_spec import Launch

FIFTH = np.float32(0.2)  # the mean of five values, as a float32 constant (no float64 promotion)
BLOCK = 16  # 16 x 16 = 256 threads; a tile plus its halo is 18 x 18 floats = 1.3 KB of shared memory
HALO_TILE = BLOCK + 2  # one halo cell on each side


@cuda.jit(cache=not BACKEND.simulated)
def blur_naive_kernel(u, out):
    """Step 1, naive: each thread reads its cell and four neighbours from device memory.

    Every interior value is read five times (by itself and by its four neighbours);
    caches absorb much of that, but each thread still issues five loads.
    """
    col, row = cuda.grid(2)
    rows, cols = u.shape
    if row < rows and col < cols:
        if row == 0 or col == 0 or row == rows - 1 or col == cols - 1:
            out[row, col] = u[row, col]  # the boundary stays fixed
        else:
            s = u[row, col] + u[row - 1, col]
            s += u[row + 1, col]
            s += u[row, col - 1]
            s += u[row, col + 1]
            out[row, col] = s * FIFTH


@cuda.jit(cache=not BACKEND.simulated)
def blur_tiled_kernel(u, out):
    """Step 2, a shared-memory tile with a halo: load each value once per block, reuse it five times.

    The block copies its BLOCK × BLOCK cells plus a one-cell halo around them (the
    neighbours its edge cells need) into shared memory, cooperatively, all threads
    looping over the (BLOCK + 2)² cells; ``syncthreads``; then every thread computes from
    shared memory. Device memory is read about (BLOCK + 2)² / BLOCK² = 1.27 times per
    cell instead of five times.
    """
    tile = cuda.shared.array((HALO_TILE, HALO_TILE), float32)
    rows, cols = u.shape
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * BLOCK - 1  # the tile's first row and column: one halo cell before the block
    col0 = cuda.blockIdx.x * BLOCK - 1
    for c in range(ty * BLOCK + tx, HALO_TILE * HALO_TILE, BLOCK * BLOCK):
        r = row0 + c // HALO_TILE
        q = col0 + c % HALO_TILE
        if 0 <= r < rows and 0 <= q < cols:
            tile[c // HALO_TILE, c % HALO_TILE] = u[r, q]
    cuda.syncthreads()  # the tile and its halo are loaded before anyone reads a neighbour
    row = row0 + 1 + ty
    col = col0 + 1 + tx
    if row < rows and col < cols:
        if row == 0 or col == 0 or row == rows - 1 or col == cols - 1:
            out[row, col] = tile[ty + 1, tx + 1]
        else:
            s = tile[ty + 1, tx + 1] + tile[ty, tx + 1]
            s += tile[ty + 2, tx + 1]
            s += tile[ty + 1, tx]
            s += tile[ty + 1, tx + 2]
            out[row, col] = s * FIFTH


# What the experiments launch each kernel with (gpu/core/launch_spec.py; the compile gate
# compiles every signature here for every target): square float32 grids, BLOCK x BLOCK threads.
LAUNCHES = {
    name: Launch(("void(float32[:, ::1], float32[:, ::1])",), threads_per_block=BLOCK * BLOCK)
    for name in ("blur_naive_kernel", "blur_tiled_kernel")
}


__all__ = ["BLOCK", "FIFTH", "blur_naive_kernel", "blur_tiled_kernel"]
