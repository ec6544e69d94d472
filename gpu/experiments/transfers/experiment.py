"""Transfer strategies: the same float32 vector add done the ways that matter.

As in the article, careful, pinned, data kept on the device, chunked streams (with a
per-chunk event timeline) and mapped zero-copy host memory, each timed phase by phase
(``gpu.experiments.transfers.strategy_timing``) and checked bit for bit against NumPy; the
``StrategyComparison`` ranks them and names the winner. The CLI's ``transfers`` also
measures the copy bandwidth curves (``gpu.experiments.transfers.bandwidth``).

In the simulator everything runs (at small sizes) but copies are NumPy copies and
streams run one after another: pinning, streams and overlap are not simulated, so the
timings mean nothing there. Results are still checked exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu.catalog.base import CheckSection, Experiment, Hook, Param, PerBackend, Progress, Recorded
from gpu.catalog.registry import register
from gpu.core import estimates
from gpu.core.agreement import BitAgreement, check_bits
from gpu.core.arrays import vector_inputs
from gpu.core.backend import BACKEND
from gpu.core.device import DeviceInfo, device_info
from gpu.core.limits import (
    InputError,
    check_n,
    check_repeats,
    check_threads,
    max_vector_n,
    parse_flag,
    parse_int,
    threads_per_block_warnings,
)
from gpu.core.series import labels
from gpu.core.timeline import Interval, build_timeline, overlap_fraction
from gpu.core.timing import (
    RepeatPolicy,
    Stats,
    utc_timestamp,
)
from gpu.experiments.transfers.bandwidth import (
    SIMULATED_NOTE,
    TRANSFERS_PAGE,
    BandwidthCurves,
    run_bandwidth_curves,
)
from gpu.experiments.transfers.strategy_timing import (
    MAX_CHUNKS,
    MAX_ITERATIONS,
    MAX_STREAMS,
    chunk_bounds,
    chunk_run_label,
    device_capabilities,
    mapped_supported,
    pinned_float32,
    time_article,
    time_chunked,
    time_mapped,
    time_resident,
)
from gpu.kernels.vector_add import compile_vector_add
from gpu.kernels.vector_add_timing import BYTES_PER_ELEMENT, time_gpu_phases

# --- sizes -------------------------------------------------------------------------


# --- bandwidth curves ----------------------------------------------------------------


# --- chunking and the timeline ---------------------------------------------------------


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
        raise InputError(
            f"streams must be between 1 and {limit} (at most one per chunk, at most {MAX_STREAMS}), got {value}"
        )
    return value


def check_iterations(iterations: int | str) -> int:
    """Validate the kernel runs of the data-kept-on-device strategy (1 to MAX_ITERATIONS)."""
    value = parse_int(iterations, "iterations")
    if not 1 <= value <= MAX_ITERATIONS:
        raise InputError(f"iterations must be between 1 and {MAX_ITERATIONS:,}, got {value}")
    return value


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

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "label": self.label,
            "description": self.description,
            "host_memory": self.host_memory,
            "iterations": self.iterations,
            "cost_s": self.cost_s,
            "few_samples": self.few_samples,
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
    def from_dict(cls, d: Mapping[str, Any]) -> StrategyComparison:
        """The inverse of ``to_dict`` (check.json, History, downloads)."""
        strategies = {
            key: StrategyRun(
                key,
                s["host_memory"],
                {p: Stats.from_dict(v) for p, v in s["phases"].items()},
                Stats.from_dict(s["total"]),
                BitAgreement.from_dict(s["agreement"]),
                int(s.get("iterations") or 1),
                tuple(s.get("notes") or ()),
            )
            for key, s in d["strategies"].items()
        }
        intervals = tuple(
            Interval(
                iv["run"], int(iv["chunk"]), int(iv["stream"]), iv["phase"], float(iv["start_s"]), float(iv["end_s"])
            )
            for iv in d.get("timeline") or ()
        )
        return cls(
            n=int(d["n"]),
            threads_per_block=int(d["threads_per_block"]),
            chunks=int(d["chunks"]),
            streams=int(d["streams"]),
            iterations=int(d["iterations"]),
            policy=RepeatPolicy.from_dict(d["policy"]),
            backend=d["backend"],
            device=DeviceInfo.from_dict(d["device"]),
            strategies=strategies,
            skipped=dict(d.get("skipped") or {}),
            intervals=intervals,
            capabilities=dict(d.get("capabilities") or {}),
            compile_s=float(d.get("compile_s") or 0.0),
            seed=int(d.get("seed") or 0),
            notes=tuple(d.get("notes") or ()),
            created_at=str(d.get("created_at") or ""),
            telemetry=d.get("telemetry"),
        )

    @classmethod
    def recorded(cls, ref: Any, size: str = "small") -> StrategyComparison | None:
        """This experiment's strategies at one size ("small" or "large") in a committed check
        (``ref``: a ``ReferenceRun`` of gpu/service/references.py, read through its ``part``),
        None when the run holds none."""
        d = ref.part("transfers", "strategies", size)
        return cls.from_dict(d) if d else None

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
            "timeline": [iv.to_dict() for iv in self.intervals],
            "notes": list(self.notes),
            "telemetry": self.telemetry,
        }


# --- strategy runners (each returns phase Stats; output written into ``out``) -----------


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
    threads_per_block = check_threads(threads_per_block, device_info().max_threads_per_block)
    warnings = threads_per_block_warnings(threads_per_block)
    chunks = check_chunks(chunks, n)
    streams = check_streams(streams, chunks)
    iterations = check_iterations(
        iterations if iterations is not None else (SIMULATOR_ITERATIONS if BACKEND.simulated else DEFAULT_ITERATIONS)
    )
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
    a, b = vector_inputs(n, seed)
    reference = a + b
    out = np.empty(n, dtype=np.float32)
    compile_s = compile_vector_add()
    notes: list[str] = list(warnings)
    results: dict[str, StrategyRun] = {}
    skipped: dict[str, str] = {}
    intervals: list[Interval] = []
    from gpu.core.telemetry import TelemetryMonitor

    monitor = TelemetryMonitor().start()  # clocks and throttling over every strategy
    from gpu.core.l2 import flush_problem

    if flush_problem() is not None:
        notes.append(flush_problem())

    def finish(
        key: str, stats: dict[str, Stats], memory: str, result: np.ndarray, its: int = 1, extra: tuple[str, ...] = ()
    ) -> None:
        total = stats.pop("total")
        # launch + kernel are shown as their two parts; the sum stacked beside them counted the kernel twice
        stats.pop("with_launch", None)
        agreement = check_bits(key, result, reference)
        results[key] = StrategyRun(key, memory, stats, total, agreement, its, extra)

    pinned = None
    if any(k in wanted for k in ("pinned", "chunked", "one-chunk")):
        say("allocating pinned host memory")
        p_a, ok_a = pinned_float32(n)
        p_b, ok_b = pinned_float32(n)
        p_c, ok_c = pinned_float32(n)
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
            finish(
                key, time_resident(a, b, out, threads_per_block, iterations, policy), "pageable", out, its=iterations
            )
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
    telemetry = monitor.stop()
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
        telemetry=telemetry,
    )


# --- library pinned copies (the ±5% yardstick) and the check section ----------------------


__all__ = [
    "BandwidthCurves",
    "Interval",
    "STRATEGIES",
    "StrategyComparison",
    "StrategyRun",
    "build_timeline",
    "chunk_bounds",
    "overlap_fraction",
    "run_bandwidth_curves",
    "run_strategies",
]


# --- the declarations ----------------------------------------------------------------


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

    def to_frame(self):
        """The strategies' tidy samples (the bandwidth curves, when measured, have their own ``to_frame``)."""
        return self.strategies.to_frame()


def _strategies_estimate(p, simulated: bool) -> float:
    """Seconds the comparison takes at these settings, for the form (``Experiment.estimate``): each strategy's
    samples (warm-up included) move the vectors over the host link once and run the kernel (K times when the
    data stays on the device), plus the bandwidth curves when asked for."""
    from gpu.experiments.transfers.bandwidth import BANDWIDTH

    n, samples = p["n"], p["repeats"] + 1
    vectors_s = estimates.copy_s(3 * 4 * n, "pageable", simulated)  # a, b in and c out, float32
    kernel_s = estimates.kernel_s(n, 12 * n, simulated)
    per_sample = vectors_s + (0.0 if simulated else estimates.GPU_SAMPLE_S)
    total = 0.0 if simulated else estimates.GPU_COMPILE_S
    for key in STRATEGIES:
        launches = p["iterations"] if key == "resident" else (p["chunks"] if key == "chunked" else 1)
        total += samples * (per_sample + launches * kernel_s)
    if p["bandwidth"]:
        total += float(BANDWIDTH.estimate(BANDWIDTH.defaults(simulated), simulated))  # type: ignore[misc]
    return total


def _run_transfers(p, progress) -> TransfersRun:
    strategies = run_strategies(p["n"], p["threads_per_block"], p["chunks"], p["streams"], p["iterations"],
                                RepeatPolicy.count(p["repeats"]), on_progress=progress)
    curves = run_bandwidth_curves(policy=RepeatPolicy.count(10), on_progress=progress) if p["bandwidth"] else None
    return TransfersRun(strategies, curves)


def read_recorded(ref) -> tuple:
    """Every result this experiment's "On a real GPU" panel draws from a committed run
    (``Recorded.read``): raises if one cannot be rebuilt."""
    return (
        BandwidthCurves.recorded(ref),
        StrategyComparison.recorded(ref, "small"),
        StrategyComparison.recorded(ref, "large"),
    )


STRATEGIES_EXPERIMENT = register(
    Experiment(
        key="transfers",
        title="Transfer strategies",
        summary="the vector add six ways (article, careful, pinned, resident, chunked streams, mapped), "
        "and the copy bandwidth curves",
        params=(
            Param(
                "n",
                "N (elements per vector)",
                lambda v: check_n(v, max_transfer_n()),
                lambda: min(SIMULATOR_STRATEGY_N if BACKEND.simulated else 10_000_000, max_transfer_n()),
                "A whole number such as 1000000, 1e6 or 2^20.",
            ),
            Param(
                "threads_per_block",
                "Threads per block",
                lambda v: check_threads(v, device_info().max_threads_per_block),
                256,
                "1 to the device's limit (1024); multiples of 32 keep every warp full.",
            ),
            Param("repeats", "Repeats", check_repeats, PerBackend(5, 3), "Timed runs per strategy after one warm-up."),
            Param(
                "chunks",
                "Chunks",
                lambda v: parse_int(v, "chunks"),
                8,
                f"For the chunked-streams strategy: 1 to N, at most {MAX_CHUNKS}.",
            ),
            Param(
                "streams",
                "Streams",
                lambda v: parse_int(v, "streams"),
                4,
                f"For the chunked-streams strategy: 1 to the chunk count, at most {MAX_STREAMS}.",
            ),
            Param(
                "iterations",
                "Kernel runs with data kept on the device (K)",
                check_iterations,
                PerBackend(DEFAULT_ITERATIONS, SIMULATOR_ITERATIONS),
                f"Copy in once, run the kernel K times, copy out once (1 to {MAX_ITERATIONS:,}).",
            ),
            Param(
                "bandwidth",
                "Also measure the copy bandwidth curves",
                parse_flag,
                True,
                "Measure host-link and device copy bandwidth too (10 copies per size).",
                widget="checkbox",
                page=False,
            ),
        ),
        run=_run_transfers,
        work=_strategies_work,
        estimate=_strategies_estimate,
        measures=lambda run: {f"{s.key}_s": s.cost_s for s in run.strategies.ranking},
        result_type=TransfersRun,
        page=TRANSFERS_PAGE,
        order=70,
        history_columns=("n", "threads_per_block", "repeats"),
        report="gpu.experiments.transfers.report",
        check=(
            CheckSection(
                "transfers",
                Hook("gpu.experiments.transfers.check:transfers_section"),
                Hook("gpu.experiments.transfers.readback:transfers_section"),
                Hook("gpu.experiments.transfers.readback:transfers_records"),
            ),
        ),
        recorded=Recorded(
            "transfers",
            Hook("gpu.experiments.transfers.view:recorded"),
            Hook("gpu.experiments.transfers.experiment:read_recorded"),
        ),
    )
)
