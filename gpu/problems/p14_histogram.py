"""Problem 14, histogram: 256 bins of uint8 data, where atomics contend."""

import numpy as np

from gpu.problems.base import EDGES_1D, Case, Hint, Problem, Solution, Tolerance, launch_1d

STARTER = '''from numba import cuda, uint32


@cuda.jit
def histogram(data, hist):
    i = cuda.grid(1)
    # TODO: add 1 to hist[data[i]] with cuda.atomic.add (many threads hit the same bin);
    #       then try counting in a shared array of 256 bins and merging once per block
    pass
'''


def _solution_launch(s):
    from gpu.core.backend import BACKEND, cuda
    from gpu.kernels.geometry import resident_blocks

    sms = None if BACKEND.simulated else cuda.get_current_device().MULTIPROCESSOR_COUNT
    return (resident_blocks(s["n"], 256, sms),), (256,)


PROBLEM = Problem(
    key="histogram",
    order=14,
    title="Histogram",
    statement="Count the uint8 values of `data` into `hist` (256 bins, zeroed before the launch): `hist[v]` = how many "
    "elements equal v. Threads collide on bins, so the additions must be atomic.",
    kernel_name="histogram",
    params=("data", "hist"),
    arrays="data: uint8[n]; hist: uint32[256], zeroed",
    inputs=lambda rng, s: {"data": np.minimum(rng.exponential(40.0, s["n"]), 255).astype(np.uint8)},
    outputs=lambda s: {"hist": ((256,), np.uint32)},
    reference=lambda x, s: {"hist": np.bincount(x["data"], minlength=256).astype(np.uint32)},
    launch=launch_1d,
    launch_text="1D: ceil(n / 256) blocks of 256 threads (fixed)",
    starter=STARTER,
    hint=Hint(
        "Two threads may add to the same bin at once: what makes an addition safe then? **Kernels** → "
        "Histogram starts with global atomics.",
        "Each thread (grid-stride) adds one to the bin of its value atomically; faster: count into a block's "
        "shared histogram first, then add its 256 bins to `hist` once per block.",
        "`for i in range(cuda.grid(1), data.size, cuda.gridsize(1)): cuda.atomic.add(hist, data[i], 1)`.",
    ),
    page="Kernels",
    tests=EDGES_1D,
    perf={
        "simulator": Case("performance size (checked, not timed)", {"n": 512}),
        "gpu": Case("performance size", {"n": 1 << 26}),
    },
    bytes_moved=lambda s: s["n"] + 4 * 256,
    flops=lambda s: 0,
    solution=Solution(
        module="gpu.experiments.histogram.kernels",
        name="histogram_shared_kernel",
        launch=_solution_launch,
        note="the lab's per-block shared histograms over one wave of blocks",
    ),
    tolerance=Tolerance(why="exact: integer counts"),
    accumulate=("hist",),
)
