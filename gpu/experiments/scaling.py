"""Size sweep: the vector add at every size of a range, for every implementation.

``make_config`` validates a range and choices (InputError says what is allowed);
``run_sweep`` measures every size × implementation, checking ``should_stop`` between
steps so a sweep can be cancelled and keep what it measured; a failure at one point
(out of memory, say) is recorded there and the sweep goes on. ``find_crossover`` is a
pure function over two (N, median) series: the smallest N from which the GPU stays
faster, interpolated in log space.

Series measured (keys of ``SERIES_LABELS``): the GPU end to end (wall clock, copies
included) and its event-timed phases (H2D, kernel, D2H) from one run; the CPU
implementations; and the optional CuPy / PyTorch ``a + b`` references.
"""

from __future__ import annotations

import io
import json
import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Sequence

import numpy as np

from gpu.core import cpu, reference, series
from gpu.core.backend import BACKEND
from gpu.core.device import DeviceInfo, device_info
from gpu.kernels.vector_add import ELEMENTS_PER_THREAD, blocks_for, compile_vector_add, vector_add_ilp_kernel
from gpu.core.agreement import identical
from gpu.core.arrays import tiled_vector_inputs
from gpu.core.l2 import fits_in_l2, l2_cache_bytes
from gpu.core.limits import (
    InputError, check_cpu_n, check_cpu_work, check_repeats, check_sweep_points, check_threads, check_threads_per_block, kernel_cap,
    load_config, max_cpu_vector_n, max_vector_n, parse_flag, parse_int, parse_seconds, parse_size, release_device_memory,
)
from gpu.core.peaks import Peaks, measure_peaks
from gpu.core.telemetry import TelemetryMonitor, describe as describe_telemetry
from gpu.core.timing import Clock, RepeatPolicy, Stats, format_factor, format_seconds, utc_timestamp
from gpu.experiments.base import Experiment, Param, PerBackend, Progress
from gpu.experiments.registry import register
from gpu.experiments.vector_add import BYTES_PER_ELEMENT, time_cpu, time_gpu_phases, time_resident_kernel

# What a user can choose: the GPU kernel (end to end and kernel only come together),
# the CPU implementations, and the reference libraries.
IMPLS = ("gpu", "gpu-ilp", *cpu.IMPLEMENTATIONS, *reference.REFERENCES)
ON_DEVICE = ("gpu", "gpu-ilp", *reference.REFERENCES)  # implementations that hold device memory
IMPL_LABELS = {
    "gpu": "GPU kernel (Numba CUDA): end to end and kernel only",
    "gpu-ilp": "GPU kernel, 4 elements per thread (not the article's; kernel only)",
    **cpu.LABELS,
    **reference.LABELS,
}
# Series measured -> display label (the names ui.charts.common.COLORS colours).
SERIES_LABELS = {
    "gpu-total": series.label("total"),
    "gpu-kernel": series.label("kernel"),
    "gpu-launch-kernel": series.label("kernel-with-launch"),
    "gpu-ilp": series.label("kernel-ilp"),
    "gpu-h2d": series.label("h2d"),
    "gpu-d2h": series.label("d2h"),
    **series.labels("python", "numpy", "numba", "numba-parallel", "cupy", "torch"),
}
# The GPU figures crossovers are found for: end to end, the kernel with its launch from
# Python, the kernel alone (issue 10, item 9: stated for the kernel alone and with the launch).
GPU_SERIES = ("gpu-total", "gpu-launch-kernel", "gpu-kernel")
# Series whose samples lie inside a gpu-total sample (so not counted twice as measured time).
INSIDE_TOTAL = ("gpu-h2d", "gpu-launch-kernel", "gpu-d2h")
PHASE_SERIES = ("gpu-h2d", "gpu-kernel", "gpu-d2h")  # the shares of the GPU time
DEVICE_SERIES = ("gpu-kernel", "gpu-ilp", "cupy", "torch")  # work done inside device memory
CPU_SERIES = tuple(cpu.IMPLEMENTATIONS)
# Bytes each series moves per element: a and b in (8), c out (4), both for vector add (12).
BYTES_PER_ELEMENT_OF = {"gpu-h2d": 8, "gpu-d2h": 4}
SPACINGS = ("pow2", "decade")
DEFAULT_MIN_N = 2**10
PYTHON_BUDGET_PER_POINT_S = 2.0  # per point: the Python loop beyond this is only estimated
INPUT_BLOCK = 2**20  # distinct random values per input vector (see _host_buffers)


# --- configuration -----------------------------------------------------------------


def sweep_sizes(min_n: int, max_n: int, spacing: str = "pow2") -> tuple[int, ...]:
    """Sizes from ``min_n`` to ``max_n`` inclusive: every power of two (or of ten)
    in between, plus both ends. Empty when the range is inverted."""
    if spacing not in SPACINGS:
        raise InputError(f"spacing must be one of {', '.join(SPACINGS)}, got {spacing!r}")
    if min_n < 1 or max_n < min_n:
        return ()
    base = 2 if spacing == "pow2" else 10
    sizes = {min_n, max_n}
    power = 1
    while power <= max_n:
        if power >= min_n:
            sizes.add(power)
        power *= base
    return tuple(sorted(sizes))


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep: sizes, implementations, launch geometry and repeat policy."""

    min_n: int
    max_n: int
    spacing: str
    impls: tuple[str, ...]
    threads_per_block: int = 256
    policy: RepeatPolicy = field(default_factory=lambda: RepeatPolicy.count(5))
    python_budget_s: float = PYTHON_BUDGET_PER_POINT_S
    max_wall_s: float | None = None  # stop (keeping the points so far) after this long
    seed: int = 0
    descending: bool = False  # largest first: a time limit then drops the small sizes
    warm_l2: bool = False  # True: no L2 flush before GPU samples (to show the difference)
    # In the simulator: the largest N a (simulated) kernel runs at; above it only the CPU
    # implementations run (issue 12). None: every implementation at every size (a GPU).
    kernel_max_n: int | None = None

    @property
    def sizes(self) -> tuple[int, ...]:
        """Sizes in the order they are measured."""
        sizes = sweep_sizes(self.min_n, self.max_n, self.spacing)
        return sizes[::-1] if self.descending else sizes

    def runs_at(self, impl: str, n: int) -> bool:
        """Whether ``impl`` is measured at ``n``: device implementations only up to ``kernel_max_n``."""
        return impl not in ON_DEVICE or self.kernel_max_n is None or n <= self.kernel_max_n

    @property
    def kernel_skipped_sizes(self) -> tuple[int, ...]:
        """Sizes above the simulator's kernel cap, where the chosen GPU implementations do not run."""
        if self.kernel_max_n is None or not any(impl in ON_DEVICE for impl in self.impls):
            return ()
        return tuple(n for n in sorted(self.sizes) if n > self.kernel_max_n)

    @property
    def steps(self) -> int:
        return sum(self.runs_at(impl, n) for n in self.sizes for impl in self.impls)

    def to_dict(self) -> dict:
        return {
            "min_n": self.min_n,
            "max_n": self.max_n,
            "spacing": self.spacing,
            "sizes": list(self.sizes),
            "impls": list(self.impls),
            "threads_per_block": self.threads_per_block,
            "policy": self.policy.to_dict(),
            "policy_description": self.policy.describe(),
            "python_budget_s": self.python_budget_s,
            "max_wall_s": self.max_wall_s,
            "seed": self.seed,
            "descending": self.descending,
            "l2": "warm" if self.warm_l2 else "flushed before every GPU sample",
            "dtype": "float32",
            "kernel_max_n": self.kernel_max_n,
            "kernel_skipped_sizes": list(self.kernel_skipped_sizes),
        }


def repeat_policy(
    mode: str = "count",
    repeats: int | str = 5,
    *,
    max_noise: float = 0.02,
    budget_s: float | None = None,
    warmup: int = 1,
) -> RepeatPolicy:
    """A RepeatPolicy from user input: ``mode`` "count" (``repeats`` samples) or
    "until_stable" (until noise ≤ ``max_noise`` or ``budget_s`` seconds per point,
    at most ``repeats`` samples). Raises InputError with what is allowed."""
    n = parse_int(repeats, "repeats")
    if not 1 <= n <= RepeatPolicy.MAX_REPEAT:
        raise InputError(f"repeats must be between 1 and {RepeatPolicy.MAX_REPEAT}, got {n}")
    if mode not in ("count", "until_stable"):
        raise InputError(f"repeat mode must be 'count' or 'until_stable', got {mode!r}")
    if not 0 < max_noise < 1:
        raise InputError(f"the noise target must be between 0 and 1 (e.g. 0.02 for 2%), got {max_noise!r}")
    if mode == "count":  # the noise target only flags noisy points here
        return RepeatPolicy(n_repeat=n, warmup=warmup, max_noise=max_noise)
    if budget_s is None or not budget_s > 0:
        raise InputError(f"the time budget per point must be more than 0 seconds, got {budget_s!r}")
    return RepeatPolicy.until_stable(max_noise, budget_s, max_repeat=n, warmup=warmup)


def make_config(
    min_n: int | str = DEFAULT_MIN_N,
    max_n: int | str | None = None,
    impls: Iterable[str] = ("gpu", "numpy", "numba-parallel"),
    *,
    spacing: str = "pow2",
    threads_per_block: int | str = 256,
    policy: RepeatPolicy | None = None,
    python_budget_s: float = PYTHON_BUDGET_PER_POINT_S,
    max_wall_s: float | None = None,
    limit: int | None = None,
    seed: int = 0,
    descending: bool = False,
    warm_l2: bool = False,
    kernel_max_n: int | None | str = "auto",
) -> SweepConfig:
    """Validate everything before any work; return the SweepConfig.

    ``max_n`` None means the largest size that fits (``limit``, default
    ``max_cpu_vector_n()``: in the simulator the CPU side may run past the simulated
    kernel's cap). ``kernel_max_n`` is the largest N a device implementation runs at
    ("auto": the simulator's cap, ``gpu.core.limits.kernel_cap()``, None on a GPU).
    Raises InputError for an inverted or empty range, a range past memory, no or
    unknown implementations, or a budget ≤ 0.
    """
    limit = max_cpu_vector_n() if limit is None else limit
    if kernel_max_n == "auto":
        kernel_max_n = kernel_cap()
    if limit < 1:
        raise InputError("no memory is free for even one element; close other runs and try again")
    lo = parse_size(min_n, "min N")
    hi = limit if max_n is None or str(max_n).strip() == "" else parse_size(max_n, "max N")
    if lo > hi:
        raise InputError(f"the range is inverted: min N = {lo:,} is above max N = {hi:,}; min N must be at most max N")
    check_cpu_n(hi, limit, "max N")
    if spacing not in SPACINGS:
        raise InputError(f"spacing must be 'pow2' (powers of two) or 'decade' (powers of ten), got {spacing!r}")
    sizes = sweep_sizes(lo, hi, spacing)
    if not sizes:
        raise InputError(f"the range {lo:,} to {hi:,} holds no sizes")
    chosen = tuple(dict.fromkeys(impls))
    if not chosen:
        raise InputError(f"choose at least one implementation from: {', '.join(IMPLS)}")
    unknown = [name for name in chosen if name not in IMPLS]
    if unknown:
        raise InputError(f"unknown implementation {unknown[0]!r}; choose from {', '.join(IMPLS)}")
    tpb = parse_int(threads_per_block, "threads per block")
    check_threads_per_block(tpb, device_info().max_threads_per_block)
    if not python_budget_s > 0:
        raise InputError(f"the Python-loop budget must be more than 0 seconds, got {python_budget_s!r}")
    if max_wall_s is not None and not max_wall_s > 0:
        raise InputError(f"the sweep's time limit must be more than 0 seconds, got {max_wall_s!r}")
    policy = policy or RepeatPolicy.count(5)
    if policy.budget_s is not None and not policy.budget_s > 0:
        raise InputError(f"the time budget per point must be more than 0 seconds, got {policy.budget_s!r}")
    return SweepConfig(lo, hi, spacing, chosen, tpb, policy, float(python_budget_s), max_wall_s, seed, descending, bool(warm_l2),
                       kernel_max_n)


# --- points and crossovers -----------------------------------------------------------


@dataclass(frozen=True)
class SweepPoint:
    """One series at one size: samples in seconds, or an estimate, or why it failed."""

    n: int
    series: str
    stats: Stats | None = None
    estimate_s: float | None = None  # the Python loop, not run: its estimate
    error: str | None = None  # failed or skipped at this size: why
    agree: bool | None = None  # bit-identical to NumPy (None: not checked)

    @property
    def ok(self) -> bool:
        return self.stats is not None or self.estimate_s is not None

    @property
    def estimated(self) -> bool:
        return self.stats is None and self.estimate_s is not None

    @property
    def median_s(self) -> float:
        if self.stats is not None:
            return self.stats.median_s
        return self.estimate_s if self.estimate_s is not None else float("nan")

    @property
    def bytes_moved(self) -> int:
        return BYTES_PER_ELEMENT_OF.get(self.series, BYTES_PER_ELEMENT) * self.n

    @property
    def bandwidth_gbps(self) -> float:
        """Effective bandwidth of the median, GB/s (1e9 bytes/s); NaN without a time."""
        seconds = self.median_s
        return self.bytes_moved / seconds / 1e9 if seconds > 0 else float("nan")

    def to_dict(self) -> dict:
        data = {"n": self.n, "series": self.series, "label": SERIES_LABELS[self.series]}
        if self.stats is not None:
            data["stats"] = self.stats.to_dict()
        if self.estimate_s is not None:
            data["estimate_s"] = self.estimate_s
        if self.error is not None:
            data["error"] = self.error
        data["agree"] = self.agree
        data["bandwidth_gbps"] = None if math.isnan(self.bandwidth_gbps) else self.bandwidth_gbps
        return data


@dataclass(frozen=True)
class Crossover:
    """Where a GPU series overtakes a CPU series for good.

    ``kind``: "from" (faster from ``n`` on, interpolated), "always" (faster at every
    size measured), "never" (not faster at the largest size), "unknown" (no common
    sizes). ``estimated``: the CPU series includes estimates, not measurements.
    """

    gpu: str
    baseline: str
    kind: str
    n: float | None = None
    first_n: int | None = None
    last_n: int | None = None
    estimated: bool = False
    ahead_somewhere: bool = False  # for "never": faster at some size, just not to the end
    # For "from": the crossing of the noise bands (min-max of the samples) — earliest with
    # the GPU at its best and the CPU at its worst, latest the other way round. None: that
    # edge lies outside the sizes measured.
    n_low: float | None = None
    n_high: float | None = None

    @property
    def is_range(self) -> bool:
        """True when the noise bands make the crossover a range, not a point (>10% wide)."""
        return self.n_low is None or self.n_high is None or self.n_high > 1.1 * self.n_low

    @property
    def text(self) -> str:
        who = {"gpu-kernel": "the kernel alone", "gpu-launch-kernel": "the kernel with its launch from Python"}.get(
            self.gpu, "end to end, with copies, the GPU")
        other = SERIES_LABELS[self.baseline]
        tag = " (against estimates)" if self.estimated else ""
        if self.kind == "from":
            # Why a range (issue 10, item 9): one run's interpolated median, quoted to three
            # figures (6,380), moved to 5,800 and 8,970 in other runs; the noise bands say how far.
            if not self.is_range:
                return f"{who} beats {other} from N ≈ {format_n(self.n, 2)}{tag}"
            low = format_n(self.n_low, 2) if self.n_low is not None else f"below {self.first_n:,}"
            high = format_n(self.n_high, 2) if self.n_high is not None else f"beyond {self.last_n:,}"
            return f"{who} beats {other} from somewhere between N ≈ {low} and {high} (medians cross at {format_n(self.n, 2)}){tag}"
        if self.kind == "always":
            return f"{who} beats {other} at every size measured (from N = {self.first_n:,}){tag}"
        if self.kind == "never" and self.ahead_somewhere:
            return f"{who} is ahead of {other} at some sizes but not at the largest, N = {self.last_n:,}{tag}"
        if self.kind == "never":
            return f"{who} never beats {other} in this range (up to N = {self.last_n:,}){tag}"
        return f"{who} and {other} share no measured size"

    def to_dict(self) -> dict:
        return {
            "gpu": self.gpu,
            "baseline": self.baseline,
            "baseline_label": SERIES_LABELS[self.baseline],
            "kind": self.kind,
            "n": self.n,
            "first_n": self.first_n,
            "last_n": self.last_n,
            "estimated": self.estimated,
            "ahead_somewhere": self.ahead_somewhere,
            "n_low": self.n_low,
            "n_high": self.n_high,
            "is_range": self.is_range if self.kind == "from" else None,
            "text": self.text,
        }


def format_n(n: float, digits: int = 3) -> str:
    """A size as "213,000 (2^17.7)": ``digits`` significant figures and its power of two."""
    rounded = float(f"{n:.{digits}g}")
    return f"{rounded:,.0f} (2^{math.log2(n):.1f})"


def find_crossover(
    ns: Sequence[float], gpu_s: Sequence[float], cpu_s: Sequence[float]
) -> tuple[str, float | None]:
    """Smallest N from which the GPU stays faster than the CPU (pure).

    Takes two median series over the same sizes; NaN or non-positive points are
    dropped. Returns ("from", n) with n interpolated where log(gpu/cpu) crosses 0,
    linearly in log N, between the last size the GPU was not faster and the next;
    ("always", first n) when it is faster everywhere; ("never", None) when it is not
    faster at the largest size; ("unknown", None) without a usable point.
    """
    points = sorted(
        (float(n), math.log(g / c))
        for n, g, c in zip(ns, gpu_s, cpu_s)
        if n > 0 and g > 0 and c > 0 and not (math.isnan(g) or math.isnan(c))
    )
    if not points:
        return "unknown", None
    if points[-1][1] >= 0:
        return "never", None
    behind = [i for i, (_, d) in enumerate(points) if d >= 0]
    if not behind:
        return "always", points[0][0]
    i = behind[-1]
    (n0, d0), (n1, d1) = points[i], points[i + 1]
    t = d0 / (d0 - d1)  # d0 >= 0 > d1, so 0 <= t < 1
    return "from", math.exp(math.log(n0) + t * (math.log(n1) - math.log(n0)))


def crossover_band(
    ns: Sequence[float], gpu: Sequence[tuple[float, float, float]], cpu: Sequence[tuple[float, float, float]]
) -> tuple[str, float | None, float | None, float | None]:
    """The crossover of two series with noise bands (pure).

    ``gpu`` and ``cpu`` are (min, median, max) per size. Returns (kind, n, n_low,
    n_high): kind and n as ``find_crossover`` on the medians; n_low where the GPU's
    fastest samples overtake the CPU's slowest for good (the earliest the crossing can
    be), n_high where the GPU's slowest overtake the CPU's fastest (the latest). An
    edge is None when it lies outside the sizes measured.
    """
    kind, n = find_crossover(ns, [g[1] for g in gpu], [c[1] for c in cpu])
    if kind != "from":
        return kind, n, None, None
    early_kind, early = find_crossover(ns, [g[0] for g in gpu], [c[2] for c in cpu])
    late_kind, late = find_crossover(ns, [g[2] for g in gpu], [c[0] for c in cpu])
    n_low = early if early_kind == "from" else None
    n_high = late if late_kind == "from" else None
    # with bands, the optimistic crossing is never later than the median one, nor the pessimistic earlier
    n_low = min(n_low, n) if n_low is not None else None
    n_high = max(n_high, n) if n_high is not None else None
    return kind, n, n_low, n_high


# --- the result ----------------------------------------------------------------------


@dataclass(frozen=True)
class SweepRun:
    """Everything a sweep measured. Times in seconds; ``stopped`` says why it ended early."""

    config: SweepConfig
    points: tuple[SweepPoint, ...]
    backend: str
    device: DeviceInfo
    compile_s: float = 0.0
    peaks: Peaks | None = None
    skipped: tuple[tuple[str, str], ...] = ()  # (implementation, why) not run at all
    stopped: str | None = None
    steps_done: int = 0
    steps_planned: int = 0
    wall_s: float = 0.0
    measuring_s: float = 0.0  # time inside the timing calls (warm-ups, holds, checks included)
    l2_bytes: int | None = None  # the device's L2 size: working sets up to it are labelled
    telemetry: dict | None = None  # GPU clocks, temperature, power, throttling (gpu.core.telemetry)
    created_at: str = field(default_factory=utc_timestamp)

    @property
    def complete(self) -> bool:
        return self.stopped is None and self.steps_done == self.steps_planned

    @property
    def kernel_note(self) -> str | None:
        """Which sizes ran no simulated kernel, and why (issue 12); None when every size ran every implementation."""
        skipped = self.config.kernel_skipped_sizes
        if not skipped:
            return None
        return (
            f"simulated kernels ran up to N = {self.config.kernel_max_n:,}, the simulator's cap (KERNEL_LAB_MAX_N; about 0.1 ms "
            f"per simulated thread); at N = {skipped[0]:,} to {skipped[-1]:,} only the CPU implementations ran"
        )

    @property
    def sizes(self) -> list[int]:
        return sorted({p.n for p in self.points})

    @property
    def series(self) -> list[str]:
        present = {p.series for p in self.points}
        return [s for s in SERIES_LABELS if s in present]

    @property
    def overhead_fraction(self) -> float:
        """1 − (sum of the timed samples ÷ wall time): everything that is not a recorded sample.

        Why this and not "outside the timing calls" (issue 10, item 7): the calls also hold
        warm-ups, input uploads, stream holds, L2 flushes and agreement checks, and
        counting them as measured time reported 9.3% where the samples added up to 10.6 s
        of 75.1 s.
        """
        return 1 - self.sampled_s / self.wall_s if self.wall_s > 0 else float("nan")

    @property
    def sampled_s(self) -> float:
        """Sum of every recorded sample (the measured work itself, warm-ups excluded)."""
        total = 0.0
        for p in self.points:
            if p.stats is not None and p.series not in INSIDE_TOTAL:  # those lie inside a gpu-total sample
                total += sum(p.stats.samples_s)
        return total

    def fits_l2(self, point: SweepPoint) -> bool:
        """True when a device-side series' working set fits in the L2 (a warm re-run reads cache)."""
        return point.series in DEVICE_SERIES and fits_in_l2(point.bytes_moved, self.l2_bytes)

    def ceiling_beaten(self, series: str) -> bool:
        """True when some series bounded by the same measured limit beats it.

        Then that "limit" is only a reference (issue 10, item 8: the measured device copy,
        2.4–2.8 TB/s, was slower than the kernel, yet "≥ 90% of device copy" said met).
        """
        label, gbps = self.ceiling(series)
        if not gbps:
            return False
        return any(
            p.ok and not p.estimated and self.ceiling(p.series)[0] == label and p.bandwidth_gbps > gbps
            for p in self.points
        )

    @property
    def agree(self) -> bool:
        return all(p.agree is not False for p in self.points)

    @property
    def failures(self) -> list[SweepPoint]:
        return [p for p in self.points if not p.ok]

    def point(self, n: int, series: str) -> SweepPoint | None:
        return next((p for p in self.points if p.n == n and p.series == series), None)

    def medians(self, series: str) -> tuple[list[int], list[float]]:
        pts = sorted((p for p in self.points if p.series == series and p.ok), key=lambda p: p.n)
        return [p.n for p in pts], [p.median_s for p in pts]

    def noisy(self, point: SweepPoint) -> bool:
        """Relative spread above the policy's noise target (estimates are never noisy)."""
        return point.stats is not None and point.stats.n_samples > 1 and point.stats.noise > self.config.policy.max_noise

    def mark(self, point: SweepPoint) -> str:
        """The marks after a figure in tables: ~ estimate, * fewer than 3 samples, ! noisy, ° fits in L2."""
        if point.estimated:
            return "~"
        marks = ""
        if point.stats is not None and point.stats.few_samples:
            marks += "*"
        if self.noisy(point):
            marks += "!"
        if self.fits_l2(point):
            marks += "°"
        return marks

    def crossovers(self) -> list[Crossover]:
        """Every GPU series (end to end, kernel only) against every CPU series present."""
        out = []
        for baseline in (s for s in self.series if s in CPU_SERIES):
            cpu_points = {p.n: p for p in self.points if p.series == baseline and p.ok}
            for gpu in (s for s in GPU_SERIES if s in self.series):
                gpu_points = {p.n: p for p in self.points if p.series == gpu and p.ok}
                common = sorted(set(cpu_points) & set(gpu_points))
                kind, n, n_low, n_high = crossover_band(
                    common, [_band(gpu_points[k]) for k in common], [_band(cpu_points[k]) for k in common])
                estimated = any(cpu_points[k].estimated for k in common)
                ahead = any(gpu_points[k].median_s < cpu_points[k].median_s for k in common)
                out.append(
                    Crossover(gpu, baseline, kind, n if kind == "from" else None,
                              common[0] if common else None, common[-1] if common else None, estimated, ahead, n_low, n_high)
                )
        return out

    def crossover_sentences(self) -> list[str]:
        """One sentence per CPU baseline: kernel first, then end to end."""
        by_baseline: dict[str, list[Crossover]] = {}
        for c in self.crossovers():
            by_baseline.setdefault(c.baseline, []).append(c)
        sentences = []
        for baseline, items in by_baseline.items():
            items.sort(key=lambda c: GPU_SERIES.index(c.gpu), reverse=True)  # kernel, with launch, then total
            text = "; ".join(c.text for c in items)
            sentences.append(text[0].upper() + text[1:] + ".")
        return sentences

    def ceiling(self, series: str) -> tuple[str | None, float | None]:
        """The measured limit a series is bounded by: (label, GB/s), or (None, None)."""
        if self.peaks is None:
            return None, None
        key = {"gpu-h2d": "h2d_pinned", "gpu-total": "h2d_pinned", "gpu-d2h": "d2h_pinned"}.get(
            series, "d2d" if series in DEVICE_SERIES else "host_copy"
        )
        limit = self.peaks.get(key)
        if limit is None or not limit.gbps:
            return None, None
        return limit.label, limit.gbps

    def to_frame(self):
        """One row per size × series (pandas DataFrame). Columns: n, series, label,
        median_s, min_s, max_s, samples, few_samples (< 3: spread unknown), retries (hold
        expired), noise, noisy, fits_l2 (working set fits in the L2), estimated, error,
        agree, bandwidth_gbps, ceiling, ceiling_gbps, ceiling_is_limit (False: a series
        beat it, so it is only a reference), pct_of_ceiling, pct_of_device_peak, share
        (of H2D + kernel + D2H, phases only)."""
        import pandas as pd

        device_peak = self.peaks.gbps("device_peak") if self.peaks else None
        phase_sum: dict[int, float] = {}
        for p in self.points:
            if p.series in PHASE_SERIES and p.stats is not None:
                phase_sum[p.n] = phase_sum.get(p.n, 0.0) + p.median_s
        rows = []
        for p in sorted(self.points, key=lambda p: (p.n, list(SERIES_LABELS).index(p.series))):
            ceiling, ceiling_gbps = self.ceiling(p.series)
            beaten = self.ceiling_beaten(p.series)
            if ceiling and beaten:
                ceiling += " — a reference, beaten here, not a limit"
            bw = p.bandwidth_gbps
            stats = p.stats
            rows.append(
                {
                    "n": p.n,
                    "series": p.series,
                    "label": SERIES_LABELS[p.series],
                    "median_s": p.median_s,
                    "min_s": stats.min_s if stats else (p.estimate_s if p.estimated else float("nan")),
                    "max_s": stats.max_s if stats else (p.estimate_s if p.estimated else float("nan")),
                    "samples": stats.n_samples if stats else 0,
                    "few_samples": bool(stats and stats.few_samples),
                    "retries": stats.retries if stats else 0,
                    "noise": stats.noise if stats else float("nan"),
                    "noisy": self.noisy(p),
                    "fits_l2": self.fits_l2(p),
                    "estimated": p.estimated,
                    "error": p.error or "",
                    "agree": p.agree,
                    "bandwidth_gbps": bw,
                    "ceiling": ceiling or "",
                    "ceiling_gbps": ceiling_gbps if ceiling_gbps else float("nan"),
                    "ceiling_is_limit": bool(ceiling_gbps) and not beaten,
                    "pct_of_ceiling": 100 * bw / ceiling_gbps if ceiling_gbps else float("nan"),
                    "pct_of_device_peak": 100 * bw / device_peak if device_peak and p.series in DEVICE_SERIES else float("nan"),
                    "share": p.median_s / phase_sum[p.n] if p.series in PHASE_SERIES and phase_sum.get(p.n) else float("nan"),
                }
            )
        columns = ["n", "series", "label", "median_s", "min_s", "max_s", "samples", "few_samples", "retries", "noise", "noisy",
                   "fits_l2", "estimated", "error", "agree", "bandwidth_gbps", "ceiling", "ceiling_gbps", "ceiling_is_limit",
                   "pct_of_ceiling", "pct_of_device_peak", "share"]
        frame = pd.DataFrame(rows, columns=columns)
        frame["backend"] = self.backend
        return frame

    def samples_frame(self):
        """Raw samples: one row per size × series × sample (n, series, label, sample, seconds)."""
        import pandas as pd

        rows = [
            (p.n, p.series, SERIES_LABELS[p.series], i, s)
            for p in self.points
            if p.stats is not None
            for i, s in enumerate(p.stats.samples_s)
        ]
        return pd.DataFrame(rows, columns=["n", "series", "label", "sample", "seconds"])

    def to_dict(self) -> dict:
        return {
            "experiment": "scaling",
            "created_at": self.created_at,
            "backend": self.backend,
            "device": self.device.to_dict(),
            "config": self.config.to_dict(),
            **{k: v for k, v in self.config.to_dict().items() if k in ("min_n", "max_n", "spacing", "impls", "threads_per_block")},
            "complete": self.complete,
            "kernel_note": self.kernel_note,
            "stopped": self.stopped,
            "steps_done": self.steps_done,
            "steps_planned": self.steps_planned,
            "compile_s": self.compile_s,
            "wall_s": self.wall_s,
            "measuring_s": self.measuring_s,
            "sampled_s": self.sampled_s,
            "overhead_fraction": self.overhead_fraction,
            "overhead_definition": "1 - (sum of timed samples / wall time)",
            "l2_bytes": self.l2_bytes,
            "telemetry": self.telemetry,
            "agree": self.agree,
            "skipped": dict(self.skipped),
            "peaks": self.peaks.to_dict() if self.peaks else None,
            "points": [p.to_dict() for p in self.points],
            "crossovers": [c.to_dict() for c in self.crossovers()],
            "crossover_sentences": self.crossover_sentences(),
        }

    def to_csv(self) -> str:
        """The per-point table as CSV, headed by ``#`` lines holding the configuration."""
        header = {
            "experiment": "scaling",
            "created_at": self.created_at,
            "backend": self.backend,
            "device": self.device.name,
            "config": self.config.to_dict(),
            "stopped": self.stopped,
        }
        buffer = io.StringIO()
        buffer.write("# kernel-lab sweep; read with pandas.read_csv(path, comment='#')\n")
        buffer.write("# " + json.dumps(header, default=str) + "\n")
        self.to_frame().to_csv(buffer, index=False)
        return buffer.getvalue()

    def __str__(self) -> str:
        cfg = self.config
        lines = [
            f"sweep: N = {cfg.min_n:,} to {cfg.max_n:,} ({cfg.spacing}, {len(cfg.sizes)} sizes), "
            f"{cfg.threads_per_block} threads per block, {cfg.policy.describe()}; {self.device.name} ({self.backend})",
        ]
        if self.stopped:
            lines.append(f"stopped early after {self.steps_done} of {self.steps_planned} steps: {self.stopped}")
        for impl, why in self.skipped:
            lines.append(f"skipped {impl}: {why}")
        if self.kernel_note:
            lines.append(self.kernel_note)
        series = self.series
        lines.append(f"{'N':>14} " + " ".join(f"{SERIES_LABELS[s][:14]:>14}" for s in series))
        for n in self.sizes:
            cells = []
            for s in series:
                p = self.point(n, s)
                if p is None:
                    cells.append("")
                elif not p.ok:
                    cells.append("failed")
                else:
                    cells.append(format_seconds(p.median_s) + self.mark(p))
            lines.append(f"{n:>14,} " + " ".join(f"{c:>14}" for c in cells))
        lines.append("medians; ~ estimate (not run), * fewer than 3 samples (spread unknown), ! noisy (spread above the target), "
                     "° working set fits in the L2" + (" (L2 warm: not flushed)" if cfg.warm_l2 else " (L2 flushed before every GPU sample)"))
        for p in self.failures:
            lines.append(f"failed at N = {p.n:,}, {SERIES_LABELS[p.series]}: {p.error}")
        lines += self.crossover_sentences()
        if self.peaks is not None:
            lines.append(str(self.peaks))
            largest = max(self.sizes, default=None)
            kernel = self.point(largest, "gpu-kernel") if largest else None
            if kernel is not None and kernel.ok:
                _, d2d = self.ceiling("gpu-kernel")
                pct = f" = {100 * kernel.bandwidth_gbps / d2d:.0f}% of the measured device copy" if d2d else ""
                if d2d and self.ceiling_beaten("gpu-kernel"):
                    pct += " (beaten: the copy is a reference here, not a limit)"
                lines.append(f"kernel at N = {largest:,}: {kernel.bandwidth_gbps:,.4g} GB/s{pct}")
        for ref in ("cupy", "torch"):
            largest = max((p.n for p in self.points if p.series == ref and p.ok), default=None)
            if largest is not None and self.point(largest, "gpu-kernel") is not None and self.point(largest, "gpu-kernel").ok:
                ratio = self.point(largest, "gpu-kernel").median_s / self.point(largest, ref).median_s
                lines.append(f"kernel time / {SERIES_LABELS[ref]} at N = {largest:,}: {format_factor(ratio)}")
        lines.append(describe_telemetry(self.telemetry))
        lines.append(f"wall {format_seconds(self.wall_s)}, timed samples {format_seconds(self.sampled_s)}: "
                     f"overhead {self.overhead_fraction:.1%} (1 − samples ÷ wall)")
        return "\n".join(lines)


def _band(point: SweepPoint) -> tuple[float, float, float]:
    """(min, median, max) seconds of a point; an estimate is its own band."""
    if point.stats is None:
        return point.median_s, point.median_s, point.median_s
    return point.stats.min_s, point.stats.median_s, point.stats.max_s


# --- running -------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepProgress:
    """Where a sweep is: about to run ``step`` (1-based) of ``steps``; ``partial`` holds
    what it measured so far (a SweepRun a caller may keep if the run is interrupted)."""

    step: int
    steps: int
    n: int
    impl: str
    partial: SweepRun

    @property
    def fraction(self) -> float:
        return (self.step - 1) / self.steps if self.steps else 1.0

    @property
    def message(self) -> str:
        return f"N = {self.n:,} ({self.step} of {self.steps}): {IMPL_LABELS[self.impl]}"


def _host_buffers(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Inputs a, b, the NumPy reference and one output buffer, of ``n`` float32 each.

    Generated once at the largest size; every size uses the leading slices (views), so
    the sweep does not regenerate inputs per size. The values are a block of
    ``INPUT_BLOCK`` uniform [0, 1) floats repeated: as good a test of the addition as
    fresh ones, at a fraction of the random generator's cost at 2^30 elements.
    """
    a, b = tiled_vector_inputs(n, seed, INPUT_BLOCK)
    return a, b, np.empty(n, dtype=np.float32), np.empty(n, dtype=np.float32)


def _describe_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError) or "OUT_OF_MEMORY" in text.upper():
        return "out of memory — " + text
    return text


def run_sweep(
    config: SweepConfig,
    *,
    peaks: Peaks | None = None,
    on_progress: Callable[[SweepProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    clock: Clock = time.perf_counter,
) -> SweepRun:
    """Measure every size × implementation of ``config`` (validated by make_config).

    ``should_stop()`` is asked before every step; when it returns True the sweep ends
    and the result keeps every point measured so far (``stopped`` says why), as it does
    when ``config.max_wall_s`` runs out. ``on_progress`` is called before each step.
    A failure at one point is recorded in that point and the sweep goes on.
    """
    # which implementations cannot run here at all (references without their library);
    # asked before the clock starts: importing PyTorch or CuPy is a one-off cost of the
    # process, not of the sweep
    skipped = tuple(
        (impl, why) for impl in config.impls if impl in reference.REFERENCES
        for why in [reference.unavailable_reason(impl)] if why is not None
    )
    started = clock()
    stop = should_stop or (lambda: False)
    sizes = config.sizes
    points: list[SweepPoint] = []
    measuring = 0.0
    device = device_info()
    runnable = [impl for impl in config.impls if impl not in dict(skipped)]
    steps = sum(config.runs_at(impl, n) for n in sizes for impl in runnable)
    l2_bytes = l2_cache_bytes()
    # clocks, temperature, power and throttling before, during (background) and after
    telemetry = TelemetryMonitor().start()

    def snapshot(stopped: str | None, done: int, final: bool = False) -> SweepRun:
        return SweepRun(
            config=config, points=tuple(points), backend=BACKEND.kind, device=device,
            compile_s=compile_s, peaks=peaks, skipped=skipped, stopped=stopped,
            steps_done=done, steps_planned=steps, wall_s=clock() - started, measuring_s=measuring,
            l2_bytes=l2_bytes, telemetry=telemetry.stop() if final else telemetry.summary(),
        )

    compile_s = compile_vector_add() if "gpu" in runnable else 0.0
    buffers = None
    try:
        buffers = _host_buffers(max(sizes), config.seed)
        np.add(buffers[0], buffers[1], out=buffers[2])  # every size's reference is a prefix of this
    except MemoryError:
        buffers = None  # allocate per size instead; sizes that do not fit are recorded as failures

    step = 0
    stopped = None
    for n in sizes:
        here = [impl for impl in runnable if config.runs_at(impl, n)]  # no simulated kernel past its cap
        try:
            if buffers is not None:
                a, b, expected, out = (x[:n] for x in buffers)
            else:
                a, b, expected, out = _host_buffers(n, config.seed)
                np.add(a, b, out=expected)
        except MemoryError as exc:
            for impl in here:
                points.append(SweepPoint(n, "gpu-total" if impl == "gpu" else impl, error=_describe_error(exc)))
            step += len(here)
            continue
        for impl in here:
            if stop():
                stopped = "cancelled"
                break
            if config.max_wall_s is not None and clock() - started > config.max_wall_s:
                stopped = f"time limit of {config.max_wall_s:g} s reached"
                break
            step += 1
            if on_progress is not None:
                on_progress(SweepProgress(step, steps, n, impl, snapshot(None, step - 1)))
            t0 = clock()
            try:
                points.extend(_measure(impl, a, b, expected, out, config))
            except Exception as exc:  # out of memory or a driver error: record, go on
                series = ("gpu-total", "gpu-kernel", "gpu-launch-kernel", "gpu-h2d", "gpu-d2h") if impl == "gpu" else (impl,)
                points.extend(SweepPoint(n, s, error=_describe_error(exc)) for s in series)
            finally:
                measuring += clock() - t0
        # once per size, not per implementation: gc.collect() costs tens of ms with
        # PyTorch and CuPy loaded, and the next size is the one that needs the room
        if any(impl in ON_DEVICE for impl in runnable):
            release_device_memory(collect=any(p.n == n and not p.ok for p in points))
        if stopped:
            break
    del buffers
    if any(impl in ON_DEVICE for impl in runnable):
        release_device_memory(collect=False)
    return snapshot(stopped, step, final=True)


def _measure(impl: str, a: np.ndarray, b: np.ndarray, expected: np.ndarray, out: np.ndarray,
             config: SweepConfig) -> list[SweepPoint]:
    """Time one implementation at one size; return its points."""
    n = a.size
    flush = not config.warm_l2
    if impl == "gpu":
        out.fill(np.nan)  # a kernel that wrote nothing must not pass the check
        stats = time_gpu_phases(a, b, out, config.threads_per_block, config.policy, flush_l2=flush)
        agree = identical(out, expected)
        return [
            SweepPoint(n, "gpu-total", stats["total"], agree=agree),
            SweepPoint(n, "gpu-kernel", stats["kernel"], agree=agree),
            SweepPoint(n, "gpu-launch-kernel", stats["with_launch"], agree=agree),
            SweepPoint(n, "gpu-h2d", stats["h2d"]),
            SweepPoint(n, "gpu-d2h", stats["d2h"]),
        ]
    if impl == "gpu-ilp":
        out.fill(np.nan)
        tpb = config.threads_per_block
        blocks = blocks_for(n, tpb * ELEMENTS_PER_THREAD)
        stats = time_resident_kernel(vector_add_ilp_kernel, blocks, tpb, a, b, out, config.policy, flush_l2=flush)
        return [SweepPoint(n, "gpu-ilp", stats, agree=identical(out, expected))]
    if impl in reference.REFERENCES:
        timing = reference.time_reference(impl, a, b, config.policy, expected, flush_l2=flush)
        return [SweepPoint(n, impl, timing.stats, agree=timing.agree)]
    out.fill(np.nan)
    timing = time_cpu(impl, a, b, out, config.policy, config.python_budget_s)
    if timing.stats is None:
        return [SweepPoint(n, impl, estimate_s=timing.estimate_s)]
    return [SweepPoint(n, impl, timing.stats, agree=identical(out, expected))]



# --- the declaration ---------------------------------------------------------------

SIMULATOR_DEFAULT_MAX_N = 4096  # 2^10..2^12 in the simulator: a few seconds, not a minute


def default_max_n(repeats: int = 3) -> int:
    """The largest size that fits memory and this server's work budget for a default sweep."""
    limit = max_vector_n()
    if BACKEND.simulated:
        limit = min(limit, SIMULATOR_DEFAULT_MAX_N)
    budget = load_config().max_work
    n = limit
    while n > DEFAULT_MIN_N and sum(sweep_sizes(DEFAULT_MIN_N, n)) * (repeats + 1) > budget:
        n //= 2
    return max(n, 1)


def default_impls() -> tuple[str, ...]:
    """Every implementation; references only where their library can run."""
    return tuple(impl for impl in IMPLS if impl not in reference.REFERENCES or reference.unavailable_reason(impl) is None)


def _names(value) -> tuple[str, ...]:
    names = [part.strip() for part in value.split(",")] if isinstance(value, str) else [str(v) for v in value]
    return tuple(name for name in dict.fromkeys(names) if name)


def _noise(value) -> float:
    noise = parse_seconds(value, "the noise target")  # a positive number; not seconds, same parsing
    if not noise < 1:
        raise InputError(f"the noise target must be between 0 and 1 (e.g. 0.05 for 5%), got {value!r}")
    return noise


def _config(params) -> SweepConfig:
    policy = repeat_policy("count" if params["budget_s"] is None else "until_stable", params["repeats"],
                          max_noise=params["noise"], budget_s=params["budget_s"])
    return make_config(params["min_n"], params["max_n"], params["impls"], spacing=params["spacing"],
                       threads_per_block=params["threads_per_block"], policy=policy,
                       python_budget_s=params["python_budget_s"], max_wall_s=params["time_limit_s"],
                       warm_l2=params["warm_l2"])


def _work(params) -> int:
    """Element-passes of the whole sweep's GPU part, for ``admit``; also refuses a sweep with too many sizes.

    In the simulator only the sizes up to the kernel's cap count (above it no simulated
    kernel runs); the CPU side is counted apart, N x passes for each compiled CPU
    implementation, and refused here when over ``KERNEL_LAB_MAX_CPU_WORK`` (issue 12).
    """
    lo, hi = params["min_n"], params["max_n"]
    if lo > hi:
        raise InputError(f"the range is inverted: min N = {lo:,} is above max N = {hi:,}; min N must be at most max N")
    sizes = sweep_sizes(lo, hi, params["spacing"])
    if not sizes:
        raise InputError(f"the range {params['min_n']:,} to {params['max_n']:,} holds no sizes")
    check_sweep_points(len(sizes))
    passes = params["repeats"] + 1
    compiled = sum(impl in cpu.IMPLEMENTATIONS and impl != "python" for impl in params["impls"])
    check_cpu_work(sum(sizes) * passes * compiled, "Scaling")
    cap = kernel_cap()
    return sum(n for n in sizes if cap is None or n <= cap) * passes


def _run(params, progress: Progress) -> SweepRun:
    config = _config(params)
    peaks = measure_peaks(quick=params["quick_peaks"], on_progress=progress) if params["peaks"] else None

    def on_step(p: SweepProgress) -> None:
        progress.step(p.fraction, p.partial)
        progress(p.message)

    return run_sweep(config, peaks=peaks, on_progress=on_step, should_stop=progress.should_stop)


def _measures(run: SweepRun) -> dict[str, float]:
    """The largest size's median per series, and the best kernel bandwidth."""
    out: dict[str, float] = {}
    if run.sizes:
        top = run.sizes[-1]
        out.update({f"{p.series}_s_at_max_n": p.median_s for p in run.points if p.n == top and p.ok})
    kernel = [p.stats for p in run.points if p.series == "gpu-kernel" and p.stats is not None]
    if kernel:
        out["max_n"] = float(run.sizes[-1])
    return out


EXPERIMENT = register(Experiment(
    key="scaling",
    title="Scaling",
    summary="time the vector add over a range of sizes; crossovers and bandwidth",
    params=(
        Param("min_n", "Smallest N", lambda v: parse_size(v, "min N"), DEFAULT_MIN_N,
              "A whole number such as 1024, 1e3 or 2^10."),
        Param("max_n", "Largest N", lambda v: check_cpu_n(v, name="max N"), default_max_n,
              "The largest size that fits memory and this server's work budget by default. Without a GPU the CPU "
              "runs at every size and simulated kernels only up to the simulator's cap."),
        Param("spacing", "Sizes", lambda v: v if v in SPACINGS else _bad_spacing(v), "pow2",
              "Every power of two (or of ten) between the ends, plus both ends.", widget="select",
              options=SPACINGS, option_label={"pow2": "powers of two", "decade": "decades"}.get),
        Param("threads_per_block", "Threads per block", lambda v: check_threads(v, device_info().max_threads_per_block), 256,
              "1 to the device's limit (1024); multiples of 32 keep every warp full."),
        Param("repeats", "Repeats per point", check_repeats, PerBackend(5, 3),
              "Timed runs per point after one warm-up (with a budget: at most this many)."),
        Param("noise", "Noise target (stdev/mean)", _noise, 0.05,
              "Points noisier than this are flagged; with a budget, sampling stops once it is reached (0.05 = 5%)."),
        Param("budget_s", "Budget per point (s)", lambda v: parse_seconds(v, "the budget per point"), None,
              "Empty: a fixed number of repeats. A number: sample each point until its noise is below the target "
              "or this many seconds are spent (the nvbench way).", flag="--budget"),
        Param("python_budget_s", "Python-loop budget per point (s)", lambda v: parse_seconds(v, "the Python-loop budget"),
              PYTHON_BUDGET_PER_POINT_S, "The Python loop runs only while its estimate fits; above, its estimate is shown, dashed.",
              flag="--python-budget"),
        Param("time_limit_s", "Time limit (s)", lambda v: parse_seconds(v, "the time limit"), None,
              "Stop after this many seconds, keeping the points measured.", flag="--time-limit", page=False),
        Param("impls", "Implementations", _names, default_impls,
              f"Comma-separated, from {','.join(IMPLS)}; CuPy and PyTorch run only where installed and a GPU is present.",
              widget="multiselect", options=IMPLS, option_label=lambda impl: IMPL_LABELS[impl], flag="--impl"),
        Param("peaks", "Measure the physical limits", parse_flag, True,
              "Device-to-device, pinned host↔device and NumPy host copies: the ceilings on the bandwidth chart.",
              widget="checkbox"),
        Param("warm_l2", "Warm L2 cache (do not flush before each GPU sample)", parse_flag, False,
              "By default the L2 cache is flushed before every timed GPU sample, as nvbench does; warm shows how much "
              "a cache-resident working set flatters small sizes.", widget="checkbox"),
        Param("quick_peaks", "Quick limits", parse_flag, PerBackend(False, True),
              "Measure the limits with 16 MiB buffers (fast, less exact).", widget="checkbox", page=False),
    ),
    run=_run,
    work=_work,
    measures=_measures,
    page="pages/2_Scaling.py",
    csv=True,
    mark_stopped=lambda run, why: replace(run, stopped=why),
), aliases=("sweep",))


def _bad_spacing(value) -> str:
    raise InputError(f"spacing must be 'pow2' (powers of two) or 'decade' (powers of ten), got {value!r}")

__all__ = [
    "Crossover", "IMPLS", "IMPL_LABELS", "SERIES_LABELS", "SweepConfig", "SweepPoint", "SweepProgress", "SweepRun",
    "find_crossover", "format_n", "make_config", "repeat_policy", "run_sweep", "sweep_sizes",
]


# --- the GPU check's section -------------------------------------------------------------

CHECK_MAX_N = 2**30  # the check's ~90 s budget on an H200 ends here (12.9 GB per vector add)
CHECK_MIN_LARGEST_N = 2**28  # the floor for the largest size, where memory allows
CHECK_IMPLS = ("gpu", "gpu-ilp", "python", "numpy", "numba-parallel", "cupy", "torch")  # single-core Numba: on the page
KERNEL_VS_D2D_TARGET = 0.90  # kernel bandwidth at least 90% of the measured device copy
KERNEL_VS_REFERENCE_TARGET = 0.05  # kernel time within 5% of CuPy's / PyTorch's
OVERHEAD_TARGET = 0.10


def performance_targets(run: SweepRun) -> dict:
    """The issue's targets at the largest size the GPU measured: figures and whether met."""
    out: dict = {}
    kernel_ns = [p.n for p in run.points if p.series == "gpu-kernel" and p.stats is not None]
    if kernel_ns:
        n = max(kernel_ns)
        kernel = run.point(n, "gpu-kernel")
        out["n"] = n
        out["kernel_gbps"] = kernel.bandwidth_gbps
        d2d = run.peaks.gbps("d2d") if run.peaks else None
        peak = run.peaks.gbps("device_peak") if run.peaks else None
        out["kernel_samples"] = kernel.stats.n_samples
        if d2d:
            ratio = kernel.bandwidth_gbps / d2d
            # a "ceiling" some series beats is a reference, and no check passes against it
            beaten = run.ceiling_beaten("gpu-kernel")
            out["kernel_vs_d2d"] = {"ratio": ratio, "target": KERNEL_VS_D2D_TARGET, "ceiling_beaten": beaten,
                                    "met": None if beaten else ratio >= KERNEL_VS_D2D_TARGET}
        if peak:
            out["kernel_vs_device_peak"] = {"ratio": kernel.bandwidth_gbps / peak}
        for ref in reference.REFERENCES:
            other = run.point(n, ref)
            if other is not None and other.stats is not None:
                ratio = kernel.median_s / other.median_s
                out[f"kernel_vs_{ref}"] = {"time_ratio": ratio, "target": KERNEL_VS_REFERENCE_TARGET,
                                           "met": abs(ratio - 1) <= KERNEL_VS_REFERENCE_TARGET}
                ilp = run.point(n, "gpu-ilp")
                if ilp is not None and ilp.stats is not None:
                    ratio = ilp.median_s / other.median_s
                    out[f"ilp_vs_{ref}"] = {"time_ratio": ratio, "target": KERNEL_VS_REFERENCE_TARGET,
                                            "met": abs(ratio - 1) <= KERNEL_VS_REFERENCE_TARGET}
        ilp = run.point(n, "gpu-ilp")
        if ilp is not None and ilp.stats is not None and peak:
            out["ilp_vs_device_peak"] = {"ratio": ilp.bandwidth_gbps / peak, "gbps": ilp.bandwidth_gbps}
    out["overhead"] = {"fraction": run.overhead_fraction, "target": OVERHEAD_TARGET, "met": run.overhead_fraction < OVERHEAD_TARGET}
    return out


def check_sweep(quick: bool, max_n: int, say: Callable[[str], None]) -> tuple[bool, dict, str]:
    """The check's scaling section: (passed, JSON data, markdown).

    Full: 2^10 up to the largest size that fits (capped at 2^30 for time), largest first,
    sampled until noise ≤ 3% or 0.25 s per point, stopping after 80 s with what it has
    (so a slow machine loses the smallest sizes, never the largest). Quick: 64 to
    1,024 in a few seconds. Passes when every result is bit-identical to NumPy, no
    point failed, and the GPU reached the largest planned size; the performance
    targets are reported, not enforced (they depend on the machine).
    """
    from gpu.core.peaks import measure_peaks

    fits = max_n if quick else min(max_n, max_vector_n())
    if quick:
        lo, hi = min(64, fits), min(1024, fits)
        policy, python_budget_s, max_wall_s = RepeatPolicy.count(2), 0.2, 30.0
        peaks = measure_peaks(RepeatPolicy.count(3), quick=True, on_progress=say)
    else:
        lo, hi = min(DEFAULT_MIN_N, fits), min(fits, CHECK_MAX_N)
        policy = RepeatPolicy.until_stable(0.03, 0.25, max_repeat=50)
        python_budget_s, max_wall_s = 0.25, 80.0
        peaks = measure_peaks(RepeatPolicy.count(5), on_progress=say)
    config = make_config(lo, hi, CHECK_IMPLS, policy=policy, python_budget_s=python_budget_s, max_wall_s=max_wall_s,
                         limit=fits, descending=not quick)
    run = run_sweep(config, peaks=peaks, on_progress=lambda p: say(f"sweep: {p.message}"))
    targets = performance_targets(run)
    reached = targets.get("n")
    floor = min(CHECK_MIN_LARGEST_N, fits)
    passed = run.agree and not run.failures and reached == hi and (quick or hi >= floor)

    md = [
        f"N = {lo:,} to {hi:,} in powers of two ({len(config.sizes)} sizes; the largest that fits here is {fits:,}"
        + (f", capped at 2^30 to keep the check near 90 s" if fits > hi and not quick else "") + "), "
        f"{config.threads_per_block} threads per block, {policy.describe()}. Medians; `!` noisy, `~` estimated, "
        "`*` fewer than 3 samples, `°` working set fits in the L2 (flushed before every GPU sample).",
    ]
    if run.stopped:
        md.append(f"\n**Stopped early** after {run.steps_done} of {run.steps_planned} steps: {run.stopped}.")
    if run.skipped:
        md.append("")
    for impl, why in run.skipped:
        md.append(f"- skipped {IMPL_LABELS[impl]}: {why}")
    series = [s for s in ("gpu-kernel", "gpu-ilp", "gpu-total", "numpy", "numba-parallel", "python", "cupy", "torch") if s in run.series]
    d2d = peaks.gbps("d2d")
    md += ["", "| N | " + " | ".join(SERIES_LABELS[s] for s in series) + " | kernel GB/s | kernel % of d2d copy |",
           "|---:|" + "---:|" * (len(series) + 2)]
    for n in run.sizes:
        cells = []
        for s in series:
            p = run.point(n, s)
            cells.append("—" if p is None else ("failed" if not p.ok else format_seconds(p.median_s) + run.mark(p)))
        k = run.point(n, "gpu-kernel")
        bw = f"{k.bandwidth_gbps:,.4g}" if k is not None and k.ok else "—"
        pct = f"{100 * k.bandwidth_gbps / d2d:.0f}%" if k is not None and k.ok and d2d else "—"
        md.append(f"| {n:,} | " + " | ".join(cells) + f" | {bw} | {pct} |")
    md += ["", "**Crossovers.** " + " ".join(run.crossover_sentences()), "", "**Physical limits.**", "",
           "| limit | GB/s | how |", "|---|---:|---|"]
    for lim in peaks.limits:
        md.append(f"| {lim.label} | {f'{lim.gbps:,.4g}' if lim.gbps else '—'} | {lim.how if lim.gbps else lim.skipped} |")
    sim = " — simulated, so not meaningful here" if BACKEND.simulated else ""
    md += ["", f"**Targets at N = {reached:,}** (reported, not enforced{sim}):" if reached else "**Targets:** the GPU measured no size.", ""]
    if "kernel_vs_d2d" in targets:
        t = targets["kernel_vs_d2d"]
        verdict = "not checked: a series beat the measured copy, so it is a reference, not a ceiling" if t["met"] is None else ("met" if t["met"] else "NOT met")
        md.append(f"- kernel bandwidth {targets['kernel_gbps']:,.4g} GB/s ({targets['kernel_samples']} samples) = {t['ratio']:.1%} of the measured device copy (target ≥ 90%): {verdict}")
    if "kernel_vs_device_peak" in targets:
        md.append(f"- … and {targets['kernel_vs_device_peak']['ratio']:.1%} of the theoretical device peak")
    for ref in reference.REFERENCES:
        t = targets.get(f"kernel_vs_{ref}")
        if t:
            md.append(f"- kernel time / {SERIES_LABELS[ref]}: {t['time_ratio']:.3f} (target within ±5%): {'met' if t['met'] else 'NOT met'}")
    if "ilp_vs_device_peak" in targets:
        t = targets["ilp_vs_device_peak"]
        md.append(f"- with 4 elements per thread (not the article's kernel): {t['gbps']:,.4g} GB/s = {t['ratio']:.1%} of the theoretical device peak")
    for ref in reference.REFERENCES:
        t = targets.get(f"ilp_vs_{ref}")
        if t:
            md.append(f"- 4-per-thread kernel time / {SERIES_LABELS[ref]}: {t['time_ratio']:.3f} (within ±5%: {'yes' if t['met'] else 'no'})")
    t = targets["overhead"]
    md.append(f"- sweep overhead, 1 − (timed samples {format_seconds(run.sampled_s)} ÷ wall {format_seconds(run.wall_s)}): {t['fraction']:.1%} (target < 10%): {'met' if t['met'] else 'NOT met'}")
    md.append(f"- {describe_telemetry(run.telemetry)}")
    for p in run.failures:
        md.append(f"- FAILED at N = {p.n:,}, {SERIES_LABELS[p.series]}: {p.error}")
    if not run.agree:
        bad = sorted({(p.n, p.series) for p in run.points if p.agree is False})
        md.append("- MISMATCH with NumPy at: " + ", ".join(f"N = {n:,} {SERIES_LABELS[s]}" for n, s in bad[:10]))
    if not quick and hi < floor:
        md.append(f"- the largest size that fits ({fits:,}) is below 2^28: the sweep could not reach it")
    data = {"largest_fit_n": fits, "planned_max_n": hi, "reached_n": reached, "targets": targets, "run": run.to_dict()}
    return passed, data, "\n".join(md)
