"""Matrix transpose (out = aᵀ, float32), step by step: coalescing and bank conflicts.

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
LOADS_PER_THREAD = TILE // BLOCK_ROWS  # 4: held in registers together on a full tile


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
    of ``out``, so writes are coalesced too. Each thread moves TILE / BLOCK_ROWS = 4
    elements. On a full tile (every block but those on the matrix's right and bottom
    edges) it issues its four loads into registers before the first shared-memory store,
    without bounds checks, so the four device-memory reads are in flight together instead
    of one after another; only edge tiles check each element. The transposition happens
    in shared memory, where the column reads ``tile[tx, ...]`` hit one bank 32 times
    over: 32-way bank conflicts, the next thing to fix.

    What the compiler says (ptxas, CUDA 12.9, sm_90): 32 registers, no spills, 4,096
    bytes of shared memory: 8 blocks of 256 threads per SM (the 2,048-thread limit
    binds), 100% theoretical occupancy; the PTX issues the full tile's four
    ``ld.global`` before its first ``st.shared`` (the edge path still alternates). With
    one-at-a-time loads the step used 28 registers and had the same occupancy, so the
    change costs nothing there; it is expected to put four times the bytes in flight per
    thread. Its speed is measured by ``gpu check`` on a GPU, not here.
    """
    tile = cuda.shared.array((TILE, TILE), float32)
    staged = cuda.local.array(LOADS_PER_THREAD, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * TILE
    col0 = cuda.blockIdx.x * TILE
    rows, cols = a.shape
    if row0 + TILE <= rows and col0 + TILE <= cols:  # a full tile: the same for the whole block
        for j in range(LOADS_PER_THREAD):  # all four loads issued before any store
            staged[j] = a[row0 + ty + j * BLOCK_ROWS, col0 + tx]
        for j in range(LOADS_PER_THREAD):
            tile[ty + j * BLOCK_ROWS, tx] = staged[j]
        cuda.syncthreads()  # the whole tile is loaded before any thread reads another's element
        for j in range(LOADS_PER_THREAD):
            out[col0 + ty + j * BLOCK_ROWS, row0 + tx] = tile[tx, ty + j * BLOCK_ROWS]
    else:  # an edge tile: each element checked on its own
        for j in range(LOADS_PER_THREAD):
            if row0 + ty + j * BLOCK_ROWS < rows and col0 + tx < cols:
                tile[ty + j * BLOCK_ROWS, tx] = a[row0 + ty + j * BLOCK_ROWS, col0 + tx]
        cuda.syncthreads()
        for j in range(LOADS_PER_THREAD):
            if col0 + ty + j * BLOCK_ROWS < cols and row0 + tx < rows:
                out[col0 + ty + j * BLOCK_ROWS, row0 + tx] = tile[tx, ty + j * BLOCK_ROWS]


@cuda.jit(cache=not BACKEND.simulated)
def transpose_padded_kernel(a, out):
    """Step 3, a padded tile: one extra column in shared memory removes the bank conflicts.

    Shared memory has 32 banks of 4-byte words. In a TILE × TILE tile every element of a
    column sits in the same bank, so step 2's column reads serialise. With rows of
    TILE + 1 words, consecutive rows shift by one bank and a column spans all 32 banks:
    one shared-memory access per warp instead of 32. Everything else is step 2,
    including the four loads in flight on full tiles.

    What the compiler says (ptxas, CUDA 12.9, sm_90): 32 registers, no spills, 4,224
    bytes of shared memory (32 × 33 words): 8 blocks of 256 threads per SM, 100%
    theoretical occupancy, as step 2. The padding costs 128 bytes and no registers.
    """
    tile = cuda.shared.array((TILE, PADDED_TILE), float32)  # + 1: a column now spans 32 banks
    staged = cuda.local.array(LOADS_PER_THREAD, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * TILE
    col0 = cuda.blockIdx.x * TILE
    rows, cols = a.shape
    if row0 + TILE <= rows and col0 + TILE <= cols:  # a full tile: the same for the whole block
        for j in range(LOADS_PER_THREAD):  # all four loads issued before any store
            staged[j] = a[row0 + ty + j * BLOCK_ROWS, col0 + tx]
        for j in range(LOADS_PER_THREAD):
            tile[ty + j * BLOCK_ROWS, tx] = staged[j]
        cuda.syncthreads()  # the whole tile is loaded before any thread reads another's element
        for j in range(LOADS_PER_THREAD):
            out[col0 + ty + j * BLOCK_ROWS, row0 + tx] = tile[tx, ty + j * BLOCK_ROWS]
    else:  # an edge tile: each element checked on its own
        for j in range(LOADS_PER_THREAD):
            if row0 + ty + j * BLOCK_ROWS < rows and col0 + tx < cols:
                tile[ty + j * BLOCK_ROWS, tx] = a[row0 + ty + j * BLOCK_ROWS, col0 + tx]
        cuda.syncthreads()
        for j in range(LOADS_PER_THREAD):
            if col0 + ty + j * BLOCK_ROWS < cols and row0 + tx < rows:
                out[col0 + ty + j * BLOCK_ROWS, row0 + tx] = tile[tx, ty + j * BLOCK_ROWS]


BIG_TILE = 64  # a 64 × 64 tile: two warps span a tile row
PADDED_BIG_TILE = BIG_TILE + 1  # a literal for NVVM, as PADDED_TILE
BIG_BLOCK_ROWS = 4  # 64 × 4 = 256 threads per block, as the other steps
BIG_LOADS_PER_THREAD = BIG_TILE // BIG_BLOCK_ROWS  # 16 elements per thread, all loaded before the first store


@cuda.jit(cache=not BACKEND.simulated)
def transpose_big_tile_kernel(a, out):
    """Step 4, a 64 × 64 padded tile, 16 elements per thread: four times the bytes in flight of step 3.

    Step 3 keeps 4 loads of 4 bytes in flight per thread; a block then waits at the barrier
    with its tile of 4 KiB loaded, and the memory sits idle until enough other blocks are
    resident to cover it. Here a block of the same 256 threads (64 × 4) moves a 64 × 64
    tile: each thread issues its 16 loads (rows ``ty``, ``ty + 4``, ... of its column; each
    warp still reads 32 neighbours of one row: coalesced) before its first shared-memory
    store, so 16 KiB per block are in flight at once. Rows of ``BIG_TILE + 1`` words keep
    a column's 32 reads in 32 banks (65 mod 32 = 1, as 33 mod 32 in step 3). Edge tiles
    check each element, as in steps 2 and 3.

    What the compiler says (ptxas, CUDA 13.5, sm_90): 40 registers, no spills, 16,640
    bytes of shared memory (64 × 65 words): 6 blocks of 256 threads per SM, 75% theoretical
    occupancy (registers bind), against step 3's 100%: fewer threads, each with four times
    the loads in flight; the SASS issues all sixteen ``LDG`` before the first ``STS``. Its
    speed is measured by ``make gpu-first-look`` on a GPU, not here.
    """
    tile = cuda.shared.array((BIG_TILE, PADDED_BIG_TILE), float32)
    staged = cuda.local.array(BIG_LOADS_PER_THREAD, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * BIG_TILE
    col0 = cuda.blockIdx.x * BIG_TILE
    rows, cols = a.shape
    if row0 + BIG_TILE <= rows and col0 + BIG_TILE <= cols:  # a full tile: the same for the whole block
        for j in range(BIG_LOADS_PER_THREAD):  # all sixteen loads issued before any store
            staged[j] = a[row0 + ty + j * BIG_BLOCK_ROWS, col0 + tx]
        for j in range(BIG_LOADS_PER_THREAD):
            tile[ty + j * BIG_BLOCK_ROWS, tx] = staged[j]
        cuda.syncthreads()  # the whole tile is loaded before any thread reads another's element
        for j in range(BIG_LOADS_PER_THREAD):
            out[col0 + ty + j * BIG_BLOCK_ROWS, row0 + tx] = tile[tx, ty + j * BIG_BLOCK_ROWS]
    else:  # an edge tile: each element checked on its own
        for j in range(BIG_LOADS_PER_THREAD):
            if row0 + ty + j * BIG_BLOCK_ROWS < rows and col0 + tx < cols:
                tile[ty + j * BIG_BLOCK_ROWS, tx] = a[row0 + ty + j * BIG_BLOCK_ROWS, col0 + tx]
        cuda.syncthreads()
        for j in range(BIG_LOADS_PER_THREAD):
            if col0 + ty + j * BIG_BLOCK_ROWS < cols and row0 + tx < rows:
                out[col0 + ty + j * BIG_BLOCK_ROWS, row0 + tx] = tile[tx, ty + j * BIG_BLOCK_ROWS]


# What the experiments launch each kernel with (gpu/core/launch_spec.py; the compile gate
# compiles every signature here for every target): square float32 matrices, 256 threads per block.
LAUNCHES = {
    name: Launch(("void(float32[:, ::1], float32[:, ::1])",), threads_per_block=TILE * BLOCK_ROWS)
    for name in ("transpose_naive_kernel", "transpose_tiled_kernel", "transpose_padded_kernel",
                 "transpose_big_tile_kernel")
}


__all__ = [
    "BIG_BLOCK_ROWS",
    "BIG_LOADS_PER_THREAD",
    "BIG_TILE",
    "BLOCK_ROWS",
    "LOADS_PER_THREAD",
    "PADDED_TILE",
    "TILE",
    "transpose_big_tile_kernel",
    "transpose_naive_kernel",
    "transpose_padded_kernel",
    "transpose_tiled_kernel",
]
