"""How long a catalog run takes, step by step: the plan its page states before the run.

A catalog run is a sequence the engine begins by id (``run_kernel`` calls
``progress.begin``): ``prepare``, then ``step:<key>`` for each GPU step, ``library:<key>``
for each library, ``cpu:<key>`` for each CPU implementation. ``catalog_plan(spec)`` gives
the declaration's ``plan``: those ids in that order with seconds each, so the form states
the total before the run and the progress bar names each step with the time left.

In a simulator a step's time is its simulated threads' Python work. It scales with the
kernel's ``cost`` (elements, or multiply-adds) and with how fast this machine runs Python
right now, so each rate below is in *Python-loop elements per cost unit*: one sample of the
step costs ``rate × cost(params)`` times the time the article's Python loop takes per
element, probed when the estimate is made (``cpu.estimate_python_loop_s``, about 2-4 ms).
The rates were measured on the lab's simulator at each kernel's defaults with
``PYTHONPATH=. .venv/bin/python scripts/catalog_rates.py``; a step not in the table (a new
one) is charged the slowest rate of its kernel. On a GPU the steps take milliseconds and
the estimate is dominated by compiles and the CPU implementations.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from gpu.catalog.steps import KernelSpec
from gpu.core import cpu
from gpu.core.backend import BACKEND

# (kernel, step or CPU implementation) -> Python-loop elements per cost unit for one sample,
# measured by scripts/catalog_rates.py (the lab simulator's per-thread tier, each kernel at its defaults; the
# geometric mean of two runs, which differed by up to 1.8x on this shared two-core machine).
SIM_RATES: dict[tuple[str, str], float] = {
    ("reduction", "atomic"): 9.98,
    ("reduction", "tree"): 16.0,
    ("reduction", "shuffle"): 63.7,
    ("reduction", "grid-stride"): 8.57,
    ("reduction", "two-pass"): 8.8,
    ("reduction", "cpu:python"): 0.436,
    ("transpose", "naive"): 5.44,
    ("transpose", "tiled"): 9.89,
    ("transpose", "padded"): 9.71,
    ("transpose", "cpu:python"): 0.929,
    ("histogram", "global"): 13.4,
    ("histogram", "shared"): 13.4,
    ("histogram", "cpu:python"): 1.23,
    ("stencil", "naive"): 7.31,
    ("stencil", "tiled"): 15.2,
    ("stencil", "rows"): 11.1,
    ("stencil", "cpu:python"): 3.29,
    ("matmul", "naive"): 1.63,
    ("matmul", "shared"): 1.98,
    ("matmul", "register"): 32.7,
    ("matmul", "cpu:python"): 1.13,
}
# The same, for the lab simulator's vectorised tier (gpu/sim/vector.py), where every step of the catalog runs
# unless KERNEL_LAB_SIM_TIER=thread or a shuffled order sends it to the per-thread tier (the table above).
VECTOR_SIM_RATES: dict[tuple[str, str], float] = {
    ("reduction", "atomic"): 0.125,
    ("reduction", "tree"): 0.913,
    ("reduction", "shuffle"): 1.05,
    ("reduction", "grid-stride"): 0.499,
    ("reduction", "two-pass"): 0.764,
    ("reduction", "cpu:python"): 0.484,
    ("transpose", "naive"): 0.352,
    ("transpose", "tiled"): 0.967,
    ("transpose", "padded"): 1.02,
    ("transpose", "cpu:python"): 0.858,
    ("histogram", "global"): 0.157,
    ("histogram", "shared"): 0.479,
    ("histogram", "cpu:python"): 1.17,
    ("stencil", "naive"): 1.09,
    ("stencil", "tiled"): 2.25,
    ("stencil", "rows"): 1.85,
    ("stencil", "cpu:python"): 4.11,
    ("matmul", "naive"): 0.241,
    ("matmul", "shared"): 0.311,
    ("matmul", "register"): 16.0,
    ("matmul", "cpu:python"): 1.59,
}
NUMBA_SIMULATOR_SLOWER = 300.0  # numba-cuda's simulator against the lab's (1.5e-4 s against 5e-7 s per thread)
# A compiled CPU pass (NumPy, Numba) moves the algorithm's bytes at about one core's streaming rate and does its
# FLOPs at NumPy's BLAS rate, or a plain compiled loop's (Numba's naive matmul: about 1 GFLOP/s on one core)
CPU_BYTES_PER_S = 5e9
CPU_BLAS_FLOPS_PER_S = 2e10
CPU_LOOP_FLOPS_PER_S = 1e9
# A CPU implementation the process has not run yet: loading it from Numba's cache took 0.05-0.25 s here,
# compiling it 1-5 s (on two busy cores)
JIT_CACHE_LOAD_S = 0.2
JIT_COMPILE_S = 2.0
GPU_STEP_FIRST_S = 0.3  # a GPU step's first run compiles its kernel (or loads it from Numba's cache)
GPU_BYTES_PER_S = 1e11  # a pessimistic device rate for the algorithm's bytes: samples take milliseconds
PROBE_N = 20_000  # the Python-loop probe's size (a few milliseconds)

Params = Mapping[str, Any]


def _rates() -> dict[tuple[str, str], float]:
    """The rates of the tier the lab's simulator runs catalog kernels in now."""
    if BACKEND.lab_simulator:
        from gpu.sim import vector

        if vector.vectorising():
            return VECTOR_SIM_RATES
    return SIM_RATES


def _rate(spec: KernelSpec, key: str) -> float:
    """A step's rate (or the Python loop's, ``cpu:python``); an unmeasured step gets its kernel's slowest."""
    rates = _rates()
    known = [v for (kernel, step), v in rates.items() if kernel == spec.key and not step.startswith("cpu:")]
    return rates.get((spec.key, key), max(known, default=50.0))


def first_call_s(fn: Any) -> float:
    """Seconds the first call of a Numba dispatcher costs now: 0 once it ran in this process, else loading it
    from Numba's on-disk cache or, with no cache file yet (a fresh clone), compiling it."""
    if getattr(fn, "signatures", ()):
        return 0.0
    try:  # numba's cache index for this function (private: any change in Numba reads as "not cached")
        cached = os.path.exists(fn._cache._cache_file._index_path)
    except AttributeError:
        cached = False
    return JIT_CACHE_LOAD_S if cached else JIT_COMPILE_S


def compiled_cpu_s(spec: KernelSpec, params: Params, key: str) -> float:
    """Seconds one run of a compiled CPU implementation takes: its bytes and FLOPs at a core's rates (NumPy's
    FLOPs at BLAS's)."""
    flops_per_s = CPU_BLAS_FLOPS_PER_S if key == "numpy" else CPU_LOOP_FLOPS_PER_S
    return 1e-4 + spec.bytes_moved(params) / CPU_BYTES_PER_S + spec.flops(params) / flops_per_s


Plan = Callable[[Params, bool], list[tuple[str, float]]]


def catalog_plan(spec: KernelSpec, samples: Callable[[Params], int]) -> Plan:
    """The ``plan`` of ``spec``'s declaration: ``[(step id, seconds)]`` in the order ``run_kernel`` begins them.

    ``samples(params)`` is the runs of each step, warm-up included.
    """

    def plan(params: Params, simulated: bool) -> list[tuple[str, float]]:
        cost = float(spec.cost(params))
        # this machine's Python now: the quickest of three short probes (one can land on another process's turn)
        python_s = min(cpu.estimate_python_loop_s(PROBE_N) for _ in range(3)) / PROBE_N
        runs = samples(params)
        slower = 1.0 if BACKEND.lab_simulator else NUMBA_SIMULATOR_SLOWER
        # random inputs and NumPy's reference: a few passes over the bytes, and the FLOPs at BLAS's rate
        prepare_s = 0.05 + 3 * spec.bytes_moved(params) / CPU_BYTES_PER_S + spec.flops(params) / CPU_BLAS_FLOPS_PER_S
        out: list[tuple[str, float]] = [("prepare", prepare_s)]
        for step in spec.steps:
            if simulated:
                seconds = _rate(spec, step.key) * cost * python_s * runs * slower
            else:  # end to end, then the kernel alone behind the hold
                seconds = GPU_STEP_FIRST_S + 2 * runs * (spec.bytes_moved(params) / GPU_BYTES_PER_S + 1e-3)
            out.append((f"step:{step.key}", seconds))
        for lib in spec.libraries:
            # in a simulator only Numba's own (a copy) runs, and quickly; on a GPU a library's first call loads it
            out.append((f"library:{lib.key}", (0.0 if lib.module else 0.01) if simulated else 0.3))
        budget = float(params.get("cpu_budget_s", 10.0))
        for key in params.get("cpu", ()):
            impl = spec.cpu_impl(key)
            one = _rate(spec, "cpu:python") * cost * python_s if key == "python" else compiled_cpu_s(spec, params, key)
            if impl.budgeted:  # a probe run, then as many runs as fit the budget (none when one does not)
                probe_s = one * float(spec.cost(spec.probe(params))) / max(cost, 1.0)
                seconds = probe_s + (min(runs, int(budget // max(one, 1e-9))) * one if one <= budget else 0.0)
            else:  # the warm-up run, then the timed runs
                seconds = one * (runs + 1)
            if impl.jit:
                seconds += first_call_s(impl.fn)
            out.append((f"cpu:{key}", seconds))
        return out

    return plan
