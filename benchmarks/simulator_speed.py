"""numba-cuda's simulator and both tiers of Kernel Lab's, side by side in one run: simulated threads per second.

    PYTHONPATH=. .venv/bin/python benchmarks/simulator_speed.py [--n 8192] [--matmul 64] [--runs 3] [--big 1048576]
        [--page]

Kernels: the lab's vector add (gpu/kernels/vector_add.py, no barrier), the shared-memory tree
reduction (gpu/experiments/reduction/kernels.py step 2: eight ``syncthreads`` per thread at 256
threads per block), the tiled shared-memory matmul (gpu/experiments/matmul/kernels.py step 2:
16 x 16 tiles, two ``syncthreads`` per tile) and the warp-shuffle reduction (step 3:
``shfl_down_sync``, which numba-cuda's simulator cannot run). Each runs in numba-cuda's simulator,
in the lab's per-thread tier (``set_tier("thread")``) and with the tier chosen per kernel
(``set_tier("auto")``: the vectorised tier where it proves the kernel; the table names the tier
that ran). A thread is one element (vector add, reductions) or
one element of C (matmul: ``--matmul`` x ``--matmul`` threads, each a dot product of that length).

Each launch is timed with ``time.perf_counter`` around the launch and its synchronisation, after
one warm-up launch; the figure is the median of ``--runs`` launches, the simulators alternating
kernel by kernel in one process. Outputs are checked against NumPy on every launch (inputs are
small integers, so every sum is exact in float32 in any order). ``--big`` adds the lab's rates at
N = 2^20 (matmul: 1024 x 1024), where numba-cuda's simulator would take minutes to hours. ``--page``
adds the Vector add page's click-to-chart time at the article's N = 10^7 (Streamlit's AppTest: the
page script run from the Run click until it has drawn its charts, the simulated kernel at N = 10^7),
with the page's default form and with only the kernel and NumPy. Writes
benchmarks/simulator_speed.md with what it printed.
"""

from __future__ import annotations

import argparse
import math
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
from gpu.experiments.matmul import kernels as matmul
from gpu.experiments.reduction import kernels as reduction
from gpu.kernels import vector_add
from gpu.sim import vector
from gpu.sim.reference import as_numba

THREADS = 256  # threads per block of the 1-D kernels (the lab's default)


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


def _matmul(kernel, threads):
    n = math.isqrt(threads)
    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, (n, n)).astype(np.float32)  # small integers: every dot product exact in float32
    b = rng.integers(0, 4, (n, n)).astype(np.float32)
    d_a, d_b, d_c = cuda.to_device(a), cuda.to_device(b), cuda.device_array((n, n), np.float32)
    blocks = (n + matmul.TILE - 1) // matmul.TILE

    def once():
        kernel[(blocks, blocks), (matmul.TILE, matmul.TILE)](d_a, d_b, d_c)
        cuda.synchronize()

    def check():
        assert np.array_equal(d_c.copy_to_host(), a @ b), "matmul disagrees with NumPy"

    return once, check


def _rate(make, kernel, n, runs) -> tuple[float, str]:
    """Threads per second (median of ``runs`` launches after a warm-up), and the tier that ran the last one."""
    once, check = make(kernel, n)
    once()
    check()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
        check()
    return n / statistics.median(times), vector.last_tier().name


def _lab(make, kernel, n, runs, mode: str) -> tuple[float, str]:
    vector.set_tier(mode)
    try:
        return _rate(make, kernel, n, runs)
    finally:
        vector.set_tier("auto")


# The page's forms timed by --page: its defaults (CPU: the Python loop, which has a 10 s budget of its own,
# NumPy, Numba, parallel Numba; and the article's method), and the kernel beside NumPy alone.
_PAGE_FORMS = [
    ("default form (every CPU implementation, the article's method)", {}),
    ("the kernel and NumPy only (no article's method)", {"cpu_impls": ["numpy"], "article": False}),
]


def _page_seconds(form: dict) -> tuple[float, int, int]:
    """Seconds from the Run click to the page's charts at N = 10^7, the kernel's N, and the charts drawn."""
    from streamlit.testing.v1 import AppTest

    page = Path(__file__).resolve().parents[1] / "pages" / "1_Vector_add.py"
    at = AppTest.from_file(str(page), default_timeout=600).run()
    at.text_input(key="n").input("1e7")
    if "cpu_impls" in form:
        at.multiselect(key="cpu_impls").set_value(form["cpu_impls"])
    if "article" in form:
        at.checkbox(key="article").set_value(form["article"])
    start = time.perf_counter()
    at.button[0].click().run()
    took = time.perf_counter() - start
    if at.exception or at.error:
        raise RuntimeError(f"the Vector add page failed: {at.exception or [e.value for e in at.error]}")
    charts = len(at.get("vega_lite_chart")) + len(at.get("arrow_vega_lite_chart"))
    run = at.session_state["vector_add.result"]
    return took, run.kernel_n, charts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192, help="elements of the 1-D kernels side by side")
    parser.add_argument("--matmul", type=int, default=64, help="matmul side by side: an M x M product")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--big", type=int, default=1 << 20, help="threads of the lab-only rates (a square for matmul)")
    parser.add_argument("--page", action="store_true", help="also time the Vector add page at N = 10^7")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("simulator_speed.md"))
    args = parser.parse_args(argv)
    if not BACKEND.lab_simulator:
        print(
            f"needs the lab's simulator (here: {BACKEND.label}); run without a GPU and without "
            "KERNEL_LAB_SIMULATOR=numba"
        )
        return 2
    lines = [
        f"# Simulator speed: numba-cuda's simulator and Kernel Lab's two tiers ({time.strftime('%Y-%m-%d')})",
        "",
        f"Command: `PYTHONPATH=. .venv/bin/python benchmarks/simulator_speed.py --n {args.n} --matmul {args.matmul} "
        f"--runs {args.runs} --big {args.big}{' --page' if args.page else ''}`",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.2f} at start. "
        f"{THREADS} threads per block (matmul: 16 x 16), median of {args.runs} launches after a warm-up; "
        "outputs checked against NumPy every launch. Rates are simulated threads per second.",
        "",
        "| kernel | threads | numba-cuda's simulator | lab, per-thread tier | lab, tier chosen (which) "
        "| chosen / numba-cuda | per-thread / numba-cuda |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    cases = [
        ("vector add (no barrier)", _vector_add, vector_add.vector_add_kernel, args.n),
        ("tree reduction (8 syncthreads/thread)", _reduction, reduction.reduce_tree_kernel, args.n),
        ("tiled shared-memory matmul", _matmul, matmul.matmul_shared_kernel, args.matmul**2),
    ]
    for label, make, kernel, n in cases:
        numba_rate, _ = _rate(make, as_numba(kernel), n, args.runs)
        thread_rate, _ = _lab(make, kernel, n, args.runs, "thread")
        chosen_rate, tier = _lab(make, kernel, n, args.runs, "auto")
        lines.append(
            f"| {label} | {n:,} | {numba_rate:,.0f} | {thread_rate:,.0f} | {chosen_rate:,.0f} ({tier}) "
            f"| {chosen_rate / numba_rate:,.0f}x | {thread_rate / numba_rate:,.0f}x |"
        )
        print(lines[-1], flush=True)
    shuffle_thread, _ = _lab(_reduction, reduction.reduce_shuffle_kernel, args.n, args.runs, "thread")
    shuffle, tier = _lab(_reduction, reduction.reduce_shuffle_kernel, args.n, args.runs, "auto")
    lines.append(
        f"| shuffle reduction (shfl_down_sync) | {args.n:,} | cannot run it | {shuffle_thread:,.0f} "
        f"| {shuffle:,.0f} ({tier}) | — | — |"
    )
    print(lines[-1], flush=True)
    big_side = math.isqrt(args.big)
    lines += [
        "",
        f"At {args.big:,} threads (matmul: {big_side} x {big_side}; the lab's simulator only, numba-cuda's would "
        "need minutes to hours):",
        "",
        "| kernel | tier chosen | its rate | per-thread tier |",
        "|---|---|---:|---:|",
    ]
    big_cases = cases + [("shuffle reduction", _reduction, reduction.reduce_shuffle_kernel, args.big)]
    for label, make, kernel, _ in big_cases:
        n = big_side**2 if make is _matmul else args.big
        rate, tier = _lab(make, kernel, n, args.runs, "auto")
        if make is _matmul:
            thread = "not run (a dot product of the whole side per thread: too slow to wait for)"
        elif tier == "thread":
            thread = "(the same)"
        else:
            thread = f"{_lab(make, kernel, n, args.runs, 'thread')[0]:,.0f}"
        lines.append(f"| {label} | {tier} | {rate:,.0f} | {thread} |")
        print(lines[-1], flush=True)
    if args.page:
        heading = "The Vector add page at N = 10,000,000, from the Run click to its charts (AppTest, one click each):"
        lines += ["", heading, ""]
        for label, form in _PAGE_FORMS:
            took, kernel_n, charts = _page_seconds(form)
            lines.append(f"- {label}: {took:.2f} s (simulated kernel at N = {kernel_n:,}; {charts} charts drawn)")
            print(lines[-1], flush=True)
        lines += ["", "AppTest waits for the whole script: click to the completed run. Click to the first chart, "
                  "in a browser: `benchmarks/vector_add_click.py` (vector_add_click.md)."]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
