"""On a real GPU only: the catalog's preconditions for the issue's targets. Medium sizes, so
the tests stay quick; `python -m gpu check` measures the targets themselves at large sizes."""

import pytest

from gpu.catalog.steps import run_kernel
from gpu.core.timing import RepeatPolicy
from gpu.experiments.histogram import experiment as histogram
from gpu.experiments.matmul import experiment as matmul
from gpu.experiments.reduction import experiment as reduction
from gpu.experiments.transpose import experiment as transpose

pytestmark = pytest.mark.gpu
POLICY = RepeatPolicy.count(5)


def test_warp_shuffle_steps_run_and_agree_on_the_gpu():
    run = run_kernel(reduction.SPEC, {"n": 1 << 24, "threads_per_block": 256}, POLICY)
    for key in (step.key for step in reduction.SPEC.steps):
        assert run.get(key).measured and run.get(key).agreement.passed, run.get(key).agreement.describe()
    assert run.get("grid-stride").seconds < run.get("atomic").seconds  # a few atomics beat N atomics on one address


def test_tiled_transpose_beats_the_naive_one():
    run = run_kernel(transpose.SPEC, {"n": 8192}, POLICY)
    assert run.agree
    assert run.get("tiled").seconds < run.get("naive").seconds
    assert run.get("padded").seconds <= run.get("tiled").seconds * 1.05  # padding never makes it slower


def test_shared_histogram_beats_global_atomics_on_skewed_data():
    run = run_kernel(histogram.SPEC, {"n": 1 << 26, "threads_per_block": 256, "distribution": "skewed"}, POLICY)
    assert run.agree and run.get("shared").seconds < run.get("global").seconds


def test_register_tiling_beats_shared_tiles_and_the_roofs_are_known():
    run = run_kernel(matmul.SPEC, {"n": 2048}, RepeatPolicy.count(3))
    assert run.agree
    assert run.get("register").seconds < run.get("shared").seconds < run.get("naive").seconds
    assert run.roofs.memory_gbps and run.roofs.fp32_gflops and 0 < run.fraction_of_peak(run.get("register")) <= 1


def test_histogram_references_are_measured_not_failed():
    """CuPy's and PyTorch's bincount wait on the GPU from the host: behind a stream hold every
    sample expired and the row read "failed … host too busy". Timed without the hold, they
    are measured, agree, and say that they include the launch."""
    from gpu.core.reference import unavailable_reason

    run = run_kernel(histogram.SPEC, {"n": 1 << 22, "threads_per_block": 256, "distribution": "uniform"}, POLICY)
    libraries = [key for key in ("cupy", "torch") if unavailable_reason(key) is None]
    if not libraries:
        pytest.skip("neither CuPy nor PyTorch can reach this GPU")
    for key in libraries:
        result = run.get(key)
        assert result.measured and result.error is None, result.why_not
        assert result.agreement.passed and result.main.held is False
        assert "includes the launch" in (result.note or "")


def test_catalog_kernel_samples_carry_held_and_retries():
    run = run_kernel(reduction.SPEC, {"n": 1 << 20, "threads_per_block": 256}, POLICY)
    step = run.get("tree")
    assert step.timing is not None and len(step.timing.sample_held) == step.main.n_samples == POLICY.n_repeat
    assert all(step.timing.sample_held) and step.main.held is True
    assert len(step.timing.sample_retries) == POLICY.n_repeat
    data = run.to_dict()["implementations"]["tree"]
    assert data["kernel_timing"]["sample_held"] == [True] * POLICY.n_repeat and "retries" in data["phases"]["kernel"]
    frame = run.to_frame()
    kernel_rows = frame[(frame["implementation"] == "tree") & (frame["phase"] == "kernel")]
    assert kernel_rows["held"].all() and len(kernel_rows) == POLICY.n_repeat
    assert run.telemetry is not None and "available" in run.telemetry
