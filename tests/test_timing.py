"""Statistics and the repeat policy, on fake clocks: no GPU, no real time."""

import itertools

import pytest

from gpu.core.timing import RepeatPolicy, Stats, collect, format_factor, format_seconds, measure


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
    "kwargs", [{"n_repeat": 0}, {"n_repeat": 1001}, {"warmup": -1}, {"budget_s": 0}, {"budget_s": -1.0}, {"max_noise": 0}]
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
