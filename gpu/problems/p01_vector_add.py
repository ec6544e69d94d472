"""Problem 1, the article's kernel: add two vectors, one thread per element."""

import numpy as np

from gpu.problems.base import EDGES_1D, THREAD_CHOICES, Case, Hint, Problem, Solution, launch_1d, uniform

STARTER = '''from numba import cuda

THREADS_PER_BLOCK = 256  # you may choose 32, 64, 128, 256, 512 or 1024


@cuda.jit
def vector_add(a, b, out):
    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    # TODO: the last block runs past the end of the arrays: guard i, then write out[i]
    pass
'''

PROBLEM = Problem(
    key="vector-add",
    order=1,
    title="Vector add",
    statement="Write `out[i] = a[i] + b[i]` for every `i < n`, one thread per element. The grid has "
    "ceil(n / THREADS_PER_BLOCK) blocks, so the last block may have threads past the end: they must write nothing.",
    kernel_name="vector_add",
    params=("a", "b", "out"),
    arrays="a, b, out: float32[n]",
    inputs=lambda rng, s: {"a": uniform(rng, s["n"]), "b": uniform(rng, s["n"])},
    outputs=lambda s: {"out": ((s["n"],), np.float32)},
    reference=lambda x, s: {"out": x["a"] + x["b"]},
    launch=launch_1d,
    launch_text="1D: ceil(n / THREADS_PER_BLOCK) blocks of THREADS_PER_BLOCK threads (your choice, default 256)",
    starter=STARTER,
    hint=Hint(
        "Which element does a thread own, and what should the threads of the last block that run past `n` do? "
        "**Launch config** draws which thread handles which element.",
        "Each thread computes its index `i` (already there), and only a thread with `i` inside the arrays "
        "writes: a bounds guard, exactly as the **Vector add** page's kernel has.",
        "`if i < out.size:` then, indented under it, `out[i] = a[i] + b[i]`.",
    ),
    page="Vector add",
    tests=EDGES_1D,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 512}),
        "gpu": Case("performance size", {"n": 1 << 26}),
    },
    bytes_moved=lambda s: 12 * s["n"],
    flops=lambda s: s["n"],
    solution=Solution(module="gpu.kernels.vector_add", name="vector_add_kernel", note="the lab's vector_add_kernel"),
    thread_choices=THREAD_CHOICES,
    writer="1d",
)
