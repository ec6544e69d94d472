"""A 5-point blur on an N × N float32 grid, step by step: halos and reuse.

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

# Step 3: 32 x 8 threads, each blurring ROWS_PER_THREAD cells BLOCK_ROWS rows apart, of a 32 x 32 tile.
ROWS_TILE = 32  # a warp spans a tile row: 32 float32 = one 128-byte transaction
BLOCK_ROWS = 8  # threads in y: 32 x 8 = 256 threads per block
ROWS_PER_THREAD = ROWS_TILE // BLOCK_ROWS  # 4 cells per thread
ROWS_TILE_HALO = ROWS_TILE + 2  # the tile plus a halo row above and below
# Rows of 35 words, not 34: the halo columns' cells are 35 words apart, 35 = 3 mod 32 banks,
# so the 32 stores of a halo column hit 32 different banks. Module constants, not sums
# in the kernel: NVVM needs a literal shared-array shape.
ROWS_TILE_PADDED = ROWS_TILE + 3
HALO_WARPS = 4  # warps 0-3 load the halo: the row above, the row below, the column left, the column right


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
    neighbours its edge cells need) into shared memory, cooperatively: (BLOCK + 2)² = 324
    cells for 256 threads, so each thread loads one cell and the first 68 a second one;
    ``syncthreads``; then every thread computes from shared memory. Device memory is
    read about (BLOCK + 2)² / BLOCK² = 1.27 times per cell instead of five times. When
    the tile and its halo lie inside the grid (every block but the outer ring), a thread
    issues both its loads before its first shared-memory store, with no bounds checks;
    blocks on the grid's edge check every cell.

    What the compiler says (ptxas, CUDA 12.9, sm_90): 32 registers, no spills, 1,296
    bytes of shared memory: 8 blocks of 256 threads per SM, 100% theoretical occupancy;
    the PTX issues the inner block's two ``ld.global`` before its first ``st.shared``. A
    first version that also gave inner blocks their own arithmetic without boundary
    tests needed 40 registers (6 blocks per SM, 75%): the tests on shared-memory values
    are cheap, so both paths share the arithmetic. Speed is measured by ``gpu check``.
    """
    tile = cuda.shared.array((HALO_TILE, HALO_TILE), float32)
    rows, cols = u.shape
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * BLOCK - 1  # the tile's first row and column: one halo cell before the block
    col0 = cuda.blockIdx.x * BLOCK - 1
    first = ty * BLOCK + tx  # this thread's first tile cell; its second is BLOCK * BLOCK further on
    second = first + BLOCK * BLOCK
    row = row0 + 1 + ty
    col = col0 + 1 + tx
    if (
        row0 >= 0 and col0 >= 0 and row0 + HALO_TILE <= rows and col0 + HALO_TILE <= cols
    ):  # the same for the whole block
        v0 = u[row0 + first // HALO_TILE, col0 + first % HALO_TILE]  # both loads in flight before any store
        v1 = float32(0.0)
        if second < HALO_TILE * HALO_TILE:
            v1 = u[row0 + second // HALO_TILE, col0 + second % HALO_TILE]
        tile[first // HALO_TILE, first % HALO_TILE] = v0
        if second < HALO_TILE * HALO_TILE:
            tile[second // HALO_TILE, second % HALO_TILE] = v1
    else:  # a block on the grid's edge: every cell checked
        for c in (first, second):
            r = row0 + c // HALO_TILE
            q = col0 + c % HALO_TILE
            if c < HALO_TILE * HALO_TILE and 0 <= r < rows and 0 <= q < cols:
                tile[c // HALO_TILE, c % HALO_TILE] = u[r, q]
    cuda.syncthreads()  # the tile and its halo are loaded before anyone reads a neighbour
    if row < rows and col < cols:
        if row == 0 or col == 0 or row == rows - 1 or col == cols - 1:
            out[row, col] = tile[ty + 1, tx + 1]  # the boundary stays fixed
        else:
            s = tile[ty + 1, tx + 1] + tile[ty, tx + 1]
            s += tile[ty + 2, tx + 1]
            s += tile[ty + 1, tx]
            s += tile[ty + 1, tx + 2]
            out[row, col] = s * FIFTH


@cuda.jit(cache=not BACKEND.simulated)
def blur_rows_kernel(u, out):
    """Step 3, four cells per thread: a 32 × 32 tile for 32 × 8 threads.

    One cell per thread leaves few loads in flight per thread, the pattern that held the
    article's vector add to ~70% of the memory's bandwidth. Here a block of 32 × 8
    threads blurs a 32 × 32 tile, each thread four cells BLOCK_ROWS rows apart (a warp
    still reads one 128-byte row at a time). The halo needs no corners (a 5-point
    stencil never reads them): warp 0 loads the row above, warp 1 the row below, warps
    2 and 3 the columns to the left and right. On an inner tile each thread issues all
    its loads (four cells, and one halo cell in warps 0-3) before its first shared-memory
    store, without bounds checks; edge tiles check every cell. Rows of 35 words put
    each halo column's 32 cells in 32 different banks (rows of 34 would pair them up).
    Reads per cell: (32² + 4 × 32) / 32² = 1.125, down from step 2's 1.27.

    What the compiler says (ptxas, CUDA 12.9, sm_90): 32 registers, no spills, 4,760
    bytes of shared memory (34 × 35 words): 8 blocks of 256 threads per SM, 100%
    theoretical occupancy, the same as step 2, with five loads in flight per thread on
    inner tiles (the PTX has five ``ld.global`` before the first ``st.shared``) instead of
    one or two. Expected to move the blur closer to the memory's bandwidth as four
    elements per thread did for vector add; ``gpu check`` measures it on a GPU.
    """
    tile = cuda.shared.array((ROWS_TILE_HALO, ROWS_TILE_PADDED), float32)  # tile[1 + r, 1 + c] holds cell (r, c)
    staged = cuda.local.array(ROWS_PER_THREAD, float32)
    rows, cols = u.shape
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * ROWS_TILE
    col0 = cuda.blockIdx.x * ROWS_TILE
    # The halo cell this thread loads (warps 0-3 only): above, below, left, right of the tile.
    h_row = row0 - 1 if ty == 0 else (row0 + ROWS_TILE if ty == 1 else row0 + tx)
    h_col = col0 + tx if ty < 2 else (col0 - 1 if ty == 2 else col0 + ROWS_TILE)
    t_row = h_row - row0 + 1  # where it goes in the tile
    t_col = h_col - col0 + 1
    if row0 >= 1 and col0 >= 1 and row0 + ROWS_TILE < rows and col0 + ROWS_TILE < cols:  # the same for the whole block
        for j in range(ROWS_PER_THREAD):  # every load in flight before any store
            staged[j] = u[row0 + ty + j * BLOCK_ROWS, col0 + tx]
        halo = float32(0.0)
        if ty < HALO_WARPS:
            halo = u[h_row, h_col]
        for j in range(ROWS_PER_THREAD):
            tile[1 + ty + j * BLOCK_ROWS, 1 + tx] = staged[j]
        if ty < HALO_WARPS:
            tile[t_row, t_col] = halo
    else:  # a tile on the grid's edge: every cell checked
        for j in range(ROWS_PER_THREAD):
            if row0 + ty + j * BLOCK_ROWS < rows and col0 + tx < cols:
                tile[1 + ty + j * BLOCK_ROWS, 1 + tx] = u[row0 + ty + j * BLOCK_ROWS, col0 + tx]
        if ty < HALO_WARPS and 0 <= h_row < rows and 0 <= h_col < cols:
            tile[t_row, t_col] = u[h_row, h_col]
    cuda.syncthreads()  # the tile and its halo are loaded before anyone reads a neighbour
    for j in range(ROWS_PER_THREAD):
        r = 1 + ty + j * BLOCK_ROWS
        row = row0 + ty + j * BLOCK_ROWS
        col = col0 + tx
        if row < rows and col < cols:
            if row == 0 or col == 0 or row == rows - 1 or col == cols - 1:
                out[row, col] = tile[r, tx + 1]  # the boundary stays fixed
            else:
                s = tile[r, tx + 1] + tile[r - 1, tx + 1]
                s += tile[r + 1, tx + 1]
                s += tile[r, tx]
                s += tile[r, tx + 2]
                out[row, col] = s * FIFTH


# What the experiments launch each kernel with (gpu/core/launch_spec.py; the compile gate
# compiles every signature here for every target): square float32 grids, BLOCK x BLOCK threads
# for steps 1 and 2, ROWS_TILE x BLOCK_ROWS for step 3.
_GRIDS = ("void(float32[:, ::1], float32[:, ::1])",)
LAUNCHES = {
    "blur_naive_kernel": Launch(_GRIDS, threads_per_block=BLOCK * BLOCK),
    "blur_tiled_kernel": Launch(_GRIDS, threads_per_block=BLOCK * BLOCK),
    "blur_rows_kernel": Launch(_GRIDS, threads_per_block=ROWS_TILE * BLOCK_ROWS),
}


__all__ = [
    "BLOCK",
    "BLOCK_ROWS",
    "FIFTH",
    "ROWS_PER_THREAD",
    "ROWS_TILE",
    "blur_naive_kernel",
    "blur_rows_kernel",
    "blur_tiled_kernel",
]
