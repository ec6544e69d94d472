"""Measure the catalog's simulator rates for gpu.catalog.estimate.py's ``SIM_RATES`` and ``VECTOR_SIM_RATES``.

    PYTHONPATH=. .venv/bin/python scripts/catalog_rates.py                          # VECTOR_SIM_RATES
    KERNEL_LAB_SIM_TIER=thread PYTHONPATH=. .venv/bin/python scripts/catalog_rates.py  # SIM_RATES

Runs every catalog kernel at its defaults in the simulator, four times (the first run rewrites
and compiles what the process has not run; the quickest of the other three counts), and prints
each step's and the Python loop's CPU seconds per sample per cost unit, in Python-loop elements:
both sides are this thread's CPU time (``time.thread_time``), so the rates do not depend on what
else the machine runs.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpu.catalog.base import Progress
from gpu.catalog.declare import KERNELS, kernel_module
from gpu.catalog.estimate import PROBE_N
from gpu.catalog.registry import get
from gpu.core import cpu


def python_cpu_s() -> float:
    """CPU seconds of this thread for the Python-loop probe (other processes' load does not count)."""
    start = time.thread_time()
    cpu.estimate_python_loop_s(PROBE_N)
    return time.thread_time() - start


def measure(key: str) -> dict[str, float]:
    """CPU seconds of this thread (the simulator's: other processes' load does not count) spent in each part
    (by its plan id) of one default run of ``key``."""
    experiment = get(key)
    params = experiment.parse({}, True)
    marks: list[tuple[str, float]] = []
    experiment.execute(params, Progress(started=lambda step_id: marks.append((step_id, time.thread_time()))))
    marks.append(("end", time.thread_time()))
    return {marks[i][0]: marks[i + 1][1] - marks[i][1] for i in range(len(marks) - 1)}


def main() -> None:
    print("SIM_RATES: dict[tuple[str, str], float] = {")
    for key in KERNELS:
        experiment = get(key)
        params = experiment.parse({}, True)
        spec = kernel_module(key).SPEC
        measure(key)  # warm: rewrites, compiles, caches
        python_s = min(python_cpu_s() for _ in range(3)) / PROBE_N
        runs_parts = [measure(key) for _ in range(3)]  # the quickest of three: the least disturbed by other work
        parts = {part: min(p[part] for p in runs_parts) for part in runs_parts[0]}
        unit = spec.cost(params) * python_s
        runs = params["repeats"]
        for part, seconds in parts.items():
            if part.startswith("step:"):
                print(f"    ({key!r}, {part[5:]!r}): {seconds / runs / unit:.3g},")
            elif part == "cpu:python":  # the probe run, then the timed runs
                print(f"    ({key!r}, 'cpu:python'): {seconds / (runs + 1) / unit:.3g},")
    print("}")


if __name__ == "__main__":
    main()
