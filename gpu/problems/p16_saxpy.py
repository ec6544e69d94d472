"""Problem 16, SAXPY: out = alpha · x + y, with ``alpha`` a float32 scalar argument (a new value every test).

How it is checked. In float32, ``alpha * x[i] + y[i]`` rounds twice (the product, then the sum)
where NumPy computes it, but a GPU compiler may fuse it into one fused multiply-add (NVVM does
by default), which rounds once: the two results can differ in the last bit, so neither is "the"
answer. Both are compared with the exact value v = alpha·x + y computed in float64 (the product
of two float32 values is exact in float64). With x, y ≥ 0 and alpha > 0 there is no cancellation
(alpha·x ≤ v), so with u = 2^-24:

- fused: |got − v| ≤ u·v;
- product, then sum: |got − v| ≤ u·alpha·x + u·(1 + u)·v ≤ (2^-23 + 2^-48)·v;
- the float64 reference's own rounding adds at most 2^-53·v;

so every correct order passes |got − v| ≤ 1.2e-7·v (2^-23 = 1.19e-7). A result three float32
ulps away from the correctly rounded one is always outside it (more than 2.5 ulps > 1.25·2^-23·v),
and so is a kernel that hard-codes alpha, swaps x and y, or forgets y.
"""

import numpy as np

from gpu.problems.base import EDGES_1D, Case, Hint, Problem, Scalar, Solution, Tolerance, launch_1d, uniform

SOLUTION = '''from numba import cuda


@cuda.jit
def saxpy(alpha, x, y, out):
    i = cuda.grid(1)
    if i < x.size:  # the last block may run past the end
        out[i] = alpha * x[i] + y[i]
'''

STARTER = '''from numba import cuda


@cuda.jit
def saxpy(alpha, x, y, out):
    # alpha is a float32 number (not an array), the same for every thread
    i = cuda.grid(1)
    # TODO: guard i, then write out[i] = alpha * x[i] + y[i]
    pass
'''

PROBLEM = Problem(
    key="saxpy",
    order=16,
    title="SAXPY (a scalar argument)",
    statement="Write `out[i] = alpha * x[i] + y[i]` for every `i < n`, one thread per element. `alpha` is a "
    "float32 **scalar**: a plain number passed to the kernel (not an array), the same for every thread and a new "
    "value every test, so it cannot be written into the kernel. The result is compared with the exact value in "
    "float64 within 1.2e-7 × the value: one float32 rounding (a fused multiply-add) or two (the product, then the "
    "sum) both pass; a wrong value does not.",
    kernel_name="saxpy",
    params=("alpha", "x", "y", "out"),
    arrays="x, y, out: float32[n], x and y from 0 to 1",
    scalars=(Scalar("alpha", np.float32, draw=lambda rng, s: rng.uniform(0.5, 4.0), about="from 0.5 to 4"),),
    inputs=lambda rng, s: {"x": uniform(rng, s["n"]), "y": uniform(rng, s["n"])},
    outputs=lambda s: {"out": ((s["n"],), np.float32)},
    reference=lambda a, s: {"out": np.float64(a["alpha"]) * a["x"].astype(np.float64) + a["y"].astype(np.float64)},
    launch=launch_1d,
    launch_text="1D: ceil(n / 256) blocks of 256 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "It is **Vector add** with one more operand; how does a kernel read a plain number passed to it?",
        "`alpha` is a scalar argument: read it like any local variable, with no index; guard `i` as in "
        "problem 1.",
        "`i = cuda.grid(1)` then `if i < out.size:` and `out[i] = alpha * x[i] + y[i]`.",
    ),
    page="Vector add",
    tests=EDGES_1D,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 512}),
        "gpu": Case("performance size", {"n": 1 << 26}),
    },
    bytes_moved=lambda s: 12 * s["n"],  # x and y read, out written, 4 bytes each; alpha travels with the launch
    flops=lambda s: 2 * s["n"],  # a multiply and an add per element
    solution=Solution(source=SOLUTION, note="one thread per element, guarded; the compiler may fuse it into an FMA"),
    tolerance=Tolerance(
        rtol=1.2e-7,
        why="compared with the exact float64 value: a fused multiply-add rounds once, NumPy's product-then-sum "
        "twice, and both are within 2^-23 (1.19e-7) of it for these non-negative inputs",
    ),
    writer="1d",
)
