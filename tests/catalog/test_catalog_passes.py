"""Catalog steps with scalars and several passes: reduction step 5 (two passes, no atomics).

Every pass is launched inside the step's timed region; the scalar reaches the kernel as
the declared NumPy dtype; the result is exact on the catalog's inputs and, on arbitrary
float32 inputs, within the float32 bound for the step's summation depth against float64,
a bound that a result missing one block's partial sum does not meet.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpu.catalog import steps
from gpu.catalog.steps import Pass
from gpu.core.agreement import BoundedReference, gamma
from gpu.core.backend import BACKEND, cuda
from gpu.core.timing import RepeatPolicy
from gpu.experiments.reduction import experiment as reduction

pytestmark = pytest.mark.skipif(
    BACKEND.simulated and not BACKEND.lab_simulator, reason="the two-pass step uses warp shuffles"
)
PARAMS = {"n": 1 << 14, "threads_per_block": 128}
TWO_PASS = next(s for s in reduction.SPEC.steps if s.key == "two-pass")


def launch_all(step, params, x: np.ndarray) -> np.ndarray:
    d_out = cuda.to_device(np.zeros(1, np.float32))
    for kernel, grid, block, args in step.launches(params, {"x": cuda.to_device(x)}, d_out):
        kernel[grid, block](*args)
    return d_out.copy_to_host()


def test_the_two_passes_and_their_scalar_are_resolved_by_name():
    launches = TWO_PASS.launches(PARAMS, {"x": "X"}, "OUT", alloc=lambda shape, dtype: ("scratch", shape))
    (first, _g1, _b1, args1), (second, grid2, _b2, args2) = launches
    blocks = reduction.partials_blocks(PARAMS)
    assert first is reduction.k.reduce_partials_kernel and args1 == ("X", ("scratch", (blocks,)))
    assert second is reduction.k.reduce_final_kernel and grid2 == 1
    partials, count, out = args2
    assert partials == ("scratch", (blocks,)) and out == "OUT"
    assert isinstance(count, np.int32) and count == blocks  # typed as LAUNCHES declares it: int32
    assert TWO_PASS.geometry(PARAMS) == f"{blocks:,} blocks of 128 threads, then 1 block of 128 threads"


def test_every_pass_is_inside_the_timed_region(monkeypatch):
    log: list[str] = []

    class LoggedTimer(steps.PhaseTimer):
        def start(self):
            log.append("start")
            return super().start()

        def end(self, phase):
            log.append(f"end {phase}")
            return super().end(phase)

    real_configured = steps.configured_launch

    def logged(kernel, grid, block, stream, *args):
        real = real_configured(kernel, grid, block, stream, *args)

        def launch(*a):
            log.append(kernel.py_func.__name__)
            real(*a)

        return launch

    monkeypatch.setattr(steps, "configured_launch", logged)
    monkeypatch.setattr(steps, "PhaseTimer", LoggedTimer)
    inputs = reduction.SPEC.make_inputs(PARAMS, 0)
    phases, out, _first, _timing = steps.time_step(
        reduction.SPEC, TWO_PASS, PARAMS, inputs, RepeatPolicy.count(2, warmup=0)
    )
    per_sample = ["start", "end h2d", "reduce_partials_kernel", "reduce_final_kernel", "end with_launch", "end d2h"]
    assert log == per_sample * 2
    assert phases["kernel"].n_samples == 2 and reduction.SPEC.reference(inputs, PARAMS).check("t", out).passed


def test_exact_on_the_catalog_inputs_and_within_the_float32_bound_on_any_inputs():
    exact = reduction.SPEC.make_inputs(PARAMS, 5)
    assert reduction.SPEC.reference(exact, PARAMS).check("two-pass", launch_all(TWO_PASS, PARAMS, exact["x"])).passed
    x = np.random.default_rng(5).standard_normal(PARAMS["n"]).astype(np.float32)  # sums round: a bound is needed
    bounded = BoundedReference(np.array([x.sum(dtype=np.float64)]), np.array([np.abs(x).sum(dtype=np.float64)]))
    depth = reduction.two_pass_depth(PARAMS)
    got = bounded.check("two-pass", launch_all(TWO_PASS, PARAMS, x), depth)
    assert got.passed, got.describe()
    # the bound is tight enough to mean something: a partial sum left out of the total fails it
    count = TWO_PASS.scalars[0]
    one_short = replace(TWO_PASS, scalars=(replace(count, value=lambda p: reduction.partials_blocks(p) - 1),))
    assert not bounded.check("one-short", launch_all(one_short, PARAMS, x), depth).passed
    blocks = reduction.partials_blocks(PARAMS)
    assert depth == -(-PARAMS["n"] // (blocks * 128)) + -(-blocks // 128) + 20 and gamma(depth) < 1e-5


def test_a_further_pass_with_a_wrong_argument_name_is_refused_by_name():
    bad = replace(TWO_PASS, then=(Pass(reduction.k.reduce_final_kernel, lambda p: 1, lambda p: 32, ("partial",)),))
    with pytest.raises(KeyError, match="partial"):
        bad.launches(PARAMS, {"x": None}, None, alloc=lambda shape, dtype: None)
