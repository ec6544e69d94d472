"""Statistics and the repeat policy, on fake clocks: no GPU, no real time."""

import itertools

import pytest

from gpu.core.timing import (
    RepeatPolicy,
    Stats,
    collect,
    format_factor,
    format_seconds,
    measure,
)


class FakeClock:
    """Advances by a scripted step each time it is read."""

    def __init__(self, steps):
        self._steps = itertools.cycle(steps)
        self.now = 0.0
        self.reads = 0

    def __call__(self):
        self.reads += 1
        self.now += next(self._steps)
        return self.now


def test_stats_summarise_samples_in_seconds():
    stats = Stats((0.004, 0.001, 0.002, 0.003))
    assert stats.median_s == pytest.approx(0.0025)
    assert (stats.min_s, stats.max_s, stats.n_samples) == (0.001, 0.004, 4)
    assert stats.to_dict()["samples"] == 4
    assert Stats.from_dict(stats.to_dict()) == stats


def test_stats_refuse_to_exist_without_samples():
    with pytest.raises(ValueError):
        Stats(())


def test_count_policy_takes_exactly_n_samples_after_warmup():
    calls = []
    result = collect(lambda: calls.append(1) or {"t": 1.0}, RepeatPolicy.count(5, warmup=2), noise_key="t")
    assert len(calls) == 7
    assert result["t"].n_samples == 5


def test_until_stable_stops_once_noise_is_below_target():
    samples = iter([1.0, 1.0, 1.0, 1.0] + [5.0] * 100)
    policy = RepeatPolicy.until_stable(max_noise=0.01, budget_s=1e9, max_repeat=50, warmup=0)
    result = collect(lambda: {"t": next(samples)}, policy, noise_key="t", clock=FakeClock([0.0]))
    assert result["t"].n_samples == policy.min_samples


def test_until_stable_stops_when_the_budget_is_spent():
    noisy = itertools.cycle([1.0, 3.0])
    policy = RepeatPolicy.until_stable(max_noise=0.001, budget_s=10.0, max_repeat=1000, warmup=0)
    # each loop reads the clock once; every read advances 1 s, so ~10 samples fit
    result = collect(lambda: {"t": next(noisy)}, policy, noise_key="t", clock=FakeClock([1.0]))
    assert 8 <= result["t"].n_samples <= 11


def test_measure_times_the_callable_with_the_given_clock():
    clock = FakeClock([0.5])
    stats = measure(lambda: None, RepeatPolicy.count(3, warmup=0), clock=clock)
    assert stats.samples_s == (0.5, 0.5, 0.5)


@pytest.mark.parametrize(
    "kwargs",
    [{"n_repeat": 0}, {"n_repeat": 1001}, {"warmup": -1}, {"budget_s": 0}, {"budget_s": -1.0}, {"max_noise": 0}],
)
def test_bad_policies_are_rejected_with_a_reason(kwargs):
    with pytest.raises(ValueError, match="must"):
        RepeatPolicy(**kwargs)


def test_human_formats():
    assert format_seconds(1.234) == "1.23 s"
    assert format_seconds(0.0456) == "45.6 ms"
    assert format_seconds(2.5e-6) == "2.5 µs"
    assert format_factor(84.5) == "84.5x"
    assert format_factor(1234.4) == "1,234x"


# --- the GPU timing logic, against fake events and a fake clock (no GPU needed) -------

from gpu.core.hold import HOLD_STREAM_NS, MAX_HOLD_RETRIES  # noqa: E402
from gpu.core.kernel_timing import HoldExpired, time_on_device  # noqa: E402
from gpu.core.timing import MIN_RELIABLE_SAMPLES, PhaseTimer  # noqa: E402


def time_kernel(launch, stream, policy, clock, **kw):
    """The primitive on a queued callable, as the tests below drive it."""
    return time_on_device(queue=launch, stream=stream, policy=policy, clock=clock, telemetry=False, **kw).stats


class FakeEvent:
    def __init__(self, device):
        self.device, self.t = device, None

    def record(self, stream):
        self.device.log.append("event")
        self.t = self.device.now

    def synchronize(self):
        pass


class FakeHold:
    def __init__(self, expired):
        self.expired = expired

    def query(self):
        return self.expired


class FakeOps:
    """A device timeline: launches advance it by ``kernel_s``; holds expire as scripted."""

    simulated = False

    def __init__(self, kernel_s=1e-3, expired=(), can_hold=True):
        self.now, self.kernel_s, self.log = 0.0, kernel_s, []
        self.expired, self.holds, self.can_hold = list(expired), [], can_hold

    def event(self):
        return FakeEvent(self)

    def elapsed_s(self, start, end):
        return end.t - start.t

    def hold(self, stream, hold_ns):
        self.log.append("hold")
        self.holds.append(hold_ns)
        if not self.can_hold:
            return None
        return FakeHold(self.expired.pop(0) if self.expired else False)

    def flush_l2(self, stream):
        self.log.append("flush")
        return True

    def synchronize(self, stream):
        self.log.append("sync")

    def launch(self):
        self.log.append("launch")
        self.now += self.kernel_s


def test_time_kernel_flushes_l2_then_holds_then_brackets_the_kernel_in_every_sample():
    ops = FakeOps(kernel_s=2e-3)
    stats = time_kernel(ops.launch, None, RepeatPolicy.count(4, warmup=1), clock=FakeClock([0.0]), ops=ops)
    assert stats.samples_s == (2e-3,) * 4
    assert ops.log == ["flush", "sync", "hold", "event", "launch", "event"] * 5  # warm-up + 4 samples
    assert stats.held is True and stats.retries == 0


def test_warm_cache_option_skips_the_flush():
    ops = FakeOps()
    time_kernel(ops.launch, None, RepeatPolicy.count(3, warmup=0), clock=FakeClock([0.0]), flush_l2=False, ops=ops)
    assert "flush" not in ops.log and ops.log.count("launch") == 3


def test_an_expired_hold_discards_the_sample_and_retries_with_a_longer_hold():
    ops = FakeOps(expired=[False, True, True])  # the 2nd sample's hold expires twice
    stats = time_kernel(ops.launch, None, RepeatPolicy.count(3, warmup=0), clock=FakeClock([0.0]), ops=ops)
    assert stats.n_samples == 3 and stats.retries == 2
    assert ops.log.count("launch") == 5  # 3 kept + 2 discarded
    assert ops.holds == [HOLD_STREAM_NS, HOLD_STREAM_NS, 2 * HOLD_STREAM_NS, 4 * HOLD_STREAM_NS, 4 * HOLD_STREAM_NS]
    assert stats.to_dict()["retries"] == 2 and "2 samples retried" in str(stats)


def test_a_hold_that_always_expires_is_an_error_not_a_silent_launch_latency():
    ops = FakeOps(expired=[True] * 100)
    with pytest.raises(HoldExpired, match="too busy"):
        time_kernel(ops.launch, None, RepeatPolicy.count(1, warmup=0), clock=FakeClock([0.0]), ops=ops)
    assert ops.log.count("launch") == MAX_HOLD_RETRIES + 1


def test_without_a_hold_the_stats_say_the_launch_is_included():
    ops = FakeOps(can_hold=False)
    stats = time_kernel(ops.launch, None, RepeatPolicy.count(2, warmup=0), clock=FakeClock([0.0]), ops=ops)
    assert stats.held is False and stats.to_dict()["held"] is False


def test_minimum_samples_are_taken_before_the_budget_can_stop_sampling():
    policy = RepeatPolicy.until_stable(max_noise=0.01, budget_s=0.1, max_repeat=50, warmup=0)
    noisy = itertools.cycle([1.0, 3.0])
    # every clock read advances 10 s: the budget is spent after the first sample
    result = collect(lambda: {"t": next(noisy)}, policy, clock=FakeClock([10.0]))
    assert result["t"].n_samples == policy.min_samples == MIN_RELIABLE_SAMPLES


def test_every_series_has_its_own_stopping_rule():
    quiet, noisy = itertools.repeat(1.0), itertools.chain([1.0, 2.0], itertools.repeat(1.0))
    policy = RepeatPolicy.until_stable(max_noise=0.2, budget_s=1e9, max_repeat=200, warmup=0)
    result = collect(
        lambda: {"total": next(quiet), "kernel": next(noisy)}, policy, noise_key="total", clock=FakeClock([0.0])
    )
    # "total" alone would have stopped at 3 samples; "kernel" keeps sampling until it is quiet too
    assert result["kernel"].n_samples > MIN_RELIABLE_SAMPLES
    assert result["kernel"].noise <= 0.2 and result["total"].n_samples == result["kernel"].n_samples


def test_fewer_than_three_samples_are_flagged_everywhere_a_stats_is_shown():
    assert Stats((1.0, 2.0)).few_samples and Stats((1.0, 2.0)).to_dict()["few_samples"] is True
    assert "spread unknown" in str(Stats((1.0,)))
    assert not Stats((1.0, 1.0, 1.0)).few_samples and "spread unknown" not in str(Stats((1.0, 1.0, 1.0)))


def test_phase_timer_reads_consecutive_events_from_its_ops():
    ops = FakeOps()
    timer = PhaseTimer(None, ("h2d", "kernel"), ops=ops)
    timer.start()
    ops.now += 0.5
    timer.end("h2d")
    ops.launch()
    timer.end("kernel")
    assert timer.durations_s() == pytest.approx({"h2d": 0.5, "kernel": 1e-3})
    with pytest.raises(RuntimeError, match="out of order"):
        timer.start()
        timer.end("kernel")
