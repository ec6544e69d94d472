"""Problem 5, broadcast: a column vector plus a row vector makes a matrix."""

import numpy as np

from gpu.problems.base import EDGES_2D, Case, Hint, Problem, Solution, launch_2d, small_ints

SOLUTION = '''from numba import cuda


@cuda.jit
def outer_add(col, row, out):
    c, r = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = col[r] + row[c]
'''

STARTER = '''from numba import cuda


@cuda.jit
def outer_add(col, row, out):
    c, r = cuda.grid(2)
    # TODO: out[r, c] = col[r] + row[c], inside the matrix only
    pass
'''

PROBLEM = Problem(
    key="broadcast",
    order=5,
    title="Broadcast",
    statement="Given `col` (rows values) and `row` (cols values), write `out[r, c] = col[r] + row[c]`: NumPy's "
    "`col[:, None] + row[None, :]`. Blocks are 16 × 16; x spans columns.",
    kernel_name="outer_add",
    params=("col", "row", "out"),
    arrays="col: float32[rows]; row: float32[cols]; out: float32[rows, cols]",
    inputs=lambda rng, s: {
        "col": small_ints(rng, s["rows"], -1000, 1000),
        "row": small_ints(rng, s["cols"], -1000, 1000),
    },
    outputs=lambda s: {"out": ((s["rows"], s["cols"]), np.float32)},
    reference=lambda x, s: {"out": x["col"][:, None] + x["row"][None, :]},
    launch=launch_2d,
    launch_text="2D: (ceil(cols / 16), ceil(rows / 16)) blocks of 16 × 16 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "It is problem 4's indexing again; what does each thread read, and from which of the two vectors?",
        "A thread at (row r, column c) reads `col` at its row and `row` at its column; guard both directions "
        "as in **2D map**.",
        "`c, r = cuda.grid(2)` then `if r < out.shape[0] and c < out.shape[1]:` and `out[r, c] = col[r] + "
        "row[c]`.",
    ),
    page="Kernels",
    tests=EDGES_2D,
    threads=16,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"rows": 32, "cols": 32}),
        "gpu": Case("performance size", {"rows": 8192, "cols": 8192}),
    },
    bytes_moved=lambda s: 4 * (s["rows"] + s["cols"] + s["rows"] * s["cols"]),
    flops=lambda s: s["rows"] * s["cols"],
    solution=Solution(source=SOLUTION, note="one thread per output element"),
    writer="2d",
)
