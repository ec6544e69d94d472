"""Physical limits and the CuPy / PyTorch references. The references are tested where
their library and a GPU are present, and skipped with the reason otherwise."""

import numpy as np
import pytest

import gpu
from gpu.core import peaks as peaks_mod
from gpu.core import reference
from gpu.core.agreement import identical
from gpu.core.arrays import vector_inputs
from gpu.core.peaks import (
    LIMIT_KEYS,
    Limit,
    Peaks,
    host_copy_bytes,
    last_level_cache_bytes,
    measure_peaks,
)
from gpu.core.timing import RepeatPolicy


def test_quick_peaks_measure_every_copy_and_say_how():
    result = measure_peaks(RepeatPolicy.count(2), quick=True)
    assert [lim.key for lim in result.limits] == list(LIMIT_KEYS)
    for key in ("d2d", "h2d_pinned", "d2h_pinned", "host_copy"):
        limit = result.get(key)
        assert limit.gbps > 0 and limit.stats.n_samples == 2, key
        assert "MiB" in limit.how and "median of 2" in limit.how
    # d2d and host copies read and write: twice the bytes
    d2d = result.get("d2d")
    assert d2d.gbps == pytest.approx(2 * d2d.nbytes / d2d.stats.median_s / 1e9)
    frame = result.to_frame()
    assert set(frame["key"]) <= set(LIMIT_KEYS) and (frame["gbps"] > 0).all()


@pytest.mark.skipif(not gpu.BACKEND.simulated, reason="the simulator has no device peak; a GPU has one")
def test_the_simulator_has_no_device_peak_and_says_why():
    result = measure_peaks(RepeatPolicy.count(1), quick=True)
    assert result.gbps("device_peak") is None
    assert "simulator" in result.get("device_peak").skipped
    assert "simulated" in result.get("d2d").how
    assert "device_peak" not in set(result.to_frame()["key"])


def test_a_copy_that_fails_is_recorded_not_raised(monkeypatch):
    def out_of_memory(*_args, **_kwargs):
        raise MemoryError("no room for the buffers")

    monkeypatch.setattr(peaks_mod, "time_copy", out_of_memory)
    result = measure_peaks(RepeatPolicy.count(1), quick=True)
    for key in ("d2d", "h2d_pinned", "d2h_pinned"):
        assert result.gbps(key) is None and "MemoryError" in result.get(key).skipped
    assert result.gbps("host_copy") > 0


def test_host_copy_size_is_beyond_the_last_level_cache():
    llc = last_level_cache_bytes()
    size = host_copy_bytes()
    assert size >= 1
    if llc is not None and size < 4 * llc:  # only memory can make it smaller
        from gpu.core.limits import host_available_bytes

        assert size == host_available_bytes() // 8


def test_peaks_round_trip_to_dict():
    p = Peaks((Limit("d2d", 1000.0, "measured", 2**20),), "cuda", RepeatPolicy.count(3))
    data = p.to_dict()
    assert data["limits"]["d2d"]["gbps"] == 1000.0 and data["limits"]["d2d"]["label"].startswith("device copy")
    assert "1,000 GB/s" in str(p)


def test_bit_identical_fails_on_one_ulp():
    a, b = vector_inputs(100)
    expected = a + b
    close = expected.copy()
    close[3] = np.nextafter(close[3], np.float32(3))
    assert identical(expected.copy(), expected)
    assert not identical(close, expected)


def test_unknown_reference_is_refused():
    assert "unknown reference" in reference.unavailable_reason("jax")


@pytest.mark.parametrize("name", reference.REFERENCES)
def test_reference_where_importable(name):
    why = reference.unavailable_reason(name)
    if why is not None:
        with pytest.raises(reference.ReferenceUnavailable, match="."):
            reference.time_reference(name, *vector_inputs(16), RepeatPolicy.count(1))
        pytest.skip(f"{name}: {why}")
    a, b = vector_inputs(1 << 20)
    timing = reference.time_reference(name, a, b, RepeatPolicy.count(5))
    assert timing.agree and timing.n == 1 << 20
    assert timing.stats.n_samples == 5 and 0 < timing.stats.median_s < 0.1


def test_the_copy_kernel_copies_every_word_four_per_thread_with_a_ragged_tail():
    from gpu.core.backend import cuda
    from gpu.core.copies import COPY_THREADS, COPY_WORDS_PER_THREAD, copy_blocks, copy_kernel

    words = COPY_THREADS * COPY_WORDS_PER_THREAD + 7  # two blocks, the second mostly past the end
    src = np.arange(words, dtype=np.uint64) * 3 + 1
    d_src, d_dst = cuda.to_device(src), cuda.to_device(np.zeros(words, dtype=np.uint64))
    copy_kernel[copy_blocks(words), COPY_THREADS](d_src, d_dst)
    np.testing.assert_array_equal(d_dst.copy_to_host(), src)
    assert copy_blocks(words) == 2


def test_the_device_copy_reference_is_the_faster_of_a_held_memcpy_and_the_copy_kernel(monkeypatch):
    from types import SimpleNamespace

    from gpu.core.timing import Stats

    monkeypatch.setattr(peaks_mod, "BACKEND", SimpleNamespace(simulated=False))
    monkeypatch.setattr(peaks_mod, "time_device_memcpy", lambda nbytes, policy: Stats((2e-3, 2e-3, 2e-3)))
    monkeypatch.setattr(peaks_mod, "time_copy_kernel", lambda nbytes, policy: Stats((1e-3, 1e-3, 1e-3)))
    limit = peaks_mod._device_copy(1 << 20, RepeatPolicy.count(3))
    assert limit.gbps == pytest.approx(2 * (1 << 20) / 1e-3 / 1e9)  # the kernel's: faster
    assert (
        "memcpy (held stream)" in limit.how
        and "copy kernel, 4 × 8-byte words" in limit.how
        and "kept: copy kernel" in limit.how
    )
    monkeypatch.setattr(peaks_mod, "time_copy_kernel", lambda nbytes, policy: Stats((5e-3, 5e-3, 5e-3)))
    assert "kept: device-to-device memcpy" in peaks_mod._device_copy(1 << 20, RepeatPolicy.count(3)).how


def test_the_device_memcpy_is_timed_behind_the_verified_hold():
    from gpu.core.copies import time_device_memcpy
    from tests.test_timing import FakeOps

    ops = FakeOps()
    stats = time_device_memcpy(64, RepeatPolicy.count(3, warmup=0), ops=ops)
    assert stats.held is True and ops.log.count("hold") == 3
    assert ops.log[:3] == ["flush", "sync", "hold"]
