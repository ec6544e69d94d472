"""Timers, sample statistics and the repeat policy.

A measurement is a ``Stats``: raw samples in seconds with warm-up runs excluded.
``RepeatPolicy`` says how many samples to take: a fixed count, or (the nvbench way)
until the relative noise is below a target or a time budget is spent.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

Clock = Callable[[], float]


@dataclass(frozen=True)
class Stats:
    """Samples of one measured quantity, in seconds (warm-up excluded)."""

    samples_s: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.samples_s:
            raise ValueError("Stats needs at least one sample")

    @property
    def n_samples(self) -> int:
        return len(self.samples_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def min_s(self) -> float:
        return min(self.samples_s)

    @property
    def max_s(self) -> float:
        return max(self.samples_s)

    @property
    def mean_s(self) -> float:
        return statistics.fmean(self.samples_s)

    @property
    def noise(self) -> float:
        """Relative standard deviation (stdev / mean); 0 for a single sample."""
        if self.n_samples < 2 or self.mean_s <= 0:
            return 0.0
        return statistics.stdev(self.samples_s) / self.mean_s

    def to_dict(self) -> dict:
        return {
            "median_s": self.median_s,
            "min_s": self.min_s,
            "max_s": self.max_s,
            "mean_s": self.mean_s,
            "noise": self.noise,
            "samples": self.n_samples,
            "samples_s": list(self.samples_s),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> "Stats":
        return cls(tuple(float(x) for x in data["samples_s"]))

    def __str__(self) -> str:
        return (
            f"median {format_seconds(self.median_s)} "
            f"(min {format_seconds(self.min_s)}, max {format_seconds(self.max_s)}, "
            f"n={self.n_samples})"
        )


@dataclass(frozen=True)
class RepeatPolicy:
    """How many samples to take.

    ``budget_s`` None: exactly ``n_repeat`` samples. Otherwise sample until the
    relative noise (stdev/mean) is at most ``max_noise`` with at least ``min_samples``,
    or until ``budget_s`` seconds of measuring are spent, or ``n_repeat`` samples are
    taken, whichever comes first. ``warmup`` runs always come first and are discarded.
    """

    n_repeat: int = 10
    warmup: int = 1
    budget_s: float | None = None
    max_noise: float = 0.02
    min_samples: int = 3

    MAX_REPEAT = 1000  # more samples than this add nothing but waiting

    def __post_init__(self) -> None:
        if not 1 <= self.n_repeat <= self.MAX_REPEAT:
            raise ValueError(f"repeats must be between 1 and {self.MAX_REPEAT}, got {self.n_repeat!r}")
        if self.warmup < 0:
            raise ValueError(f"warm-up runs must be 0 or more, got {self.warmup!r}")
        if self.budget_s is not None and not self.budget_s > 0:
            raise ValueError(f"the time budget must be a positive number of seconds, got {self.budget_s!r}")
        if not self.max_noise > 0:
            raise ValueError(f"the noise target must be positive, got {self.max_noise!r}")

    @classmethod
    def count(cls, n_repeat: int, warmup: int = 1) -> "RepeatPolicy":
        return cls(n_repeat=n_repeat, warmup=warmup)

    @classmethod
    def until_stable(
        cls, max_noise: float, budget_s: float, max_repeat: int = 100, warmup: int = 1
    ) -> "RepeatPolicy":
        return cls(n_repeat=max_repeat, warmup=warmup, budget_s=budget_s, max_noise=max_noise)

    def describe(self) -> str:
        if self.budget_s is None:
            return f"{self.n_repeat} timed runs after {self.warmup} warm-up"
        return (
            f"until noise ≤ {self.max_noise:.0%} or {self.budget_s:g} s spent "
            f"(at most {self.n_repeat} runs, after {self.warmup} warm-up)"
        )

    def to_dict(self) -> dict:
        return {
            "n_repeat": self.n_repeat,
            "warmup": self.warmup,
            "budget_s": self.budget_s,
            "max_noise": self.max_noise,
            "min_samples": self.min_samples,
        }

    def done(self, samples: Sequence[float], spent_s: float) -> bool:
        """True when no more samples are needed."""
        if len(samples) >= self.n_repeat:
            return True
        if self.budget_s is None:
            return False
        if spent_s >= self.budget_s:
            return True
        return len(samples) >= self.min_samples and Stats(tuple(samples)).noise <= self.max_noise


def collect(
    run_once: Callable[[], Mapping[str, float]],
    policy: RepeatPolicy,
    *,
    noise_key: str,
    clock: Clock = time.perf_counter,
) -> dict[str, Stats]:
    """Call ``run_once`` per policy; each call returns seconds per named phase.

    Warm-up calls are discarded. Stopping looks at the noise of ``noise_key``.
    Returns one Stats per phase name.
    """
    for _ in range(policy.warmup):
        run_once()
    samples: dict[str, list[float]] = {}
    started = clock()
    while True:
        for key, seconds in run_once().items():
            samples.setdefault(key, []).append(float(seconds))
        if policy.done(samples[noise_key], clock() - started):
            break
    return {key: Stats(tuple(values)) for key, values in samples.items()}


def measure(
    fn: Callable[[], object], policy: RepeatPolicy, *, clock: Clock = time.perf_counter
) -> Stats:
    """Wall-clock ``fn()`` per policy; returns its Stats in seconds."""

    def once() -> dict[str, float]:
        start = clock()
        fn()
        return {"wall": clock() - start}

    return collect(once, policy, noise_key="wall", clock=clock)["wall"]


def format_seconds(seconds: float) -> str:
    """Human units: 1.23 s, 45.6 ms, 789 µs, 12.3 ns."""
    if seconds is None or math.isnan(seconds):
        return "—"
    magnitude = abs(seconds)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if magnitude >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    raise AssertionError("unreachable")


class PhaseTimer:
    """Times consecutive phases of work queued on one CUDA stream.

    On hardware each boundary is a CUDA event recorded on the stream (events are
    created once, here, not per sample). In the simulator events return no time, so
    each boundary synchronises and reads the wall clock instead.

    Usage per sample: ``start()``, then ``end(name)`` after queuing each phase, then
    ``durations_s()`` (which waits for the stream) -> {name: seconds}.
    """

    def __init__(self, stream, names: Sequence[str], clock: Clock = time.perf_counter):
        from gpu.core.backend import BACKEND, cuda

        self._stream = stream
        self._names = tuple(names)
        self._simulated = BACKEND.simulated
        self._clock = clock
        self._events = [] if self._simulated else [cuda.event() for _ in range(len(names) + 1)]
        self._times: list[float] = []

    def start(self) -> None:
        self._times = []
        self._mark()

    def end(self, name: str) -> None:
        expected = self._names[len(self._times) - 1]
        if name != expected:
            raise RuntimeError(f"phase {name!r} ended out of order; expected {expected!r}")
        self._mark()

    def _mark(self) -> None:
        if self._simulated:
            self._stream.synchronize()
            self._times.append(self._clock())
        else:
            self._events[len(self._times)].record(self._stream)
            self._times.append(0.0)  # placeholder: the event holds the time

    def durations_s(self) -> dict[str, float]:
        if len(self._times) != len(self._names) + 1:
            raise RuntimeError("durations_s() called before every phase ended")
        if self._simulated:
            return {n: self._times[i + 1] - self._times[i] for i, n in enumerate(self._names)}
        self._events[-1].synchronize()
        return {
            n: self._events[i].elapsed_time(self._events[i + 1]) / 1e3  # ms -> s
            for i, n in enumerate(self._names)
        }


def format_factor(factor: float) -> str:
    """A speedup as "84.5x", "0.031x", "1,234x"."""
    if factor != factor:  # NaN
        return "—"
    return f"{factor:,.0f}x" if factor >= 100 else f"{factor:.3g}x"


def time_kernel(launch: Callable[[], None], stream, policy: RepeatPolicy, clock: Clock = time.perf_counter) -> Stats:
    """Time ``launch()`` (which queues one kernel on ``stream``) per policy, in seconds.

    On hardware the stream is held by a sleeping kernel while the start event and the
    launch are queued, so each sample is the kernel's execution alone, without the
    host's launch latency (where the device cannot run that kernel,
    ``gpu.kernels.vector_add.stream_hold_problem()`` says why and the latency is included). In the
    simulator it is the wall-clock time of the launch.
    """
    from gpu.kernels.vector_add import HOLD_STREAM_NS, hold_stream, stream_hold_problem

    timer = PhaseTimer(stream, ("kernel",), clock=clock)
    hold = stream_hold_problem() is None

    def once() -> dict[str, float]:
        if hold:
            hold_stream[1, 1, stream](HOLD_STREAM_NS)
        timer.start()
        launch()
        timer.end("kernel")
        return timer.durations_s()

    return collect(once, policy, noise_key="kernel", clock=clock)["kernel"]
