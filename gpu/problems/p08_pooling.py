"""Problem 8, pooling: each output is the sum of a window of three inputs (a halo in shared memory)."""

import numpy as np

from gpu.problems.base import EDGES_1D, INTEGER_SUMS, Case, Hint, Problem, Solution, launch_1d, small_ints

SOLUTION = '''from numba import cuda, float32

BLOCK = 256
HALO = 2
TILE = BLOCK + HALO


@cuda.jit
def pool3(a, out):
    tile = cuda.shared.array(TILE, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    value = float32(0.0)
    if i < a.size:
        value = a[i]
    tile[tid + HALO] = value
    if tid < HALO:
        j = i - HALO
        before = float32(0.0)
        if j >= 0 and j < a.size:
            before = a[j]
        tile[tid] = before
    cuda.syncthreads()
    if i < a.size:
        out[i] = tile[tid] + tile[tid + 1] + tile[tid + 2]
'''

STARTER = '''from numba import cuda


@cuda.jit
def pool3(a, out):
    i = cuda.grid(1)
    # TODO: out[i] = a[i - 2] + a[i - 1] + a[i], leaving out the terms before the start
    #       (then try loading the block's window once into cuda.shared.array)
    pass
'''


def _reference(x, s):
    a = x["a"]
    out = a.copy()
    out[1:] += a[:-1]
    out[2:] += a[:-2]
    return {"out": out}


PROBLEM = Problem(
    key="pooling",
    order=8,
    title="Pooling",
    statement="Write `out[i] = a[i-2] + a[i-1] + a[i]`, leaving out terms before the start (so `out[0] = a[0]`). "
    "Neighbouring threads read the same inputs: a block can load its window (its 256 values plus the 2 before) into "
    "shared memory once.",
    kernel_name="pool3",
    params=("a", "out"),
    arrays="a, out: float32[n] (small integers)",
    inputs=lambda rng, s: {"a": small_ints(rng, s["n"])},
    outputs=lambda s: {"out": ((s["n"],), np.float32)},
    reference=_reference,
    launch=launch_1d,
    launch_text="1D: ceil(n / 256) blocks of 256 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "Neighbouring threads read the same three inputs: could a block read each once? **Kernels** → Stencil "
        "does it in 2D.",
        "Load the block's 256 values plus the 2 before them (a halo; zero before the start) into shared "
        "memory, `cuda.syncthreads()`, then each thread adds its three neighbours from shared memory.",
        "With `buf` of 258 and `t = cuda.threadIdx.x`: `buf[t + 2] = a[i]` (and the first two threads load "
        "the halo `a[i - 2]`), `cuda.syncthreads()`, then `out[i] = buf[t] + buf[t + 1] + buf[t + 2]`.",
    ),
    page="Kernels",
    tests=EDGES_1D,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 512}),
        "gpu": Case("performance size", {"n": 1 << 26}),
    },
    bytes_moved=lambda s: 8 * s["n"],
    flops=lambda s: 2 * s["n"],
    solution=Solution(source=SOLUTION, note="a shared tile with a two-element halo"),
    tolerance=INTEGER_SUMS,
    writer="1d",
)
