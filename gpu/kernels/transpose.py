"""Matrix transpose (out = aᵀ, float32), in three steps: coalescing and bank conflicts.

Every step launches blocks of TILE × BLOCK_ROWS threads over TILE × TILE tiles of the
matrix (ceil division in both directions; x spans columns so that neighbouring
threads touch neighbouring elements of a row).
"""

from __future__ import annotations

from numba import float32

from gpu.core.backend import BACKEND, cuda
from gpu.core.launch_spec import Launch

TILE = 32  # one warp spans a tile row: 32 float32 = one 128-byte coalesced transaction
# NVVM needs a shared-array shape it can read as a literal: `TILE + 1` computed inside the
# kernel is typed int64 and rejected (the simulator accepts it), so the sum is a module constant.
PADDED_TILE = TILE + 1

BLOCK_ROWS = 8  # 32 x 8 = 256 threads per block; each thread copies TILE / BLOCK_ROWS = 4 elements of a tile


@cuda.jit(cache=not BACKEND.simulated)
def transpose_naive_kernel(a, out):
    """Step 1, naive: each thread copies one element, a[row, col] to out[col, row].

    Reads are coalesced (a warp reads 32 neighbours of one row of ``a``), but the writes
    of a warp land in 32 different rows of ``out``, 4 × rows bytes apart: 32 separate
    memory transactions for 128 useful bytes. Launched on a grid of TILE × BLOCK_ROWS
    blocks, one element per thread.
    """
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[col, row] = a[row, col]


@cuda.jit(cache=not BACKEND.simulated)
def transpose_tiled_kernel(a, out):
    """Step 2, a shared-memory tile: read a tile row by row, write it back column by column.

    The block reads a TILE × TILE tile of ``a`` with coalesced reads into shared memory,
    waits (``syncthreads``), then writes the transposed tile to ``out`` again row by row
    of ``out``, so writes are coalesced too. The transposition happens in shared memory,
    where the column reads ``tile[tx, ...]`` hit one bank 32 times over: 32-way bank
    conflicts, the next thing to fix.
    """
    tile = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * TILE
    col0 = cuda.blockIdx.x * TILE
    for k in range(0, TILE, BLOCK_ROWS):
        if row0 + ty + k < a.shape[0] and col0 + tx < a.shape[1]:
            tile[ty + k, tx] = a[row0 + ty + k, col0 + tx]
    cuda.syncthreads()  # the whole tile is loaded before any thread reads another's element
    for k in range(0, TILE, BLOCK_ROWS):
        if col0 + ty + k < a.shape[1] and row0 + tx < a.shape[0]:
            out[col0 + ty + k, row0 + tx] = tile[tx, ty + k]


@cuda.jit(cache=not BACKEND.simulated)
def transpose_padded_kernel(a, out):
    """Step 3, a padded tile: one extra column in shared memory removes the bank conflicts.

    Shared memory has 32 banks of 4-byte words. In a TILE × TILE tile every element of a
    column sits in the same bank, so step 2's column reads serialise. With rows of
    TILE + 1 words, consecutive rows shift by one bank and a column spans all 32 banks:
    one shared-memory access per warp instead of 32. Everything else is step 2.
    """
    tile = cuda.shared.array((TILE, PADDED_TILE), float32)  # + 1: a column now spans 32 banks
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * TILE
    col0 = cuda.blockIdx.x * TILE
    for k in range(0, TILE, BLOCK_ROWS):
        if row0 + ty + k < a.shape[0] and col0 + tx < a.shape[1]:
            tile[ty + k, tx] = a[row0 + ty + k, col0 + tx]
    cuda.syncthreads()  # the whole tile is loaded before any thread reads another's element
    for k in range(0, TILE, BLOCK_ROWS):
        if col0 + ty + k < a.shape[1] and row0 + tx < a.shape[0]:
            out[col0 + ty + k, row0 + tx] = tile[tx, ty + k]


# What the experiments launch each kernel with (gpu/core/launch_spec.py; the compile gate
# compiles every signature here for every target): square float32 matrices, TILE x BLOCK_ROWS threads.
LAUNCHES = {
    name: Launch(("void(float32[:, ::1], float32[:, ::1])",), threads_per_block=TILE * BLOCK_ROWS)
    for name in ("transpose_naive_kernel", "transpose_tiled_kernel", "transpose_padded_kernel")
}


__all__ = ["BLOCK_ROWS", "PADDED_TILE", "TILE", "transpose_naive_kernel", "transpose_padded_kernel", "transpose_tiled_kernel"]
