"""Reduction: the sum of N float32 values, declared for the catalog.

Agreement is exact, although every implementation adds in its own order: the inputs are
whole numbers with a total of at most 2^24 (``ExactSumInputs``, gpu/core/agreement.py),
so every partial sum of every order is exact in float32 and every correct
implementation returns the exact total, bit for bit. A rounding bound could not do this:
for atomics (any order) it grows to about 1.7 × the sum at N = 2^24 and accepts zero.
"""

from __future__ import annotations

import numba
import numpy as np

from gpu.catalog.base import Param, PerBackend
from gpu.catalog.declare import Target, declare, parse_count, ratio
from gpu.catalog.steps import CpuImpl, KernelSpec, Library, Output, Pass, Scalar, Scratch, Step
from gpu.core.agreement import ExactReference, ExactSumInputs, exact_sum_reference
from gpu.core.backend import BACKEND
from gpu.core.device import device_info
from gpu.core.limits import InputError, parse_int
from gpu.experiments.reduction import kernels as k
from gpu.kernels.geometry import blocks_for, kernel_resident_blocks

# The simulator's default size: about 16,000 threads, a few seconds in Kernel Lab's simulator for every step;
# numba-cuda's runs ~4,000 threads/s, so it keeps the old, smaller default.
SIM_N = 2**14 if BACKEND.lab_simulator else 512


def make_inputs(p, seed: int) -> dict[str, np.ndarray]:
    """N float32 whole numbers whose sum is exact in every order (``ExactSumInputs``), reproducible from ``seed``."""
    return {"x": ExactSumInputs.for_size(p["n"]).make(seed)}


def reference(inputs, p) -> ExactReference:
    """The exact total, compared bit for bit: no order of addition can round (see the module docstring)."""
    return exact_sum_reference(inputs["x"])


EXACT_NOTE = (
    "The values are whole numbers with a total of at most 2^24 (sparse above N = 2^24), so every partial sum "
    "of every order is exact in float32: any correct order returns the exact total, checked bit for bit."
)


def grid_stride_blocks(p) -> int:
    return kernel_resident_blocks(k.reduce_grid_stride_kernel, p["n"], p["threads_per_block"], device_info())


def unrolled_blocks(p) -> int:
    """Step 6's grid: one wave of blocks, as step 4, by its own kernel's occupancy (8 accumulators use registers)."""
    return kernel_resident_blocks(k.reduce_unrolled_kernel, p["n"], p["threads_per_block"], device_info())


def partials_blocks(p) -> int:
    """Pass 1's grid: one wave of blocks, as step 4 (each writes one partial sum)."""
    return kernel_resident_blocks(k.reduce_partials_kernel, p["n"], p["threads_per_block"], device_info())


def two_pass_depth(p) -> int:
    """The summation depth k of the two-pass step (what a float32 bound for any inputs would assume).

    A term goes through at most: ceil(N / (blocks · threads)) additions in its thread's
    register, log2(32) = 5 shuffle levels in its warp and 5 more over the block's warp sums
    (pass 1), then ceil(blocks / threads) in pass 2's register loop and 5 + 5 again.
    """
    blocks, threads_ = partials_blocks(p), p["threads_per_block"]
    return -(-p["n"] // (blocks * threads_)) + 10 + -(-blocks // threads_) + 10


# --- CPU implementations -----------------------------------------------------------


def python_sum(x, out):
    """The Python loop, accumulating in float32 like the kernels."""
    total = np.float32(0)
    for value in x:
        total += value
    out[0] = total


def numpy_sum(x, out):
    out[0] = np.sum(x, dtype=np.float32)


@numba.njit(cache=True)
def numba_sum(x, out):  # pragma: no cover - compiled
    total = np.float32(0)
    for i in range(x.size):
        total += x[i]
    out[0] = total


@numba.njit(parallel=True, cache=True)
def numba_parallel_sum(x, out):  # pragma: no cover - compiled
    total = np.float32(0)
    for i in numba.prange(x.size):
        total += x[i]
    out[0] = total


def parse_threads(value) -> int:
    """Threads per block: a power of two from 32 to 1024 (the tree halves it; shuffles need whole warps)."""
    t = parse_int(value, "threads per block")
    if t < 32 or t > 1024 or t & (t - 1):
        raise InputError(
            "threads per block must be a power of two from 32 to 1024 (the tree halves it, shuffles need whole "
            f"warps), got {t}"
        )
    return t


one_per_thread = lambda p: blocks_for(p["n"], p["threads_per_block"])  # noqa: E731
threads = lambda p: p["threads_per_block"]  # noqa: E731

SPEC = KernelSpec(
    key="reduction",
    title="Reduction",
    make_inputs=make_inputs,
    output=Output(lambda p: (1,), np.float32, zeroed=True),
    steps=(
        Step(
            "atomic",
            "1 · global atomics",
            k.reduce_atomic_kernel,
            one_per_thread,
            threads,
            "every thread adds into one address in device memory",
        ),
        Step(
            "tree",
            "2 · shared-memory tree",
            k.reduce_tree_kernel,
            one_per_thread,
            threads,
            "a block sums in shared memory with syncthreads, then one atomic per block",
        ),
        Step(
            "shuffle",
            "3 · warp shuffles",
            k.reduce_shuffle_kernel,
            one_per_thread,
            threads,
            "warps sum in registers with shfl_down_sync; shared memory only for the warp sums",
            needs="warp shuffles (cuda.shfl_down_sync)",
            helpers=(k.block_sum_into, k.block_sum, k.warp_sum),
        ),
        Step(
            "grid-stride",
            "4 · grid-stride, one atomic per block",
            k.reduce_grid_stride_kernel,
            grid_stride_blocks,
            threads,
            "one wave of blocks; each thread sums many elements in a register first",
            needs="warp shuffles (cuda.shfl_down_sync)",
            helpers=(k.block_sum_into, k.block_sum, k.warp_sum),
        ),
        Step(
            "two-pass",
            "5 · two passes, no atomics",
            k.reduce_partials_kernel,
            partials_blocks,
            threads,
            "blocks write partial sums; a second launch of one block adds them: the same order, the same bits, "
            "every run",
            depth=two_pass_depth,
            needs="warp shuffles (cuda.shfl_down_sync)",
            helpers=(k.block_sum, k.warp_sum),
            args=("x", "partials"),
            scratch=(Scratch("partials", lambda p: (partials_blocks(p),), np.float32),),
            scalars=(Scalar("count", np.int32, partials_blocks),),
            then=(Pass(k.reduce_final_kernel, lambda p: 1, threads, ("partials", "count", "out")),),
        ),
        Step(
            "unrolled",
            "6 · eight loads in flight",
            k.reduce_unrolled_kernel,
            unrolled_blocks,
            threads,
            "step 4's loop unrolled into 8 independent sums: 8 loads in flight per thread, not one",
            needs="warp shuffles (cuda.shfl_down_sync)",
            helpers=(k.block_sum_into, k.block_sum, k.warp_sum),
        ),
    ),
    libraries=(
        Library("cupy", "CuPy sum", "cupy", lambda cp, ins, out: cp.sum(ins[0], out=out.reshape(()))),
        Library(
            "torch", "PyTorch sum", "torch", lambda torch, ins, out: torch.sum(ins[0], dim=0, keepdim=True, out=out)
        ),
    ),
    cpu=(
        CpuImpl("python", "Python loop", python_sum, budgeted=True),
        CpuImpl("numpy", "NumPy sum", numpy_sum),
        CpuImpl("numba", "Numba @njit", numba_sum, jit=True),
        CpuImpl("numba-parallel", "Numba parallel", numba_parallel_sum, jit=True),
    ),
    agreement_why="the inputs are whole numbers whose partial sums are exact in float32, so every order of addition "
    "gives the same total",
    reference=reference,
    bytes_moved=lambda p: 4 * p["n"] + 4,  # read N float32 once, write one
    flops=lambda p: max(p["n"] - 1, 0),  # N − 1 additions
    size_label=lambda p: f"N = {p['n']:,} float32",
    cost=lambda p: p["n"],
    probe=lambda p: {**p, "n": min(p["n"], 20_000)},
    notes=(EXACT_NOTE,),
)


CUPY_TARGET = 1.05  # the best step's time within 5% of CuPy's sum (CUB's device reduction underneath)


def targets(runs) -> list[Target]:
    """≥ 85% of the computed memory peak, and time ≤ CUPY_TARGET × CuPy sum (best step, same run)."""
    run = runs[-1]
    best = run.best_step
    cupy = run.get("cupy")
    return [
        Target("reduction: best step, share of the memory peak", run.fraction_of_peak(best) if best else None, 0.85,
               source="the lab's own: H100 reductions with 8 loads in flight per thread are reported at 92-95% of "
                      "peak, but no published source for that was found here"),
        Target(
            "reduction: best step's time ÷ CuPy sum's",
            ratio(run, best.key, "cupy") if best and cupy.measured else None,
            CUPY_TARGET,
            higher_is_better=False,
        ),
    ]


def check_problems(quick: bool) -> list[dict]:
    if quick:
        return [{"n": 512, "threads_per_block": 128, "repeats": 1, "cpu": ("numpy",)}]
    return [{"n": 2**28, "threads_per_block": 256, "repeats": 10, "cpu": ("numpy", "numba-parallel")}]


EXPERIMENT = declare(
    SPEC,
    "sum N float32 values from global atomics to warp shuffles, a grid-stride loop, two passes without atomics "
    "and eight loads in flight per thread",
    Param("n", "N (float32 values)", parse_count, PerBackend(2**25, SIM_N), "A whole number such as 1e6 or 2^20."),
    extra=(
        Param(
            "threads_per_block",
            "Threads per block",
            parse_threads,
            PerBackend(256, 128),
            "A power of two from 32 to 1024.",
            widget="int",
        ),
    ),
    order=80,
)
