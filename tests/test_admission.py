"""Admission limits: configuration from the environment, memory, work budget, out of memory."""

from __future__ import annotations

import pytest

from gpu.core import limits
from gpu.core.backend import BACKEND
from gpu.core.limits import (
    DEFAULT_MAX_WORK,
    MAX_REPEATS,
    SIMULATOR_MAX_N,
    InputError,
    check_n,
    check_repeats,
    check_sweep_points,
    load_config,
    max_vector_n,
)
from gpu.service.admission import (
    check_work,
    describe,
    is_out_of_memory,
    out_of_memory_message,
)


def test_defaults_differ_for_the_simulator_and_hardware():
    sim, hw = load_config({}, simulated=True), load_config({}, simulated=False)
    assert sim.max_n == SIMULATOR_MAX_N and hw.max_n == 2**30
    assert sim.max_work < hw.max_work and sim.problems == hw.problems == ()
    # the simulator's budget is at most about a minute at its slowest measured rate per element-pass
    # (numba-cuda's: ~0.1 ms; the lab's: ~3 µs for a barrier-heavy kernel, benchmarks/simulator_speed.md)
    seconds_per_pass = 3e-6 if BACKEND.lab_simulator else 1e-4
    assert sim.max_work * seconds_per_pass <= 60


def test_environment_overrides_and_bad_values_are_reported_not_fatal():
    env = {
        "KERNEL_LAB_MAX_N": "2^12",
        "KERNEL_LAB_MAX_REPEATS": "lots",
        "KERNEL_LAB_MAX_SWEEP_POINTS": "0",
        "KERNEL_LAB_MAX_WORK": "1e6",
    }
    config = load_config(env, simulated=True)
    assert config.max_n == 4096 and config.max_work == 1_000_000
    assert config.max_repeats == limits.DEFAULT_MAX_REPEATS[1] and config.max_sweep_points == 24
    assert len(config.problems) == 2 and "KERNEL_LAB_MAX_REPEATS='lots'" in config.problems[0]


def test_configured_repeats_cannot_exceed_the_hard_ceiling():
    config = load_config({"KERNEL_LAB_MAX_REPEATS": "5000"}, simulated=True)
    assert config.max_repeats == MAX_REPEATS and "ceiling" in config.problems[0]


def test_max_n_and_check_n_follow_the_configured_limit(monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_MAX_N", "1000")
    assert max_vector_n() == 1000
    assert check_n("1e3") == 1000
    with pytest.raises(InputError, match=r"limit is 1,000, this server's admission limit \(KERNEL_LAB_MAX_N\)"):
        check_n(1001)


def test_max_n_is_bounded_by_free_host_memory(monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_MAX_N", "1e12")
    monkeypatch.setattr(
        "gpu.core.limits.host_available_bytes", lambda: 6 * 4 * 1000 * 10 // 8
    )  # room for 1000 after the safety share
    assert max_vector_n() == 1000
    with pytest.raises(InputError, match="free host and device memory"):
        check_n(5000)


def test_check_repeats_uses_the_configured_limit(monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_MAX_REPEATS", "7")
    assert check_repeats("7") == 7
    with pytest.raises(InputError, match=r"between 1 and 7 \(this server's limit"):
        check_repeats(8)


def test_work_budget_refuses_long_runs_and_says_what_would_fit():
    config = load_config({"KERNEL_LAB_MAX_WORK": "10000"}, simulated=True)
    assert check_work(1000, 9, config=config) == 10_000
    with pytest.raises(InputError, match="at N = 1,000 use at most 9 repeats"):
        check_work(1000, 10, config=config)
    with pytest.raises(InputError, match="x 3 sizes"):
        check_work(1000, 9, points=3, config=config)
    with pytest.raises(InputError, match="use a smaller N"):
        check_work(20_000, 1, config=config)


def test_sweep_points_are_bounded():
    config = load_config({"KERNEL_LAB_MAX_SWEEP_POINTS": "5"}, simulated=True)
    assert check_sweep_points("5", config) == 5
    for bad in (0, 6):
        with pytest.raises(InputError, match="1 to 5 points"):
            check_sweep_points(bad, config)


def test_describe_names_every_limit():
    text = describe(load_config({}, simulated=True), max_n_now=1234)
    assert "N ≤ 1,234 now" in text and "repeats ≤ 100" in text and "24 points" in text
    assert f"{DEFAULT_MAX_WORK[1]:,}" in text


class CudaAPIError(Exception):
    pass


class OutOfMemoryError(RuntimeError):  # the name CuPy and PyTorch use
    pass


@pytest.mark.parametrize(
    "exc, expected",
    [
        (MemoryError("Unable to allocate 8 GiB"), True),
        (CudaAPIError("[2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY"), True),
        (OutOfMemoryError("Out of memory allocating 1,073,741,824 bytes"), True),
        (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
        (RuntimeError("kernel launch failed"), False),
        (ValueError("shape mismatch"), False),
    ],
)
def test_out_of_memory_is_recognised_from_numba_cupy_torch_and_numpy(exc, expected):
    assert is_out_of_memory(exc) is expected


def test_out_of_memory_message_says_where_and_what_to_do():
    host = out_of_memory_message(MemoryError(), "GPU 0")
    device = out_of_memory_message(CudaAPIError("CUDA_ERROR_OUT_OF_MEMORY"), "GPU 0 (H200)")
    assert "host (CPU) memory" in host and "memory on GPU 0 (H200)" in device
    assert "released" in device and "smaller N" in device


# --- safety: no input runs code, nothing is uploaded ----------------------------------


@pytest.mark.parametrize(
    "text", ["__import__('os').system('true')", "1e3; import os", "2**10 if 1 else 0", "len('abc')", "1_000 + 1"]
)
def test_size_inputs_that_look_like_code_are_rejected_not_run(text):
    with pytest.raises(InputError, match="whole number"):
        check_n(text)


def test_the_app_and_engine_never_evaluate_or_upload():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sources = [*root.glob("gpu/*.py"), *root.glob("ui/*.py"), *root.glob("pages/*.py"), root / "app.py"]
    for source in sources:
        text = source.read_text()
        for banned in ("eval(", "exec(", "file_uploader", "pickle.load"):
            assert banned not in text, f"{source.name} uses {banned}"


class _FakeQueue(list):
    pass


class _FakeContext:
    """A CUDA context whose device-array frees are queued where Numba queues them."""

    def __init__(self):
        self.memory_manager = type("MM", (), {})()
        self.memory_manager.deallocations = _FakeQueue(["d_a", "d_b", "d_c"])
        self.deallocations = _FakeQueue(["unrelated"])


def test_release_device_memory_flushes_the_memory_managers_queue():
    ctx = _FakeContext()
    assert limits.release_device_memory(collect=False, context=ctx) is True
    assert ctx.memory_manager.deallocations == []  # the queue device arrays free onto
    # the same function is the sweep's: one implementation, used everywhere
    from gpu.experiments.scaling import experiment as scaling

    assert scaling.release_device_memory is limits.release_device_memory


def test_release_device_memory_survives_a_broken_context():
    assert limits.release_device_memory(collect=False, context=object()) is False
