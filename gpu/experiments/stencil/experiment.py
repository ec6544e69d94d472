"""A 5-point blur on an N × N float32 grid, declared for the catalog. Agreement is exact:
every implementation adds centre, up, down, left, right in that order and multiplies by
0.2 last (nothing a compiler may fuse), so the GPU must match NumPy's slicing bit for bit."""

from __future__ import annotations

import numba
import numpy as np

from gpu.catalog.base import Param, PerBackend
from gpu.catalog.declare import Target, declare, parse_side
from gpu.catalog.steps import CpuImpl, KernelSpec, Library, Output, Step
from gpu.core.agreement import ExactReference
from gpu.core.backend import BACKEND
from gpu.experiments.stencil import kernels as k
from gpu.kernels.geometry import grid_2d

# The simulator's default size: about 16,000 threads, a few seconds in Kernel Lab's simulator for every step;
# numba-cuda's runs ~4,000 threads/s, so it keeps the old, smaller default.
SIM_SIDE = 128 if BACKEND.lab_simulator else 32

FIFTH = k.FIFTH


def make_inputs(p, seed: int) -> dict[str, np.ndarray]:
    """An N × N float32 grid, uniform in [0, 1), reproducible from ``seed``."""
    return {"u": np.random.default_rng(seed).random((p["n"], p["n"]), dtype=np.float32)}


def blur_slices(xp_u, out):
    """The blur with array slicing; works for NumPy, CuPy and PyTorch arrays alike."""
    out[...] = xp_u
    out[1:-1, 1:-1] = (
        (((xp_u[1:-1, 1:-1] + xp_u[:-2, 1:-1]) + xp_u[2:, 1:-1]) + xp_u[1:-1, :-2]) + xp_u[1:-1, 2:]
    ) * FIFTH


def python_blur(u, out):
    rows, cols = u.shape
    for i in range(rows):
        for j in range(cols):
            if i == 0 or j == 0 or i == rows - 1 or j == cols - 1:
                out[i, j] = u[i, j]
            else:
                out[i, j] = ((((u[i, j] + u[i - 1, j]) + u[i + 1, j]) + u[i, j - 1]) + u[i, j + 1]) * FIFTH


@numba.njit(cache=True)
def numba_blur(u, out):  # pragma: no cover - compiled
    rows, cols = u.shape
    for i in range(rows):
        for j in range(cols):
            if i == 0 or j == 0 or i == rows - 1 or j == cols - 1:
                out[i, j] = u[i, j]
            else:
                out[i, j] = ((((u[i, j] + u[i - 1, j]) + u[i + 1, j]) + u[i, j - 1]) + u[i, j + 1]) * FIFTH


@numba.njit(parallel=True, cache=True)
def numba_parallel_blur(u, out):  # pragma: no cover - compiled
    rows, cols = u.shape
    for i in numba.prange(rows):
        for j in range(cols):
            if i == 0 or j == 0 or i == rows - 1 or j == cols - 1:
                out[i, j] = u[i, j]
            else:
                out[i, j] = ((((u[i, j] + u[i - 1, j]) + u[i + 1, j]) + u[i, j - 1]) + u[i, j + 1]) * FIFTH


# Why the library reference is no fair bandwidth yardstick: ``blur_slices`` copies the
# grid (1 read + 1 write), then 4 additions and 1 multiply each write a temporary and
# read two operands or one, then the assignment reads the last temporary and writes out:
# about 18 passes over the grid against the 2 (read once, write once) that GB/s counts.
SLICING_TRAFFIC_NOTE = (
    "moves about 9× the bytes its GB/s counts (array slicing: ~18 passes over the grid, "
    "temporaries included, vs 2): its GB/s understates what the memory did"
)


def cupy_blur(cp, ins, out):
    blur_slices(ins[0], out)


def torch_blur(torch, ins, out):
    blur_slices(ins[0], out)


grid = lambda p: grid_2d(p["n"], p["n"], k.BLOCK, k.BLOCK)  # noqa: E731
block = lambda p: (k.BLOCK, k.BLOCK)  # noqa: E731

SPEC = KernelSpec(
    key="stencil",
    title="2D stencil (5-point blur)",
    make_inputs=make_inputs,
    output=Output(lambda p: (p["n"], p["n"]), np.float32),
    steps=(
        Step(
            "naive",
            "1 · naive global loads",
            k.blur_naive_kernel,
            grid,
            block,
            "each thread loads its cell and four neighbours from device memory",
        ),
        Step(
            "tiled",
            "2 · shared tile with a halo",
            k.blur_tiled_kernel,
            grid,
            block,
            "the block loads its tile plus a one-cell halo once into shared memory (both loads in flight), then reuses "
            "it",
        ),
        Step(
            "rows",
            "3 · four cells per thread",
            k.blur_rows_kernel,
            lambda p: grid_2d(p["n"], p["n"], k.ROWS_TILE, k.ROWS_TILE),
            lambda p: (k.ROWS_TILE, k.BLOCK_ROWS),
            "32 × 8 threads blur a 32 × 32 tile, four cells each, all loads in flight before the first store",
        ),
    ),
    libraries=(
        Library("cupy", "CuPy slicing", "cupy", cupy_blur, note=SLICING_TRAFFIC_NOTE),
        Library("torch", "PyTorch slicing", "torch", torch_blur, note=SLICING_TRAFFIC_NOTE),
    ),
    cpu=(
        CpuImpl("python", "Python loop", python_blur, budgeted=True),
        CpuImpl("numpy", "NumPy slicing", blur_slices),
        CpuImpl("numba", "Numba @njit", numba_blur, jit=True),
        CpuImpl("numba-parallel", "Numba parallel", numba_parallel_blur, jit=True),
    ),
    agreement_why="every implementation adds centre, up, down, left, right in that order and multiplies by 0.2 last, "
    "as NumPy does",
    reference=lambda inputs, p: ExactReference(_numpy_result(inputs["u"])),
    bytes_moved=lambda p: 8 * p["n"] ** 2,  # read the grid once, write it once
    flops=lambda p: 5 * max(p["n"] - 2, 0) ** 2,  # 4 additions and 1 multiply per interior cell
    size_label=lambda p: f"{p['n']:,} × {p['n']:,} float32",
    cost=lambda p: p["n"] ** 2,
    probe=lambda p: {**p, "n": min(p["n"], 128)},
    notes=("Boundary cells are copied unchanged; the interior is (centre + up + down + left + right) × 0.2.",),
)


def _numpy_result(u: np.ndarray) -> np.ndarray:
    out = np.empty_like(u)
    blur_slices(u, out)
    return out


def targets(runs) -> list[Target]:
    """≥ 75% of the memory peak (8 bytes per cell)."""
    run = runs[-1]
    best = run.best_step
    return [Target("stencil: best step, share of the memory peak", run.fraction_of_peak(best) if best else None, 0.75,
                   source="the lab's own, the transpose's: no published figure for a 2-D 5-point float32 stencil on "
                          "Hopper was found")]


def check_problems(quick: bool) -> list[dict]:
    if quick:
        return [{"n": 32, "repeats": 1, "cpu": ("numpy",)}]
    # One CPU row, the fastest, so the section keeps its budget in `make gpu-verify`; every CPU row is on the page.
    return [{"n": 16384, "repeats": 10, "cpu": ("numba-parallel",)}]


EXPERIMENT = declare(
    SPEC,
    "a 5-point blur on an N × N float32 grid: naive global loads, a shared-memory tile with a halo, four cells per "
    "thread",
    Param("n", "N (the grid is N × N)", parse_side, PerBackend(8192, SIM_SIDE), "A whole number such as 4096 or 2^12."),
    elements=lambda p: p["n"] ** 2,
    order=110,
)
