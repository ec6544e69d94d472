"""A retried sample re-runs the kernel: outputs that accumulate must be reset before every attempt.

`time_on_device` retries a sample whose stream hold ended before the work was queued. The kernel
has then already run once, so a histogram or a dot product that adds into its output would be
checked on a doubled result, and a correct submission would fail on a GPU. These tests make the
first hold of every sample end early (a fake hold) and run the real kernels in the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu.core.timing import RepeatPolicy
from gpu.problems import get
from gpu.sandbox import harness
from gpu.sandbox.loader import solution_kernel
from tests.test_timing import FakeOps


class EarlyHoldOps(FakeOps):
    """Fake events and holds: the first hold of every sample ends before the work is queued."""

    simulated = True

    def __init__(self):
        super().__init__(expired=[True, False] * 64)


def test_reset_runs_before_every_attempt_so_an_accumulating_output_is_counted_once():
    from gpu.core.kernel_timing import time_on_device

    out = np.zeros(1)
    timing = time_on_device(queue=lambda: out.__iadd__(1.0), stream=None, policy=RepeatPolicy.count(1, warmup=0),
                            ops=EarlyHoldOps(), telemetry=False, l2_bytes=1 << 20, reset=lambda: out.fill(0.0))
    assert timing.retries == 1 and out[0] == 1.0


def test_without_a_reset_the_retry_doubles_the_output():  # the failure the reset prevents
    from gpu.core.kernel_timing import time_on_device

    out = np.zeros(1)
    time_on_device(queue=lambda: out.__iadd__(1.0), stream=None, policy=RepeatPolicy.count(1, warmup=0),
                   ops=EarlyHoldOps(), telemetry=False, l2_bytes=1 << 20)
    assert out[0] == 2.0


@pytest.mark.parametrize("key", ["histogram", "dot"])
def test_an_accumulating_reference_solution_passes_its_timed_runs_with_retries(key, monkeypatch):
    # before the reset: "timed run 0: hist[100]: expected 1, got 2" and "out[0]: expected 1.0, got 2.0"
    problem = get(key)
    monkeypatch.setattr(harness, "_TIMING_OPS", EarlyHoldOps())
    case = problem.tests[0]
    launch = problem.solution.launch or (lambda s: problem.launch(s, problem.threads))
    kernel = solution_kernel(problem.solution, problem.kernel_name)
    timed = harness.time_case(problem, kernel, case, seed=7, launch=launch)
    assert "error" not in timed, timed
    assert timed["stats"].retries == harness.GPU_SAMPLES  # every kept sample was retried once, and still passed
