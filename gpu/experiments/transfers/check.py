"""The Transfers section of ``python -m gpu check``: bandwidth plateaus against the
libraries' pinned copies (the ±5% yardstick), and the strategies at a small and a large N.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gpu.catalog.checking import CheckContext, Section, runs_section
from gpu.catalog.render import to_json
from gpu.core.copies import bandwidth_gbps, time_copy
from gpu.core.timing import RepeatPolicy, Stats, collect, format_factor, format_seconds
from gpu.core.words import format_bytes
from gpu.experiments.transfers.bandwidth import (
    DEFAULT_COPY_SIZES,
    MIB,
    SIMULATOR_COPY_SIZES,
    max_copy_bytes,
    run_bandwidth_curves,
    series_label,
)
from gpu.experiments.transfers.experiment import (
    DEFAULT_ITERATIONS,
    LARGE_N_CAP,
    STRATEGIES,
    StrategyComparison,
    max_transfer_n,
    run_strategies,
)
from gpu.experiments.transfers.report import verdict
from gpu.experiments.transfers.strategy_timing import BREAKDOWN_PHASES

# --- sizes -------------------------------------------------------------------------


# --- bandwidth curves ----------------------------------------------------------------


# --- chunking and the timeline ---------------------------------------------------------


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

        host: Any = None  # each branch's arrays, released in its finally
        dev: Any = None
        try:
            host = cupyx.empty_pinned((nbytes,), dtype=np.uint8)
            host.fill(1)
            dev = cp.empty(nbytes, dtype=cp.uint8)
            stream = cp.cuda.Stream(non_blocking=True)
            start, end = cp.cuda.Event(), cp.cuda.Event()
            rt = cp.cuda.runtime
            src, dst, kind = (
                (host.ctypes.data, dev.data.ptr, rt.memcpyHostToDevice)
                if direction == "h2d"
                else (dev.data.ptr, host.ctypes.data, rt.memcpyDeviceToHost)
            )

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
        f"N = {result.n:,} float32 ({format_bytes(result.bytes_moved)} moved per vector add), "
        f"{result.threads_per_block} threads per block, "
        f"{result.chunks} chunks on {result.streams} streams, K = {result.iterations} kernel runs for the data kept on "
        "the device; "
        f"{result.policy.describe()}; medians per vector add (CUDA events for phases, wall clock end to end).",
        "",
        "| strategy | end to end | H2D | launch | kernel | D2H | copies + kernels (span) | host memory | bit-identical "
        "|",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in result.ranking:
        cells = [format_seconds(s.phase_cost_s(p)) if p in s.phases else "" for p in BREAKDOWN_PHASES]
        md.append(
            f"| {s.label} | {format_seconds(s.cost_s)} | {' | '.join(cells)} | {s.host_memory} | "
            f"{'yes' if s.agreement.passed else 'NO'} |"
        )
    for key, why in result.skipped.items():
        md.append(f"| {STRATEGIES[key]} | skipped: {why} | | | | | | | |")
    md += ["", verdict(result)]
    md += [f"- note: {note}" for note in result.notes]
    return md


def check_transfers(
    quick: bool, max_n: int, say: Callable[[str], None], budget_s: float | None = None
) -> tuple[bool, dict, str]:
    """The check's transfers section: (passed, JSON data, markdown).

    Full: bandwidth curves 4 KiB..256 MiB (until noise ≤ 2% or 0.4 s per point), our
    pinned H2D/D2H at 256 MiB against CuPy's (else PyTorch's) in the same run, and the
    strategies at N = 10^7 and at the largest N that fits (at most 2^28, halved until
    its projected time fits the section's ~90 s, or ``budget_s``, a verification plan's).
    Quick: small sizes, seconds. Passes when every strategy is bit-identical to NumPy at
    every size; the performance targets are reported, not enforced (they depend on the machine).
    """
    section_budget_s = CHECK_BUDGET_S if budget_s is None else budget_s
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
        f"Copy bandwidth (GB/s at the median; D2D counts read + write), {curves_policy.describe()} per point, CUDA "
        "events:",
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
                ratio = bandwidth_gbps(direction, nbytes, ours.median_s) / bandwidth_gbps(
                    direction, nbytes, theirs.median_s
                )
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
            md.append(
                f"| {r['direction'].upper()} | {r['ours_gbps']:,.4g} GB/s | {r['library_gbps']:,.4g} GB/s "
                f"({r['library']}) | {r['ratio']:.3f} | {'yes' if r['within_5pct'] else 'NO'} |"
            )
    for library, why in library_skipped.items():
        md.append(f"- {library}: skipped — {why}")

    # 3. strategies at 10^7 (scaled down when quick) and at the largest size that fits
    fits = min(max_n, max_transfer_n())
    small_n = min(1024 if quick else 10_000_000, fits)
    small_policy = RepeatPolicy.count(1 if quick else 5)
    t0 = time.perf_counter()
    small = run_strategies(
        small_n,
        256,
        8 if small_n >= 8 else 1,
        4 if small_n >= 8 else 1,
        2 if quick else DEFAULT_ITERATIONS,
        small_policy,
        max_n=fits,
        on_progress=lambda m: say(f"transfers N={small_n:,}: {m}"),
    )
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
        remaining = section_budget_s - (time.perf_counter() - started) - 5.0

        def projected(n: int) -> float:
            scale = n / small.n
            return prep * scale + timed * scale * (large_policy.n_repeat + large_policy.warmup)

        while large_n > small.n and projected(large_n) > remaining:
            large_n //= 2
        projection = {"n": large_n, "projected_s": projected(large_n), "remaining_s": remaining, "fits": fits}
        if large_n > small.n:
            large = run_strategies(
                large_n,
                256,
                16,
                4,
                DEFAULT_ITERATIONS,
                large_policy,
                max_n=fits,
                on_progress=lambda m: say(f"transfers N={large_n:,}: {m}"),
            )
            comparisons["large"] = large
            capped = (
                f" (fits: {fits:,}; capped at 2^28 and to the section's ~{section_budget_s:.0f} s)"
                if large_n < fits
                else ""
            )
            md += ["", f"### Strategies at the largest size: N = {large.n:,}{capped}", "", *_strategy_table(large)]
    data["strategies"] = {k: to_json(v) for k, v in comparisons.items()}
    data["large_n_projection"] = projection
    data["capabilities"] = small.capabilities

    # 4. the targets, reported
    biggest = comparisons.get("large", small)
    targets: dict[str, Any] = {
        "pinned_h2d_within_5pct": next((r["within_5pct"] for r in library_rows if r["direction"] == "h2d"), None),
        "pinned_d2h_within_5pct": next((r["within_5pct"] for r in library_rows if r["direction"] == "d2h"), None),
        "chunked_beats_one_chunk_at_large_n": (biggest.chunked_speedup or 0) > 1
        if biggest.chunked_speedup is not None
        else None,
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


@runs_section("transfers")
def transfers_section(ctx: CheckContext) -> Section:
    """Copy bandwidth curves against a library's pinned copy, and the vector-add strategies."""
    passed, data, markdown = check_transfers(ctx.quick, ctx.max_n, ctx.say, ctx.budget_s)
    return Section("transfers", "Transfers: host-link bandwidth and vector-add strategies", passed, data, markdown)
