"""Problem 11, prefix sum: an inclusive scan of each block's 256 elements in shared memory."""

import numpy as np

from gpu.problems.base import EDGES_1D, Case, Hint, Problem, Solution, Tolerance, ceil_div, launch_1d

SOLUTION = '''from numba import cuda, int32

BLOCK = 256


@cuda.jit
def block_scan(a, out):
    buf = cuda.shared.array(BLOCK, int32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    value = int32(0)
    if i < a.size:
        value = a[i]
    buf[tid] = value
    cuda.syncthreads()
    offset = 1
    while offset < BLOCK:
        add = int32(0)
        if tid >= offset:
            add = buf[tid - offset]
        cuda.syncthreads()
        buf[tid] += add
        cuda.syncthreads()
        offset *= 2
    if i < a.size:
        out[i] = buf[tid]
'''

STARTER = '''from numba import cuda, int32

BLOCK = 256


@cuda.jit
def block_scan(a, out):
    buf = cuda.shared.array(BLOCK, int32)
    # TODO: out[i] = a[start] + ... + a[i], where start is the first element of i's block.
    #       Hillis-Steele: for offset 1, 2, 4, ... add buf[tid - offset] (read, sync, write, sync)
    pass
'''


def _reference(x, s):
    n = s["n"]
    padded = np.zeros(ceil_div(n, 256) * 256, np.int32)
    padded[:n] = x["a"]
    return {"out": np.cumsum(padded.reshape(-1, 256), axis=1, dtype=np.int32).reshape(-1)[:n]}


PROBLEM = Problem(
    key="prefix-sum",
    order=11,
    title="Prefix sum",
    statement="Scan each block's 256 elements: `out[i] = a[s] + a[s+1] + … + a[i]` where `s = 256 · (i // 256)` "
    "(every block restarts at its first element). Threads need each other's partial sums: use shared memory "
    "and `cuda.syncthreads()` between reading and writing.",
    kernel_name="block_scan",
    params=("a", "out"),
    arrays="a, out: int32[n]",
    inputs=lambda rng, s: {"a": rng.integers(-100, 101, size=s["n"]).astype(np.int32)},
    outputs=lambda s: {"out": ((s["n"],), np.int32)},
    reference=_reference,
    launch=launch_1d,
    launch_text="1D: ceil(n / 256) blocks of 256 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "Thread i needs every sum before it in its block: how can threads share partial sums safely? "
        "**Kernels** → Reduction, step 2, has the shared array and the syncthreads rhythm.",
        "A scan in shared memory (Hillis–Steele): in round d each thread adds the value d places to its left, "
        "d = 1, 2, 4, … 128; read into a register, `syncthreads`, write, `syncthreads`, so no thread reads a "
        "value being replaced.",
        "`d = 1` / `while d < 256:` / `v = buf[t - d] if t >= d else 0.0` / `cuda.syncthreads()` / `buf[t] += "
        "v` / `cuda.syncthreads()` / `d *= 2`, then `out[i] = buf[t]`.",
    ),
    page="Kernels",
    tests=EDGES_1D,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 512}),
        "gpu": Case("performance size", {"n": 1 << 26}),
    },
    bytes_moved=lambda s: 8 * s["n"],
    flops=lambda s: s["n"],
    solution=Solution(source=SOLUTION, note="Hillis-Steele in shared memory"),
    tolerance=Tolerance(why="exact: int32 additions"),
    writer="1d",
)
