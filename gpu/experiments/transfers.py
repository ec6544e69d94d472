"""Transfers lab: what the host link costs, and the standard ways to pay less.

Two experiments, each returning one frozen result:

- ``run_bandwidth_curves`` -> ``BandwidthCurves``: H2D and D2H copy bandwidth for
  pageable and pinned host memory, and device-to-device, against size (a few KiB to
  hundreds of MiB), each point the median of repeats timed with CUDA events (the
  bandwidthTest / nvbandwidth way, built on ``gpu.core.copies``). ``find_plateau`` says in
  words where each curve levels off.
- ``run_strategies`` -> ``StrategyComparison``: the same float32 vector add done the
  ways that matter, each timed phase by phase and checked bit for bit against NumPy:
  as in the article, careful, pinned, data kept on the device, chunked streams (with a
  per-chunk event timeline), and mapped zero-copy host memory.

In the simulator everything runs (at small sizes) but copies are NumPy copies and
streams run one after another: pinning, streams and overlap are not simulated, so the
timings mean nothing there. Results are still checked exactly.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from gpu.core.backend import BACKEND, cuda
from gpu.core.copies import bandwidth_gbps, bytes_counted, host_buffer, time_copy
from gpu.core.device import DeviceInfo, device_info
from gpu.kernels.vector_add import blocks_for, compile_vector_add, vector_add_kernel
from gpu.core.limits import (
    MEMORY_SAFETY,
    InputError,
    check_n,
    check_repeats,
    check_threads,
    check_threads_per_block,
    device_free_bytes,
    host_available_bytes,
    max_vector_n,
    parse_flag,
    parse_int,
)
from gpu.core.timing import Clock, PhaseTimer, RepeatPolicy, Stats, collect, format_factor, format_seconds, time_kernel, utc_timestamp
from gpu.experiments.base import Experiment, Param, PerBackend, Progress
from gpu.experiments.registry import register
from gpu.experiments.vector_add import BYTES_PER_ELEMENT, Agreement, check_agreement, make_inputs, time_gpu_phases

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

SIMULATED_NOTE = (
    "Simulated: pinning, streams and overlap are not simulated — every copy is a NumPy "
    "copy and every stream runs one operation after another — so these timings are "
    "meaningless. Results are still checked bit for bit."
)

# --- sizes -------------------------------------------------------------------------


def format_bytes(nbytes: float) -> str:
    """Binary units: 4 KiB, 1.5 MiB, 256 MiB, 2 GiB."""
    for scale, unit in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


# 4 KiB to 256 MiB in steps of 4x: nine sizes spanning the latency-bound and the
# bandwidth-bound regimes of every current host link.
DEFAULT_COPY_SIZES: tuple[int, ...] = tuple(4 * KIB * 4**i for i in range(9))
COPY_SIZE_CHOICES: tuple[int, ...] = tuple(4 * KIB * 4**i for i in range(10))  # up to 1 GiB
# Simulated copies are NumPy copies: bigger sizes only cost memory and show nothing.
SIMULATOR_MAX_COPY_BYTES = 16 * MIB
SIMULATOR_COPY_SIZES: tuple[int, ...] = tuple(s for s in DEFAULT_COPY_SIZES if s <= MIB)


def max_copy_bytes() -> int:
    """Largest copy the bandwidth curves may use now: one host buffer, two device buffers."""
    limit = int(host_available_bytes() * MEMORY_SAFETY)
    free = device_free_bytes()
    if free is not None:
        limit = min(limit, int(free * MEMORY_SAFETY // 2))  # d2d needs a source and a destination
    if BACKEND.simulated:
        limit = min(limit, SIMULATOR_MAX_COPY_BYTES)
    return max(limit, 0)


def check_copy_sizes(sizes: Iterable[int | str], limit: int | None = None) -> tuple[int, ...]:
    """Validate copy sizes in bytes (whole, positive, within memory); return them sorted, unique."""
    limit = max_copy_bytes() if limit is None else limit
    values = sorted({parse_int(s, "copy size") for s in sizes})
    if not values:
        raise InputError("choose at least one copy size")
    for value in values:
        if value < 1:
            raise InputError(f"copy sizes must be at least 1 byte, got {value}")
        if value > limit:
            why = "the simulator's cap" if BACKEND.simulated and limit == SIMULATOR_MAX_COPY_BYTES else "what fits in free host and device memory now"
            raise InputError(f"a copy of {format_bytes(value)} is too large: the limit is {format_bytes(limit)}, {why}.")
    return tuple(values)


# --- bandwidth curves ----------------------------------------------------------------

# (direction, host memory) per curve; device-to-device has no host side.
SERIES: tuple[tuple[str, str], ...] = (
    ("h2d", "pinned"),
    ("h2d", "pageable"),
    ("d2h", "pinned"),
    ("d2h", "pageable"),
    ("d2d", "device"),
)
DIRECTION_LABELS = {"h2d": "H2D copy", "d2h": "D2H copy", "d2d": "D2D copy"}


def series_label(direction: str, memory: str) -> str:
    """"H2D pinned", "D2H pageable", "D2D"."""
    return "D2D" if direction == "d2d" else f"{direction.upper()} {memory}"


@dataclass(frozen=True)
class BandwidthPoint:
    """One copy size of one curve. ``stats`` in seconds per copy."""

    direction: str  # "h2d", "d2h", "d2d"
    memory: str  # requested host memory: "pinned", "pageable", or "device" for d2d
    nbytes: int
    stats: Stats
    pinned_ok: bool  # False when pinned was asked for and the allocation fell back to pageable

    @property
    def fell_back(self) -> bool:
        return self.memory == "pinned" and not self.pinned_ok

    @property
    def bandwidth_gbps(self) -> float:
        """GB/s (1e9 bytes/s) at the median time; d2d counts read + write (see gpu.core.copies)."""
        return bandwidth_gbps(self.direction, self.nbytes, self.stats.median_s)

    def to_dict(self) -> dict:
        return {
            "direction": self.direction,
            "memory": self.memory,
            "nbytes": self.nbytes,
            "bytes_counted": bytes_counted(self.direction, self.nbytes),
            "pinned_ok": self.pinned_ok,
            "bandwidth_gbps": self.bandwidth_gbps,
            "stats": self.stats.to_dict(),
        }


@dataclass(frozen=True)
class Plateau:
    """Where one bandwidth curve levels off, found by ``find_plateau``. GB/s and bytes."""

    direction: str
    memory: str
    peak_gbps: float  # the best point
    plateau_gbps: float | None  # median of the levelled-off points; None: still rising
    from_nbytes: int | None  # smallest size of the plateau
    half_nbytes: int | None  # smallest size reaching half the plateau (or half the peak)

    @property
    def reached(self) -> bool:
        return self.plateau_gbps is not None

    @property
    def label(self) -> str:
        return series_label(self.direction, self.memory)

    @property
    def sentence(self) -> str:
        """The plateau in words."""
        half = f"; half of that is reached at {format_bytes(self.half_nbytes)}" if self.half_nbytes else ""
        if self.plateau_gbps is None:
            return (
                f"{self.label} is still rising at the largest size measured (best {self.peak_gbps:,.3g} GB/s): "
                f"no plateau within these sizes{half}."
            )
        return f"{self.label} levels off at {self.plateau_gbps:,.3g} GB/s from {format_bytes(self.from_nbytes)} up{half}."

    def to_dict(self) -> dict:
        return {
            "direction": self.direction,
            "memory": self.memory,
            "peak_gbps": self.peak_gbps,
            "plateau_gbps": self.plateau_gbps,
            "from_nbytes": self.from_nbytes,
            "half_nbytes": self.half_nbytes,
            "sentence": self.sentence,
        }


PLATEAU_TOLERANCE = 0.10  # points within 10% of the peak count as levelled off
PLATEAU_MIN_POINTS = 2  # one good point at the end is not yet a plateau


def find_plateau(
    nbytes: Sequence[int],
    gbps: Sequence[float],
    direction: str = "h2d",
    memory: str = "pinned",
    tolerance: float = PLATEAU_TOLERANCE,
    min_points: int = PLATEAU_MIN_POINTS,
) -> Plateau:
    """Find where a bandwidth curve levels off (pure).

    The plateau is the longest run of the largest sizes whose bandwidth is within
    ``tolerance`` of the peak, if it holds at least ``min_points`` sizes; its value is
    their median. Also returns the smallest size reaching half of it (the size below
    which latency, not bandwidth, decides the time).
    """
    if len(nbytes) != len(gbps) or not nbytes:
        raise ValueError("find_plateau needs as many bandwidths as sizes, and at least one")
    points = sorted((size, g) for size, g in zip(nbytes, gbps) if g == g and 0 < g < float("inf"))  # drop unusable timings
    if not points:
        return Plateau(direction, memory, 0.0, None, None, None)
    values = [g for _, g in points]
    peak = max(values)
    start = len(points)
    while start > 0 and points[start - 1][1] >= (1 - tolerance) * peak:
        start -= 1
    levelled = values[start:]
    if len(levelled) >= min_points:
        plateau = float(np.median(levelled))
        from_nbytes = points[start][0]
    else:
        plateau, from_nbytes = None, None
    target = 0.5 * (plateau if plateau is not None else peak)
    half = next((size for size, g in points if g >= target), None)
    return Plateau(direction, memory, float(peak), plateau, from_nbytes, half)


@dataclass(frozen=True)
class BandwidthCurves:
    """Copy bandwidth against size, per direction and host memory. Times in seconds."""

    sizes: tuple[int, ...]
    points: tuple[BandwidthPoint, ...]
    policy: RepeatPolicy
    backend: str
    device: DeviceInfo
    notes: tuple[str, ...] = ()
    created_at: str = field(default_factory=utc_timestamp)

    experiment = "transfers-bandwidth"

    def series(self) -> dict[tuple[str, str], list[BandwidthPoint]]:
        """Points per (direction, memory), smallest size first, in SERIES order."""
        out: dict[tuple[str, str], list[BandwidthPoint]] = {}
        for key in SERIES:
            pts = sorted((p for p in self.points if (p.direction, p.memory) == key), key=lambda p: p.nbytes)
            if pts:
                out[key] = pts
        return out

    def plateaus(self) -> list[Plateau]:
        return [
            find_plateau([p.nbytes for p in pts], [p.bandwidth_gbps for p in pts], *key)
            for key, pts in self.series().items()
        ]

    def plateau(self, direction: str, memory: str) -> Plateau | None:
        return next((p for p in self.plateaus() if (p.direction, p.memory) == (direction, memory)), None)

    def point(self, direction: str, memory: str, nbytes: int) -> BandwidthPoint | None:
        return next((p for p in self.points if (p.direction, p.memory, p.nbytes) == (direction, memory, nbytes)), None)

    @property
    def pinned_fell_back(self) -> bool:
        return any(p.fell_back for p in self.points)

    def summary(self) -> str:
        """The plateaus in words, pinned beside pageable, one sentence per curve."""
        lines = [p.sentence for p in self.plateaus()]
        h2d_pinned, h2d_pageable = self.plateau("h2d", "pinned"), self.plateau("h2d", "pageable")
        if h2d_pinned and h2d_pageable and h2d_pageable.peak_gbps > 0:
            lines.append(
                f"Pinned H2D is {format_factor(h2d_pinned.peak_gbps / h2d_pageable.peak_gbps)} pageable H2D at best "
                f"({h2d_pinned.peak_gbps:,.3g} against {h2d_pageable.peak_gbps:,.3g} GB/s)."
            )
        return " ".join(lines)

    def to_frame(self):
        """Tidy samples: one row per point x sample (pandas DataFrame).

        Columns: series, direction, memory, nbytes, bytes_counted, sample, seconds,
        gbps, pinned_ok, backend.
        """
        import pandas as pd

        rows = []
        for p in self.points:
            counted = bytes_counted(p.direction, p.nbytes)
            for i, s in enumerate(p.stats.samples_s):
                rows.append((series_label(p.direction, p.memory), p.direction, p.memory, p.nbytes, counted, i, s, counted / s / 1e9 if s > 0 else float("nan"), p.pinned_ok))
        frame = pd.DataFrame(rows, columns=["series", "direction", "memory", "nbytes", "bytes_counted", "sample", "seconds", "gbps", "pinned_ok"])
        frame["backend"] = self.backend
        return frame

    def to_dict(self) -> dict:
        return {
            "experiment": self.experiment,
            "created_at": self.created_at,
            "backend": self.backend,
            "device": self.device.to_dict(),
            "params": {"sizes": list(self.sizes), "series": [series_label(*key) for key in self.series()], "repeats": self.policy.n_repeat},
            "sizes": list(self.sizes),
            "series": [series_label(*key) for key in self.series()],
            "policy": self.policy.to_dict(),
            "points": [p.to_dict() for p in self.points],
            "plateaus": [p.to_dict() for p in self.plateaus()],
            "summary": self.summary(),
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        series = self.series()
        header = f"copy bandwidth, GB/s at the median ({self.policy.describe()}), {self.device.name} ({self.backend})"
        lines = [header, f"{'size':>10} " + " ".join(f"{series_label(*k):>13}" for k in series)]
        for size in self.sizes:
            cells = []
            for key in series:
                p = self.point(*key, size)
                cells.append(f"{p.bandwidth_gbps:>13.4g}" if p else f"{'—':>13}")
            lines.append(f"{format_bytes(size):>10} " + " ".join(cells))
        lines += [self.summary(), *self.notes]
        return "\n".join(lines)


def run_bandwidth_curves(
    sizes: Iterable[int] | None = None,
    series: Iterable[tuple[str, str]] = SERIES,
    policy: RepeatPolicy | None = None,
    *,
    on_progress: Progress | None = None,
) -> BandwidthCurves:
    """Time every copy size of every curve (``gpu.core.copies.time_copy``, CUDA events).

    ``sizes`` in bytes default to 4 KiB..256 MiB (4 KiB..1 MiB in the simulator);
    ``policy`` defaults to 10 timed copies after one warm-up per point.
    """
    say = on_progress or (lambda _m: None)
    default = SIMULATOR_COPY_SIZES if BACKEND.simulated else DEFAULT_COPY_SIZES
    sizes = check_copy_sizes(default if sizes is None else sizes)
    wanted = list(dict.fromkeys(series))
    unknown = [s for s in wanted if s not in SERIES]
    if unknown:
        raise InputError(f"unknown copy series {unknown[0]!r}; choose from {', '.join(series_label(*s) for s in SERIES)}")
    policy = policy or RepeatPolicy.count(10)
    points: list[BandwidthPoint] = []
    for direction, memory in wanted:
        for nbytes in sizes:
            say(f"{series_label(direction, memory)} copies of {format_bytes(nbytes)}")
            stats, pinned_ok = time_copy(direction, nbytes, policy, pinned=memory == "pinned")
            points.append(BandwidthPoint(direction, memory, nbytes, stats, pinned_ok))
    notes = []
    failed = sorted({format_bytes(p.nbytes) for p in points if p.fell_back})
    if failed:
        notes.append(
            f"Pinned host memory could not be allocated for {', '.join(failed)} (a busy machine or a "
            "locked-memory limit): those 'pinned' points used pageable memory."
        )
    if BACKEND.simulated:
        notes.append(SIMULATED_NOTE)
    return BandwidthCurves(tuple(sizes), tuple(points), policy, BACKEND.kind, device_info(), tuple(notes))


# --- chunking and the timeline ---------------------------------------------------------

MAX_CHUNKS = 256  # past this, per-chunk launch and copy overheads swamp any overlap
MAX_STREAMS = 32  # more streams than this add nothing: a GPU has a few copy engines
MAX_ITERATIONS = 10_000


def chunk_bounds(n: int, chunks: int) -> tuple[tuple[int, int], ...]:
    """Split ``n`` elements into ``chunks`` contiguous [start, stop) ranges (pure).

    Sizes differ by at most one (the first ``n % chunks`` chunks hold one more), and
    the ranges cover every element exactly once. InputError when ``chunks`` is not
    between 1 and ``n``.
    """
    n = parse_int(n, "N")
    chunks = parse_int(chunks, "chunks")
    if n < 1:
        raise InputError(f"N must be at least 1, got {n}")
    if not 1 <= chunks <= n:
        raise InputError(f"chunks must be between 1 and N ({n:,}), got {chunks}: every chunk needs at least one element")
    base, extra = divmod(n, chunks)
    bounds, start = [], 0
    for i in range(chunks):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return tuple(bounds)


def check_chunks(chunks: int | str, n: int) -> int:
    """Validate a chunk count (1 to min(N, MAX_CHUNKS)); return it."""
    value = parse_int(chunks, "chunks")
    if value > MAX_CHUNKS and value <= n:
        raise InputError(f"chunks must be between 1 and {MAX_CHUNKS} (more only adds per-chunk overhead), got {value}")
    chunk_bounds(n, value)  # raises for <= 0 or > N
    return value


def check_streams(streams: int | str, chunks: int) -> int:
    """Validate a stream count (1 to min(chunks, MAX_STREAMS)); return it."""
    value = parse_int(streams, "streams")
    limit = min(chunks, MAX_STREAMS)
    if not 1 <= value <= limit:
        raise InputError(f"streams must be between 1 and {limit} (at most one per chunk, at most {MAX_STREAMS}), got {value}")
    return value


def check_iterations(iterations: int | str) -> int:
    """Validate the kernel runs of the data-kept-on-device strategy (1 to MAX_ITERATIONS)."""
    value = parse_int(iterations, "iterations")
    if not 1 <= value <= MAX_ITERATIONS:
        raise InputError(f"iterations must be between 1 and {MAX_ITERATIONS:,}, got {value}")
    return value


TIMELINE_PHASES = ("h2d", "kernel", "d2h")
ENGINE_LANES = {"h2d": "H2D copy engine", "kernel": "compute (kernels)", "d2h": "D2H copy engine"}


@dataclass(frozen=True)
class Interval:
    """One phase of one chunk: [start_s, end_s] in seconds from the run's start event."""

    run: str  # which timed run: e.g. "8 chunks, 4 streams" or "1 chunk"
    chunk: int
    stream: int
    phase: str  # "h2d" (a and b in), "kernel", "d2h" (c out)
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def to_dict(self) -> dict:
        return {"run": self.run, "chunk": self.chunk, "stream": self.stream, "phase": self.phase, "start_s": self.start_s, "end_s": self.end_s}


@dataclass(frozen=True)
class TimelineBar:
    """One bar of the Gantt chart: an interval placed in a lane, times from 0."""

    run: str
    lane: str
    chunk: int
    stream: int
    phase: str
    start_s: float
    end_s: float


def build_timeline(intervals: Iterable[Interval], by: str = "stream") -> tuple[TimelineBar, ...]:
    """Place intervals in lanes for a Gantt chart (pure).

    Each run starts at 0. ``by="stream"``: one lane per stream, as recorded (an
    interval on a stream includes any wait for a busy copy engine). ``by="engine"``:
    one lane per engine — H2D copies, kernels, D2H copies — where each copy engine is
    assumed to run one copy at a time in the order they finished, so a copy starts no
    earlier than the previous one on its engine ended (an inference, labelled so).
    """
    if by not in ("stream", "engine"):
        raise ValueError(f"lanes are by 'stream' or 'engine', got {by!r}")
    items = list(intervals)
    for iv in items:
        if iv.end_s < iv.start_s:
            raise ValueError(f"interval of chunk {iv.chunk} {iv.phase} ends before it starts ({iv.start_s} > {iv.end_s})")
        if iv.phase not in TIMELINE_PHASES:
            raise ValueError(f"unknown phase {iv.phase!r}; expected one of {TIMELINE_PHASES}")
    bars: list[TimelineBar] = []
    for run in dict.fromkeys(iv.run for iv in items):
        mine = [iv for iv in items if iv.run == run]
        origin = min(iv.start_s for iv in mine)
        if by == "stream":
            for iv in mine:
                bars.append(TimelineBar(run, f"stream {iv.stream}", iv.chunk, iv.stream, iv.phase, iv.start_s - origin, iv.end_s - origin))
            continue
        for phase in TIMELINE_PHASES:
            engine_free = origin
            for iv in sorted((iv for iv in mine if iv.phase == phase), key=lambda iv: (iv.end_s, iv.start_s)):
                start = max(iv.start_s, engine_free) if phase != "kernel" else iv.start_s
                bars.append(TimelineBar(run, ENGINE_LANES[phase], iv.chunk, iv.stream, phase, start - origin, iv.end_s - origin))
                engine_free = iv.end_s
    return tuple(sorted(bars, key=lambda b: (b.run, b.lane, b.start_s, b.chunk)))


def concurrent_s(bars: Iterable[TimelineBar]) -> float:
    """Seconds during which at least two bars are active at once (sweep line; pure)."""
    edges = []
    for bar in bars:
        if bar.end_s > bar.start_s:
            edges += [(bar.start_s, 1), (bar.end_s, -1)]
    edges.sort(key=lambda e: (e[0], e[1]))  # at a shared instant, ends close before starts open
    active, last, total = 0, 0.0, 0.0
    for t, step in edges:
        if active >= 2:
            total += t - last
        active += step
        last = t
    return total


def span_s(bars: Iterable[TimelineBar]) -> float:
    """From the first start to the last end, seconds (0 for no bars)."""
    bars = list(bars)
    return max(b.end_s for b in bars) - min(b.start_s for b in bars) if bars else 0.0


def overlap_fraction(intervals: Iterable[Interval], run: str) -> float:
    """Share of ``run``'s span during which two engines (copies, kernels) were busy at once."""
    bars = [b for b in build_timeline(intervals, by="engine") if b.run == run]
    span = span_s(bars)
    return concurrent_s(bars) / span if span > 0 else 0.0


# --- strategies ----------------------------------------------------------------------

STRATEGIES: dict[str, str] = {
    "article": "As in the article",
    "careful": "Careful (output on the device)",
    "pinned": "Pinned host memory",
    "resident": "Data kept on the device",
    "chunked": "Chunked streams",
    "one-chunk": "Pinned, one chunk (streams baseline)",
    "mapped": "Mapped zero-copy host memory",
}
STRATEGY_DESCRIPTIONS: dict[str, str] = {
    "article": "pageable host memory; a, b and c copied in (c as zeros), the kernel, c copied out — the article's gpu_add",
    "careful": "pageable host memory; a and b copied in, c allocated on the device, the kernel, c copied out",
    "pinned": "as careful, with a, b and c in page-locked (pinned) host memory: copies go by DMA without a staging copy",
    "resident": "a and b copied in once, the kernel run K times on the device, c copied out once: cost per iteration",
    "chunked": "pinned host memory; the arrays split into chunks over several streams so one chunk's copies overlap other chunks' kernels and copies; device buffers allocated once",
    "one-chunk": "the chunked code with one chunk on one stream: the same pinned copies and buffers, without overlap",
    "mapped": "a, b and c in mapped (zero-copy) pinned host memory: the kernel reads and writes host memory over the link, no copies",
}
PHASE_LABELS: dict[str, str] = {
    "h2d": "H2D copy",
    "launch": "Kernel launch (host)",
    "kernel": "Kernel",
    "d2h": "D2H copy",
    "span": "Copies + kernels (event span)",
}
BREAKDOWN_PHASES = ("h2d", "launch", "kernel", "d2h", "span")
# Host arrays a comparison holds at once: a, b, the reference, one output, pinned a, b,
# c, mapped a, b, c, and the agreement check's temporaries (two float64 arrays = 4).
TRANSFER_HOST_ARRAYS = 14
LARGE_N_CAP = 2**28  # 1 GiB per float32 array: big enough to sit on every plateau, quick enough to time
DEFAULT_ITERATIONS = 100
SIMULATOR_ITERATIONS = 3
SIMULATOR_STRATEGY_N = 2048  # eight strategies of simulated kernels stay within seconds


def max_transfer_n() -> int:
    """Largest N a strategy comparison may use now (host: 14 arrays; device: a, b, c)."""
    return max_vector_n(host_arrays=TRANSFER_HOST_ARRAYS, device_arrays=3)


@dataclass(frozen=True)
class StrategyRun:
    """One strategy's timings and agreement. Times in seconds.

    ``phases`` holds raw samples: "h2d", "launch" (hardware only), "kernel", "d2h" or,
    for chunked runs, "span" (start event to the last chunk's last event: copies and kernels, overlapped where they could be). ``total`` is the
    wall-clock time of one sample. For "resident" a sample is the whole sequence: its
    copies and ``total`` cover ``iterations`` kernel runs and "kernel" is already per
    iteration; ``cost_s`` and ``phase_cost_s`` divide by ``iterations`` where needed.
    """

    key: str
    host_memory: str  # "pageable", "pinned", "mapped"; "pageable (pinning failed)" on fallback
    phases: dict[str, Stats]
    total: Stats
    agreement: Agreement
    iterations: int = 1
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return STRATEGIES[self.key]

    @property
    def description(self) -> str:
        return STRATEGY_DESCRIPTIONS[self.key]

    @property
    def cost_s(self) -> float:
        """Median wall-clock seconds per vector add (per iteration for "resident")."""
        return self.total.median_s / self.iterations

    def phase_cost_s(self, phase: str) -> float:
        """Median seconds of ``phase`` per vector add (copies amortised for "resident")."""
        median = self.phases[phase].median_s
        return median if phase == "kernel" else median / self.iterations

    def per_result_factor(self, phase: str) -> float:
        """What to multiply a raw sample of ``phase`` (or "total") by to get seconds per vector add."""
        return 1.0 if phase == "kernel" else 1.0 / self.iterations

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "label": self.label,
            "description": self.description,
            "host_memory": self.host_memory,
            "iterations": self.iterations,
            "cost_s": self.cost_s,
            "phases": {k: v.to_dict() for k, v in self.phases.items()},
            "total": self.total.to_dict(),
            "agreement": self.agreement.to_dict(),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class StrategyComparison:
    """The same vector add done every way, side by side. Times in seconds."""

    n: int
    threads_per_block: int
    chunks: int
    streams: int
    iterations: int
    policy: RepeatPolicy
    backend: str
    device: DeviceInfo
    strategies: dict[str, StrategyRun]
    skipped: dict[str, str]  # strategy -> why it did not run
    intervals: tuple[Interval, ...]  # last timed run of "chunked" and "one-chunk"
    capabilities: dict[str, int | None]  # device attributes that decide what can overlap or map
    compile_s: float = 0.0
    seed: int = 0
    notes: tuple[str, ...] = ()
    created_at: str = field(default_factory=utc_timestamp)

    experiment = "transfers-strategies"
    dtype = "float32"

    @property
    def agree(self) -> bool:
        return all(s.agreement.passed for s in self.strategies.values())

    @property
    def bytes_moved(self) -> int:
        return BYTES_PER_ELEMENT * self.n

    @property
    def ranking(self) -> list[StrategyRun]:
        """Fastest first, by median cost per vector add."""
        return sorted(self.strategies.values(), key=lambda s: s.cost_s)

    @property
    def winner(self) -> StrategyRun | None:
        return self.ranking[0] if self.strategies else None

    @property
    def copying_winner(self) -> StrategyRun | None:
        """Fastest among strategies that move the data across the link for every result."""
        return next((s for s in self.ranking if s.key != "resident"), None)

    @property
    def chunked_speedup(self) -> float | None:
        """Unchunked pinned cost / chunked cost (same buffers and code), or None."""
        chunked, single = self.strategies.get("chunked"), self.strategies.get("one-chunk")
        if chunked is None or single is None or chunked.cost_s <= 0:
            return None
        return single.cost_s / chunked.cost_s

    @property
    def chunk_run(self) -> str:
        return chunk_run_label(self.chunks, self.streams)

    @property
    def overlap(self) -> float | None:
        """Share of the chunked run's span with two engines busy at once (engine lanes)."""
        if not any(iv.run == self.chunk_run for iv in self.intervals):
            return None
        return overlap_fraction(self.intervals, self.chunk_run)

    def speedup_over(self, key: str, than: str) -> float | None:
        a, b = self.strategies.get(key), self.strategies.get(than)
        if a is None or b is None or a.cost_s <= 0:
            return None
        return b.cost_s / a.cost_s

    def verdict(self) -> str:
        """Which strategy wins at this N, and by how much, in words."""
        if not self.strategies:
            return "No strategy ran."
        best = self.winner
        baseline = self.strategies.get("article")

        def versus(run: StrategyRun) -> str:
            if baseline is None or run.key == "article":
                return ""
            return f", {format_factor(baseline.cost_s / run.cost_s)} faster than as in the article ({format_seconds(baseline.cost_s)})"

        parts = []
        if best.key == "resident":
            parts.append(
                f"At N = {self.n:,}, keeping the data on the device wins: {format_seconds(best.cost_s)} per vector add "
                f"(copies amortised over {best.iterations} kernel runs){versus(best)}."
            )
            copying = self.copying_winner
            if copying is not None:
                parts.append(f"If the data must cross the link for every result, {copying.label.lower()} wins: {format_seconds(copying.cost_s)}{versus(copying)}.")
        else:
            runner_up = self.ranking[1] if len(self.ranking) > 1 else None
            margin = (
                f"; the next best, {runner_up.label.lower()}, takes {format_seconds(runner_up.cost_s)} ({format_factor(runner_up.cost_s / best.cost_s)} as long)"
                if runner_up
                else ""
            )
            parts.append(f"At N = {self.n:,}, {best.label.lower()} wins: {format_seconds(best.cost_s)} per vector add{versus(best)}{margin}.")
        speedup = self.chunked_speedup
        if speedup is not None:
            overlap = self.overlap
            seen = f"; copies and kernels overlap for {overlap:.0%} of its timeline" if overlap is not None and not BACKEND.simulated else ""
            word = "faster" if speedup >= 1 else "slower"
            parts.append(
                f"Chunked streams ({self.chunks} chunks on {self.streams} streams) are {format_factor(speedup if speedup >= 1 else 1 / speedup)} "
                f"{word} than the same pinned copies in one chunk{seen}."
            )
        if self.backend == "simulator":
            parts.append("(Simulated: these timings are meaningless.)")
        return " ".join(parts)

    def to_frame(self):
        """Tidy samples: one row per strategy x phase x sample (pandas DataFrame).

        Columns: strategy, label, phase ("h2d", "launch", "kernel", "d2h", "span",
        "total"), sample, seconds (raw), per_result_s (seconds per vector add),
        iterations, n, backend.
        """
        import pandas as pd

        rows = []
        for s in self.strategies.values():
            for phase, stats in [*s.phases.items(), ("total", s.total)]:
                factor = s.per_result_factor(phase)
                for i, seconds in enumerate(stats.samples_s):
                    rows.append((s.key, s.label, phase, i, seconds, seconds * factor, s.iterations))
        frame = pd.DataFrame(rows, columns=["strategy", "label", "phase", "sample", "seconds", "per_result_s", "iterations"])
        frame["n"] = self.n
        frame["backend"] = self.backend
        return frame

    def timeline_frame(self, by: str = "stream"):
        """The chunked and one-chunk timelines as Gantt bars (pandas DataFrame).

        Columns: run, lane, chunk, stream, phase, start_ms, end_ms, duration_ms.
        """
        import pandas as pd

        bars = build_timeline(self.intervals, by=by)
        return pd.DataFrame(
            [(b.run, b.lane, b.chunk, b.stream, b.phase, b.start_s * 1e3, b.end_s * 1e3, (b.end_s - b.start_s) * 1e3) for b in bars],
            columns=["run", "lane", "chunk", "stream", "phase", "start_ms", "end_ms", "duration_ms"],
        )

    def to_dict(self) -> dict:
        return {
            "experiment": self.experiment,
            "created_at": self.created_at,
            "backend": self.backend,
            "device": self.device.to_dict(),
            "params": {
                "n": self.n,
                "threads_per_block": self.threads_per_block,
                "chunks": self.chunks,
                "streams": self.streams,
                "iterations": self.iterations,
                "repeats": self.policy.n_repeat,
                "strategies": list(self.strategies),
            },
            "n": self.n,
            "dtype": self.dtype,
            "threads_per_block": self.threads_per_block,
            "chunks": self.chunks,
            "streams": self.streams,
            "iterations": self.iterations,
            "seed": self.seed,
            "policy": self.policy.to_dict(),
            "compile_s": self.compile_s,
            "agree": self.agree,
            "capabilities": dict(self.capabilities),
            "strategies": {k: v.to_dict() for k, v in self.strategies.items()},
            "skipped": dict(self.skipped),
            "winner": self.winner.key if self.winner else None,
            "chunked_speedup": self.chunked_speedup,
            "overlap_fraction": self.overlap,
            "verdict": self.verdict(),
            "timeline": [iv.to_dict() for iv in self.intervals],
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        lines = [
            f"vector add strategies, N = {self.n:,} float32, {self.threads_per_block} threads per block, "
            f"{self.device.name} ({self.backend}); {self.policy.describe()}; medians per vector add",
            f"results agree with NumPy: {'yes, every strategy bit for bit' if self.agree else 'NO'}",
        ]
        for s in self.ranking:
            parts = ", ".join(f"{p} {format_seconds(s.phase_cost_s(p))}" for p in BREAKDOWN_PHASES if p in s.phases)
            lines.append(f"  {s.label:<38} {format_seconds(s.cost_s):>9}  ({parts}; {s.host_memory})")
        for key, why in self.skipped.items():
            lines.append(f"  {STRATEGIES[key]:<38} skipped: {why}")
        lines.append(self.verdict())
        lines += list(self.notes)
        return "\n".join(lines)


def chunk_run_label(chunks: int, streams: int) -> str:
    return f"{chunks} chunk{'s' if chunks != 1 else ''} on {streams} stream{'s' if streams != 1 else ''}"


# --- strategy runners (each returns phase Stats; output written into ``out``) -----------


def _device_attribute(name: str) -> int | None:
    if BACKEND.simulated:
        return None
    try:
        return int(getattr(cuda.get_current_device(), name))
    except Exception:  # attribute unknown to this driver or binding
        return None


def device_capabilities() -> dict[str, int | None]:
    """Device attributes that decide mapping and overlap (None in the simulator)."""
    return {name.lower(): _device_attribute(name) for name in ("CAN_MAP_HOST_MEMORY", "UNIFIED_ADDRESSING", "ASYNC_ENGINE_COUNT", "CONCURRENT_KERNELS")}


def _poison_device(d_array, stream=0) -> None:
    """Fill a float32 device array with NaN bits (0xFFFFFFFF) so unwritten elements show."""
    if BACKEND.simulated:
        d_array[:] = np.nan
    else:
        cuda.cudadrv.driver.device_memset(d_array, 0xFF, d_array.alloc_size, stream)


def _split_launch(phases: dict[str, float], launch: Callable[[], None], stream, clock: Clock) -> None:
    """On hardware, split the "kernel" interval into launch latency and the kernel alone
    (as gpu.experiments.vector_add.time_gpu_phases does): re-run the kernel behind a
    verified stream hold (L2 flushed). No min(alone, with launch): that hid samples whose
    hold had expired (issue 10, item 4); the hold is checked instead, and the launch
    share is floored at 0 only against the kernel's own sample-to-sample noise."""
    if BACKEND.simulated:
        return
    with_launch = phases["kernel"]
    alone = time_kernel(launch, stream, RepeatPolicy.count(1, warmup=0), clock)
    phases["kernel"] = alone.median_s
    phases["launch"] = max(0.0, with_launch - alone.median_s)


def _ordered(phases: Mapping[str, float]) -> dict[str, float]:
    return {p: phases[p] for p in (*BREAKDOWN_PHASES, "total") if p in phases}


def time_article(a: np.ndarray, b: np.ndarray, out: np.ndarray, threads_per_block: int, policy: RepeatPolicy, clock: Clock = time.perf_counter) -> dict[str, Stats]:
    """The article's gpu_add: c = zeros on the host, a, b AND c copied in, kernel, c out.

    Phases with events on one stream; "total" is wall clock including the zeros. The
    one exception to "allocation before the start event", on purpose: this reproduces
    the article, whose ``cuda.to_device`` allocates while it copies, so its H2D
    includes allocating three arrays (the captions say so).
    """
    n = a.size
    blocks = blocks_for(n, threads_per_block)
    stream = cuda.stream()
    timer = PhaseTimer(stream, ("h2d", "kernel", "d2h"), clock=clock)

    def once() -> dict[str, float]:
        started = clock()
        c = np.zeros_like(a)
        timer.start()
        d_a = cuda.to_device(a, stream=stream)
        d_b = cuda.to_device(b, stream=stream)
        d_c = cuda.to_device(c, stream=stream)
        timer.end("h2d")
        vector_add_kernel[blocks, threads_per_block, stream](d_a, d_b, d_c)
        timer.end("kernel")
        d_c.copy_to_host(out, stream=stream)
        timer.end("d2h")
        phases = timer.durations_s()
        total = clock() - started
        _split_launch(phases, lambda: vector_add_kernel[blocks, threads_per_block, stream](d_a, d_b, d_c), stream, clock)
        phases["total"] = total
        return _ordered(phases)

    return collect(once, policy, noise_key="total", clock=clock)


def time_resident(a: np.ndarray, b: np.ndarray, out: np.ndarray, threads_per_block: int, iterations: int, policy: RepeatPolicy, clock: Clock = time.perf_counter) -> dict[str, Stats]:
    """Copy a and b in once, run the kernel ``iterations`` times, copy c out once.

    "h2d" and "d2h" are per sequence, "kernel" is per iteration (K back-to-back
    launches between two events, divided by K: launch gaps included), "total" is the
    wall clock of the whole sequence.
    """
    n = a.size
    blocks = blocks_for(n, threads_per_block)
    stream = cuda.stream()
    timer = PhaseTimer(stream, ("h2d", "kernel", "d2h"), clock=clock)
    launch = vector_add_kernel[blocks, threads_per_block, stream]
    # one rule everywhere (issue 10, item 5): device buffers are allocated before the start event
    d_a = cuda.device_array(n, dtype=np.float32, stream=stream)
    d_b = cuda.device_array(n, dtype=np.float32, stream=stream)
    d_c = cuda.device_array(n, dtype=np.float32, stream=stream)

    def once() -> dict[str, float]:
        started = clock()
        timer.start()
        d_a.copy_to_device(a, stream=stream)
        d_b.copy_to_device(b, stream=stream)
        timer.end("h2d")
        for _ in range(iterations):
            launch(d_a, d_b, d_c)
        timer.end("kernel")
        d_c.copy_to_host(out, stream=stream)
        timer.end("d2h")
        phases = timer.durations_s()
        phases["kernel"] /= iterations
        phases["total"] = clock() - started
        return phases

    return collect(once, policy, noise_key="total", clock=clock)


class _Marks:
    """Timestamps on several streams: CUDA events on hardware (created once), the wall
    clock after each operation in the simulator (where every stream is synchronous)."""

    def __init__(self, count: int, clock: Clock):
        self._simulated = BACKEND.simulated
        self._clock = clock
        self._events = [] if self._simulated else [cuda.event() for _ in range(count)]
        self._times: list[float] = []
        self._used = 0

    def reset(self) -> None:
        self._times, self._used = [], 0

    def mark(self, stream) -> int:
        index = self._used
        self._used += 1
        if self._simulated:
            stream.synchronize()
            self._times.append(self._clock())
        else:
            self._events[index].record(stream)
        return index

    def seconds(self) -> list[float]:
        """Every mark in seconds after mark 0 (call after the streams have finished)."""
        if self._simulated:
            return [t - self._times[0] for t in self._times]
        first = self._events[0]
        return [first.elapsed_time(ev) / 1e3 for ev in self._events[: self._used]]


def time_chunked(
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    threads_per_block: int,
    chunks: int,
    streams: int,
    policy: RepeatPolicy,
    clock: Clock = time.perf_counter,
) -> tuple[dict[str, Stats], tuple[Interval, ...]]:
    """c = a + b in ``chunks`` pieces over ``streams`` streams (chunk i on stream i mod S).

    Per chunk, on its stream: copy its a and b in, run the kernel on it, copy its c
    out, with an event before and after each phase, all timed from one start event.
    Device buffers are allocated once, outside the timing. Host arrays should be pinned
    for copies to overlap. Returns ({"span": start to last event, "total": wall
    clock}, the last sample's intervals).
    """
    n = a.size
    bounds = chunk_bounds(n, chunks)
    run = chunk_run_label(chunks, streams)
    pool = [cuda.stream() for _ in range(streams)]
    d_a = cuda.device_array(n, dtype=np.float32)
    d_b = cuda.device_array(n, dtype=np.float32)
    d_c = cuda.device_array(n, dtype=np.float32)
    _poison_device(d_c)  # a chunk the pipeline misses stays NaN and fails the check
    # prepare every chunk's views and launch configuration outside the timed region
    plan = []
    for i, (lo, hi) in enumerate(bounds):
        s = pool[i % streams]
        launch = vector_add_kernel[blocks_for(hi - lo, threads_per_block), threads_per_block, s]
        plan.append((i, i % streams, s, a[lo:hi], b[lo:hi], out[lo:hi], d_a[lo:hi], d_b[lo:hi], d_c[lo:hi], launch))
    marks = _Marks(1 + 4 * len(plan), clock)
    last: list[tuple[Interval, ...]] = [()]

    def once() -> dict[str, float]:
        started = clock()
        marks.reset()
        marks.mark(pool[0])  # the start event every interval is timed from
        index = []
        for i, lane, s, ha, hb, hc, da, db, dc, launch in plan:
            m0 = marks.mark(s)
            da.copy_to_device(ha, stream=s)
            db.copy_to_device(hb, stream=s)
            m1 = marks.mark(s)
            launch(da, db, dc)
            m2 = marks.mark(s)
            dc.copy_to_host(hc, stream=s)
            m3 = marks.mark(s)
            index.append((i, lane, m0, m1, m2, m3))
        for s in pool:
            s.synchronize()
        total = clock() - started
        t = marks.seconds()
        intervals = []
        for i, lane, m0, m1, m2, m3 in index:
            intervals += [
                Interval(run, i, lane, "h2d", t[m0], t[m1]),
                Interval(run, i, lane, "kernel", t[m1], t[m2]),
                Interval(run, i, lane, "d2h", t[m2], t[m3]),
            ]
        last[0] = tuple(intervals)
        return {"span": max(iv.end_s for iv in intervals), "total": total}

    stats = collect(once, policy, noise_key="total", clock=clock)
    return stats, last[0]


def mapped_supported() -> tuple[bool, str]:
    """Whether this device can map host memory, and why not when it cannot."""
    if BACKEND.simulated:
        return True, "simulated as an ordinary array: there is no host link to cross"
    can_map = _device_attribute("CAN_MAP_HOST_MEMORY")
    if not can_map:
        return False, "this device cannot map host memory (CAN_MAP_HOST_MEMORY is 0)"
    return True, "the device maps host memory" + (" with unified addressing" if _device_attribute("UNIFIED_ADDRESSING") else "")


def time_mapped(a: np.ndarray, b: np.ndarray, out: np.ndarray, threads_per_block: int, policy: RepeatPolicy, clock: Clock = time.perf_counter) -> dict[str, Stats]:
    """The kernel on mapped (zero-copy) host arrays: it reads a and b and writes c
    across the link itself; no copies. Raises when mapped memory cannot be allocated."""
    n = a.size
    blocks = blocks_for(n, threads_per_block)
    m_a = cuda.mapped_array(n, dtype=np.float32)
    m_b = cuda.mapped_array(n, dtype=np.float32)
    m_c = cuda.mapped_array(n, dtype=np.float32)
    m_a[:] = a  # the data lives in mapped memory from the start: filling it is not timed
    m_b[:] = b
    m_c[:] = np.nan  # unwritten elements would fail the check
    stream = cuda.stream()
    timer = PhaseTimer(stream, ("kernel",), clock=clock)
    launch = vector_add_kernel[blocks, threads_per_block, stream]

    def once() -> dict[str, float]:
        started = clock()
        timer.start()
        launch(m_a, m_b, m_c)
        timer.end("kernel")
        phases = timer.durations_s()  # waits: c is then complete in host memory
        total = clock() - started
        # no launch split here: the kernel reads host memory, so re-running it is a
        # second full transfer and its time dwarfs the launch latency
        phases["total"] = total
        return phases

    stats = collect(once, policy, noise_key="total", clock=clock)
    if BACKEND.simulated:
        m_c.copy_to_host(out)
    else:
        np.copyto(out, np.asarray(m_c))  # a plain host read: the memory is host memory
    return stats


def _pinned_float32(n: int) -> tuple[np.ndarray, bool]:
    """A float32 host array of n elements, pinned if possible (else pageable)."""
    buffer, ok = host_buffer(n * 4, pinned=True)
    return buffer.view(np.float32), ok


def run_strategies(
    n: int | str,
    threads_per_block: int = 256,
    chunks: int | str = 8,
    streams: int | str = 4,
    iterations: int | str | None = None,
    policy: RepeatPolicy | None = None,
    strategies: Iterable[str] = tuple(STRATEGIES),
    *,
    seed: int = 0,
    max_n: int | None = None,
    on_progress: Progress | None = None,
) -> StrategyComparison:
    """Run and time the vector add every way in ``strategies``; check each bit for bit.

    Validates every input first. ``iterations`` (the data-kept-on-device runs) defaults
    to 100, 3 in the simulator; ``policy`` to 5 timed runs after one warm-up.
    """
    say = on_progress or (lambda _m: None)
    n = check_n(n, max_transfer_n() if max_n is None else max_n)
    warnings = check_threads_per_block(threads_per_block, device_info().max_threads_per_block)
    chunks = check_chunks(chunks, n)
    streams = check_streams(streams, chunks)
    iterations = check_iterations(iterations if iterations is not None else (SIMULATOR_ITERATIONS if BACKEND.simulated else DEFAULT_ITERATIONS))
    wanted = list(dict.fromkeys(strategies))
    unknown = [k for k in wanted if k not in STRATEGIES]
    if unknown:
        raise InputError(f"unknown strategy {unknown[0]!r}; choose from {', '.join(STRATEGIES)}")
    if "chunked" in wanted and "one-chunk" not in wanted:
        wanted.append("one-chunk")  # the chunked speedup is measured against it
    wanted = [k for k in STRATEGIES if k in wanted]
    policy = policy or RepeatPolicy.count(5)

    # prepare inputs, the reference and host buffers (untimed)
    say("preparing inputs")
    a, b = make_inputs(n, seed)
    reference = a + b
    out = np.empty(n, dtype=np.float32)
    compile_s = compile_vector_add()
    notes: list[str] = list(warnings)
    results: dict[str, StrategyRun] = {}
    skipped: dict[str, str] = {}
    intervals: list[Interval] = []

    def finish(key: str, stats: dict[str, Stats], memory: str, result: np.ndarray, its: int = 1, extra: tuple[str, ...] = ()) -> None:
        total = stats.pop("total")
        agreement = check_agreement(key, result, reference)
        results[key] = StrategyRun(key, memory, stats, total, agreement, its, extra)

    pinned = None
    if any(k in wanted for k in ("pinned", "chunked", "one-chunk")):
        say("allocating pinned host memory")
        p_a, ok_a = _pinned_float32(n)
        p_b, ok_b = _pinned_float32(n)
        p_c, ok_c = _pinned_float32(n)
        np.copyto(p_a, a)
        np.copyto(p_b, b)
        pinned_ok = ok_a and ok_b and ok_c
        if not pinned_ok:
            notes.append(
                "Pinned host memory could not be allocated (a busy machine or a locked-memory limit): "
                "the pinned and chunked strategies fell back to pageable memory, so their copies cannot overlap."
            )
        pinned = (p_a, p_b, p_c, "pinned" if pinned_ok else "pageable (pinning failed)")

    for key in wanted:
        say(f"timing: {STRATEGIES[key].lower()}")
        out.fill(np.nan)  # a result the strategy fails to write shows as a mismatch
        if key == "article":
            finish(key, time_article(a, b, out, threads_per_block, policy), "pageable", out)
        elif key == "careful":
            finish(key, time_gpu_phases(a, b, out, threads_per_block, policy), "pageable", out)
        elif key == "pinned":
            p_a, p_b, p_c, memory = pinned
            p_c.fill(np.nan)
            finish(key, time_gpu_phases(p_a, p_b, p_c, threads_per_block, policy), memory, p_c)
        elif key == "resident":
            finish(key, time_resident(a, b, out, threads_per_block, iterations, policy), "pageable", out, its=iterations)
        elif key in ("chunked", "one-chunk"):
            p_a, p_b, p_c, memory = pinned
            p_c.fill(np.nan)
            c, s = (chunks, streams) if key == "chunked" else (1, 1)
            stats, ivs = time_chunked(p_a, p_b, p_c, threads_per_block, c, s, policy)
            intervals += ivs
            finish(key, stats, memory, p_c, extra=(f"{chunk_run_label(c, s)}",))
        elif key == "mapped":
            ok, why = mapped_supported()
            if not ok:
                skipped[key] = why
                continue
            try:
                stats = time_mapped(a, b, out, threads_per_block, policy)
            except Exception as exc:  # mapping can fail on a busy machine: report, go on
                if BACKEND.simulated:
                    raise
                skipped[key] = f"mapped host memory could not be allocated or used ({exc})"
                continue
            finish(key, stats, "mapped", out, extra=(why,))
    if BACKEND.simulated:
        notes.append(SIMULATED_NOTE)
    return StrategyComparison(
        n=n,
        threads_per_block=threads_per_block,
        chunks=chunks,
        streams=streams,
        iterations=iterations,
        policy=policy,
        backend=BACKEND.kind,
        device=device_info(),
        strategies=results,
        skipped=skipped,
        intervals=tuple(intervals),
        capabilities=device_capabilities(),
        compile_s=compile_s,
        seed=seed,
        notes=tuple(notes),
    )


# --- library pinned copies (the ±5% yardstick) and the check section ----------------------

LIBRARIES = ("cupy", "torch")


def time_library_copy(library: str, direction: str, nbytes: int, policy: RepeatPolicy) -> Stats:
    """Time a pinned host<->device copy of ``nbytes`` through CuPy or PyTorch, with the
    library's own events on its own stream. Raises RuntimeError (from
    ``gpu.core.reference.unavailable_reason``) when the library cannot run here."""
    from gpu.core.reference import unavailable_reason

    if direction not in ("h2d", "d2h"):
        raise ValueError(f"library copies are h2d or d2h, got {direction!r}")
    reason = unavailable_reason(library)
    if reason is not None:
        raise RuntimeError(reason)
    if library == "cupy":
        import cupy as cp
        import cupyx

        host = dev = None
        try:
            host = cupyx.empty_pinned((nbytes,), dtype=np.uint8)
            host.fill(1)
            dev = cp.empty(nbytes, dtype=cp.uint8)
            stream = cp.cuda.Stream(non_blocking=True)
            start, end = cp.cuda.Event(), cp.cuda.Event()
            rt = cp.cuda.runtime
            src, dst, kind = (host.ctypes.data, dev.data.ptr, rt.memcpyHostToDevice) if direction == "h2d" else (dev.data.ptr, host.ctypes.data, rt.memcpyDeviceToHost)

            def once() -> dict[str, float]:
                start.record(stream)
                rt.memcpyAsync(dst, src, nbytes, kind, stream.ptr)
                end.record(stream)
                end.synchronize()
                return {"copy": cp.cuda.get_elapsed_time(start, end) / 1e3}  # ms -> s

            return collect(once, policy, noise_key="copy")["copy"]
        finally:
            host = dev = None  # release before freeing the pools
            cp.get_default_memory_pool().free_all_blocks()
            cp.get_default_pinned_memory_pool().free_all_blocks()
    if library == "torch":
        import torch

        host = dev = None
        try:
            host = torch.ones(nbytes, dtype=torch.uint8, pin_memory=True)
            dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
            stream = torch.cuda.Stream()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

            def once() -> dict[str, float]:
                with torch.cuda.stream(stream):
                    start.record(stream)
                    if direction == "h2d":
                        dev.copy_(host, non_blocking=True)
                    else:
                        host.copy_(dev, non_blocking=True)
                    end.record(stream)
                end.synchronize()
                return {"copy": start.elapsed_time(end) / 1e3}  # ms -> s

            return collect(once, policy, noise_key="copy")["copy"]
        finally:
            host = dev = None
            torch.cuda.empty_cache()
    raise ValueError(f"unknown library {library!r}; choose from {', '.join(LIBRARIES)}")


CHECK_BUDGET_S = 90.0  # the whole section on an H200
LIBRARY_TOLERANCE = 0.05  # the target: our pinned plateau within 5% of the library's
LIBRARY_COPY_BYTES = 256 * MIB  # on every plateau measured so far, and 5 ms a copy at 50 GB/s


def _strategy_table(result: StrategyComparison) -> list[str]:
    md = [
        f"N = {result.n:,} float32 ({format_bytes(result.bytes_moved)} moved per vector add), {result.threads_per_block} threads per block, "
        f"{result.chunks} chunks on {result.streams} streams, K = {result.iterations} kernel runs for the data kept on the device; "
        f"{result.policy.describe()}; medians per vector add (CUDA events for phases, wall clock end to end).",
        "",
        "| strategy | end to end | H2D | launch | kernel | D2H | copies + kernels (span) | host memory | bit-identical |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in result.ranking:
        cells = [format_seconds(s.phase_cost_s(p)) if p in s.phases else "" for p in BREAKDOWN_PHASES]
        md.append(f"| {s.label} | {format_seconds(s.cost_s)} | {' | '.join(cells)} | {s.host_memory} | {'yes' if s.agreement.passed else 'NO'} |")
    for key, why in result.skipped.items():
        md.append(f"| {STRATEGIES[key]} | skipped: {why} | | | | | | | |")
    md += ["", result.verdict()]
    md += [f"- note: {note}" for note in result.notes]
    return md


def check_transfers(quick: bool, max_n: int, say: Progress) -> tuple[bool, dict, str]:
    """The check's transfers section: (passed, JSON data, markdown).

    Full: bandwidth curves 4 KiB..256 MiB (until noise ≤ 2% or 0.4 s per point), our
    pinned H2D/D2H at 256 MiB against CuPy's (else PyTorch's) in the same run, and the
    strategies at N = 10^7 and at the largest N that fits (at most 2^28, halved until
    its projected time fits the section's ~90 s). Quick: small sizes, seconds.
    Passes when every strategy is bit-identical to NumPy at every size; the
    performance targets are reported, not enforced (they depend on the machine).
    """
    started = time.perf_counter()
    data: dict = {}
    md: list[str] = []

    # 1. bandwidth curves
    limit = max_copy_bytes()
    if quick:
        sizes = [s for s in SIMULATOR_COPY_SIZES[:3] if s <= limit]
        curves_policy = RepeatPolicy.count(2)
    else:
        sizes = [s for s in DEFAULT_COPY_SIZES if s <= limit]
        curves_policy = RepeatPolicy.until_stable(0.02, 0.4, max_repeat=30)
    curves = run_bandwidth_curves(sizes, policy=curves_policy, on_progress=lambda m: say(f"transfers: {m}"))
    data["bandwidth"] = curves.to_dict()
    series = curves.series()
    md += [
        f"Copy bandwidth (GB/s at the median; D2D counts read + write), {curves_policy.describe()} per point, CUDA events:",
        "",
        "| size | " + " | ".join(series_label(*k) for k in series) + " |",
        "|---" * (len(series) + 1) + "|",
    ]
    for size in curves.sizes:
        cells = [f"{p.bandwidth_gbps:,.4g}" if (p := curves.point(*k, size)) else "" for k in series]
        md.append(f"| {format_bytes(size)} | " + " | ".join(cells) + " |")
    md += ["", curves.summary(), *[f"- note: {n}" for n in curves.notes]]

    # 2. our pinned copies against a library's, same size, same run
    library_rows: list[dict] = []
    library_skipped: dict[str, str] = {}
    nbytes = min(LIBRARY_COPY_BYTES, limit)
    ours_policy = RepeatPolicy.count(3 if quick else 20, warmup=2)
    for library in LIBRARIES:
        try:
            for direction in ("h2d", "d2h"):
                say(f"transfers: {library} pinned {direction} copies of {format_bytes(nbytes)}")
                theirs = time_library_copy(library, direction, nbytes, ours_policy)
                ours, pinned_ok = time_copy(direction, nbytes, ours_policy, pinned=True)
                ratio = bandwidth_gbps(direction, nbytes, ours.median_s) / bandwidth_gbps(direction, nbytes, theirs.median_s)
                library_rows.append({
                    "library": library,
                    "direction": direction,
                    "nbytes": nbytes,
                    "ours_gbps": bandwidth_gbps(direction, nbytes, ours.median_s),
                    "library_gbps": bandwidth_gbps(direction, nbytes, theirs.median_s),
                    "ratio": ratio,
                    "within_5pct": abs(ratio - 1) <= LIBRARY_TOLERANCE,
                    "at_least_95pct": ratio >= 1 - LIBRARY_TOLERANCE,
                    "pinned_ok": pinned_ok,
                    "ours": ours.to_dict(),
                    "library_stats": theirs.to_dict(),
                })
            break  # one library is the yardstick; the first that runs
        except Exception as exc:  # optional: never fail the section over a missing library
            library_skipped[library] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    data["library_copies"] = {"rows": library_rows, "skipped": library_skipped}
    md += ["", f"Pinned copies of {format_bytes(nbytes)} against a library's, same run, {ours_policy.describe()}:", ""]
    if library_rows:
        md += ["| direction | Kernel Lab (numba-cuda) | library | ratio | within ±5% |", "|---|---|---|---|---|"]
        for r in library_rows:
            md.append(f"| {r['direction'].upper()} | {r['ours_gbps']:,.4g} GB/s | {r['library_gbps']:,.4g} GB/s ({r['library']}) | {r['ratio']:.3f} | {'yes' if r['within_5pct'] else 'NO'} |")
    for library, why in library_skipped.items():
        md.append(f"- {library}: skipped — {why}")

    # 3. strategies at 10^7 (scaled down when quick) and at the largest size that fits
    fits = min(max_n, max_transfer_n())
    small_n = min(1024 if quick else 10_000_000, fits)
    small_policy = RepeatPolicy.count(1 if quick else 5)
    t0 = time.perf_counter()
    small = run_strategies(small_n, 256, 8 if small_n >= 8 else 1, 4 if small_n >= 8 else 1, 2 if quick else DEFAULT_ITERATIONS, small_policy, max_n=fits, on_progress=lambda m: say(f"transfers N={small_n:,}: {m}"))
    small_wall = time.perf_counter() - t0
    comparisons = {"small": small}
    md += ["", f"### Strategies at N = {small.n:,}", "", *_strategy_table(small)]

    large_policy = RepeatPolicy.count(3)
    large_n = min(fits, LARGE_N_CAP)
    projection = None
    if not quick and large_n > small.n:
        # project from the small run: preparation scales with N; timed samples with N and their count
        timed = sum(s.total.mean_s for s in small.strategies.values())
        prep = max(small_wall - timed * (small_policy.n_repeat + small_policy.warmup), 0.0)
        remaining = CHECK_BUDGET_S - (time.perf_counter() - started) - 5.0

        def projected(n: int) -> float:
            scale = n / small.n
            return prep * scale + timed * scale * (large_policy.n_repeat + large_policy.warmup)

        while large_n > small.n and projected(large_n) > remaining:
            large_n //= 2
        projection = {"n": large_n, "projected_s": projected(large_n), "remaining_s": remaining, "fits": fits}
        if large_n > small.n:
            large = run_strategies(large_n, 256, 16, 4, DEFAULT_ITERATIONS, large_policy, max_n=fits, on_progress=lambda m: say(f"transfers N={large_n:,}: {m}"))
            comparisons["large"] = large
            capped = f" (fits: {fits:,}; capped at 2^28 and to the section's ~{CHECK_BUDGET_S:.0f} s)" if large_n < fits else ""
            md += ["", f"### Strategies at the largest size: N = {large.n:,}{capped}", "", *_strategy_table(large)]
    data["strategies"] = {k: v.to_dict() for k, v in comparisons.items()}
    data["large_n_projection"] = projection
    data["capabilities"] = small.capabilities

    # 4. the targets, reported
    biggest = comparisons.get("large", small)
    targets = {
        "pinned_h2d_within_5pct": next((r["within_5pct"] for r in library_rows if r["direction"] == "h2d"), None),
        "pinned_d2h_within_5pct": next((r["within_5pct"] for r in library_rows if r["direction"] == "d2h"), None),
        "chunked_beats_one_chunk_at_large_n": (biggest.chunked_speedup or 0) > 1 if biggest.chunked_speedup is not None else None,
        "chunked_speedup": biggest.chunked_speedup,
        "overlap_fraction": biggest.overlap,
        "timeline_shows_overlap": (biggest.overlap or 0) > 0 if biggest.overlap is not None else None,
    }
    data["targets"] = targets
    shown = {True: "met", False: "NOT met", None: "not measured"}
    md += [
        "",
        "Targets (reported, not enforced):",
        f"- pinned H2D within ±5% of the library: {shown[targets['pinned_h2d_within_5pct']]}",
        f"- pinned D2H within ±5% of the library: {shown[targets['pinned_d2h_within_5pct']]}",
        f"- chunked streams beat one chunk at N = {biggest.n:,}: {shown[targets['chunked_beats_one_chunk_at_large_n']]}"
        + (f" ({format_factor(biggest.chunked_speedup)})" if biggest.chunked_speedup else ""),
        f"- the timeline shows copies and kernels overlapping: {shown[targets['timeline_shows_overlap']]}"
        + (f" ({biggest.overlap:.0%} of the chunked run has two engines busy)" if biggest.overlap is not None else ""),
        f"- device: can map host memory {small.capabilities.get('can_map_host_memory')}, unified addressing "
        f"{small.capabilities.get('unified_addressing')}, copy engines {small.capabilities.get('async_engine_count')}",
    ]
    passed = all(c.agree for c in comparisons.values()) and bool(curves.points)
    return passed, data, "\n".join(md)


__all__ = [
    "BandwidthCurves",
    "BandwidthPoint",
    "Interval",
    "Plateau",
    "STRATEGIES",
    "StrategyComparison",
    "StrategyRun",
    "TimelineBar",
    "build_timeline",
    "chunk_bounds",
    "concurrent_s",
    "find_plateau",
    "format_bytes",
    "overlap_fraction",
    "run_bandwidth_curves",
    "run_strategies",
]


# --- the declarations ----------------------------------------------------------------


def _size_choice(value) -> int:
    size = parse_int(value, "copy size")
    if size not in COPY_SIZE_CHOICES:
        raise InputError(f"copy sizes are {format_bytes(COPY_SIZE_CHOICES[0])} to {format_bytes(COPY_SIZE_CHOICES[-1])} "
                         f"in steps of 4x; got {size:,} bytes")
    return size


def _series(value) -> tuple[tuple[str, str], ...]:
    names = value.split(",") if isinstance(value, str) else value
    chosen = []
    for name in names:
        key = tuple(name.strip().split("-")) if isinstance(name, str) else tuple(name)
        if key not in SERIES:
            raise InputError(f"unknown copy {name!r}; choose from {', '.join('-'.join(s) for s in SERIES)}")
        chosen.append(key)
    if not chosen:
        raise InputError("choose at least one kind of copy")
    return tuple(dict.fromkeys(chosen))


def _copy_sizes(p) -> tuple[int, ...]:
    if p["smallest"] > p["largest"]:
        raise InputError(f"the smallest copy ({format_bytes(p['smallest'])}) is larger than the largest ({format_bytes(p['largest'])})")
    return check_copy_sizes([s for s in COPY_SIZE_CHOICES if p["smallest"] <= s <= p["largest"]])


def _bandwidth_work(p) -> int:
    """Element-passes, counting 12 bytes (one vector-add element) as one element. Simulated
    copies are NumPy copies with no simulated threads, so they cost the budget nothing."""
    sizes = _copy_sizes(p)
    if BACKEND.simulated:
        return 0
    return sum(sizes) // BYTES_PER_ELEMENT * (p["repeats"] + 1) * len(p["series"])


BANDWIDTH = register(Experiment(
    key="transfers-bandwidth",
    title="Copy bandwidth",
    summary="host-link and device copy bandwidth against size, pageable and pinned",
    params=(
        Param("smallest", "Smallest copy", _size_choice, COPY_SIZE_CHOICES[0], "The smallest copy size, in bytes.",
              widget="select", options=COPY_SIZE_CHOICES, option_label=format_bytes),
        Param("largest", "Largest copy", _size_choice, PerBackend(max(DEFAULT_COPY_SIZES), max(SIMULATOR_COPY_SIZES)),
              "The largest copy size, in bytes; every 4x between the ends is measured.",
              widget="select", options=COPY_SIZE_CHOICES, option_label=format_bytes),
        Param("repeats", "Repeats per size", check_repeats, 10, "Timed copies per size after one warm-up; the median is plotted."),
        Param("series", "Copies", _series, SERIES, "Comma-separated, from " + ", ".join("-".join(s) for s in SERIES) + ".",
              widget="multiselect", options=SERIES, option_label=lambda key: series_label(*key)),
    ),
    run=lambda p, progress: run_bandwidth_curves(_copy_sizes(p), p["series"], RepeatPolicy.count(p["repeats"]), on_progress=progress),
    work=_bandwidth_work,
    measures=lambda curves: {f"{p.direction}_{p.memory}_gbps_at_largest": p.bandwidth_gbps
                             for p in curves.points if p.nbytes == max(curves.sizes)},
    passed=lambda curves: True,
    page="pages/4_Transfers.py",
    uses_cpu=True,
))


def _strategies_work(p) -> int:
    """Every strategy makes one pass over N per sample; in the simulator each of the K
    kernel runs costs as much as a pass too (on a GPU they are cheap next to the copies)."""
    chunks = check_chunks(p["chunks"], p["n"])
    check_streams(p["streams"], chunks)
    passes = len(STRATEGIES) + (p["iterations"] - 1 if BACKEND.simulated else 0)
    return p["n"] * (p["repeats"] + 1) * passes


@dataclass(frozen=True)
class TransfersRun:
    """The CLI's ``transfers``: the strategies, and the copy bandwidth curves when measured."""

    strategies: StrategyComparison
    bandwidth: BandwidthCurves | None = None

    @property
    def agree(self) -> bool:
        return self.strategies.agree

    def to_dict(self) -> dict:
        return {"experiment": "transfers", "bandwidth": self.bandwidth.to_dict() if self.bandwidth else None,
                "strategies": self.strategies.to_dict()}

    def __str__(self) -> str:
        return (f"{self.bandwidth}\n\n" if self.bandwidth is not None else "") + str(self.strategies)


def _run_transfers(p, progress) -> TransfersRun:
    strategies = run_strategies(p["n"], p["threads_per_block"], p["chunks"], p["streams"], p["iterations"],
                                RepeatPolicy.count(p["repeats"]), on_progress=progress)
    curves = run_bandwidth_curves(policy=RepeatPolicy.count(10), on_progress=progress) if p["bandwidth"] else None
    return TransfersRun(strategies, curves)


STRATEGIES_EXPERIMENT = register(Experiment(
    key="transfers",
    title="Transfer strategies",
    summary="the vector add six ways (article, careful, pinned, resident, chunked streams, mapped), "
            "and the copy bandwidth curves",
    params=(
        Param("n", "N (elements per vector)", lambda v: check_n(v, max_transfer_n()),
              lambda: min(SIMULATOR_STRATEGY_N if BACKEND.simulated else 10_000_000, max_transfer_n()),
              "A whole number such as 1000000, 1e6 or 2^20."),
        Param("threads_per_block", "Threads per block", lambda v: check_threads(v, device_info().max_threads_per_block), 256,
              "1 to the device's limit (1024); multiples of 32 keep every warp full."),
        Param("repeats", "Repeats", check_repeats, PerBackend(5, 2), "Timed runs per strategy after one warm-up."),
        Param("chunks", "Chunks", lambda v: parse_int(v, "chunks"), 8, f"For the chunked-streams strategy: 1 to N, at most {MAX_CHUNKS}."),
        Param("streams", "Streams", lambda v: parse_int(v, "streams"), 4,
              f"For the chunked-streams strategy: 1 to the chunk count, at most {MAX_STREAMS}."),
        Param("iterations", "Kernel runs with data kept on the device (K)", check_iterations,
              PerBackend(DEFAULT_ITERATIONS, SIMULATOR_ITERATIONS),
              f"Copy in once, run the kernel K times, copy out once (1 to {MAX_ITERATIONS:,})."),
        Param("bandwidth", "Also measure the copy bandwidth curves", parse_flag, True,
              "Measure host-link and device copy bandwidth too (10 copies per size).", widget="checkbox", page=False),
    ),
    run=_run_transfers,
    work=_strategies_work,
    measures=lambda run: {f"{s.key}_s": s.cost_s for s in run.strategies.ranking},
    page="pages/4_Transfers.py",
))
