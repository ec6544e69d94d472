"""The Scaling section of ``python -m gpu check``: a sweep to 2^30 where memory allows, its
performance targets (kernel against the libraries and the memory peak, sweep overhead) and
its report."""

from __future__ import annotations

from collections.abc import Callable

from gpu.catalog.checking import CheckContext, Section, runs_section
from gpu.catalog.render import to_json
from gpu.core import reference
from gpu.core.backend import BACKEND
from gpu.core.limits import (
    max_vector_n,
)
from gpu.core.telemetry import describe as describe_telemetry
from gpu.core.timing import RepeatPolicy, format_seconds
from gpu.experiments.scaling.config import DEFAULT_MIN_N, IMPL_LABELS, make_config
from gpu.experiments.scaling.experiment import run_sweep
from gpu.experiments.scaling.report import crossover_conditions, crossover_sentences
from gpu.experiments.scaling.result import SERIES_LABELS, SweepRun

CHECK_MAX_N = 2**30  # the check's ~90 s budget on an H200 ends here (12.9 GB per vector add)
CHECK_MIN_LARGEST_N = 2**28  # the floor for the largest size, where memory allows
# End to end (copies included) up to here; above it the article's kernel alone on device-resident inputs:
# at 2^30 one end-to-end sample copies 12 GiB, and those copies, not the kernel, filled the check's time.
CHECK_END_TO_END_MAX_N = 2**26
CHECK_IMPLS = ("gpu", "gpu-ilp", "python", "numpy", "numba-parallel", "cupy", "torch")  # single-core Numba: on the page
KERNEL_VS_REFERENCE_TARGET = 0.05  # kernel time within 5% of CuPy's / PyTorch's


OVERHEAD_TARGET = 0.10
SWEEP_SHARE = 0.7  # of a budgeted Scaling section: the sweep's limit; the rest is the peaks' and the report's


def performance_targets(run: SweepRun) -> dict:
    """The issue's targets at the largest size the GPU measured: figures and whether met."""
    out: dict = {}
    kernel_ns = [p.n for p in run.points if p.series == "gpu-kernel" and p.stats is not None]
    kernel = run.point(max(kernel_ns), "gpu-kernel") if kernel_ns else None
    if kernel is not None and kernel.stats is not None:
        n = kernel.n
        out["n"] = n
        out["kernel_gbps"] = kernel.bandwidth_gbps
        d2d = run.peaks.gbps("d2d") if run.peaks else None
        peak = run.peaks.gbps("device_peak") if run.peaks else None
        out["kernel_samples"] = kernel.stats.n_samples
        if d2d:
            ratio = kernel.bandwidth_gbps / d2d
            # a "ceiling" some series beats is a reference, and no check passes against it
            beaten = run.ceiling_beaten("gpu-kernel")
            out["kernel_vs_d2d"] = {"ratio": ratio, "target": KERNEL_VS_D2D_TARGET, "ceiling_beaten": beaten,
                                    "met": None if beaten else ratio >= KERNEL_VS_D2D_TARGET}
        if peak:
            out["kernel_vs_device_peak"] = {"ratio": kernel.bandwidth_gbps / peak}
        for ref in reference.REFERENCES:
            other = run.point(n, ref)
            if other is not None and other.stats is not None:
                ratio = kernel.median_s / other.median_s
                out[f"kernel_vs_{ref}"] = {"time_ratio": ratio, "target": KERNEL_VS_REFERENCE_TARGET,
                                           "met": abs(ratio - 1) <= KERNEL_VS_REFERENCE_TARGET}
                ilp = run.point(n, "gpu-ilp")
                if ilp is not None and ilp.stats is not None:
                    ratio = ilp.median_s / other.median_s
                    out[f"ilp_vs_{ref}"] = {"time_ratio": ratio, "target": KERNEL_VS_REFERENCE_TARGET,
                                            "met": abs(ratio - 1) <= KERNEL_VS_REFERENCE_TARGET}
        ilp = run.point(n, "gpu-ilp")
        if ilp is not None and ilp.stats is not None and peak:
            out["ilp_vs_device_peak"] = {"ratio": ilp.bandwidth_gbps / peak, "gbps": ilp.bandwidth_gbps}
    out["overhead"] = {
        "fraction": run.overhead_fraction,
        "target": OVERHEAD_TARGET,
        "met": run.overhead_fraction < OVERHEAD_TARGET,
    }
    return out


def check_sweep(
    quick: bool, max_n: int, say: Callable[[str], None], budget_s: float | None = None
) -> tuple[bool, dict, str]:
    """The check's scaling section: (passed, JSON data, markdown).

    Full: 2^10 up to the largest size that fits (capped at 2^30 for time), largest first,
    sampled until noise ≤ 3% or 0.25 s per point, stopping after 80 s with what it has
    (so a slow machine loses the smallest sizes, never the largest). Quick: 64 to
    1,024 in a few seconds. With ``budget_s`` (a verification plan's) the sweep's own limit
    is ``SWEEP_SHARE`` of it (the rest: the peaks and the report). Passes when every result
    is bit-identical to NumPy, no point failed, and the GPU reached the largest planned size; the performance
    targets are reported, not enforced (they depend on the machine).
    """
    from gpu.core.peaks import measure_peaks

    fits = max_n if quick else min(max_n, max_vector_n())
    if quick:
        lo, hi = min(64, fits), min(1024, fits)
        policy, python_budget_s, max_wall_s = RepeatPolicy.count(2), 0.2, 30.0
        peaks = measure_peaks(RepeatPolicy.count(3), quick=True, on_progress=say)
    else:
        lo, hi = min(DEFAULT_MIN_N, fits), min(fits, CHECK_MAX_N)
        policy = RepeatPolicy.until_stable(0.03, 0.25, max_repeat=50)
        python_budget_s, max_wall_s = 0.25, 80.0 if budget_s is None else SWEEP_SHARE * budget_s
        peaks = measure_peaks(RepeatPolicy.count(5), on_progress=say)
    config = make_config(lo, hi, CHECK_IMPLS, policy=policy, python_budget_s=python_budget_s, max_wall_s=max_wall_s,
                         limit=fits, descending=not quick)
    end_to_end_max_n = None if quick else CHECK_END_TO_END_MAX_N
    run = run_sweep(config, peaks=peaks, on_progress=lambda p: say(f"sweep: {p.message}"),
                    end_to_end_max_n=end_to_end_max_n)
    targets = performance_targets(run)
    reached = targets.get("n")
    floor = min(CHECK_MIN_LARGEST_N, fits)
    passed = run.agree and not run.failures and reached == hi and (quick or hi >= floor)

    md = [
        f"N = {lo:,} to {hi:,} in powers of two ({len(config.sizes)} sizes; the largest that fits here is {fits:,}"
        + (", capped at 2^30 to keep the check near 90 s" if fits > hi and not quick else "") + "), "
        f"{config.threads_per_block} threads per block, {policy.describe()}"
        + (f"; end to end up to {end_to_end_max_n:,}, the kernel alone above it (inputs uploaded once per size, "
           "results checked on the device)" if end_to_end_max_n is not None and hi > end_to_end_max_n else "")
        + ". Medians; `!` noisy, `~` estimated, "
        "`*` fewer than 3 samples, `°` working set fits in the L2 (flushed before every GPU sample).",
    ]
    if run.stopped:
        md.append(f"\n**Stopped early** after {run.steps_done} of {run.steps_planned} steps: {run.stopped}.")
    if run.skipped:
        md.append("")
    for impl, why in run.skipped:
        md.append(f"- skipped {IMPL_LABELS[impl]}: {why}")
    series = [
        s
        for s in ("gpu-kernel", "gpu-ilp", "gpu-total", "numpy", "numba-parallel", "python", "cupy", "torch")
        if s in run.series
    ]
    d2d = peaks.gbps("d2d")
    md += ["", "| N | " + " | ".join(SERIES_LABELS[s] for s in series) + " | kernel GB/s | kernel % of d2d copy |",
           "|---:|" + "---:|" * (len(series) + 2)]
    for n in run.sizes:
        cells = []
        for s in series:
            p = run.point(n, s)
            cells.append("—" if p is None else ("failed" if not p.ok else format_seconds(p.median_s) + run.mark(p)))
        k = run.point(n, "gpu-kernel")
        bw = f"{k.bandwidth_gbps:,.4g}" if k is not None and k.ok else "—"
        pct = f"{100 * k.bandwidth_gbps / d2d:.0f}%" if k is not None and k.ok and d2d else "—"
        md.append(f"| {n:,} | " + " | ".join(cells) + f" | {bw} | {pct} |")
    md += [
        "",
        "**Crossovers.** " + " ".join(crossover_sentences(run)) + " " + crossover_conditions(run),
        "",
        "**Physical limits.**",
        "",
        "| limit | GB/s | how |",
        "|---|---:|---|",
    ]
    for lim in peaks.limits:
        md.append(
            f"| {lim.label} | {f'{lim.gbps:,.4g}' if lim.gbps else '—'} | {lim.how if lim.gbps else lim.skipped} |"
        )
    sim = " — simulated, so not meaningful here" if BACKEND.simulated else ""
    md += [
        "",
        f"**Targets at N = {reached:,}** (reported, not enforced{sim}):"
        if reached
        else "**Targets:** the GPU measured no size.",
        "",
    ]
    if "kernel_vs_d2d" in targets:
        t = targets["kernel_vs_d2d"]
        verdict = (
            "not checked: a series beat the measured copy, so it is a reference, not a ceiling"
            if t["met"] is None
            else ("met" if t["met"] else "NOT met")
        )
        md.append(
            f"- kernel bandwidth {targets['kernel_gbps']:,.4g} GB/s ({targets['kernel_samples']} samples) = "
            f"{t['ratio']:.1%} of the measured device copy (target ≥ 90%): {verdict}"
        )
    if "kernel_vs_device_peak" in targets:
        md.append(f"- … and {targets['kernel_vs_device_peak']['ratio']:.1%} of the theoretical device peak")
    for ref in reference.REFERENCES:
        t = targets.get(f"kernel_vs_{ref}")
        if t:
            md.append(
                f"- kernel time / {SERIES_LABELS[ref]}: {t['time_ratio']:.3f} (target within ±5%): "
                f"{'met' if t['met'] else 'NOT met'}"
            )
    if "ilp_vs_device_peak" in targets:
        t = targets["ilp_vs_device_peak"]
        md.append(
            f"- with 4 elements per thread (not the article's kernel): {t['gbps']:,.4g} GB/s = {t['ratio']:.1%} of the "
            "theoretical device peak"
        )
    for ref in reference.REFERENCES:
        t = targets.get(f"ilp_vs_{ref}")
        if t:
            md.append(
                f"- 4-per-thread kernel time / {SERIES_LABELS[ref]}: {t['time_ratio']:.3f} (within ±5%: "
                f"{'yes' if t['met'] else 'no'})"
            )
    t = targets["overhead"]
    md.append(
        f"- sweep overhead, 1 − (timed samples {format_seconds(run.sampled_s)} ÷ wall {format_seconds(run.wall_s)}): "
        f"{t['fraction']:.1%} (target < 10%): {'met' if t['met'] else 'NOT met'}"
    )
    md.append(f"- {describe_telemetry(run.telemetry)}")
    for p in run.failures:
        md.append(f"- FAILED at N = {p.n:,}, {SERIES_LABELS[p.series]}: {p.error}")
    if not run.agree:
        bad = sorted({(p.n, p.series) for p in run.points if p.agree is False})
        md.append("- MISMATCH with NumPy at: " + ", ".join(f"N = {n:,} {SERIES_LABELS[s]}" for n, s in bad[:10]))
    if not quick and hi < floor:
        md.append(f"- the largest size that fits ({fits:,}) is below 2^28: the sweep could not reach it")
    data = {"largest_fit_n": fits, "planned_max_n": hi, "reached_n": reached, "targets": targets, "run": to_json(run)}
    return passed, data, "\n".join(md)


KERNEL_VS_D2D_TARGET = 0.90  # kernel bandwidth at least 90% of the measured device copy


@runs_section("scaling")
def scaling_section(ctx: CheckContext) -> Section:
    """Size sweep with crossovers, bandwidth against the physical limits, and CuPy/PyTorch."""
    passed, data, markdown = check_sweep(ctx.quick, ctx.max_n, ctx.say, ctx.budget_s)
    return Section("scaling", "Scaling: sweep, crossovers, bandwidth and references", passed, data, markdown)
