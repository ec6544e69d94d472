"""The block-size sweep in words: why small blocks lose and why the large-N curve is flat,
and its terminal summary. Prose lives here, not in the result (gpu/experiments/launch/experiment.py)."""

from __future__ import annotations

from gpu.core.timing import format_seconds
from gpu.core.words import factor_text, few_samples
from gpu.experiments.launch.experiment import KIND_ONE_PER_ELEMENT, LaunchSweepRun


def explanation(run: LaunchSweepRun) -> str:
    """Why small blocks lose and why the large-N curve is flat, from these numbers."""
    per_element = sorted((c for c in run.configs if c.kind == KIND_ONE_PER_ELEMENT), key=lambda c: c.threads_per_block)
    best = run.best
    if run.backend == "simulator":
        return (
            "In the CUDA simulator every thread is a Python thread on the CPU, so these times measure "
            "the simulator, not a GPU: block size changes little here. On a GPU, small blocks lose because a "
            "multiprocessor holds only a limited number of blocks (16 to 32), so 32-thread blocks leave most of "
            "its thread slots empty and fewer memory loads are in flight; and at large N the curve goes flat "
            "because vector add is memory bound — 12 bytes moved per single add — so DRAM bandwidth, not the "
            "launch shape, sets the time."
        )
    parts = []
    smallest = per_element[0] if per_element else None
    if smallest is not None and smallest is not best:
        slower = smallest.kernel.median_s / best.kernel.median_s
        occ = smallest.occupancy
        if occ is not None and run.limits is not None and occ.fraction < 1:
            cap = f"at most {occ.blocks_per_sm} blocks"
            why = f" (its limit on {occ.limiter})" if occ.limiter else ""
            parts.append(
                f"Small blocks lose: a multiprocessor holds {cap}{why}, so with {smallest.threads_per_block}-thread "
                f"blocks only {occ.warps_per_sm} of its {occ.max_warps_per_sm} warp slots are filled "
                f"({occ.fraction:.0%} occupancy) and fewer loads are in flight to hide memory latency; "
                f"{smallest.label} took {slower:.2f}× the best time."
            )
        else:
            parts.append(
                f"{smallest.label} took {slower:.2f}× the best time: with small blocks the per-multiprocessor "
                "block limit leaves thread slots empty, so fewer loads are in flight."
            )
    big = [c for c in per_element if c.threads_per_block >= 128]
    if len(big) >= 2:
        times = [c.kernel.median_s for c in big]
        spread = max(times) / min(times) - 1
        best_bw = run.bandwidth_gbps(best.kernel.median_s)
        peak = run.device.peak_bandwidth_gbps
        of_peak = f", {best_bw / peak:.0%} of the {peak:,.0f} GB/s theoretical peak" if peak else ""
        if spread < 0.15:
            parts.append(
                f"From 128 threads per block up the times are within {spread:.0%} of each other: vector add is "
                f"memory bound (12 bytes moved per add), so once enough loads are in flight DRAM bandwidth "
                f"({best_bw:,.0f} GB/s here{of_peak}) sets the time, not the launch shape."
            )
        else:
            parts.append(
                f"From 128 threads per block up the times still differ by {spread:.0%}; at N = {run.n:,} "
                f"({run.bytes_moved / 1e6:,.0f} MB moved) launch overhead and the tail of the last wave "
                f"weigh more than at large N, where the curve flattens because vector add is memory bound "
                f"(best {best_bw:,.0f} GB/s{of_peak})."
            )
    parts.append(f"Best here: {best.label} ({format_seconds(best.kernel.median_s)}).")
    return " ".join(parts)


def summary(run: LaunchSweepRun) -> str:
    lines = [
        f"launch sweep, N = {run.n:,} float32, {run.device.name} ({run.backend}), {run.policy.describe()}",
        f"{'configuration':<30} {'blocks':>10} {'median':>11} {'min':>10} {'max':>10} {'n':>4} {'GB/s':>8} "
        f"{'occupancy':>10}",
    ]
    best = run.best.label
    l2 = "°" if run.l2_resident else ""
    for c in run.configs:
        occ = f"{c.occupancy.fraction:.0%} ({c.occupancy.source[0]})" if c.occupancy else "—"
        mark = " (best)" if c.label == best else ""  # not "*": that marks fewer than 3 samples
        few = "*" if c.kernel.few_samples else ""
        lines.append(
            f"{c.label + mark:<30} {c.blocks:>10,} {format_seconds(c.kernel.median_s) + few + l2:>11} "
            f"{format_seconds(c.kernel.min_s):>10} {format_seconds(c.kernel.max_s):>10} {c.kernel.n_samples:>4} "
            f"{run.bandwidth_gbps(c.kernel.median_s):>8,.4g} {occ:>10}"
        )
    lines.append(f"results agree with NumPy: {'yes, bit for bit' if run.agree else 'NO'}")
    lines.append("occupancy: (d) from the driver, (c) calculated from registers and per-SM limits")
    if any(c.kernel.few_samples for c in run.configs):
        lines.append("* fewer than 3 samples: spread unknown")
    if run.l2_resident:
        lines.append(
            f"° a, b and c ({run.bytes_moved:,} bytes) fit in the {run.l2_bytes:,}-byte L2: times may be served partly "
            "from cache"
        )
    retried = sum(c.kernel.retries for c in run.configs)
    if retried:
        lines.append(f"{retried} sample{'s' if retried != 1 else ''} retried after an expired stream hold")
    if run.telemetry is not None:
        from gpu.core.telemetry import describe

        lines.append(describe(run.telemetry))
    lines.append(explanation(run))
    return "\n".join(lines)


# What gpu/catalog/render.py uses for these results (named by the launch-sweep declaration's ``report``).
SUMMARIES = {LaunchSweepRun: summary}
PROSE = {LaunchSweepRun: lambda run: {"explanation": explanation(run)}}


def launch_sentence(run) -> str:
    """How much block size matters at a large N, from the recorded sweep."""
    per_element = sorted(
        (c for c in run.configs if c.kind == "one thread per element"), key=lambda c: c.threads_per_block
    )
    best = run.best
    text = (f"On the {run.device.name} at N = {run.n:,}, the best launch is {best.label} "
            f"({format_seconds(best.kernel.median_s)}{few_samples(best.kernel).replace(' (', ', ').rstrip(')')})")
    if per_element and per_element[0] is not best:
        small = per_element[0]
        text += f"; {small.label} take {factor_text(small.kernel.median_s / best.kernel.median_s)} as long"
    big = [c.kernel.median_s for c in per_element if c.threads_per_block >= 128]
    if len(big) >= 2:
        text += (f", while from 128 threads per block up the times differ by at most {max(big) / min(big) - 1:.0%}: "
                 "memory bandwidth, not the launch shape, sets the time")
    return text + "."
