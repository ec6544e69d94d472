"""Problem 7, shared memory: each block sums its own 256 elements through a shared array."""

import numpy as np

from gpu.problems.base import EDGES_1D, INTEGER_SUMS, Case, Hint, Problem, Solution, ceil_div, launch_1d, small_ints

SOLUTION = '''from numba import cuda, float32

BLOCK = 256


@cuda.jit
def block_sums(a, out):
    partial = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    value = float32(0.0)
    if i < a.size:
        value = a[i]
    partial[tid] = value
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:
            partial[tid] += partial[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = partial[0]
'''

STARTER = '''from numba import cuda, float32

BLOCK = 256  # threads per block, fixed by the problem


@cuda.jit
def block_sums(a, out):
    partial = cuda.shared.array(BLOCK, float32)  # one slot per thread of this block
    tid = cuda.threadIdx.x
    # TODO: store your element (0 past the end), cuda.syncthreads(), add the halves together
    #       until one value is left, and let thread 0 write out[cuda.blockIdx.x]
    pass
'''


def _reference(x, s):
    n = s["n"]
    padded = np.zeros(ceil_div(n, 256) * 256, np.float32)
    padded[:n] = x["a"]
    return {"out": padded.reshape(-1, 256).sum(axis=1, dtype=np.float32)}


PROBLEM = Problem(
    key="shared",
    order=7,
    title="Shared memory",
    statement="Block b must write `out[b]` = the sum of `a[256·b : 256·(b+1)]` (the last block sums what is left). "
    "Gather the block's values in a `cuda.shared.array`, synchronise with `cuda.syncthreads()`, then reduce them.",
    kernel_name="block_sums",
    params=("a", "out"),
    arrays="a: float32[n] (small integers); out: float32[ceil(n / 256)]",
    inputs=lambda rng, s: {"a": small_ints(rng, s["n"])},
    outputs=lambda s: {"out": ((ceil_div(s["n"], 256),), np.float32)},
    reference=_reference,
    launch=launch_1d,
    launch_text="1D: ceil(n / 256) blocks of 256 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "Which values does block b add up, and where can its threads see each other's values? **Kernels** → "
        "Reduction, step 2, is this kernel plus one atomic.",
        "Each thread loads one value (zero past the end) into a `cuda.shared.array` of 256, "
        "`cuda.syncthreads()`, then halve the active threads each round, adding the upper half into the "
        "lower, with a `syncthreads` after every round; thread 0 writes the block's sum.",
        "`s = 128` / `while s > 0:` / `if t < s: buf[t] += buf[t + s]` / `cuda.syncthreads()` / `s //= 2`, "
        "then `if t == 0: out[cuda.blockIdx.x] = buf[0]`.",
    ),
    page="Kernels",
    tests=EDGES_1D,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 512}),
        "gpu": Case("performance size", {"n": 1 << 26}),
    },
    bytes_moved=lambda s: 4 * s["n"] + 4 * ceil_div(s["n"], 256),
    flops=lambda s: s["n"],
    solution=Solution(
        source=SOLUTION, note="the lab's shared-memory tree (reduction step 2), writing each block's sum"
    ),
    tolerance=INTEGER_SUMS,
)
