"""Problem 3, guard: n is not a multiple of the block, so some threads must do nothing."""

import numpy as np

from gpu.problems.base import EDGES_1D, Case, Hint, Problem, Solution, launch_1d, uniform

SOLUTION = '''from numba import cuda


@cuda.jit
def square(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] * a[i]
'''

STARTER = '''from numba import cuda


@cuda.jit
def square(a, out):
    i = cuda.grid(1)
    out[i] = a[i] * a[i]  # TODO: threads past the end of a must not read or write
'''

PROBLEM = Problem(
    key="guard",
    order=3,
    title="Guard",
    statement="Write `out[i] = a[i] * a[i]`. n is any size; the grid is rounded up to whole blocks of 256, "
    "so the threads past `a.size` must neither read nor write.",
    kernel_name="square",
    params=("a", "out"),
    arrays="a, out: float32[n]",
    inputs=lambda rng, s: {"a": uniform(rng, s["n"])},
    outputs=lambda s: {"out": ((s["n"],), np.float32)},
    reference=lambda x, s: {"out": x["a"] * x["a"]},
    launch=launch_1d,
    launch_text="1D: ceil(n / 256) blocks of 256 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "The grid is rounded up to whole blocks: what do the threads past `a.size` do? **Launch config** "
        "shows them masked in the last block.",
        "Compute the thread's index as in problem 2, then let only the threads inside the array read and "
        "write: the same guard as **Vector add**'s kernel.",
        "`i = cuda.grid(1)` then `if i < a.size:` and, under it, `out[i] = a[i] * a[i]`.",
    ),
    page="Launch config",
    tests=EDGES_1D,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 511}),
        "gpu": Case("performance size", {"n": (1 << 26) + 1}),
    },
    bytes_moved=lambda s: 8 * s["n"],
    flops=lambda s: s["n"],
    solution=Solution(source=SOLUTION, note="one thread per element with a bounds guard"),
    writer="1d",
)
