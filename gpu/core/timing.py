"""Timers, sample statistics and the repeat policy.

A measurement is a ``Stats``: raw samples in seconds with warm-up runs excluded.
``RepeatPolicy`` says how many samples to take: a fixed count, or (the nvbench way)
until the relative noise is below a target or a time budget is spent — but never fewer
than ``min_samples`` before a budget stops it, and every series sampled together has
its own stopping rule (``collect``). A figure from fewer than ``MIN_RELIABLE_SAMPLES``
samples says so (``Stats.few_samples``) wherever it is shown.

A GPU series (a kernel alone behind a verified stream hold, the L2 flushed before every
sample) is timed by ``gpu.core.kernel_timing.time_on_device``, built on these pieces.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC

from gpu.core.limits import MAX_REPEATS
from gpu.core.shape import Shaped, shaped

Clock = Callable[[], float]

# Fewer samples than this cannot show their own spread: such a figure is flagged
# ("n<3") in every table, chart, download and check report.
MIN_RELIABLE_SAMPLES = 3
# The allocation rule, one for every experiment; captions quote it.
ALLOCATION_RULE = "device buffers are allocated before any start event, so no figure includes allocation"


@shaped(
    derived={
        "median_s": lambda s: s.median_s,
        "min_s": lambda s: s.min_s,
        "max_s": lambda s: s.max_s,
        "mean_s": lambda s: s.mean_s,
        "noise": lambda s: s.noise,
        "samples": lambda s: s.n_samples,
        "few_samples": lambda s: s.few_samples,
    }
)
@dataclass(frozen=True)
class Stats(Shaped):
    """Samples of one measured quantity, in seconds (warm-up excluded).

    ``retries``: samples discarded and re-taken because the stream hold had expired
    before the kernel was queued (see ``gpu.core.kernel_timing``). ``held``: True when every
    sample was taken behind a verified stream hold, False when no hold was possible
    here (the samples then include the launch latency), None for timings that need
    no hold (copies, CPU, end to end).
    """

    samples_s: tuple[float, ...]
    retries: int = 0
    held: bool | None = None

    def __post_init__(self) -> None:
        if not self.samples_s:
            raise ValueError("Stats needs at least one sample")

    @property
    def n_samples(self) -> int:
        return len(self.samples_s)

    @property
    def few_samples(self) -> bool:
        """Too few samples to know the spread: flag the figure wherever it is shown."""
        return self.n_samples < MIN_RELIABLE_SAMPLES

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

    def __str__(self) -> str:
        flags = (
            f"; only {self.n_samples} sample{'s' if self.n_samples != 1 else ''}, spread unknown"
            if self.few_samples
            else ""
        )
        if self.retries:
            flags += f"; {self.retries} sample{'s' if self.retries != 1 else ''} retried (hold expired)"
        return (
            f"median {format_seconds(self.median_s)} "
            f"(min {format_seconds(self.min_s)}, max {format_seconds(self.max_s)}, "
            f"n={self.n_samples}{flags})"
        )


@shaped()
@dataclass(frozen=True)
class RepeatPolicy(Shaped):
    """How many samples to take.

    ``budget_s`` None: exactly ``n_repeat`` samples. Otherwise take at least
    ``min_samples`` (capped by ``n_repeat``) whatever the budget, then sample until the
    relative noise (stdev/mean) is at most ``max_noise``, or until ``budget_s`` seconds
    of measuring are spent, or ``n_repeat`` samples are taken, whichever comes first.
    ``warmup`` runs always come first and are discarded.
    """

    n_repeat: int = 10
    warmup: int = 1
    budget_s: float | None = None
    max_noise: float = 0.02
    min_samples: int = 3

    MAX_REPEAT = MAX_REPEATS

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
    def count(cls, n_repeat: int, warmup: int = 1) -> RepeatPolicy:
        return cls(n_repeat=n_repeat, warmup=warmup)

    @classmethod
    def until_stable(
        cls, max_noise: float, budget_s: float, max_repeat: int = 100, warmup: int = 1
    ) -> RepeatPolicy:
        return cls(n_repeat=max_repeat, warmup=warmup, budget_s=budget_s, max_noise=max_noise)

    def describe(self) -> str:
        if self.budget_s is None:
            return f"{self.n_repeat} timed runs after {self.warmup} warm-up"
        return (
            f"until noise ≤ {self.max_noise:.0%} or {self.budget_s:g} s spent "
            f"(at most {self.n_repeat} runs, after {self.warmup} warm-up)"
        )

    def done(self, samples: Sequence[float], spent_s: float) -> bool:
        """True when no more samples of this one series are needed."""
        if len(samples) >= self.n_repeat:
            return True
        if self.budget_s is None:
            return False
        # Why the minimum comes before the budget: at N >= 2^28 the copies alone spent
        # the whole budget, and the kernel-only figures quoted from those runs (3,448
        # GB/s, "1.245x PyTorch") rested on one sample each.
        if len(samples) < self.min_samples:
            return False
        if spent_s >= self.budget_s:
            return True
        return Stats(tuple(samples)).noise <= self.max_noise


def collect(
    run_once: Callable[[], Mapping[str, float]],
    policy: RepeatPolicy,
    *,
    noise_key: str | None = None,
    clock: Clock = time.perf_counter,
) -> dict[str, Stats]:
    """Call ``run_once`` per policy; each call returns seconds per named series.

    Warm-up calls are discarded. Every series returned has its own stopping rule:
    sampling goes on until ``policy.done`` holds for each of them, so a quiet
    end-to-end time cannot stop a noisy phase at one sample.
    ``noise_key`` is accepted for older callers and ignored. Returns one Stats per name.
    """
    del noise_key  # every series is checked now
    for _ in range(policy.warmup):
        run_once()
    samples: dict[str, list[float]] = {}
    started = clock()
    while True:
        for key, seconds in run_once().items():
            samples.setdefault(key, []).append(float(seconds))
        spent = clock() - started
        if all(policy.done(values, spent) for values in samples.values()):
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

    Each boundary is an event from ``ops`` (``gpu.core.hold.default_ops``: CUDA events
    on hardware, created once here, not per sample; in the simulator the stream is
    synchronised and the wall clock read instead; fakes in tests).

    Usage per sample: ``start()``, then ``end(name)`` after queuing each phase, then
    ``durations_s()`` (which waits for the stream) -> {name: seconds}.
    """

    def __init__(self, stream, names: Sequence[str], clock: Clock = time.perf_counter, ops=None):
        from gpu.core.hold import default_ops

        self._stream = stream
        self._names = tuple(names)
        self._ops = ops or default_ops(clock)
        self._events = [self._ops.event() for _ in range(len(names) + 1)]
        self._marked = 0

    def start(self) -> None:
        self._marked = 0
        self._mark()

    def end(self, name: str) -> None:
        expected = self._names[self._marked - 1] if 0 < self._marked <= len(self._names) else None
        if name != expected:
            raise RuntimeError(f"phase {name!r} ended out of order; expected {expected!r}")
        self._mark()

    def _mark(self) -> None:
        self._events[self._marked].record(self._stream)
        self._marked += 1

    def durations_s(self) -> dict[str, float]:
        if self._marked != len(self._names) + 1:
            raise RuntimeError("durations_s() called before every phase ended")
        self._events[-1].synchronize()
        return {n: self._ops.elapsed_s(self._events[i], self._events[i + 1]) for i, n in enumerate(self._names)}


def format_factor(factor: float) -> str:
    """A speedup as "84.5x", "0.031x", "1,234x"."""
    if factor != factor:  # NaN
        return "—"
    return f"{factor:,.0f}x" if factor >= 100 else f"{factor:.3g}x"


def utc_timestamp() -> str:
    """Now, in UTC, to the second (ISO 8601): when a result was measured."""
    from datetime import datetime

    return datetime.now(UTC).isoformat(timespec="seconds")
