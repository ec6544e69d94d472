"""A 256-bin histogram of N uint8 values, declared for the catalog. Agreement is exact:
counts are integers. The data's distribution is a parameter because contention between
atomics on the same bin decides which step wins."""

from __future__ import annotations

import numba
import numpy as np

from gpu.catalog.base import Param, PerBackend
from gpu.catalog.declare import Target, declare, parse_count, ratio
from gpu.catalog.steps import CpuImpl, KernelSpec, Library, Output, Step
from gpu.core.agreement import ExactReference
from gpu.core.backend import BACKEND
from gpu.core.device import device_info
from gpu.core.limits import InputError
from gpu.experiments.histogram import kernels as k
from gpu.experiments.reduction.experiment import parse_threads
from gpu.kernels.geometry import blocks_for, kernel_resident_blocks

# The simulator's default size: about 16,000 threads, a few seconds in Kernel Lab's simulator for every step;
# numba-cuda's runs ~4,000 threads/s, so it keeps the old, smaller default.
SIM_N = 2**14 if BACKEND.lab_simulator else 1024

BINS = k.BINS
SKEW_SCALE = 4.0  # skewed data: exponential with mean 4, so about 90% of values fall in the first 10 bins
SINGLE_VALUE = 42  # every value the same: the worst case for atomics
DISTRIBUTIONS = {
    "uniform": "uniform over 0–255 (little contention)",
    "skewed": "skewed: exponential, most values in a few bins",
    "single": f"a single value ({SINGLE_VALUE}): every count hits one bin",
}
PARALLEL_CHUNKS = 64  # numba-parallel: private histograms per chunk, merged at the end


def parse_distribution(value) -> str:
    text = str(value).strip().lower()
    if text not in DISTRIBUTIONS:
        raise InputError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {value!r}")
    return text


def make_inputs(p, seed: int) -> dict[str, np.ndarray]:
    """N uint8 values drawn from ``p["distribution"]``, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    n, kind = p["n"], p["distribution"]
    if kind == "uniform":
        data = rng.integers(0, BINS, n, dtype=np.uint8)
    elif kind == "skewed":
        data = np.minimum(rng.exponential(SKEW_SCALE, n), BINS - 1).astype(np.uint8)
    else:
        data = np.full(n, SINGLE_VALUE, dtype=np.uint8)
    return {"data": data}


def python_histogram(data, hist):
    for value in data:
        hist[value] += 1


def numpy_histogram(data, hist):
    hist[:] = np.bincount(data, minlength=BINS)


@numba.njit(cache=True)
def numba_histogram(data, hist):  # pragma: no cover - compiled
    hist[:] = 0
    for i in range(data.size):
        hist[data[i]] += 1


@numba.njit(parallel=True, cache=True)
def numba_parallel_histogram(data, hist):  # pragma: no cover - compiled
    partial = np.zeros((PARALLEL_CHUNKS, BINS), dtype=np.uint32)
    chunk = (data.size + PARALLEL_CHUNKS - 1) // PARALLEL_CHUNKS
    for c in numba.prange(PARALLEL_CHUNKS):
        for i in range(c * chunk, min((c + 1) * chunk, data.size)):
            partial[c, data[i]] += 1
    for b in range(BINS):
        total = 0
        for c in range(PARALLEL_CHUNKS):
            total += partial[c, b]
        hist[b] = total


HOST_SYNC_NOTE = (
    "includes the launch and a host wait: bincount reads the input's maximum on the host, "
    "so it cannot be timed behind a stream hold"
)


def cupy_histogram(cp, ins, out):
    out[...] = cp.bincount(ins[0], minlength=BINS).astype(cp.uint32)


def torch_histogram(torch, ins, out):
    out.copy_(torch.bincount(ins[0], minlength=BINS))


one_per_thread = lambda p: blocks_for(p["n"], p["threads_per_block"])  # noqa: E731
one_wave = lambda p: kernel_resident_blocks(k.histogram_shared_kernel, p["n"], p["threads_per_block"], device_info())  # noqa: E731
threads = lambda p: p["threads_per_block"]  # noqa: E731

SPEC = KernelSpec(
    key="histogram",
    title="Histogram (256 bins)",
    make_inputs=make_inputs,
    output=Output(lambda p: (BINS,), np.uint32, zeroed=True),
    steps=(
        Step(
            "global",
            "1 · global atomics",
            k.histogram_global_kernel,
            one_per_thread,
            threads,
            "one thread per value, one atomic in device memory per value",
        ),
        Step(
            "shared",
            "2 · per-block shared histograms",
            k.histogram_shared_kernel,
            one_wave,
            threads,
            "count in shared memory with a grid-stride loop, merge each block's bins once",
        ),
    ),
    # bincount waits on the GPU from the host (CuPy checks (x < 0).any() and reads
    # int(max(x)); PyTorch reads the maximum too), so no stream hold can hide its launch:
    # behind one every sample expired. Timed without the hold, and labelled so.
    libraries=(
        Library("cupy", "CuPy bincount (with launch)", "cupy", cupy_histogram, hold=False, note=HOST_SYNC_NOTE),
        Library("torch", "PyTorch bincount (with launch)", "torch", torch_histogram, hold=False, note=HOST_SYNC_NOTE),
    ),
    cpu=(
        CpuImpl("python", "Python loop", python_histogram, budgeted=True),
        CpuImpl("numpy", "NumPy bincount", numpy_histogram),
        CpuImpl("numba", "Numba @njit", numba_histogram, jit=True),
        CpuImpl("numba-parallel", "Numba parallel", numba_parallel_histogram, jit=True),
    ),
    agreement_why="counts are whole numbers, so every order of atomic increments gives the same bins",
    reference=lambda inputs, p: ExactReference(np.bincount(inputs["data"], minlength=BINS).astype(np.uint32)),
    bytes_moved=lambda p: p["n"] + 4 * BINS,  # read each uint8 once, write 256 counts
    flops=lambda p: 0,
    size_label=lambda p: f"N = {p['n']:,} uint8, {p['distribution']}",
    cost=lambda p: p["n"],
    probe=lambda p: {**p, "n": min(p["n"], 20_000)},
)


def targets(runs) -> list[Target]:
    """On skewed data the shared-memory step is ≥ 3x as fast as global atomics."""
    skewed = [r for r in runs if r.params.get("distribution") == "skewed"]
    measured = ratio(skewed[0], "global", "shared") if skewed else None
    return [Target("histogram, skewed data: global atomics' time ÷ shared step's", measured, 3.0, unit="x",
                   source=HISTOGRAM_SOURCE)]


# NVIDIA's "GPU Pro Tip: Fast Histograms Using Shared Atomics on Maxwell" (Sakharnykh, 2015,
# https://developer.nvidia.com/blog/gpu-pro-tip-fast-histograms-using-shared-atomics-maxwell/) describes this
# per-block scheme; no figure from it was found in the text available here, so 3x is the lab's own target.
HISTOGRAM_SOURCE = ("the lab's own: NVIDIA's shared-atomics histogram post describes the same per-block scheme, "
                    "but no published figure was found to set it from")


def check_problems(quick: bool) -> list[dict]:
    if quick:
        return [{"n": 1024, "threads_per_block": 128, "distribution": "skewed", "repeats": 1, "cpu": ("numpy",)}]
    return [
        # one CPU row, the fastest, so three distributions at 2^28 keep the section's budget in `make gpu-verify`
        {"n": 2**28, "threads_per_block": 256, "distribution": d, "repeats": 10, "cpu": ("numba-parallel",)}
        for d in DISTRIBUTIONS
    ]


EXPERIMENT = declare(
    SPEC,
    "count N uint8 values into 256 bins: global atomics, then per-block shared-memory histograms",
    Param("n", "N (uint8 values)", parse_count, PerBackend(2**26, SIM_N), "A whole number such as 1e6 or 2^20."),
    extra=(
        Param(
            "threads_per_block",
            "Threads per block",
            parse_threads,
            PerBackend(256, 128),
            "A power of two from 32 to 1024.",
            widget="int",
        ),
        Param(
            "distribution",
            "Data distribution",
            parse_distribution,
            "skewed",
            "uniform, skewed or single: how often threads hit the same bin.",
            widget="select",
            options=tuple(DISTRIBUTIONS),
            option_label=lambda d: DISTRIBUTIONS[d],
        ),
    ),
    order=100,
)
