"""Matrix transpose (N × N float32), declared for the catalog. Agreement is exact: a
transpose only moves values, so every element must hold the same bits as NumPy's ``a.T``."""

from __future__ import annotations

import numba
import numpy as np

from gpu.catalog.base import Param, PerBackend
from gpu.catalog.declare import Target, declare, parse_side, ratio
from gpu.catalog.steps import CpuImpl, KernelSpec, Library, Output, Step
from gpu.core.agreement import ExactReference
from gpu.core.backend import BACKEND
from gpu.experiments.transpose import kernels as k
from gpu.kernels.geometry import grid_2d

# The simulator's default size: about 16,000 threads, a few seconds in Kernel Lab's simulator for every step;
# numba-cuda's runs ~4,000 threads/s, so it keeps the old, smaller default.
SIM_SIDE = 128 if BACKEND.lab_simulator else 32


def make_inputs(p, seed: int) -> dict[str, np.ndarray]:
    """An N × N float32 matrix, uniform in [0, 1), reproducible from ``seed``."""
    return {"a": np.random.default_rng(seed).random((p["n"], p["n"]), dtype=np.float32)}


REFERENCE_BLOCK = 128  # rows and columns per block of the reference's copy: both blocks stay in the CPU's cache


def blocked_transpose(a: np.ndarray) -> np.ndarray:
    """``a.T`` as a new C-ordered array, copied block by block: the same values, bit for bit, as
    ``np.ascontiguousarray(a.T)``, which strides through memory a column at a time (6.1 s for 16,384²
    on the H200's host; block by block took a seventh of NumPy's time on 8,192² here)."""
    out = np.empty((a.shape[1], a.shape[0]), dtype=a.dtype)
    for i in range(0, a.shape[0], REFERENCE_BLOCK):
        for j in range(0, a.shape[1], REFERENCE_BLOCK):
            out[j:j + REFERENCE_BLOCK, i:i + REFERENCE_BLOCK] = a[i:i + REFERENCE_BLOCK, j:j + REFERENCE_BLOCK].T
    return out


def python_transpose(a, out):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[j, i] = a[i, j]


def numpy_transpose(a, out):
    np.copyto(out, a.T)


@numba.njit(cache=True)
def numba_transpose(a, out):  # pragma: no cover - compiled
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[j, i] = a[i, j]


@numba.njit(parallel=True, cache=True)
def numba_parallel_transpose(a, out):  # pragma: no cover - compiled
    for i in numba.prange(a.shape[0]):
        for j in range(a.shape[1]):
            out[j, i] = a[i, j]


def device_copy(stream, ins, out):
    """The yardstick: a device-to-device copy of the same bytes (no transposition)."""
    out.copy_to_device(ins[0], stream=stream)


naive_grid = lambda p: grid_2d(p["n"], p["n"], k.BLOCK_ROWS, k.TILE)  # noqa: E731  one element per thread
tiled_grid = lambda p: grid_2d(p["n"], p["n"], k.TILE, k.TILE)  # noqa: E731  one tile per block
block = lambda p: (k.TILE, k.BLOCK_ROWS)  # noqa: E731
big_tile_grid = lambda p: grid_2d(p["n"], p["n"], k.BIG_TILE, k.BIG_TILE)  # noqa: E731  one 64 × 64 tile per block
big_tile_block = lambda p: (k.BIG_TILE, k.BIG_BLOCK_ROWS)  # noqa: E731

SPEC = KernelSpec(
    key="transpose",
    title="Matrix transpose",
    make_inputs=make_inputs,
    output=Output(lambda p: (p["n"], p["n"]), np.float32),
    steps=(
        Step(
            "naive",
            "1 · naive",
            k.transpose_naive_kernel,
            naive_grid,
            block,
            "one element per thread: coalesced reads, scattered writes",
        ),
        Step(
            "tiled",
            "2 · shared-memory tile",
            k.transpose_tiled_kernel,
            tiled_grid,
            block,
            "a 32 × 32 tile through shared memory: reads and writes both coalesced, four loads in flight per thread",
        ),
        Step(
            "padded",
            "3 · padded tile",
            k.transpose_padded_kernel,
            tiled_grid,
            block,
            "one padding column: the tile's column reads hit 32 banks, not one",
        ),
        Step(
            "big-tile",
            "4 · 64 × 64 tile, 16 per thread",
            k.transpose_big_tile_kernel,
            big_tile_grid,
            big_tile_block,
            "a padded 64 × 64 tile: each thread keeps 16 loads in flight, four times step 3's bytes per block",
        ),
    ),
    libraries=(
        Library("d2d-copy", "device copy of the same bytes", None, device_copy, same_work=False),
        Library("cupy", "CuPy a.T copy", "cupy", lambda cp, ins, out: cp.copyto(out, ins[0].T)),
        Library("torch", "PyTorch a.t() copy", "torch", lambda torch, ins, out: out.copy_(ins[0].t())),
    ),
    cpu=(
        CpuImpl("python", "Python loop", python_transpose, budgeted=True),
        CpuImpl("numpy", "NumPy a.T copy", numpy_transpose),
        CpuImpl("numba", "Numba @njit", numba_transpose, jit=True),
        CpuImpl("numba-parallel", "Numba parallel", numba_parallel_transpose, jit=True),
    ),
    agreement_why="a transpose only moves values, it computes nothing",
    reference=lambda inputs, p: ExactReference(blocked_transpose(inputs["a"])),
    bytes_moved=lambda p: 8 * p["n"] ** 2,  # read and write each float32 once
    flops=lambda p: 0,
    size_label=lambda p: f"{p['n']:,} × {p['n']:,} float32",
    cost=lambda p: p["n"] ** 2,
    probe=lambda p: {**p, "n": min(p["n"], 128)},
)


def targets(runs) -> list[Target]:
    """≥ 75% of the memory peak (8 bytes per element), and ≥ 3x the naive step's speed."""
    run = runs[-1]
    best = run.best_step
    return [
        Target("transpose: best step, share of the memory peak", run.fraction_of_peak(best) if best else None, 0.75),
        Target(
            "transpose: naive step's time ÷ best step's", ratio(run, "naive", best.key) if best else None, 3.0, unit="x"
        ),
    ]


def check_problems(quick: bool) -> list[dict]:
    if quick:
        return [{"n": 32, "repeats": 1, "cpu": ("numpy",)}]
    # One CPU row, the fastest: within the plan's budget a slower one gets too few samples to mean much
    # (NumPy's a.T copy of 16,384² took 6.1 s a run on the H200's host); every CPU row is on the page.
    return [{"n": 16384, "repeats": 10, "cpu": ("numba-parallel",)}]


EXPERIMENT = declare(
    SPEC,
    "transpose an N × N float32 matrix: naive, through a shared-memory tile, with a padded tile, and with a "
    "64 × 64 tile and 16 elements per thread",
    Param(
        "n", "N (the matrix is N × N)", parse_side, PerBackend(8192, SIM_SIDE), "A whole number such as 4096 or 2^12."
    ),
    repeats=PerBackend(5, 3),
    elements=lambda p: p["n"] ** 2,
    order=90,
)
