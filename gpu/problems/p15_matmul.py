"""Problem 15, matrix multiply: the lab's register-tiled kernel is the reference."""

import numpy as np

from gpu.problems.base import Case, Hint, Problem, Solution, Tolerance, ceil_div, small_ints

SIDE = 16

STARTER = '''from numba import cuda, float32


@cuda.jit
def matmul(a, b, c):
    col, row = cuda.grid(2)
    # TODO: c[row, col] = sum over k of a[row, k] * b[k, col], inside the matrix
    #       (then load 16 x 16 tiles of a and b into shared memory and reuse them)
    pass
'''


def _solution_launch(s):
    from gpu.experiments.matmul.kernels import BM, BN, THREADS_X, THREADS_Y
    from gpu.kernels.geometry import grid_2d

    return grid_2d(s["n"], s["n"], BM, BN), (THREADS_X, THREADS_Y)


PROBLEM = Problem(
    key="matmul",
    order=15,
    title="Matrix multiply",
    statement="Write `c = a @ b` for n × n matrices: `c[r, j] = Σ_k a[r, k] · b[k, j]`. One thread per element of c in "
    "16 × 16 blocks; the fast kernels stage tiles of a and b in shared memory (and registers) and reuse them.",
    kernel_name="matmul",
    params=("a", "b", "c"),
    arrays="a, b, c: float32[n, n] (a and b small integers)",
    inputs=lambda rng, s: {
        "a": small_ints(rng, (s["n"], s["n"]), -4, 4),
        "b": small_ints(rng, (s["n"], s["n"]), -4, 4),
    },
    outputs=lambda s: {"c": ((s["n"], s["n"]), np.float32)},
    reference=lambda x, s: {"c": (x["a"].astype(np.float64) @ x["b"].astype(np.float64)).astype(np.float32)},
    launch=lambda s, t: ((ceil_div(s["n"], SIDE), ceil_div(s["n"], SIDE)), (SIDE, SIDE)),
    launch_text=f"2D: (ceil(n / {SIDE}), ceil(n / {SIDE})) blocks of {SIDE} × {SIDE} threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "Each element of c reads a whole row of a and a column of b: how often is each input read by a block? "
        "**Kernels** → Matrix multiply, and **Roofline** for why tiling pays.",
        "Shared-memory tiling: the block loads a 16 × 16 tile of a and of b, `syncthreads`, each thread adds "
        "its 16 products, `syncthreads`, and the tiles slide along k; pad the loads with zeros past n.",
        "Per tile: `sa[ty, tx] = a[r, k0 + tx]`, `sb[ty, tx] = b[k0 + ty, j]`, `cuda.syncthreads()`, `for k "
        "in range(16): acc += sa[ty, k] * sb[k, tx]`, `cuda.syncthreads()`; finally `c[r, j] = acc`.",
    ),
    page="Kernels",
    tests=(Case("1 × 1", {"n": 1}), Case("15 × 15 (less than a block)", {"n": 15}), Case("33 × 33 (edges)", {"n": 33})),
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 48}),
        "gpu": Case("performance size", {"n": 4096}),
    },
    bytes_moved=lambda s: 12 * s["n"] ** 2,
    flops=lambda s: 2 * s["n"] ** 3,
    solution=Solution(
        module="gpu.experiments.matmul.kernels",
        name="matmul_register_kernel",
        launch=_solution_launch,
        note="the lab's register-tiled kernel (8 × 8 outputs per thread, 128 × 128 per block)",
    ),
    tolerance=Tolerance(
        why="exact: entries are integers from −4 to 4, so every partial sum is an integer below 2^24, "
        "exact in float32 in any order and with or without fused multiply-adds"
    ),
    threads=SIDE,
    writer="2d",
)
