"""Problem 13, transpose: the lab's padded shared-memory tile is the reference."""

import numpy as np

from gpu.problems.base import Case, Hint, Problem, Solution, Tolerance, ceil_div, uniform

SIDE = 16

STARTER = '''from numba import cuda


@cuda.jit
def transpose(a, out):
    col, row = cuda.grid(2)  # x spans the columns of a
    # TODO: out[col, row] = a[row, col] inside the matrix (then try a shared-memory tile)
    pass
'''


def _solution_launch(s):
    from gpu.experiments.transpose.kernels import BLOCK_ROWS, TILE
    from gpu.kernels.geometry import grid_2d

    return grid_2d(s["n"], s["n"], TILE, TILE), (TILE, BLOCK_ROWS)


PROBLEM = Problem(
    key="transpose",
    order=13,
    title="Transpose",
    statement="Write `out[c, r] = a[r, c]` for an n × n matrix. The naive kernel reads rows and writes columns; "
    "the fast one moves a tile through shared memory so both reads and writes are coalesced.",
    kernel_name="transpose",
    params=("a", "out"),
    arrays="a, out: float32[n, n]",
    inputs=lambda rng, s: {"a": uniform(rng, (s["n"], s["n"]))},
    outputs=lambda s: {"out": ((s["n"], s["n"]), np.float32)},
    reference=lambda x, s: {"out": np.ascontiguousarray(x["a"].T)},
    launch=lambda s, t: ((ceil_div(s["n"], SIDE), ceil_div(s["n"], SIDE)), (SIDE, SIDE)),
    launch_text=f"2D: (ceil(n / {SIDE}), ceil(n / {SIDE})) blocks of {SIDE} × {SIDE} threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "The naive kernel reads rows but writes columns: which side is uncoalesced? **Kernels** → Transpose "
        "shows the three versions.",
        "Read a 16 × 16 tile with coalesced reads into shared memory, `syncthreads`, then write it out "
        "transposed, again along rows; pad the tile to 16 × 17 so the column reads hit different banks.",
        "`tile[ty, tx] = a[by * 16 + ty, bx * 16 + tx]`, `cuda.syncthreads()`, then `out[bx * 16 + ty, by * "
        "16 + tx] = tile[tx, ty]` (each guarded against n).",
    ),
    page="Kernels",
    tests=(
        Case("1 × 1", {"n": 1}),
        Case("15 × 15 (less than a block)", {"n": 15}),
        Case("33 × 33 (edges)", {"n": 33}),
        Case("40 × 40", {"n": 40}),
    ),
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 32}),
        "gpu": Case("performance size", {"n": 8192}),
    },
    bytes_moved=lambda s: 8 * s["n"] ** 2,
    flops=lambda s: 0,
    solution=Solution(
        module="gpu.experiments.transpose.kernels",
        name="transpose_padded_kernel",
        launch=_solution_launch,
        note="the lab's padded shared-memory tile (32 × 32 tiles, 32 × 8 threads)",
    ),
    tolerance=Tolerance(why="exact: a copy"),
    threads=SIDE,
)
