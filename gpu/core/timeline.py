"""The chunked-streams timeline: intervals per stream or per engine, and their overlap.

Pure arithmetic on (start, end) intervals measured with CUDA events, for the Transfers
page's Gantt chart and its "copies and kernels overlapped for X% of the span" figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpu.core.shape import Shaped, shaped

# --- sizes -------------------------------------------------------------------------


# --- bandwidth curves ----------------------------------------------------------------


# --- chunking and the timeline ---------------------------------------------------------


TIMELINE_PHASES = ("h2d", "kernel", "d2h")
ENGINE_LANES = {"h2d": "H2D copy engine", "kernel": "compute (kernels)", "d2h": "D2H copy engine"}


@shaped()
@dataclass(frozen=True)
class Interval(Shaped):
    """One phase of one chunk: [start_s, end_s] in seconds from the run's start event."""

    run: str  # which timed run: e.g. "8 chunks, 4 streams" or "1 chunk"
    chunk: int
    stream: int
    phase: str  # "h2d" (a and b in), "kernel", "d2h" (c out)
    start_s: float
    end_s: float

    def __post_init__(self) -> None:
        if self.phase not in TIMELINE_PHASES:
            raise ValueError(f"unknown phase {self.phase!r}; expected one of {TIMELINE_PHASES}")
        if self.end_s < self.start_s:
            raise ValueError(f"interval of chunk {self.chunk} {self.phase} ends before it starts")

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


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
            raise ValueError(
                f"interval of chunk {iv.chunk} {iv.phase} ends before it starts ({iv.start_s} > {iv.end_s})"
            )
        if iv.phase not in TIMELINE_PHASES:
            raise ValueError(f"unknown phase {iv.phase!r}; expected one of {TIMELINE_PHASES}")
    bars: list[TimelineBar] = []
    for run in dict.fromkeys(iv.run for iv in items):
        mine = [iv for iv in items if iv.run == run]
        origin = min(iv.start_s for iv in mine)
        if by == "stream":
            for iv in mine:
                bars.append(
                    TimelineBar(
                        run,
                        f"stream {iv.stream}",
                        iv.chunk,
                        iv.stream,
                        iv.phase,
                        iv.start_s - origin,
                        iv.end_s - origin,
                    )
                )
            continue
        for phase in TIMELINE_PHASES:
            engine_free = origin
            for iv in sorted((iv for iv in mine if iv.phase == phase), key=lambda iv: (iv.end_s, iv.start_s)):
                start = max(iv.start_s, engine_free) if phase != "kernel" else iv.start_s
                bars.append(
                    TimelineBar(run, ENGINE_LANES[phase], iv.chunk, iv.stream, phase, start - origin, iv.end_s - origin)
                )
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
