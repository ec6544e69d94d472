"""The catalog's steps at the memory's limit, run in the simulator at sizes that take every branch.

The shared catalog tests run each step at tiny sizes, where a 64 × 64 tile is all edge and a
grid-stride loop never makes a full trip of eight loads; these sizes take the full-tile path
and the eight-load trips with a tail, and the result is checked bit for bit.
"""

from __future__ import annotations

import pytest

import gpu
from gpu.catalog import steps
from gpu.core.timing import RepeatPolicy
from gpu.experiments.reduction import experiment as reduction
from gpu.experiments.reduction import kernels as reduction_kernels
from gpu.experiments.transpose import experiment as transpose
from gpu.experiments.transpose import kernels as transpose_kernels

ONE = RepeatPolicy.count(1, warmup=0)


def step(spec, key):
    return next(s for s in spec.steps if s.key == key)


@pytest.mark.skipif(gpu.BACKEND.simulated and not gpu.BACKEND.lab_simulator,
                    reason="warp shuffles: Numba's CUDA simulator has none (Kernel Lab's simulator runs them)")
def test_eight_loads_in_flight_sums_full_trips_and_the_tail_exactly():
    params = {"n": 0, "threads_per_block": 32}
    grid_threads = reduction.unrolled_blocks({"n": 1 << 30, "threads_per_block": 32}) * 32
    params["n"] = 2 * reduction_kernels.LOADS_IN_FLIGHT * grid_threads + 1000  # two full trips, then a tail
    assert reduction.unrolled_blocks(params) * 32 == grid_threads
    inputs = reduction.SPEC.make_inputs(params, 3)
    _phases, out, _first, _timing = steps.time_step(reduction.SPEC, step(reduction.SPEC, "unrolled"), params, inputs,
                                                    ONE)
    check = reduction.SPEC.reference(inputs, params).check("unrolled", out)
    assert check.passed, check.describe()


def test_the_64_by_64_tile_transposes_full_and_edge_tiles_exactly():
    params = {"n": 2 * transpose_kernels.BIG_TILE + 2}  # four full tiles, five edge tiles
    inputs = transpose.SPEC.make_inputs(params, 5)
    _phases, out, _first, _timing = steps.time_step(transpose.SPEC, step(transpose.SPEC, "big-tile"), params, inputs,
                                                    ONE)
    check = transpose.SPEC.reference(inputs, params).check("big-tile", out)
    assert check.passed, check.describe()


def test_the_reduction_target_against_cupy_is_five_percent():
    assert reduction.CUPY_TARGET == 1.05


@pytest.mark.parametrize("shape", [(1, 1), (130, 70), (257, 129)])
def test_the_blocked_reference_is_numpys_transpose_bit_for_bit(shape):
    import numpy as np

    a = np.random.default_rng(1).random(shape, dtype=np.float32)
    reference = transpose.blocked_transpose(a)
    assert reference.flags.c_contiguous and np.array_equal(reference, a.T)
