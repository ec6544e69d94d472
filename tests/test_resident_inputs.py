"""Inputs uploaded once per size and results checked on the device (gpu.core.resident), in the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from gpu.core.arrays import vector_inputs
from gpu.core.resident import ResidentInputs


@pytest.fixture(scope="module")
def resident():
    a, b = vector_inputs(1000, seed=3)
    return a, b, ResidentInputs.upload(a, b, a + b)


def test_a_result_with_numpys_bits_is_identical(resident):
    from gpu.core.backend import cuda

    a, b, inputs = resident
    assert inputs.identical(cuda.to_device(a + b)) and inputs.mismatches(cuda.to_device(a + b)) == 0


def test_every_differing_bit_pattern_is_counted_even_where_the_floats_compare_equal(resident):
    from gpu.core.backend import cuda

    a, b, inputs = resident
    wrong = a + b
    wrong[[0, 500, 999]] = np.nextafter(wrong[[0, 500, 999]], np.float32(np.inf))
    assert inputs.mismatches(cuda.to_device(wrong)) == 3 and not inputs.identical(cuda.to_device(wrong))
    zeros = ResidentInputs.upload(np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert zeros.mismatches(cuda.to_device(np.array([0.0, -0.0, 0.0, 0.0], np.float32))) == 1  # -0.0 == 0.0, not bits


def test_a_result_of_another_shape_is_refused(resident):
    from gpu.core.backend import cuda

    with pytest.raises(ValueError, match="shape"):
        resident[2].identical(cuda.to_device(np.zeros(999, np.float32)))


def test_the_sweep_uploads_a_sizes_inputs_once_for_the_series_that_read_them_on_the_device(monkeypatch):
    from gpu.core import resident as resident_module
    from gpu.core.timing import RepeatPolicy
    from gpu.experiments.scaling.config import make_config
    from gpu.experiments.scaling.experiment import run_sweep

    uploads: list[int] = []
    real = resident_module.ResidentInputs.upload.__func__

    def counted(cls, a, b, expected):
        uploads.append(a.size)
        return real(cls, a, b, expected)

    monkeypatch.setattr(resident_module.ResidentInputs, "upload", classmethod(counted))
    config = make_config(1024, 4096, ("gpu-ilp", "numpy"), policy=RepeatPolicy.count(2))
    run = run_sweep(config)
    assert uploads == [1024, 2048, 4096]  # one upload per size, none for the CPU series
    ilp = [p for p in run.points if p.series == "gpu-ilp"]
    assert len(ilp) == 3 and all(p.ok and p.agree for p in ilp), ilp


def test_above_the_end_to_end_limit_the_articles_kernel_is_timed_alone_on_resident_inputs():
    from gpu.core.timing import RepeatPolicy
    from gpu.experiments.scaling.config import make_config
    from gpu.experiments.scaling.experiment import run_sweep

    config = make_config(1024, 4096, ("gpu",), policy=RepeatPolicy.count(2))
    run = run_sweep(config, end_to_end_max_n=2048)
    series = {(p.n, p.series) for p in run.points}
    assert {(n, "gpu-total") for n in (1024, 2048)} <= series and (4096, "gpu-total") not in series
    assert all(p.ok and p.agree for p in run.points if p.series in ("gpu-kernel", "gpu-total"))
    assert {p.n for p in run.points if p.series == "gpu-kernel"} == {1024, 2048, 4096}
