"""The engine in the simulator: exact agreement, timing phases, bad input."""

import numpy as np
import pytest

import gpu
from gpu.core import cpu
from gpu.core.agreement import check_bits as check_agreement
from gpu.core.arrays import vector_inputs
from gpu.core.limits import InputError, check_n, check_threads, parse_size, threads_per_block_warnings
from gpu.core.timing import RepeatPolicy
from gpu.experiments.vector_add.article import run_article_method
from gpu.experiments.vector_add.experiment import run_vector_add
from gpu.kernels.geometry import blocks_for
from gpu.kernels.vector_add_timing import GPU_PHASES, gpu_vector_add

AWKWARD = [1, 31, 32, 33, 255, 256, 257, 3000]


@pytest.mark.parametrize("threads_per_block", [32, 128, 1024])
def test_kernel_is_bit_identical_to_numpy_at_awkward_sizes(threads_per_block):
    for n in AWKWARD:
        a, b = vector_inputs(n, seed=n)
        np.testing.assert_array_equal(gpu_vector_add(a, b, threads_per_block), a + b, err_msg=f"N={n}")


def test_kernel_writes_nothing_past_the_end():
    # 33 threads launched for 1 element: the guard must keep the other 32 idle.
    a, b = vector_inputs(1)
    assert gpu_vector_add(a, b, 33).shape == (1,)


@pytest.mark.parametrize("n,threads,blocks", [(1, 256, 1), (256, 256, 1), (257, 256, 2), (10_000_000, 256, 39063)])
def test_launch_geometry_is_ceil_division(n, threads, blocks):
    assert blocks_for(n, threads) == blocks


@pytest.mark.parametrize("name", list(cpu.IMPLEMENTATIONS))
def test_every_cpu_implementation_matches_numpy_exactly(name):
    a, b = vector_inputs(1001)
    c = np.empty_like(a)
    cpu.IMPLEMENTATIONS[name](a, b, c)
    assert check_agreement(name, c, a + b).passed


def test_agreement_check_fails_on_a_corrupted_output():
    a, b = vector_inputs(100)
    result = a + b
    result[7] = np.nextafter(result[7], np.float32(2))  # one ulp off
    result[9] = np.nan
    agreement = check_agreement("gpu", result, a + b)
    assert not agreement.passed
    assert agreement.mismatches == 2
    assert not agreement.allclose  # the NaN is not close to anything


def test_run_measures_every_phase_and_they_fit_in_end_to_end():
    run = run_vector_add(500, 128, RepeatPolicy.count(3), ["numpy", "numba"])
    assert run.agree
    for phase in ("h2d", "kernel", "d2h", "total"):
        assert run.gpu[phase].n_samples == 3
        assert run.gpu[phase].min_s > 0
    for i in range(3):
        parts = sum(run.gpu[p].samples_s[i] for p in GPU_PHASES if p in run.gpu)
        assert parts <= run.gpu["total"].samples_s[i] * 1.01 + 1e-4
    assert set(run.cpu) == {"numpy", "numba"}
    assert run.speedup("numpy", "kernel") is not None


def test_python_loop_over_budget_is_skipped_with_an_estimate():
    run = run_vector_add(2000, 256, RepeatPolicy.count(1), ["python"], python_budget_s=1e-9)
    timing = run.cpu["python"]
    assert timing.stats is None and timing.estimate_s > 0
    assert "estimated" in timing.skipped
    assert "python" not in run.agreement  # nothing was computed, so nothing is claimed
    frame = run.to_frame()
    assert frame.loc[frame["implementation"] == "python", "estimated"].all()
    assert run.speedup("python").estimated


def test_to_dict_has_the_documented_shape():
    data = run_vector_add(64, 32, RepeatPolicy.count(2), ["numpy"]).to_dict()
    assert {
        "n",
        "dtype",
        "threads_per_block",
        "blocks_per_grid",
        "backend",
        "device",
        "agree",
        "max_abs_diff",
        "gpu",
        "cpu",
        "speedup",
    } <= set(data)
    assert set(data["gpu"]["phases"]) == {"h2d", "kernel", "d2h", "total"}
    assert {"median_s", "min_s", "max_s", "samples"} <= set(data["gpu"]["phases"]["kernel"])
    assert data["blocks_per_grid"] == 2 and data["dtype"] == "float32"


def test_article_method_prints_the_articles_four_lines():
    article = run_article_method(300, 256)
    lines = article.lines()
    assert lines[0] == "Results match: True"
    assert lines[1].startswith("CPU implementation: ") and lines[1].endswith(" seconds")
    assert lines[2].startswith("GPU implementation: ")
    assert lines[3].startswith("GPU speedup: ") and lines[3].endswith("x")


@pytest.mark.parametrize("text", ["0", "-5", "abc", "1.5", "", "1e300", "2^2000", "__import__('os')"])
def test_bad_sizes_are_rejected_with_a_clear_message(text):
    with pytest.raises(InputError, match="N"):
        parse_size(text)


@pytest.mark.parametrize(
    "text,value", [("1e7", 10_000_000), ("10_000_000", 10_000_000), ("2^20", 1 << 20), ("1,000", 1000)]
)
def test_sizes_accept_the_usual_spellings(text, value):
    assert parse_size(text) == value


def test_sizes_past_the_limit_name_the_limit():
    with pytest.raises(InputError, match="limit is 100"):
        check_n(101, max_n=100)


@pytest.mark.skipif(not gpu.BACKEND.simulated, reason="the cap applies to the simulator only")
def test_simulator_caps_n():
    with pytest.raises(InputError, match="simulator"):
        check_n(10_000_000)


@pytest.mark.parametrize("threads", [0, -1, 1025, "many"])
def test_bad_block_sizes_are_rejected(threads):
    with pytest.raises(InputError, match="threads per block"):
        check_threads(threads)


def test_block_size_not_a_multiple_of_32_is_allowed_with_a_warning():
    assert check_threads(100) == 100  # valid: checking never warns, warnings never raise
    assert threads_per_block_warnings(100) and "warp" in threads_per_block_warnings(100)[0]
    assert threads_per_block_warnings(128) == []


def test_run_rejects_unknown_cpu_implementation():
    with pytest.raises(InputError, match="unknown CPU implementation"):
        run_vector_add(10, 32, RepeatPolicy.count(1), ["fortran"])


@pytest.mark.parametrize("threads_per_block", [32, 64])
def test_four_per_thread_kernel_is_bit_identical_and_covers_every_element(threads_per_block):
    from gpu.kernels.vector_add import (
        ELEMENTS_PER_THREAD,
        vector_add_ilp_kernel,
    )
    from gpu.kernels.vector_add_timing import time_resident_kernel

    for n in [1, 31, 127, 128, 129, 1000]:
        a, b = vector_inputs(n, seed=n)
        out = np.full(n, np.nan, dtype=np.float32)  # an element never written stays NaN and fails
        blocks = blocks_for(n, threads_per_block * ELEMENTS_PER_THREAD)
        stats = time_resident_kernel(
            vector_add_ilp_kernel, blocks, threads_per_block, a, b, out, RepeatPolicy.count(1, warmup=0)
        )
        assert stats.n_samples == 1
        np.testing.assert_array_equal(out, a + b, err_msg=f"N={n}")


def test_article_in_words_states_a_ratio_on_a_gpu_only():
    from dataclasses import replace

    from gpu.experiments.vector_add.report import article_in_words

    article = run_article_method(300, 256)
    simulated = article_in_words(replace(article, backend="simulator"))
    assert "the results matched" in simulated and "the Python loop took" in simulated
    assert "slower" not in simulated and "faster" not in simulated
    on_gpu = article_in_words(replace(article, backend="cuda", cpu_time_s=1.0, gpu_time_s=0.01))
    assert "about 100x faster than the Python loop" in on_gpu
