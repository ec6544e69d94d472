"""A Scaling sweep in words: one crossover sentence per CPU baseline, and the terminal
summary (a table of medians with their marks, limits, the kernel against the libraries,
telemetry and the sweep's overhead). The result itself is gpu/experiments/scaling/result.py."""

from __future__ import annotations

import re

from gpu.core.telemetry import describe as describe_telemetry
from gpu.core.timing import format_factor, format_seconds
from gpu.core.words import format_gbps
from gpu.experiments.scaling.result import (
    GPU_SERIES,
    SERIES_LABELS,
    Crossover,
    SweepRun,
)


def crossover_conditions(run: SweepRun) -> str:
    """How the two sides of every crossover were measured — stated beside the crossovers
   . The CPU is measured warm on purpose: a program calls NumPy on data it
    just touched; the GPU kernel with its L2 flushed, as nvbench does, unless the run
    kept it warm."""
    gpu = (
        "GPU samples with the L2 not flushed (warm)"
        if getattr(run.config, "warm_l2", False)
        else "GPU samples with the L2 flushed before each"
    )
    return f"Measured as compared: CPU samples on warm caches (the same inputs re-used, as a loop would), {gpu}."


SIMULATED_NOT_COMPARED = (
    "Simulated kernel times are not compared with your CPU or with the memory's limits: they measure Python on "
    "this CPU, not a GPU. The simulated kernels were checked against NumPy at every size; the recorded GPU beside "
    "your CPU follows."
)


def crossover_sentences(run: SweepRun) -> list[str]:
    """One sentence per CPU baseline: kernel first, then end to end."""
    by_baseline: dict[str, list[Crossover]] = {}
    for c in run.crossovers():
        by_baseline.setdefault(c.baseline, []).append(c)
    sentences = []
    for items in by_baseline.values():
        items.sort(key=lambda c: GPU_SERIES.index(c.gpu), reverse=True)  # kernel, with launch, then total
        text = "; ".join(c.text for c in items)
        sentences.append(text[0].upper() + text[1:] + ".")
    return sentences


def summary(run: SweepRun) -> str:
    cfg = run.config
    lines = [
        f"sweep: N = {cfg.min_n:,} to {cfg.max_n:,} ({cfg.spacing}, {len(cfg.sizes)} sizes), "
        f"{cfg.threads_per_block} threads per block, {cfg.policy.describe()}; {run.device.name} ({run.backend})",
    ]
    if run.stopped:
        lines.append(f"stopped early after {run.steps_done} of {run.steps_planned} steps: {run.stopped}")
    for impl, why in run.skipped:
        lines.append(f"skipped {impl}: {why}")
    if run.kernel_note:
        lines.append(run.kernel_note)
    series = run.series
    lines.append(f"{'N':>14} " + " ".join(f"{SERIES_LABELS[s][:14]:>14}" for s in series))
    for n in run.sizes:
        cells = []
        for s in series:
            p = run.point(n, s)
            if p is None:
                cells.append("")
            elif not p.ok:
                cells.append("failed")
            else:
                cells.append(format_seconds(p.median_s) + run.mark(p))
        lines.append(f"{n:>14,} " + " ".join(f"{c:>14}" for c in cells))
    lines.append(
        "medians; ~ estimate (not run), * fewer than 3 samples (spread unknown), ! noisy (spread above the target), "
        "° working set fits in the L2"
        + (" (L2 warm: not flushed)" if cfg.warm_l2 else " (L2 flushed before every GPU sample)")
    )
    for p in run.failures:
        lines.append(f"failed at N = {p.n:,}, {SERIES_LABELS[p.series]}: {p.error}")
    simulated = run.backend == "simulator"
    if simulated:  # a simulator is not a GPU: its times are never compared with the CPU's, nor with a roof
        lines.append(SIMULATED_NOT_COMPARED)
    else:
        lines += crossover_sentences(run)
        lines.append(crossover_conditions(run))
    if run.peaks is not None and not simulated:
        lines.append(str(run.peaks))
        largest = max(run.sizes, default=None)
        kernel = run.point(largest, "gpu-kernel") if largest else None
        if kernel is not None and kernel.ok:
            _, d2d = run.ceiling("gpu-kernel")
            pct = f" = {100 * kernel.bandwidth_gbps / d2d:.0f}% of the measured device copy" if d2d else ""
            if d2d and run.ceiling_beaten("gpu-kernel"):
                pct += " (beaten: the copy is a reference here, not a limit)"
            lines.append(f"kernel at N = {largest:,}: {kernel.bandwidth_gbps:,.4g} GB/s{pct}")
    for ref in ("cupy", "torch"):
        largest = max((p.n for p in run.points if p.series == ref and p.ok), default=None)
        kernel_point = run.point(largest, "gpu-kernel") if largest is not None else None
        ref_point = run.point(largest, ref) if largest is not None else None
        if kernel_point is not None and kernel_point.ok and ref_point is not None:
            ratio = kernel_point.median_s / ref_point.median_s
            lines.append(f"kernel time / {SERIES_LABELS[ref]} at N = {largest:,}: {format_factor(ratio)}")
    lines.append(describe_telemetry(run.telemetry))
    lines.append(f"wall {format_seconds(run.wall_s)}, timed samples {format_seconds(run.sampled_s)}: "
                 f"overhead {run.overhead_fraction:.1%} (1 − samples ÷ wall)")
    return "\n".join(lines)


# What gpu/catalog/render.py uses for these results (named by the scaling declaration's ``report``).
SUMMARIES = {SweepRun: summary}
PROSE = {SweepRun: lambda run: {"crossover_sentences": crossover_sentences(run)}}


def scaling_sentence(run) -> str:
    """Where the kernel and the whole GPU add overtake NumPy, and the bandwidth reached.

    Crossovers are the result's own sentences (ranges where the bands overlap, "no exact
    point" beside single-sample points), never a bare three-figure point; a bandwidth
    from fewer than 3 samples, or from a working set that fits in the L2, says so.
    """
    parts = [c.text for c in run.crossovers() if c.baseline == "numpy" and c.gpu in ("gpu-kernel", "gpu-total")]
    frame = run.to_frame()
    kernel = frame[(frame["series"] == "gpu-kernel") & frame["bandwidth_gbps"].notna()]
    peak = run.device.peak_bandwidth_gbps
    tail = ""
    if not kernel.empty:
        last = kernel.loc[kernel["n"].idxmax()]
        share = f", {last['bandwidth_gbps'] / peak:.0%} of the {format_gbps(peak)} theoretical peak" if peak else ""
        samples = int(last["samples"])
        marks = []
        if last["few_samples"]:
            marks.append(f"from {'one sample' if samples == 1 else f'{samples} samples'}: spread unknown")
        if last["fits_l2"]:
            marks.append("its working set fits in the L2")
        mark = f" ({'; '.join(marks)})" if marks else ""
        tail = f"; at N = {int(last['n']):,} the kernel moves {format_gbps(last['bandwidth_gbps'])}{share}{mark}"
    lead = "; ".join(parts) if parts else "the sweep found no crossover with NumPy"
    return f"On the {run.device.name}, {lead}{tail}. {crossover_conditions(run)}"


def lesson(ref) -> str | None:
    """The recorded sweep's lesson in one sentence (where the GPU overtakes NumPy), for the page's lead."""
    run = SweepRun.recorded(ref)
    if run is None:
        return None
    # the largest N is in the recorded panel's chart: the lead names where the GPU wins, in one line or two
    found = {c.gpu: re.sub(r", N = [\d,]+$", "", c.text).replace("end to end, with copies,", "with its copies,")
             for c in run.crossovers() if c.baseline == "numpy"}
    parts = [found[g] for g in ("gpu-kernel", "gpu-total") if g in found]  # the kernel alone, then with its copies
    return ("; ".join(parts) + ".") if parts else scaling_sentence(run)
