"""The article's own measurement, reproduced exactly as written (not the careful way).

Copy a, b *and* c in, launch, copy c out, and average three wall-clock runs (the
article's ``timeit(number=3) / 3``), against the Python loop measured the same way. Its
four printed lines are kept so they can be put beside the careful method's and the
difference explained (gpu/experiments/vector_add/report.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from gpu.core import cpu
from gpu.core.arrays import vector_inputs
from gpu.core.backend import BACKEND, cuda
from gpu.core.device import device_info
from gpu.core.limits import (
    check_n,
    check_threads,
)
from gpu.core.shape import Shaped, shaped
from gpu.kernels.geometry import blocks_for
from gpu.kernels.vector_add import vector_add_kernel


@shaped(derived={"speedup": lambda a: a.speedup, "lines": lambda a: a.lines()})
@dataclass(frozen=True)
class ArticleRun(Shaped):
    """The article's four printed lines, measured its way (mean of 3 wall-clock runs)."""

    n: int
    threads_per_block: int
    results_match: bool  # np.allclose, as the article checks
    cpu_time_s: float  # mean of 3 Python-loop runs, or the estimate if skipped
    cpu_estimated: bool
    gpu_time_s: float  # mean of 3 runs of the article's gpu_add (a, b AND c copied in)
    backend: str

    @property
    def speedup(self) -> float:
        return self.cpu_time_s / self.gpu_time_s

    def lines(self) -> list[str]:
        """The article's output, same wording and format."""
        cpu_note = " (estimated: the loop was too slow to run)" if self.cpu_estimated else ""
        return [
            f"Results match: {self.results_match}",
            f"CPU implementation: {self.cpu_time_s:.6f} seconds{cpu_note}",
            f"GPU implementation: {self.gpu_time_s:.6f} seconds",
            f"GPU speedup: {self.speedup:.2f}x",
        ]


ARTICLE_RUNS = 3  # the article's timeit(number=3) / 3


def run_article_method(
    n: int,
    threads_per_block: int = 256,
    *,
    python_budget_s: float = cpu.PYTHON_LOOP_BUDGET_S,
    seed: int = 0,
    max_n: int | None = None,
) -> ArticleRun:
    """Reproduce the article's comparison exactly as written (not the careful way); checks its inputs first."""
    n = check_n(n, max_n)
    check_threads(threads_per_block, device_info().max_threads_per_block)
    return measure_article_method(n, threads_per_block, python_budget_s=python_budget_s, seed=seed)


def measure_article_method(
    n: int, threads_per_block: int, *, python_budget_s: float = cpu.PYTHON_LOOP_BUDGET_S, seed: int = 0
) -> ArticleRun:
    """The article's method on values already parsed (``run_article_method``, or vector add's declared run)."""
    a, b = vector_inputs(n, seed)
    blocks = blocks_for(n, threads_per_block)

    def time_gpu() -> np.ndarray:  # the article's gpu_add + time_gpu
        c = np.zeros_like(a)
        d_a = cuda.to_device(a)
        d_b = cuda.to_device(b)
        d_c = cuda.to_device(c)
        vector_add_kernel[blocks, threads_per_block](d_a, d_b, d_c)
        d_c.copy_to_host(c)
        return c

    def time_cpu_loop() -> np.ndarray:
        c = np.zeros_like(a)
        cpu.python_loop(a, b, c)
        return c

    c_gpu = time_gpu()  # first call compiles, as in the article (untimed)
    estimate = cpu.estimate_python_loop_s(n)
    cpu_estimated = estimate * ARTICLE_RUNS > python_budget_s
    if cpu_estimated:
        c_cpu = a + b  # the loop's result is exactly NumPy's
        cpu_time = estimate
    else:
        c_cpu = time_cpu_loop()
        start = time.perf_counter()
        for _ in range(ARTICLE_RUNS):
            time_cpu_loop()
        cpu_time = (time.perf_counter() - start) / ARTICLE_RUNS
    start = time.perf_counter()
    for _ in range(ARTICLE_RUNS):
        time_gpu()
    gpu_time = (time.perf_counter() - start) / ARTICLE_RUNS
    return ArticleRun(
        n=n,
        threads_per_block=threads_per_block,
        results_match=bool(np.allclose(c_cpu, c_gpu)),
        cpu_time_s=cpu_time,
        cpu_estimated=cpu_estimated,
        gpu_time_s=gpu_time,
        backend=BACKEND.kind,
    )
