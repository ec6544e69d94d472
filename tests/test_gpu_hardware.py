"""On a real GPU only: events time the phases, and the article's N agrees bit for bit."""

import numpy as np
import pytest

from gpu.core.timing import RepeatPolicy
from gpu.experiments.vector_add import gpu_vector_add, make_inputs, run_vector_add

pytestmark = pytest.mark.gpu


def test_article_size_is_bit_identical_on_the_gpu():
    a, b = make_inputs(10_000_000)
    np.testing.assert_array_equal(gpu_vector_add(a, b, 256), a + b)


def test_event_timed_phases_fit_inside_wall_clock():
    run = run_vector_add(1 << 22, 256, RepeatPolicy.count(5), ["numpy"])
    assert run.agree and run.backend == "cuda" and run.compile_s >= 0
    for i in range(5):
        parts = sum(run.gpu[p].samples_s[i] for p in ("h2d", "launch", "kernel", "d2h"))
        assert 0 < parts <= run.gpu["total"].samples_s[i] * 1.05
    assert min(run.gpu["launch"].samples_s) >= 0  # the kernel alone never exceeds launch + kernel
    assert run.kernel_bandwidth_gbps > 50  # any CUDA GPU of the last decade moves > 50 GB/s
