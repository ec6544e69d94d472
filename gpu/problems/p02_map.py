"""Problem 2, map: one thread per element, every thread in range."""

import numpy as np

from gpu.problems.base import Case, Hint, Problem, Solution, launch_1d, n_cases, small_ints

SOLUTION = '''from numba import cuda


@cuda.jit
def add_ten(a, out):
    i = cuda.grid(1)
    out[i] = a[i] + 10
'''

STARTER = '''from numba import cuda


@cuda.jit
def add_ten(a, out):
    # TODO: find this thread's element and write out[i] = a[i] + 10
    pass
'''

PROBLEM = Problem(
    key="map",
    order=2,
    title="Map",
    statement="Write `out[i] = a[i] + 10`. Here n is always a multiple of 256 and the grid has exactly n threads, "
    "so every thread has an element: find yours with `cuda.grid(1)` (or threadIdx, blockIdx and blockDim).",
    kernel_name="add_ten",
    params=("a", "out"),
    arrays="a, out: float32[n], n a multiple of 256",
    inputs=lambda rng, s: {"a": small_ints(rng, s["n"], -1000, 1000)},
    outputs=lambda s: {"out": ((s["n"],), np.float32)},
    reference=lambda x, s: {"out": x["a"] + np.float32(10)},
    launch=launch_1d,
    launch_text="1D: n / 256 blocks of 256 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "Every thread has exactly one element here: which one? **Launch config**'s thread-indexing explorer "
        "shows it.",
        "A thread's element is its position in the whole grid: its index within the block plus the threads of "
        "the blocks before it, which `cuda.grid(1)` computes for you.",
        "`i = cuda.grid(1)` then `out[i] = a[i] + 10`.",
    ),
    page="Launch config",
    tests=n_cases(("one block", 256), ("two blocks", 512), ("eight blocks", 2048)),
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 512}),
        "gpu": Case("performance size", {"n": 1 << 26}),
    },
    bytes_moved=lambda s: 8 * s["n"],
    flops=lambda s: s["n"],
    solution=Solution(source=SOLUTION, note="one line per thread"),
    writer="1d",
)
