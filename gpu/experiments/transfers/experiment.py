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

from collections.abc import Callable, Iterable

import numpy as np

from gpu.catalog.base import CheckSection, Experiment, Param, Part, PerBackend, Recorded
from gpu.catalog.registry import register
from gpu.core import estimates
from gpu.core.agreement import check_bits
from gpu.core.arrays import vector_inputs
from gpu.core.backend import BACKEND
from gpu.core.device import device_info
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
from gpu.core.timeline import Interval, build_timeline, overlap_fraction
from gpu.core.timing import (
    RepeatPolicy,
    Stats,
)
from gpu.experiments.transfers.bandwidth import (
    SIMULATED_NOTE,
    TRANSFERS_PAGE,
    BandwidthCurves,
    run_bandwidth_curves,
)
from gpu.experiments.transfers.result import (
    STRATEGIES,
    StrategyComparison,
    StrategyRun,
    TransfersRun,
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
from gpu.kernels.vector_add_timing import time_gpu_phases

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
    on_progress: Callable[[str], None] | None = None,  # a Progress, or any say(message)
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

    if (flush := flush_problem()) is not None:
        notes.append(flush)

    def finish(
        key: str, stats: dict[str, Stats], memory: str, result: np.ndarray, its: int = 1, extra: tuple[str, ...] = ()
    ) -> None:
        total = stats.pop("total")
        # launch + kernel are shown as their two parts; the sum stacked beside them counted the kernel twice
        stats.pop("with_launch", None)
        agreement = check_bits(key, result, reference)
        results[key] = StrategyRun(key, memory, stats, total, agreement, its, extra)

    pinned: tuple[np.ndarray, np.ndarray, np.ndarray, str] | None = None
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
            assert pinned is not None  # allocated above for every strategy that uses it
            p_a, p_b, p_c, memory = pinned
            p_c.fill(np.nan)
            finish(key, time_gpu_phases(p_a, p_b, p_c, threads_per_block, policy), memory, p_c)
        elif key == "resident":
            finish(
                key, time_resident(a, b, out, threads_per_block, iterations, policy), "pageable", out, its=iterations
            )
        elif key in ("chunked", "one-chunk"):
            assert pinned is not None  # allocated above for every strategy that uses it
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
        check=(
            CheckSection(  # run by check.py: transfers_section
                "transfers",
                parts=(
                    Part(("bandwidth",), BandwidthCurves),
                    Part(("strategies", "small"), StrategyComparison),
                    Part(("strategies", "large"), StrategyComparison),
                ),
            ),
        ),
        recorded=Recorded("transfers", read=read_recorded),  # drawn by ui/views/experiments/transfers.py: recorded
    )
)
