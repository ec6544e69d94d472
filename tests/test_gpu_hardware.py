"""On a real GPU only: events time the phases, and the article's N agrees bit for bit."""

import numpy as np
import pytest

from gpu.core.arrays import vector_inputs
from gpu.core.timing import RepeatPolicy
from gpu.experiments.vector_add.experiment import run_vector_add
from gpu.kernels.vector_add_timing import gpu_vector_add

pytestmark = pytest.mark.gpu


def test_article_size_is_bit_identical_on_the_gpu():
    a, b = vector_inputs(10_000_000)
    np.testing.assert_array_equal(gpu_vector_add(a, b, 256), a + b)


def test_event_timed_phases_fit_inside_wall_clock():
    run = run_vector_add(1 << 22, 256, RepeatPolicy.count(5), ["numpy"])
    assert run.agree and run.backend == "cuda" and run.compile_s >= 0
    for i in range(5):
        parts = sum(run.gpu[p].samples_s[i] for p in ("h2d", "launch", "kernel", "d2h"))
        assert 0 < parts <= run.gpu["total"].samples_s[i] * 1.05
    assert min(run.gpu["launch"].samples_s) >= 0  # the kernel alone never exceeds launch + kernel
    assert run.kernel_bandwidth_gbps > 50  # any CUDA GPU of the last decade moves > 50 GB/s


# --- the two H200 bugs of the first run, and the methodology, on real hardware ---------------


def test_kernel_alone_at_1e7_is_less_than_half_of_launch_plus_kernel():
    """The launch from Python must not hide inside "kernel": at 10^7 on an H200 the kernel
    alone is ~40 µs and the launch a few times that."""
    run = run_vector_add(10_000_000, 256, RepeatPolicy.count(10), [])
    kernel = run.gpu["kernel"]
    with_launch = kernel.median_s + run.gpu["launch"].median_s
    assert kernel.held is True
    assert kernel.median_s < 0.5 * with_launch, (kernel.median_s, with_launch)


def test_article_kernel_at_2_28_reaches_half_the_computed_peak():
    from gpu.core.device import device_info
    from gpu.kernels.geometry import blocks_for
    from gpu.kernels.vector_add import vector_add_kernel
    from gpu.kernels.vector_add_timing import time_resident_kernel

    n = 2**28
    a, b = vector_inputs(n)
    out = np.empty(n, dtype=np.float32)
    stats = time_resident_kernel(vector_add_kernel, blocks_for(n, 256), 256, a, b, out, RepeatPolicy.count(10))
    peak = device_info().peak_bandwidth_gbps
    gbps = 12 * n / stats.median_s / 1e9
    assert stats.held is True and stats.n_samples == 10
    np.testing.assert_array_equal(out, a + b)
    if peak:
        assert gbps >= 0.5 * peak, (gbps, peak)
        assert gbps <= 1.02 * peak, "above the memory peak at 3 GB per vector: the L2 flush or the events are wrong"


def test_every_implementation_is_timed_with_a_verified_hold():
    from gpu.core import reference
    from gpu.experiments.scaling.config import make_config
    from gpu.experiments.scaling.experiment import run_sweep

    config = make_config(2**20, 2**20, ("gpu", "gpu-ilp", *reference.REFERENCES), policy=RepeatPolicy.count(5))
    run = run_sweep(config)
    for p in run.points:
        if p.series in ("gpu-kernel", "gpu-ilp", *reference.REFERENCES):
            assert p.stats is not None and p.stats.held is True, p.series


def test_l2_flush_makes_a_cache_sized_kernel_slower_than_warm():
    from gpu.core.l2 import l2_cache_bytes
    from gpu.kernels.geometry import blocks_for
    from gpu.kernels.vector_add import vector_add_kernel
    from gpu.kernels.vector_add_timing import time_resident_kernel

    l2 = l2_cache_bytes()
    assert l2, "the device reports no L2 size"
    n = l2 // 4 // 12  # working set a quarter of the L2
    a, b = vector_inputs(n)
    out = np.empty(n, dtype=np.float32)
    args = (vector_add_kernel, blocks_for(n, 256), 256, a, b, out, RepeatPolicy.count(20))
    flushed = time_resident_kernel(*args, flush_l2=True)
    warm = time_resident_kernel(*args, flush_l2=False)
    assert warm.median_s < flushed.median_s, (warm.median_s, flushed.median_s)


def test_engine_launch_is_compared_with_the_fastest_python_path_and_judged():
    # The 2x target is a benchmark's (`gpu check` fails when it is not met; the H200 run of
    # 2026-12-04 measured 5.13x, benchmarks/h200-2026-12-04/): this test asserts the
    # comparison is made and judged on a GPU, not how fast this machine launches.
    from gpu.experiments.launch.overhead import ENGINE_TARGET, run_launch_overhead

    run = run_launch_overhead(RepeatPolicy.count(20, warmup=2))
    assert "engine" in run.paths and run.engine_baseline is not None, run.skipped
    assert run.engine_ratio is not None and run.engine_ratio > 0, str(run)
    assert run.passed == (run.engine_ratio <= ENGINE_TARGET), str(run)
    verdict = "met" if run.passed else "NOT met"
    assert f"(target ≤ {ENGINE_TARGET:g}x) — {verdict}" in str(run)


def test_the_prepared_launch_computes_what_numbas_own_launch_computes():
    """The raw driver launch with numba-cuda's packed arguments, on 1-D arrays, 2-D arrays and an int32 scalar."""
    from gpu.core.backend import cuda
    from gpu.core.launch_path import PreparedLaunch, configured_launch
    from gpu.experiments.reduction.kernels import reduce_final_kernel
    from gpu.experiments.transpose.kernels import BLOCK_ROWS, TILE, transpose_padded_kernel
    from gpu.kernels.vector_add import vector_add_kernel

    stream = cuda.stream()
    rng = np.random.default_rng(7)
    a, b = rng.random(1003, dtype=np.float32), rng.random(1003, dtype=np.float32)
    d_a, d_b = cuda.to_device(a, stream=stream), cuda.to_device(b, stream=stream)
    d_c = cuda.device_array(1003, np.float32)
    launch = configured_launch(vector_add_kernel, 8, 128, stream, d_a, d_b, d_c)
    assert isinstance(launch, PreparedLaunch), "the engine's launch was not prepared on a GPU"
    launch(d_a, d_b, d_c)
    np.testing.assert_array_equal(d_c.copy_to_host(stream=stream), a + b)

    m = rng.random((70, 70), dtype=np.float32)
    d_m, d_t = cuda.to_device(m, stream=stream), cuda.device_array((70, 70), np.float32)
    configured_launch(transpose_padded_kernel, (3, 3), (TILE, BLOCK_ROWS), stream, d_m, d_t)(d_m, d_t)
    np.testing.assert_array_equal(d_t.copy_to_host(stream=stream), m.T)

    partials = np.arange(1, 101, dtype=np.float32)
    d_p, d_total = cuda.to_device(partials, stream=stream), cuda.device_array(1, np.float32)
    configured_launch(reduce_final_kernel, 1, 64, stream, d_p, np.int32(40), d_total)(d_p, np.int32(40), d_total)
    assert d_total.copy_to_host(stream=stream)[0] == partials[:40].sum()


def test_telemetry_is_recorded_with_a_gpu_run():
    pytest.importorskip("pynvml", reason="nvidia-ml-py is installed by `make` where a driver exists")
    run = run_vector_add(1 << 20, 256, RepeatPolicy.count(3), [])
    assert run.telemetry["available"] and run.telemetry["before"]["sm_clock_mhz"]
