"""Kernel Lab's simulator against numba-cuda's, side by side in one run: simulated threads per second.

    PYTHONPATH=. .venv/bin/python benchmarks/simulator_speed.py [--n 8192] [--runs 3] [--big 1048576]

Kernels: the lab's own vector add (gpu/kernels/vector_add.py, no barrier: the plain-loop
path), shared-memory tree reduction (gpu/experiments/reduction/kernels.py step 2, eight
``syncthreads`` per thread at 256 threads per block: the generator path) and warp-shuffle
reduction (step 3: ``shfl_down_sync``, which numba-cuda's simulator cannot run). Each
launch is timed with ``time.perf_counter`` around the launch and its synchronisation,
after one warm-up launch (the lab's simulator rewrites a kernel once, numba-cuda's
creates its threads every launch); the figure is the median of ``--runs`` launches, both
simulators at the same N, alternating, in one process. Outputs are checked against NumPy
on every launch. ``--big`` adds the lab's rate at a size numba-cuda's would take minutes
for. Writes benchmarks/simulator_speed.md with what it printed.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from gpu.core.backend import BACKEND, cuda
from gpu.experiments.reduction import kernels as reduction
from gpu.kernels import vector_add
from gpu.sim.reference import as_numba

THREADS = 256


def _vector_add(kernel, n):
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    d_a, d_b, d_c = cuda.to_device(a), cuda.to_device(b), cuda.device_array(n, np.float32)

    def once():
        kernel[(n + THREADS - 1) // THREADS, THREADS](d_a, d_b, d_c)
        cuda.synchronize()

    def check():
        assert np.array_equal(d_c.copy_to_host(), a + b), "vector add disagrees with NumPy"

    return once, check


def _reduction(kernel, n):
    x = np.ones(n, np.float32)  # exact in float32 in any order up to 2^24
    d_x, d_total = cuda.to_device(x), cuda.device_array(1, np.float32)

    def once():
        d_total.copy_to_device(np.zeros(1, np.float32))
        kernel[(n + THREADS - 1) // THREADS, THREADS](d_x, d_total)
        cuda.synchronize()

    def check():
        assert d_total.copy_to_host()[0] == n, "reduction disagrees with NumPy"

    return once, check


def _rate(make, kernel, n, runs) -> float:
    once, check = make(kernel, n)
    once()
    check()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
        check()
    return n / statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--big", type=int, default=1 << 20)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("simulator_speed.md"))
    args = parser.parse_args(argv)
    if not BACKEND.lab_simulator:
        print(
            f"needs the lab's simulator (here: {BACKEND.label}); run without a GPU and without "
            "KERNEL_LAB_SIMULATOR=numba"
        )
        return 2
    lines = [
        f"# Simulator speed: Kernel Lab's against numba-cuda's ({time.strftime('%Y-%m-%d')})",
        "",
        f"Command: `PYTHONPATH=. .venv/bin/python benchmarks/simulator_speed.py --n {args.n} --runs {args.runs} "
        f"--big {args.big}`",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.2f} at start. "
        f"N = {args.n:,}, {THREADS} threads per block, median of {args.runs} launches after a warm-up; "
        "outputs checked against NumPy every launch.",
        "",
        "| kernel | numba-cuda's simulator (threads/s) | Kernel Lab's (threads/s) | ratio |",
        "|---|---:|---:|---:|",
    ]
    cases = [
        ("vector add (no barrier)", _vector_add, vector_add.vector_add_kernel),
        ("tree reduction (8 syncthreads/thread)", _reduction, reduction.reduce_tree_kernel),
    ]
    for label, make, kernel in cases:
        numba_rate = _rate(make, as_numba(kernel), args.n, args.runs)
        lab_rate = _rate(make, kernel, args.n, args.runs)
        lines.append(f"| {label} | {numba_rate:,.0f} | {lab_rate:,.0f} | {lab_rate / numba_rate:,.0f}x |")
        print(lines[-1], flush=True)
    shuffle = _rate(_reduction, reduction.reduce_shuffle_kernel, args.n, args.runs)
    lines.append(f"| shuffle reduction (shfl_down_sync) | cannot run it | {shuffle:,.0f} | — |")
    lines += ["", f"At N = {args.big:,} (the lab's simulator only; numba-cuda's would need minutes):", ""]
    for label, make, kernel in cases + [("shuffle reduction", _reduction, reduction.reduce_shuffle_kernel)]:
        lines.append(f"- {label}: {_rate(make, kernel, args.big, args.runs):,.0f} threads/s")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
