"""What a Scaling sweep is and what it measured: the sizes and configuration, the points
(one series at one size), the crossovers, and ``SweepRun`` (the frozen result, with its
frames, JSON and CSV). The measuring itself is gpu/experiments/scaling/experiment.py."""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from typing import Any

from gpu.core import cpu, series
from gpu.core.crossover import crossover_band, format_n
from gpu.core.device import DeviceInfo
from gpu.core.l2 import fits_in_l2, recorded_l2_bytes
from gpu.core.limits import SIMULATED_THREAD_COST
from gpu.core.peaks import Peaks
from gpu.core.shape import Shaped, shaped, tagged
from gpu.core.timing import (
    Stats,
    utc_timestamp,
)
from gpu.experiments.scaling.config import SweepConfig
from gpu.kernels.vector_add_timing import BYTES_PER_ELEMENT

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
# Python, the kernel alone (stated for the kernel alone and with the launch).
GPU_SERIES = ("gpu-total", "gpu-launch-kernel", "gpu-kernel")


# Series whose samples lie inside a gpu-total sample (so not counted twice as measured time).
INSIDE_TOTAL = ("gpu-h2d", "gpu-launch-kernel", "gpu-d2h")
PHASE_SERIES = ("gpu-h2d", "gpu-kernel", "gpu-d2h")  # the shares of the GPU time


DEVICE_SERIES = ("gpu-kernel", "gpu-ilp", "cupy", "torch")  # work done inside device memory
CPU_SERIES = tuple(cpu.IMPLEMENTATIONS)


# Bytes each series moves per element: a and b in (8), c out (4), both for vector add (12).
BYTES_PER_ELEMENT_OF = {"gpu-h2d": 8, "gpu-d2h": 4}


def _point_to_file(point: SweepPoint, data: dict) -> dict:
    """A point writes only the parts it has (a measurement, an estimate, an error)."""
    return {k: v for k, v in data.items() if v is not None or k not in ("stats", "estimate_s", "error")}


@shaped(
    derived={
        "label": lambda p: SERIES_LABELS[p.series],
        "bandwidth_gbps": lambda p: None if math.isnan(p.bandwidth_gbps) else p.bandwidth_gbps,
    },
    to_file=_point_to_file,
)
@dataclass(frozen=True)
class SweepPoint(Shaped):
    """One series at one size: samples in seconds, or an estimate, or why it failed."""

    n: int
    series: str
    stats: Stats | None = None
    estimate_s: float | None = None  # the Python loop, not run: its estimate
    error: str | None = None  # failed or skipped at this size: why
    agree: bool | None = None  # bit-identical to NumPy (None: not checked)

    def __post_init__(self) -> None:
        if self.series not in SERIES_LABELS:
            raise ValueError(f"the series {self.series[:60]!r} is none of {', '.join(SERIES_LABELS)}")

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


def _beside(sizes: list[int], n: float) -> list[int]:
    """The measured sizes on either side of ``n`` (one when ``n`` is outside or on a size)."""
    below = [k for k in sizes if k <= n]
    above = [k for k in sizes if k >= n]
    return sorted({*(below[-1:]), *(above[:1])})


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
    # A point beside the crossing rests on fewer than 3 samples: its band has no width
    # because its spread is unknown, not because it is exact.
    few_samples: bool = False

    @property
    def is_range(self) -> bool:
        """True when the crossover is no exact point: the noise bands make it a range (>10%
        wide), or a point beside it has fewer than 3 samples (spread unknown)."""
        return self.few_samples or self.n_low is None or self.n_high is None or self.n_high > 1.1 * self.n_low

    @property
    def text(self) -> str:
        who = {"gpu-kernel": "the kernel alone", "gpu-launch-kernel": "the kernel with its launch from Python"}.get(
            self.gpu, "end to end, with copies, the GPU")
        other = SERIES_LABELS[self.baseline]
        tag = " (against estimates)" if self.estimated else ""
        if self.kind == "from" and self.n is not None:  # a crossing always has its N
            if self.few_samples:
                return (f"{who} beats {other} from around N ≈ {format_n(self.n, 2)} — fewer than 3 samples beside "
                        f"the crossing, so its spread is unknown: no exact point{tag}")
            # Why a range: one run's interpolated median, quoted to three
            # figures (6,380), moved to 5,800 and 8,970 in other runs; the noise bands say how far.
            if not self.is_range:
                return f"{who} beats {other} from N ≈ {format_n(self.n, 2)}{tag}"
            low = format_n(self.n_low, 2) if self.n_low is not None else f"below {self.first_n:,}"
            high = format_n(self.n_high, 2) if self.n_high is not None else f"beyond {self.last_n:,}"
            return (f"{who} beats {other} from somewhere between N ≈ {low} and {high} (medians cross at "
                    f"{format_n(self.n, 2)}){tag}")
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
            "few_samples": self.few_samples,
            "is_range": self.is_range if self.kind == "from" else None,
            "text": self.text,
        }


# written for the reader (a copy of the configuration's sizes, verdicts, overhead), recomputed when read
_RUN_DERIVED = (
    "min_n", "max_n", "spacing", "impls", "threads_per_block", "complete", "kernel_note", "sampled_s",
    "overhead_fraction", "overhead_definition", "agree", "crossovers",
)


def _run_to_file(run: SweepRun, data: dict) -> dict:
    config = data["config"]
    return {
        "experiment": "scaling",
        "created_at": data.pop("created_at"),
        "backend": data.pop("backend"),
        "device": data.pop("device"),
        "config": data.pop("config"),
        **{k: config[k] for k in ("min_n", "max_n", "spacing", "impls", "threads_per_block")},
        "complete": run.complete,
        "kernel_note": run.kernel_note,
        **{k: data.pop(k) for k in ("stopped", "steps_done", "steps_planned", "compile_s", "wall_s", "measuring_s")},
        "sampled_s": run.sampled_s,
        "overhead_fraction": run.overhead_fraction,
        "overhead_definition": "1 - (sum of timed samples / wall time)",
        **{k: data.pop(k) for k in ("l2_bytes", "telemetry")},
        "agree": run.agree,
        "skipped": dict(run.skipped),
        "peaks": data.pop("peaks"),
        "points": data.pop("points"),
        "crossovers": [c.to_dict() for c in run.crossovers()],
    }


def _run_from_file(data: dict) -> dict:
    data = tagged(data, "experiment", "scaling")
    if isinstance(data.get("skipped"), dict):
        data["skipped"] = list(data["skipped"].items())
    peaks = data.get("peaks")
    if isinstance(peaks, dict) and not peaks.get("backend"):  # recorded before peaks named their backend
        data["peaks"] = {**peaks, "backend": data.get("backend")}
    if not data.get("l2_bytes"):  # recorded before it wrote its L2: the size its device reports
        data["l2_bytes"] = recorded_l2_bytes(data)
    return {k: v for k, v in data.items() if k not in _RUN_DERIVED}


@shaped(prose=("crossover_sentences",), to_file=_run_to_file, from_file=_run_from_file)
@dataclass(frozen=True)
class SweepRun(Shaped):
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
        """Which sizes ran no simulated kernel, and why; None when every size ran every implementation."""
        skipped = self.config.kernel_skipped_sizes
        if not skipped:
            return None
        return (
            f"simulated kernels ran up to N = {self.config.kernel_max_n:,}, the simulator's cap (KERNEL_LAB_MAX_N; "
            f"about {SIMULATED_THREAD_COST}); at N = {skipped[0]:,} to {skipped[-1]:,} only the CPU implementations ran"
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

        Why this and not "outside the timing calls": the calls also hold
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

        Then that "limit" is only a reference (the measured device copy,
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
        return (
            point.stats is not None and point.stats.n_samples > 1 and point.stats.noise > self.config.policy.max_noise
        )

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
                few = kind == "from" and n is not None and any(
                    p.stats is not None and p.stats.few_samples
                    for k in _beside(common, n) for p in (gpu_points[k], cpu_points[k]))
                out.append(
                    Crossover(
                        gpu,
                        baseline,
                        kind,
                        n if kind == "from" else None,
                        common[0] if common else None,
                        common[-1] if common else None,
                        estimated,
                        ahead,
                        n_low,
                        n_high,
                        few,
                    )
                )
        return out

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
                    "pct_of_device_peak": 100 * bw / device_peak
                    if device_peak and p.series in DEVICE_SERIES
                    else float("nan"),
                    "share": p.median_s / phase_sum[p.n]
                    if p.series in PHASE_SERIES and phase_sum.get(p.n)
                    else float("nan"),
                }
            )
        columns = [
            "n",
            "series",
            "label",
            "median_s",
            "min_s",
            "max_s",
            "samples",
            "few_samples",
            "retries",
            "noise",
            "noisy",
            "fits_l2",
            "estimated",
            "error",
            "agree",
            "bandwidth_gbps",
            "ceiling",
            "ceiling_gbps",
            "ceiling_is_limit",
            "pct_of_ceiling",
            "pct_of_device_peak",
            "share",
        ]
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

    @classmethod
    def recorded(cls, ref: Any) -> SweepRun | None:
        """This experiment's Scaling sweep in a committed check (``ref``: a ``ReferenceRun`` of
        gpu/service/references.py, read through its ``read``), None when the run holds none."""
        return ref.read(cls, "scaling", "run")

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


def _band(point: SweepPoint) -> tuple[float, float, float]:
    """(min, median, max) seconds of a point; an estimate is its own band."""
    if point.stats is None:
        return point.median_s, point.median_s, point.median_s
    return point.stats.min_s, point.stats.median_s, point.stats.max_s
