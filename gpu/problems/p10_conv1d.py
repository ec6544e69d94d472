"""Problem 10, 1D convolution: a window of K weights slides along the input."""

import numpy as np

from gpu.problems.base import EDGES_1D, INTEGER_SUMS, Case, Hint, Problem, Solution, launch_1d, small_ints

K = 4  # taps

SOLUTION = '''from numba import cuda, float32

BLOCK = 256
K = 4
TILE = BLOCK + K - 1


@cuda.jit
def conv1d(a, w, out):
    tile = cuda.shared.array(TILE, float32)
    weights = cuda.shared.array(K, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    if tid < K:
        weights[tid] = w[tid]
    for t in range(tid, TILE, BLOCK):
        j = cuda.blockIdx.x * BLOCK + t
        value = float32(0.0)
        if j < a.size:
            value = a[j]
        tile[t] = value
    cuda.syncthreads()
    if i < a.size:
        acc = float32(0.0)
        for k in range(K):
            acc += tile[tid + k] * weights[k]
        out[i] = acc
'''

STARTER = '''from numba import cuda, float32

K = 4  # taps


@cuda.jit
def conv1d(a, w, out):
    i = cuda.grid(1)
    # TODO: out[i] = sum of a[i + k] * w[k] for k < K, where a[i + k] past the end counts as 0
    pass
'''


def _reference(x, s):
    a, w = x["a"].astype(np.float64), x["w"].astype(np.float64)
    padded = np.concatenate([a, np.zeros(K - 1)])
    out = sum(padded[k:k + a.size] * w[k] for k in range(K))
    return {"out": out.astype(np.float32)}


PROBLEM = Problem(
    key="conv1d",
    order=10,
    title="1D convolution",
    statement=f"Write `out[i] = Σ a[i + k] · w[k]` for k < {K}, where values past the end of `a` count as zero. "
    f"Each input is read by {K} threads: load a block's span (256 + {K - 1} values) and the weights into shared memory "
    "once.",
    kernel_name="conv1d",
    params=("a", "w", "out"),
    arrays=f"a, out: float32[n]; w: float32[{K}] (small integers)",
    inputs=lambda rng, s: {"a": small_ints(rng, s["n"]), "w": small_ints(rng, K, -4, 4)},
    outputs=lambda s: {"out": ((s["n"],), np.float32)},
    reference=_reference,
    launch=launch_1d,
    launch_text="1D: ceil(n / 256) blocks of 256 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "Each input is read by several threads: where could a block keep its span so it is read from global "
        "memory once? **Kernels** → Stencil's tiled blur does this.",
        "Load the block's 256 values plus the next K - 1 (zero past the end) and the weights into shared "
        "memory, `cuda.syncthreads()`, then each thread sums its K products from shared memory.",
        "`acc = 0.0` / `for k in range(K): acc += tile[t + k] * wts[k]` / `if i < out.size: out[i] = acc` "
        "(with `t = cuda.threadIdx.x`).",
    ),
    page="Kernels",
    tests=EDGES_1D,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 512}),
        "gpu": Case("performance size", {"n": 1 << 26}),
    },
    bytes_moved=lambda s: 8 * s["n"] + 4 * K,
    flops=lambda s: 2 * K * s["n"],
    solution=Solution(source=SOLUTION, note="a shared tile with a K − 1 halo and the weights in shared memory"),
    tolerance=INTEGER_SUMS,
    writer="1d",
)
