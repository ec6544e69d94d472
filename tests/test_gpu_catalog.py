"""On a real GPU only: the catalog's preconditions for the issue's targets. Medium sizes, so
the tests stay quick; `python -m gpu check` measures the targets themselves at large sizes."""

import pytest

from gpu.core.timing import RepeatPolicy
from gpu.experiments import histogram, matmul, reduction, transpose
from gpu.experiments.steps import run_kernel

pytestmark = pytest.mark.gpu
POLICY = RepeatPolicy.count(5)


def test_warp_shuffle_steps_run_and_agree_on_the_gpu():
    run = run_kernel(reduction.SPEC, {"n": 1 << 24, "threads_per_block": 256}, POLICY)
    for key in ("atomic", "tree", "shuffle", "grid-stride"):
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
