"""Problem 6, blocks: a fixed, small grid covers any n with a grid-stride loop."""

import numpy as np

from gpu.problems.base import EDGES_1D, Case, Hint, Problem, Solution, uniform

GRID, BLOCK = 4, 128  # 512 threads for any n: each handles every 512th element

SOLUTION = '''from numba import cuda


@cuda.jit
def halve(a, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, a.size, stride):
        out[i] = a[i] * 0.5
'''

STARTER = '''from numba import cuda


@cuda.jit
def halve(a, out):
    i = cuda.grid(1)
    # TODO: there are only 512 threads; loop over i, i + 512, i + 1024, ... (cuda.gridsize(1) is 512)
    if i < a.size:
        out[i] = a[i] * 0.5
'''

PROBLEM = Problem(
    key="blocks",
    order=6,
    title="Blocks (grid-stride loop)",
    statement=f"Write `out[i] = a[i] * 0.5` for every `i < n`. The grid is fixed at {GRID} blocks of {BLOCK} threads "
    "whatever n is, so each thread must handle several elements: start at `cuda.grid(1)` and step by "
    "`cuda.gridsize(1)`.",
    kernel_name="halve",
    params=("a", "out"),
    arrays="a, out: float32[n]",
    inputs=lambda rng, s: {"a": uniform(rng, s["n"])},
    outputs=lambda s: {"out": ((s["n"],), np.float32)},
    reference=lambda x, s: {"out": x["a"] * np.float32(0.5)},
    launch=lambda s, t: ((GRID,), (BLOCK,)),
    launch_text=f"1D: {GRID} blocks of {BLOCK} threads, whatever n (fixed)",
    starter=STARTER,
    hint=Hint(
        "The grid is smaller than n: how many elements must one thread handle? **Launch config** has a "
        "grid-stride explorer.",
        "A grid-stride loop: each thread starts at its own index and steps by the number of threads in the "
        "whole grid until it passes the end.",
        "`for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):` and, in the loop, `out[i] = a[i] * 0.5`.",
    ),
    page="Launch config",
    tests=EDGES_1D,
    threads=BLOCK,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 2048}),
        "gpu": Case("performance size", {"n": 1 << 26}),
    },
    bytes_moved=lambda s: 8 * s["n"],
    flops=lambda s: s["n"],
    solution=Solution(source=SOLUTION, note="a grid-stride loop"),
)
