"""Problem 9, dot product: products, a block-level reduction, one atomic per block."""

import numpy as np

from gpu.problems.base import EDGES_1D, Case, Hint, Problem, Solution, Tolerance, launch_1d, small_ints

SOLUTION = '''from numba import cuda, float32

BLOCK = 256


@cuda.jit
def dot(a, b, out):
    partial = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    value = float32(0.0)
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        value += a[i] * b[i]
    partial[tid] = value
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:
            partial[tid] += partial[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, partial[0])
'''

STARTER = '''from numba import cuda, float32

BLOCK = 256


@cuda.jit
def dot(a, b, out):
    # out[0] starts at 0. TODO: each thread multiplies its element(s), the block adds its
    # products (shared memory), and one thread per block does cuda.atomic.add(out, 0, block_sum)
    pass
'''

PROBLEM = Problem(
    key="dot",
    order=9,
    title="Dot product",
    statement="Add `a[i] * b[i]` over all i into `out[0]`, which starts at zero. Many blocks take part, so each block "
    "reduces its products in shared memory and adds its sum with `cuda.atomic.add(out, 0, value)`.",
    kernel_name="dot",
    params=("a", "b", "out"),
    arrays="a, b: float32[n] (values −1, 0, 1); out: float32[1], zeroed",
    inputs=lambda rng, s: {"a": small_ints(rng, s["n"], -1, 1), "b": small_ints(rng, s["n"], -1, 1)},
    outputs=lambda s: {"out": ((1,), np.float32)},
    reference=lambda x, s: {
        "out": np.array([np.dot(x["a"].astype(np.float64), x["b"].astype(np.float64))], np.float32)
    },
    launch=launch_1d,
    launch_text="1D: ceil(n / 256) blocks of 256 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "One atomic per element would serialise every thread on `out[0]`: how few could there be? **Kernels** "
        "→ Reduction walks from one per element to one per block (steps 1 to 4).",
        "Each thread multiplies its pair (zero past the end) into a shared array, the block reduces it as a "
        "tree (problem 7), and one thread per block adds the block's sum with an atomic.",
        "After the tree: `if cuda.threadIdx.x == 0: cuda.atomic.add(out, 0, buf[0])`.",
    ),
    page="Kernels",
    tests=EDGES_1D,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 512}),
        "gpu": Case("performance size", {"n": 1 << 24}),
    },
    bytes_moved=lambda s: 8 * s["n"] + 4,
    flops=lambda s: 2 * s["n"],
    solution=Solution(
        source=SOLUTION, note="products, a shared-memory tree per block (reduction step 2), one atomic per block"
    ),
    tolerance=Tolerance(
        why="exact: values are −1, 0 or 1, so every partial sum is an integer below 2^24, exact in float32 in any order"
    ),
    accumulate=("out",),
)
