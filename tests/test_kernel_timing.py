"""The one GPU timing primitive, ``time_on_device``, on fake events, holds and clocks."""

import numpy as np
import pytest

from gpu.core import kernel_timing
from gpu.core.hold import HOLD_STREAM_NS
from gpu.core.kernel_timing import HoldExpired, time_on_device
from gpu.core.timing import RepeatPolicy
from tests.test_timing import FakeClock, FakeHold, FakeOps


class LoggingHold(FakeHold):
    def __init__(self, expired, log):
        super().__init__(expired)
        self.log = log

    def query(self):
        self.log.append("query")
        return self.expired


class OrderOps(FakeOps):
    """FakeOps whose holds log when they are queried."""

    def hold(self, stream, hold_ns):
        handle = super().hold(stream, hold_ns)
        return None if handle is None else LoggingHold(handle.expired, self.log)


def timed(ops, n=3, warmup=0, **kw):
    return time_on_device(queue=ops.launch, stream=None, policy=RepeatPolicy.count(n, warmup=warmup),
                          clock=FakeClock([0.0]), telemetry=False, ops=ops, **kw)


def test_flush_then_synchronise_then_hold_then_events_and_the_hold_is_queried_after_the_end_event():
    ops = OrderOps(kernel_s=1e-3)
    timed(ops, n=1, l2_bytes=50 << 20)
    assert ops.log == ["flush", "sync", "hold", "event", "launch", "event", "query"]


def test_each_kept_sample_records_whether_it_was_held_and_its_retries():
    # warm-up retried once (not a sample), then samples retried 1, 2 and 0 times
    ops = FakeOps(expired=[True, False, True, False, True, True, False, False])
    timing = timed(ops, n=3, warmup=1, l2_bytes=50 << 20)
    assert timing.sample_retries == (1, 2, 0)
    assert timing.sample_held == (True, True, True) and timing.held
    assert timing.retries == timing.stats.retries == 3 and timing.stats.held is True
    data = timing.to_dict()
    assert data["sample_retries"] == [1, 2, 0] and data["sample_held"] == [True, True, True]
    assert ops.holds[-1] == 16 * HOLD_STREAM_NS  # four expiries doubled it; the longer hold is kept


def test_without_a_hold_every_sample_says_it_includes_the_launch():
    timing = timed(FakeOps(), n=3, hold=False, l2_bytes=50 << 20)
    assert timing.sample_held == (False, False, False) and timing.stats.held is False
    assert any("launch latency" in c for c in timing.caveats())


def test_an_always_expiring_hold_raises_rather_than_recording_launch_latency():
    with pytest.raises(HoldExpired, match="too busy"):
        timed(FakeOps(expired=[True] * 100), n=1, l2_bytes=50 << 20)


def test_fewer_than_three_samples_and_an_l2_resident_working_set_are_marked():
    timing = timed(FakeOps(), n=2, l2_bytes=50 << 20, working_set_bytes=12 << 20)
    assert timing.few_samples and timing.l2_resident and timing.marks == "*°"
    assert timing.to_dict()["few_samples"] and timing.to_dict()["l2_resident"]
    big = timed(FakeOps(), n=3, l2_bytes=50 << 20, working_set_bytes=200 << 20)
    assert big.marks == "" and not big.l2_resident and big.caveats() == []


def test_an_unknown_l2_size_or_a_warm_request_is_said_in_the_result():
    unknown = timed(FakeOps(), n=3, l2_bytes=0)
    assert not unknown.l2_flushed and "does not report its L2 size" in unknown.l2_note
    ops = FakeOps()
    warm = timed(ops, n=3, l2_bytes=50 << 20, flush_l2=False)
    assert not warm.l2_flushed and "warm" in warm.l2_note and "flush" not in ops.log
    flushed = timed(FakeOps(), n=3, l2_bytes=50 << 20)
    assert flushed.l2_flushed and flushed.l2_note is None


def test_a_kernel_is_launched_through_the_configured_launch_set_up_once(monkeypatch):
    configured = []

    def fake_configured_launch(kernel, grid, block, stream, *args):
        configured.append((kernel, grid, block))
        return lambda *a: ops.launch()

    import gpu.core.launch_path as launch_path

    monkeypatch.setattr(launch_path, "configured_launch", fake_configured_launch)
    ops = FakeOps()
    args = (object(), object())  # stand-ins for device arrays
    timing = time_on_device("kernel", args, 4, 256, policy=RepeatPolicy.count(5, warmup=1), stream="s",
                            clock=FakeClock([0.0]), telemetry=False, ops=ops, l2_bytes=1 << 20)
    assert configured == [("kernel", 4, 256)]  # once, outside the six samples
    assert ops.log.count("launch") == 6 and timing.launch.startswith("configured once")


def test_host_arrays_are_refused_because_they_would_be_copied_in_every_sample():
    with pytest.raises(TypeError, match="NumPy array"):
        time_on_device("kernel", (np.zeros(4),), 1, 32, policy=RepeatPolicy.count(1), ops=FakeOps(), telemetry=False)
    with pytest.raises(ValueError, match="either a kernel"):
        time_on_device("kernel", (), 1, 32, policy=RepeatPolicy.count(1), queue=lambda: None, ops=FakeOps())


def test_telemetry_is_recorded_with_the_timing(monkeypatch):
    class Monitor:
        def stop(self):
            return {
                "available": True,
                "flagged": True,
                "flags": ["SM clock dropped from 1,980 to 1,600 MHz while busy"],
            }

    monkeypatch.setattr(kernel_timing, "_monitor", Monitor)
    timing = time_on_device(queue=FakeOps().launch, stream=None, policy=RepeatPolicy.count(3, warmup=0),
                            clock=FakeClock([0.0]), ops=FakeOps(), l2_bytes=1 << 20)
    assert timing.telemetry["flagged"] and any("clocks dropped" in c for c in timing.caveats())


def test_a_run_on_a_device_without_an_l2_size_says_the_flush_was_skipped(monkeypatch):
    from types import SimpleNamespace

    from gpu.core import l2

    monkeypatch.setattr(l2, "BACKEND", SimpleNamespace(simulated=False))
    monkeypatch.setattr(l2, "l2_cache_bytes", lambda: None)
    assert "L2 not flushed" in l2.flush_problem()
    monkeypatch.setattr(l2, "l2_cache_bytes", lambda: 50 << 20)
    assert l2.flush_problem() is None


def test_the_flush_writes_twice_the_l2_with_one_memset_on_the_stream(monkeypatch):
    from types import SimpleNamespace

    from gpu.core import l2

    calls = []
    monkeypatch.setattr(l2, "l2_cache_bytes", lambda: 50 << 20)
    monkeypatch.setattr(l2, "_scratch", lambda device_id, nbytes: ("scratch", nbytes))
    monkeypatch.setattr(l2, "cuda", SimpleNamespace(get_current_device=lambda: SimpleNamespace(id=0)))
    monkeypatch.setattr(l2.numba_internals, "device_memset",
                        lambda buf, value, nbytes, stream: calls.append((buf, value, nbytes, stream)))
    assert l2.flush_l2("stream") is True
    assert calls == [(("scratch", 100 << 20), 0, 100 << 20, "stream")]  # 2 x L2, on the measured stream
    monkeypatch.setattr(l2, "l2_cache_bytes", lambda: None)
    assert l2.flush_l2("stream") is False and len(calls) == 1  # unknown size: nothing queued, and it says so


def test_the_stream_hold_is_queued_and_checked_in_one_place_only():
    """One timing primitive: no module but gpu/core/kernel_timing.py queues a hold and
    queries it, so no experiment can time a kernel its own (unverified) way."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "gpu"
    holders = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if re.search(r"\bops\.hold\(|\bhold_stream\[", p.read_text()) and p.name != "hold.py")
    assert holders == ["core/kernel_timing.py"]
