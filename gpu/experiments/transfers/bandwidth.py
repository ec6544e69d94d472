"""Copy bandwidth: what the host link and device memory deliver, against size.

H2D and D2H copies from pageable and pinned host memory, and device-to-device copies,
from a few KiB to hundreds of MiB, each point the median of repeats timed with CUDA
events (the bandwidthTest / nvbandwidth way, built on ``gpu.core.copies``), L2 flushed.
``find_plateau`` says in words where each curve levels off. In the simulator copies are
NumPy copies: the curves run, their timings mean nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu.catalog.base import Experiment, PageLink, Param, PerBackend
from gpu.catalog.registry import register
from gpu.core import estimates
from gpu.core.backend import BACKEND
from gpu.core.copies import bandwidth_gbps, bytes_counted, time_copy
from gpu.core.device import DeviceInfo, device_info
from gpu.core.limits import (
    MEMORY_SAFETY,
    InputError,
    check_repeats,
    device_free_bytes,
    host_available_bytes,
    parse_int,
)
from gpu.core.series import labels
from gpu.core.shape import Shaped, shaped, tagged
from gpu.core.timing import RepeatPolicy, Stats, format_factor, utc_timestamp
from gpu.core.words import format_bytes
from gpu.kernels.vector_add_timing import BYTES_PER_ELEMENT

KIB = 1024
MIB = 1024 * KIB


GIB = 1024 * MIB
SIMULATED_NOTE = (
    "Simulated: pinning, streams and overlap are not simulated — every copy is a NumPy "
    "copy and every stream runs one operation after another — so these timings are "
    "meaningless. Results are still checked bit for bit."
)


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
            why = (
                "the simulator's cap"
                if BACKEND.simulated and limit == SIMULATOR_MAX_COPY_BYTES
                else "what fits in free host and device memory now"
            )
            raise InputError(
                f"a copy of {format_bytes(value)} is too large: the limit is {format_bytes(limit)}, {why}."
            )
    return tuple(values)


# (direction, host memory) per curve; device-to-device has no host side.
SERIES: tuple[tuple[str, str], ...] = (
    ("h2d", "pinned"),
    ("h2d", "pageable"),
    ("d2h", "pinned"),
    ("d2h", "pageable"),
    ("d2d", "device"),
)


DIRECTION_LABELS = labels("h2d", "d2h", "d2d")


def series_label(direction: str, memory: str) -> str:
    """"H2D pinned", "D2H pageable", "D2D"."""
    return "D2D" if direction == "d2d" else f"{direction.upper()} {memory}"


@shaped(
    derived={
        "bytes_counted": lambda p: bytes_counted(p.direction, p.nbytes),
        "bandwidth_gbps": lambda p: p.bandwidth_gbps,
    }
)
@dataclass(frozen=True)
class BandwidthPoint(Shaped):
    """One copy size of one curve. ``stats`` in seconds per copy."""

    direction: str  # "h2d", "d2h", "d2d"
    memory: str  # requested host memory: "pinned", "pageable", or "device" for d2d
    nbytes: int
    stats: Stats
    pinned_ok: bool  # False when pinned was asked for and the allocation fell back to pageable

    def __post_init__(self) -> None:
        if self.direction not in ("h2d", "d2h", "d2d"):
            raise ValueError(f"direction is {self.direction[:60]!r}; expected 'h2d', 'd2h' or 'd2d'")
        if self.memory not in ("pinned", "pageable", "device"):
            raise ValueError(f"memory is {self.memory[:60]!r}; expected 'pinned', 'pageable' or 'device'")

    @property
    def fell_back(self) -> bool:
        return self.memory == "pinned" and not self.pinned_ok

    @property
    def bandwidth_gbps(self) -> float:
        """GB/s (1e9 bytes/s) at the median time; d2d counts read + write (see gpu.core.copies)."""
        return bandwidth_gbps(self.direction, self.nbytes, self.stats.median_s)


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
        if self.plateau_gbps is None or self.from_nbytes is None:  # a plateau is found with the size it starts at
            return (
                f"{self.label} is still rising at the largest size measured (best {self.peak_gbps:,.3g} GB/s): "
                f"no plateau within these sizes{half}."
            )
        return (
            f"{self.label} levels off at {self.plateau_gbps:,.3g} GB/s from {format_bytes(self.from_nbytes)} up{half}."
        )

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
    points = sorted(
        (size, g) for size, g in zip(nbytes, gbps) if g == g and 0 < g < float("inf")
    )  # drop unusable timings
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


def _curves_to_file(curves: BandwidthCurves, data: dict) -> dict:
    series = [series_label(*key) for key in curves.series()]
    return {
        "experiment": curves.experiment,
        "created_at": data.pop("created_at"),
        "backend": data.pop("backend"),
        "device": data.pop("device"),
        "params": {"sizes": data["sizes"], "series": series, "repeats": curves.policy.n_repeat},
        "sizes": data.pop("sizes"),
        "series": series,
        **data,
        "plateaus": [p.to_dict() for p in curves.plateaus()],
        "summary": curves.summary(),
        "notes": data.pop("notes"),
    }


def _curves_from_file(data: dict) -> dict:
    data = tagged(data, "experiment", BandwidthCurves.experiment)
    return {k: v for k, v in data.items() if k not in ("params", "series", "plateaus", "summary")}


@shaped(to_file=_curves_to_file, from_file=_curves_from_file)
@dataclass(frozen=True)
class BandwidthCurves(Shaped):
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

    @property
    def agree(self) -> bool:
        """Always True: a copy's bytes are not compared here (the vector-add strategies check theirs)."""
        return True

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
                rows.append(
                    (
                        series_label(p.direction, p.memory),
                        p.direction,
                        p.memory,
                        p.nbytes,
                        counted,
                        i,
                        s,
                        counted / s / 1e9 if s > 0 else float("nan"),
                        p.pinned_ok,
                    )
                )
        frame = pd.DataFrame(
            rows,
            columns=[
                "series",
                "direction",
                "memory",
                "nbytes",
                "bytes_counted",
                "sample",
                "seconds",
                "gbps",
                "pinned_ok",
            ],
        )
        frame["backend"] = self.backend
        return frame

    @classmethod
    def recorded(cls, ref: Any) -> BandwidthCurves | None:
        """This experiment's copy-bandwidth curves in a committed check (``ref``: a ``ReferenceRun`` of
        gpu/service/references.py, read through its ``read``), None when the run holds none."""
        return ref.read(cls, "transfers", "bandwidth")

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
    on_progress: Callable[[str], None] | None = None,  # a Progress, or any say(message)
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
        raise InputError(
            f"unknown copy series {unknown[0]!r}; choose from {', '.join(series_label(*s) for s in SERIES)}"
        )
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


def _size_choice(value) -> int:
    size = parse_int(value, "copy size")
    if size not in COPY_SIZE_CHOICES:
        raise InputError(
            f"copy sizes are {format_bytes(COPY_SIZE_CHOICES[0])} to {format_bytes(COPY_SIZE_CHOICES[-1])} "
            f"in steps of 4x; got {size:,} bytes"
        )
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
        raise InputError(
            f"the smallest copy ({format_bytes(p['smallest'])}) is larger than the largest "
            f"({format_bytes(p['largest'])})"
        )
    return check_copy_sizes([s for s in COPY_SIZE_CHOICES if p["smallest"] <= s <= p["largest"]])


def _bandwidth_work(p) -> int:
    """Element-passes, counting 12 bytes (one vector-add element) as one element. Simulated
    copies are NumPy copies with no simulated threads, so they cost the budget nothing."""
    sizes = _copy_sizes(p)
    if BACKEND.simulated:
        return 0
    return sum(sizes) // BYTES_PER_ELEMENT * (p["repeats"] + 1) * len(p["series"])


def _bandwidth_estimate(p, simulated: bool) -> float:
    """Seconds the curves take at these settings, for the form (``Experiment.estimate``): every copy of every
    size and series, warm-up included, each sample's fixed cost, and pinning each pinned buffer once."""
    total = 0.0
    for nbytes in (s for s in COPY_SIZE_CHOICES if p["smallest"] <= s <= p["largest"]):  # what _copy_sizes checks
        for direction, memory in p["series"]:
            one = estimates.copy_s(nbytes, "device" if direction == "d2d" else memory, simulated)
            total += (p["repeats"] + 1) * (one + (0.0 if simulated else estimates.GPU_SAMPLE_S))
            if memory == "pinned" and not simulated:
                total += nbytes / estimates.PIN_BYTES_PER_S
    return total


# The page of the transfer experiments (copy bandwidth, the strategies): one link for both.
TRANSFERS_PAGE = PageLink(
    "Transfers",
    ":material/swap_horiz:",
    40,
    "host-link bandwidth, pinned memory, streams: the copies that decide whether the GPU pays off",
    "pages/4_Transfers.py",
)

BANDWIDTH = register(
    Experiment(
        key="transfers-bandwidth",
        title="Copy bandwidth",
        summary="host-link and device copy bandwidth against size, pageable and pinned",
        params=(
            Param(
                "smallest",
                "Smallest copy",
                _size_choice,
                COPY_SIZE_CHOICES[0],
                "The smallest copy size, in bytes.",
                widget="select",
                options=COPY_SIZE_CHOICES,
                option_label=format_bytes,
            ),
            Param(
                "largest",
                "Largest copy",
                _size_choice,
                PerBackend(max(DEFAULT_COPY_SIZES), max(SIMULATOR_COPY_SIZES)),
                "The largest copy size, in bytes; every 4x between the ends is measured.",
                widget="select",
                options=COPY_SIZE_CHOICES,
                option_label=format_bytes,
            ),
            Param(
                "repeats",
                "Repeats per size",
                check_repeats,
                10,
                "Timed copies per size after one warm-up; the median is plotted.",
            ),
            Param(
                "series",
                "Copies",
                _series,
                SERIES,
                "Comma-separated, from " + ", ".join("-".join(s) for s in SERIES) + ".",
                widget="multiselect",
                options=SERIES,
                option_label=lambda key: series_label(*key),
            ),
        ),
        run=lambda p, progress: run_bandwidth_curves(
            _copy_sizes(p), p["series"], RepeatPolicy.count(p["repeats"]), on_progress=progress
        ),
        work=_bandwidth_work,
        estimate=_bandwidth_estimate,
        measures=lambda curves: {
            f"{p.direction}_{p.memory}_gbps_at_largest": p.bandwidth_gbps
            for p in curves.points
            if p.nbytes == max(curves.sizes)
        },
        result_type=BandwidthCurves,
        page=TRANSFERS_PAGE,
        order=60,
        history_columns=("repeats",),
        uses_cpu=True,
    )
)
