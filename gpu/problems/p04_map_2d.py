"""Problem 4, 2D map: a 2D grid of 2D blocks over a matrix, guarded in both directions."""

import numpy as np

from gpu.problems.base import EDGES_2D, Case, Hint, Problem, Solution, launch_2d, small_ints

SOLUTION = '''from numba import cuda


@cuda.jit
def add_one_2d(a, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col] + 1
'''

STARTER = '''from numba import cuda


@cuda.jit
def add_one_2d(a, out):
    col, row = cuda.grid(2)  # x spans columns, y spans rows
    # TODO: guard both directions, then write out[row, col] = a[row, col] + 1
    pass
'''

PROBLEM = Problem(
    key="map-2d",
    order=4,
    title="2D map",
    statement="Write `out[r, c] = a[r, c] + 1` for a rows × cols matrix. Blocks are 16 × 16 threads; x spans columns "
    "and y rows; the grid is rounded up in both directions, so guard rows and columns separately.",
    kernel_name="add_one_2d",
    params=("a", "out"),
    arrays="a, out: float32[rows, cols] (C order)",
    inputs=lambda rng, s: {"a": small_ints(rng, (s["rows"], s["cols"]), -1000, 1000)},
    outputs=lambda s: {"out": ((s["rows"], s["cols"]), np.float32)},
    reference=lambda x, s: {"out": x["a"] + np.float32(1)},
    launch=launch_2d,
    launch_text="2D: (ceil(cols / 16), ceil(rows / 16)) blocks of 16 × 16 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "In 2D each thread has a row and a column: which of x and y is which here? The **Kernels** page's 2D "
        "kernels (transpose, blur) start the same way.",
        "Take the column from the x index and the row from the y index, and guard each against its own size: "
        "the grid is rounded up in both directions.",
        "`c, r = cuda.grid(2)` then `if r < a.shape[0] and c < a.shape[1]:` and `out[r, c] = a[r, c] + 1`.",
    ),
    page="Kernels",
    tests=EDGES_2D,
    threads=16,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"rows": 32, "cols": 32}),
        "gpu": Case("performance size", {"rows": 8192, "cols": 8192}),
    },
    bytes_moved=lambda s: 8 * s["rows"] * s["cols"],
    flops=lambda s: s["rows"] * s["cols"],
    solution=Solution(source=SOLUTION, note="one thread per element, guarded in both directions"),
    writer="2d",
)
