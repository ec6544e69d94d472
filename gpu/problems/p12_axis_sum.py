"""Problem 12, axis sum: one block per row sums that row."""

import numpy as np

from gpu.problems.base import INTEGER_SUMS, Case, Hint, Problem, Solution, small_ints

BLOCK = 256

SOLUTION = '''from numba import cuda, float32

BLOCK = 256


@cuda.jit
def row_sums(a, out):
    partial = cuda.shared.array(BLOCK, float32)
    row = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    value = float32(0.0)
    for c in range(tid, a.shape[1], BLOCK):
        value += a[row, c]
    partial[tid] = value
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:
            partial[tid] += partial[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        out[row] = partial[0]
'''

STARTER = '''from numba import cuda, float32

BLOCK = 256


@cuda.jit
def row_sums(a, out):
    row = cuda.blockIdx.x  # one block per row
    # TODO: the block's threads stride along the row (tid, tid + 256, ...), then reduce their
    #       partial sums in shared memory; thread 0 writes out[row]
    pass
'''

PROBLEM = Problem(
    key="axis-sum",
    order=12,
    title="Axis sum",
    statement="Write `out[r]` = the sum of row r of `a` (NumPy's `a.sum(axis=1)`). Block r handles row r; its 256 "
              "threads "
    "stride along the row (a row can be longer or shorter than the block), then reduce in shared memory.",
    kernel_name="row_sums",
    params=("a", "out"),
    arrays="a: float32[rows, cols] (small integers); out: float32[rows]",
    inputs=lambda rng, s: {"a": small_ints(rng, (s["rows"], s["cols"]))},
    outputs=lambda s: {"out": ((s["rows"],), np.float32)},
    reference=lambda x, s: {"out": x["a"].sum(axis=1, dtype=np.float32)},
    launch=lambda s, t: ((s["rows"],), (BLOCK,)),
    launch_text=f"1D: one block per row, {BLOCK} threads each (fixed)",
    starter=STARTER,
    hint=Hint(
        "Block r owns row r, but the row may be longer than the block: how does each thread cover its share? "
        "**Kernels** → Reduction has the block's tree.",
        "Each thread sums the row's elements t, t + 256, t + 512, … in a register (a block-stride loop), "
        "writes it to a shared array, then the block reduces it as in problem 7.",
        "`acc = 0.0` / `for c in range(t, a.shape[1], cuda.blockDim.x): acc += a[r, c]` with `r = "
        "cuda.blockIdx.x`, then the tree, and `out[r] = buf[0]` from thread 0.",
    ),
    page="Kernels",
    tests=(
        Case("1 × 1", {"rows": 1, "cols": 1}),
        Case("3 × 255", {"rows": 3, "cols": 255}),
        Case("2 × 1000 (rows longer than the block)", {"rows": 2, "cols": 1000}),
        Case("5 × 20", {"rows": 5, "cols": 20}),
    ),
    perf={
        "simulator": Case("performance size (checked, not timed)", {"rows": 2, "cols": 512}),
        "gpu": Case("performance size", {"rows": 8192, "cols": 8192}),
    },
    bytes_moved=lambda s: 4 * s["rows"] * s["cols"] + 4 * s["rows"],
    flops=lambda s: s["rows"] * s["cols"],
    solution=Solution(source=SOLUTION, note="a strided loop per thread, then a shared-memory tree per row"),
    tolerance=INTEGER_SUMS,
    threads=BLOCK,
)
