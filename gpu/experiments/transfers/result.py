"""What a transfer-strategies comparison measured: each strategy's phases and cost per vector
add (``StrategyRun``), the comparison that ranks them and names the winner
(``StrategyComparison``), and the CLI's ``transfers`` (``TransfersRun``: the comparison and the
copy bandwidth curves). Each reads itself back with ``from_dict`` (check.json, History,
downloads) and from a committed GPU run with ``recorded``. The run is in ``experiment.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu.core.agreement import BitAgreement
from gpu.core.device import DeviceInfo
from gpu.core.series import labels
from gpu.core.shape import Shaped, shaped, tagged
from gpu.core.timeline import Interval, build_timeline, overlap_fraction
from gpu.core.timing import RepeatPolicy, Stats, utc_timestamp
from gpu.experiments.transfers.bandwidth import BandwidthCurves
from gpu.experiments.transfers.strategy_timing import chunk_run_label
from gpu.kernels.vector_add_timing import BYTES_PER_ELEMENT

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
    "article": "pageable host memory; a, b and c copied in (c as zeros), the kernel, c copied out — the article's "
               "gpu_add",
    "careful": "pageable host memory; a and b copied in, c allocated on the device, the kernel, c copied out",
    "pinned": "as careful, with a, b and c in page-locked (pinned) host memory: "
    "copies go by DMA without a staging copy",
    "resident": "a and b copied in once, the kernel run K times on the device, c copied out once: cost per iteration",
    "chunked": "pinned host memory; the arrays split into chunks over several streams so one chunk's copies overlap "
               "other chunks' kernels and copies; device buffers allocated once",
    "one-chunk": "the chunked code with one chunk on one stream: the same pinned copies and buffers, without overlap",
    "mapped": "a, b and c in mapped (zero-copy) pinned host memory: the kernel reads and writes host memory over the "
              "link, no copies",
}


PHASE_LABELS: dict[str, str] = labels("h2d", "launch", "kernel", "d2h", "span")


@shaped(
    derived={
        "label": lambda s: s.label,
        "description": lambda s: s.description,
        "cost_s": lambda s: s.cost_s,
        "few_samples": lambda s: s.few_samples,
    }
)
@dataclass(frozen=True)
class StrategyRun(Shaped):
    """One strategy's timings and agreement. Times in seconds.

    ``phases`` holds raw samples: "h2d", "launch" (hardware only), "kernel", "d2h" or,
    for chunked runs, "span" (start event to the last chunk's last event: copies and kernels, overlapped where they
    could be). ``total`` is the
    wall-clock time of one sample. For "resident" a sample is the whole sequence: its
    copies and ``total`` cover ``iterations`` kernel runs and "kernel" is already per
    iteration; ``cost_s`` and ``phase_cost_s`` divide by ``iterations`` where needed.
    """

    key: str
    host_memory: str  # "pageable", "pinned", "mapped"; "pageable (pinning failed)" on fallback
    phases: dict[str, Stats]
    total: Stats
    agreement: BitAgreement
    iterations: int = 1
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.key not in STRATEGIES:
            raise ValueError(f"the strategy {self.key[:60]!r} is none of {', '.join(STRATEGIES)}")

    @property
    def label(self) -> str:
        return STRATEGIES[self.key]

    @property
    def description(self) -> str:
        return STRATEGY_DESCRIPTIONS[self.key]

    @property
    def few_samples(self) -> bool:
        """Its end to end or a phase rests on fewer than 3 samples: marked * wherever shown."""
        return self.total.few_samples or any(p.few_samples for p in self.phases.values())

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


def _comparison_to_file(run: StrategyComparison, data: dict) -> dict:
    """The file adds the parameters, the verdicts (agreement, winner, speedup, overlap) for its reader."""
    return {
        "experiment": run.experiment,
        "created_at": data.pop("created_at"),
        "backend": data.pop("backend"),
        "device": data.pop("device"),
        "params": {
            **{k: data[k] for k in ("n", "threads_per_block", "chunks", "streams", "iterations")},
            "repeats": run.policy.n_repeat,
            "strategies": list(run.strategies),
        },
        "n": data.pop("n"),
        "dtype": run.dtype,
        **data,
        "agree": run.agree,
        "winner": run.winner.key if run.winner else None,
        "chunked_speedup": run.chunked_speedup,
        "overlap_fraction": run.overlap,
        "timeline": data.pop("timeline"),
        "notes": data.pop("notes"),
        "telemetry": data.pop("telemetry"),
    }


_COMPARISON_DERIVED = ("params", "dtype", "agree", "winner", "chunked_speedup", "overlap_fraction")


def _comparison_from_file(data: dict) -> dict:
    data = tagged(data, "experiment", StrategyComparison.experiment)
    if isinstance(data.get("strategies"), dict):
        data["strategies"] = {
            key: {**s, "key": key} if isinstance(s, dict) else s for key, s in data["strategies"].items()
        }
    for key, empty in (("timeline", []), ("skipped", {}), ("capabilities", {})):  # older files may lack them
        if data.get(key) is None:
            data[key] = empty
    return {k: v for k, v in data.items() if k not in _COMPARISON_DERIVED}


@shaped(
    prose=("verdict",),
    renames={"intervals": "timeline"},
    to_file=_comparison_to_file,
    from_file=_comparison_from_file,
)
@dataclass(frozen=True)
class StrategyComparison(Shaped):
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
    telemetry: dict | None = None  # GPU clocks, temperature, power, throttling over the run

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
                    rows.append(
                        (
                            s.key,
                            s.label,
                            phase,
                            i,
                            seconds,
                            seconds * factor,
                            s.iterations,
                            stats.few_samples,
                            stats.held,
                        )
                    )
        frame = pd.DataFrame(
            rows,
            columns=[
                "strategy",
                "label",
                "phase",
                "sample",
                "seconds",
                "per_result_s",
                "iterations",
                "few_samples",
                "held",
            ],
        )
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
            [
                (b.run, b.lane, b.chunk, b.stream, b.phase, b.start_s * 1e3, b.end_s * 1e3, (b.end_s - b.start_s) * 1e3)
                for b in bars
            ],
            columns=["run", "lane", "chunk", "stream", "phase", "start_ms", "end_ms", "duration_ms"],
        )

    @classmethod
    def recorded(cls, ref: Any, size: str = "small") -> StrategyComparison | None:
        """This experiment's strategies at one size ("small" or "large") in a committed check
        (``ref``: a ``ReferenceRun`` of gpu/service/references.py, read through its ``read``),
        None when the run holds none."""
        return ref.read(cls, "transfers", "strategies", size)


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

    def to_frame(self):
        """The strategies' tidy samples (the bandwidth curves, when measured, have their own ``to_frame``)."""
        return self.strategies.to_frame()
