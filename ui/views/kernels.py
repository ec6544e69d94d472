"""Widgets and result display for the Kernels page (the kernel catalog)."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from gpu.catalog.declare import kernel_module, step_sources
from gpu.catalog.step_result import KIND_LABELS, KernelRun
from gpu.catalog.steps import KernelSpec
from gpu.core.backend import BACKEND
from gpu.core.timing import format_factor, format_seconds
from gpu.core.words import format_gbps
from ui import glossary
from ui.charts import kernels as charts
from ui.downloads import download
from ui.telemetry_note import show_telemetry
from ui.views.compile_facts import code_listings, facts_line, show_steps_facts

RUNS_KEY = "kernels.runs"  # this session's catalog runs, newest last (the Roofline page reads them)
MAX_RUNS = 20  # bounded: a session keeps its last 20 runs


def remember(run: KernelRun) -> None:
    runs = st.session_state.setdefault(RUNS_KEY, [])
    runs.append(run)
    del runs[:-MAX_RUNS]


def latest(key: str) -> KernelRun | None:
    return next((r for r in reversed(st.session_state.get(RUNS_KEY, [])) if r.kernel == key), None)


def describe(run: KernelRun) -> str:
    return f"{run.size} · {run.policy.describe()} · {run.device.name} ({run.backend})"


SIM_TAG = "simulated"  # beside every GPU time from Numba's CUDA simulator: never read as GPU performance


def show_agreement(run: KernelRun) -> None:
    checked = [r for r in run.results if r.agreement is not None]
    why = f" ({run.agreement_why})" if run.agreement_why else ""
    if run.agreement_mode == "exact":
        rule = f"bit for bit with the reference{why}"
    else:
        rule = (
            f"within the bound float32 rounding allows for each summation order{why}: |error| ≤ ((1 "
            "+ u)^k − 1) · Σ|terms|, "
            "u = 2⁻²⁴, k = the depth of that order's summation tree, against a float64 reference"
        )
    if run.agree:
        st.success(f"All {len(checked)} implementations that ran agree, {rule}.", icon=":material/check_circle:")
    else:
        bad = ", ".join(r.label for r in checked if r.agreement is not None and not r.agreement.passed)
        st.error(f"Results disagree for: {bad}. Agreement is checked {rule}.", icon=":material/error:")


def show_metrics(run: KernelRun) -> None:
    """On a GPU: the best step's time and throughput. In the simulator: only what is real there."""
    if run.backend == "simulator":
        show_simulator_facts(run)
        return
    best = run.best_step
    cols = st.columns(4)
    if best is None:
        cols[0].metric("Best GPU step", "none ran")
        return
    number, _, name = best.label.partition(" · ")
    cols[0].metric(
        "Best GPU step",
        f"step {number}" if name else best.label,
        help=f"{best.label}: the Numba step with the shortest kernel time (median).",
    )
    best_s = best.seconds
    cols[1].metric("Its kernel time", (format_seconds(best_s) if best_s is not None else "—") + run.marks(best))
    compute_bound = run.flops and run.intensity > 1
    throughput = format_flops(run.gflops(best)) if compute_bound else format_gbps(run.gbps(best))
    fraction = run.fraction_of_peak(best)
    cols[2].metric(
        "FLOP rate" if compute_bound else "Bandwidth",
        throughput,
        delta=None if fraction is None else f"{fraction:.0%} of peak",
        delta_color="off",
        help="Bytes the algorithm must move (or FLOPs it must do) ÷ kernel time; peak from the device's facts.",
    )
    ratio = run.vs_best_library(best)
    cols[3].metric(
        "× the best library's time",
        "no library ran" if ratio is None else format_factor(ratio),
        help="Best step's kernel time ÷ the fastest library's (CuPy/PyTorch) on the same GPU, same run. 1x = as fast.",
    )


def steps_not_run(run: KernelRun) -> list[tuple[str, str]]:
    """(step label, the feature it needs) for each GPU step the simulator could not run."""

    try:  # the catalog's kernels live in gpu/experiments/<key>.py; another's skip reason says the same in longer words
        needs = {
            step.key: step.needs
            for step in kernel_module(run.kernel).SPEC.steps
            if step.needs
        }
    except (ImportError, AttributeError):
        needs = {}
    return [(r.label, needs.get(r.key, r.skipped or "")) for r in run.results if r.kind == "step" and not r.measured]


def show_simulator_facts(run: KernelRun) -> None:
    """What a simulator run really establishes: agreement, which steps ran, and the algorithm's own figures.

    Times from the simulator are Python running one thread at a time: they stay in the
    chart and table below, tagged, and are never a headline.
    """
    from gpu.core.words import format_bytes

    checked = [r for r in run.results if r.agreement is not None]
    steps = [r for r in run.results if r.kind == "step"]
    missing = steps_not_run(run)
    cols = st.columns(4)
    cols[0].metric(
        "Results agree",
        f"{sum(r.agreement is not None and r.agreement.passed for r in checked)} of {len(checked)}",
        help="Implementations whose result matched the reference (the line above says how it is checked).",
    )
    cols[1].metric(
        "GPU steps run here",
        f"{len(steps) - len(missing)} of {len(steps)}",
        help="Steps that need a GPU-only feature are skipped in the simulator; they run on a GPU.",
    )
    cols[2].metric(
        "Minimum traffic",
        format_bytes(run.bytes_moved),
        help=f"{run.bytes_moved:,} bytes: each input read once, the output written once. A fact of "
             "the algorithm, not a measurement.",
    )
    cols[3].metric(
        "Arithmetic intensity (FLOP/byte)",
        plain_number(run.intensity),
        help=glossary.help_for(
            "arithmetic intensity", f"{run.flops:,} FLOPs ÷ {run.bytes_moved:,} bytes: a fact of the algorithm, not a "
            "measurement."),
    )
    by_need: dict[str, list[str]] = {}
    for label, need in missing:
        by_need.setdefault(need, []).append(label)
    why = "; ".join(
        f"{' and '.join(labels)} — {'they need' if len(labels) > 1 else 'it needs'} {need}"
        for need, labels in by_need.items()
    )
    glossary.caption(
        (
            f"Not run here: {why}, which Numba's CUDA simulator lacks (Kernel Lab's simulator, the "
            "default, runs them). "
            if missing
            else ""
        )
        + "No GPU time is shown as a figure here: the simulator runs the GPU threads in Python, so "
          "its times (in the "
        "table below, marked simulated) say nothing about a GPU. What is real here: the agreement "
        "above, the compiler's facts "
        "for each step (registers, spills, occupancy) and each step's memory trace, under “The "
        "steps, and what changed” below."
    )


def plain_number(value: float) -> str:
    """Three significant digits without e-notation: 0.249, 1.33, 85.3, 2,731."""
    if value == 0 or value != value:
        return "0" if value == 0 else "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    import math

    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{value:.0f}"


def format_flops(gflops: float | None) -> str:
    """A FLOP rate with a unit that keeps it short: 21,000 GFLOP/s, 3.1 MFLOP/s; "—" when none."""
    if gflops is None or gflops != gflops:
        return "—"
    return format_gbps(gflops).replace("B/s", "FLOP/s")


def table(run: KernelRun) -> pd.DataFrame:
    """One row per implementation. In the simulator every GPU time says "simulated" and the
    figures derived from it (% of peak, × best library) are left out: they would mean nothing."""
    simulated = run.backend == "simulator"
    rows = []
    for row in run.summary_rows():
        tag = (
            f" ({SIM_TAG})"
            if simulated and row["kind"] != "cpu" and row["seconds"] is not None and not row["estimated"]
            else ""
        )
        time_text = (
            "—"
            if row["seconds"] is None
            else ("estimated " if row["estimated"] else "") + format_seconds(row["seconds"]) + row["marks"] + tag
        )
        hold = (
            "—"
            if row["kind"] == "cpu" or row["held"] is None
            else (("held" if row["held"] else "no hold") + (f", {row['retries']} retried" if row["retries"] else ""))
        )
        rows.append(
            {
                "implementation": row["label"],
                "kind": row["kind_label"],
                "time (median)": time_text if not (row["skipped"] and not row["estimated"]) else "skipped",
                "samples": row["samples"],
                "stream hold": hold,
                "bandwidth": format_gbps(row["gbps"]),
                "FLOP rate": format_flops(row["gflops"]),
                "% of peak": "—" if row["fraction_of_peak"] is None else f"{100 * row['fraction_of_peak']:.1f}%",
                "× best library": "—" if row["vs_best_library"] is None else f"{row['vs_best_library']:.3g}x",
                "launch": row["launch"] or "",
                "agreement / why skipped": " · ".join(x for x in (row["agreement"], row["skipped"], row["note"]) if x),
            }
        )
    frame = pd.DataFrame(rows)
    if simulated:  # the CPU's rates are real; a GPU step's would be the simulator's, so it has none
        gpu_rows = frame["kind"] != KIND_LABELS["cpu"]
        frame.loc[gpu_rows, ["bandwidth", "FLOP rate"]] = "—"
        frame = frame.drop(columns=["% of peak", "× best library"])
    return frame


def show_run(run: KernelRun) -> None:
    """Everything about one run: agreement, metrics, charts, table, downloads."""
    for warning in run.warnings:
        st.warning(warning)
    show_agreement(run)
    show_metrics(run)
    simulated = run.backend == "simulator"
    summary, frame, subtitle = run.summary_frame(), run.to_frame(), describe(run)
    if simulated:  # your CPU's implementations are charted; the simulated steps are tabled and compared with nothing
        cpu_rows = summary[summary["kind"] == "cpu"]
        if not cpu_rows.empty:
            st.altair_chart(charts.steps_time_chart(cpu_rows, f"your CPU, measured now · {subtitle}"), width="stretch")
        st.caption(
            "The simulated GPU steps are not charted: their times measure Python on this CPU, so they are in the "
            "table below, marked simulated, and ranked against nothing — not your CPU, not each other."
        )
    else:
        st.altair_chart(charts.steps_time_chart(summary, subtitle), width="stretch")
        compute_heavy = run.flops and run.intensity > 1
        peak = run.roofs.fp32_gflops if compute_heavy else run.roofs.memory_gbps
        st.altair_chart(
            charts.throughput_chart(summary, subtitle, "gflops" if compute_heavy else "gbps", peak), width="stretch"
        )
        st.altair_chart(charts.phases_chart(frame, subtitle), width="stretch")
    glossary.caption(
        f"GB/s = {run.bytes_moved:,} bytes the algorithm must move ÷ time; GFLOP/s = {run.flops:,} FLOPs ÷ time; "
        "% of peak = share of the roof that bounds this kernel (memory: 2 × clock × bus width; "
        "FP32: SMs × lanes × 2 × clock). "
        "GPU times are the kernel alone (behind a stream-holding kernel on a GPU); phases are CUDA events on one stream"
        + (" (wall clock in the simulator)." if run.backend == "simulator" else ".")
    )
    for note in run.notes:
        st.info(note, icon=":material/info:")
    shown = table(run)
    st.dataframe(shown, hide_index=True, width="stretch", column_config=glossary.column_config(shown.columns))
    legend = [m.replace("*", "\\*", 1) for m in run.marks_legend()]  # "\\*": not a markdown bullet
    if any(r.on_gpu and r.main is not None and r.main.held is False for r in run.results):
        legend.append(
            "stream hold: “held” = the kernel alone behind a verified hold; “no hold” = its samples include the launch"
        )
    if legend:
        glossary.caption(" · ".join(legend))
    show_telemetry(run.telemetry)
    left, right = st.columns(2)
    name = f"{run.kernel}_{run.params.get('n')}"
    download("Download run (JSON)", run.to_dict(), f"{name}.json", "application/json", key="kernels.download_json",
             stamp=True, where=left)
    download("Download samples (CSV)", frame, f"{name}.csv", "text/csv", key="kernels.download_csv", stamp=True,
             where=right)


def step_threads(spec: KernelSpec, params: dict | None) -> list[int | None]:
    """Each step's threads per block with ``params`` (a 2-D block counts x × y); None where unknown."""
    found: list[int | None] = []
    for step in spec.steps:
        try:
            block = step.block(params or {})
        except (KeyError, TypeError, ValueError):  # no parameters to size it from
            found.append(None)
            continue
        found.append(math.prod(int(b) for b in block) if isinstance(block, tuple) else int(block))
    return found


def show_sources(spec: KernelSpec) -> None:
    """Each step's source: what changed and why, then the code with changed lines marked + (and removed ones −).

    Each step's block is sized by the run shown (else the form's defaults here), so the
    compiler's occupancy is the one that run used, not the LAUNCHES default."""
    from gpu.catalog.registry import get

    shown = latest(spec.key)
    params = shown.params if shown is not None else get(spec.key).defaults(BACKEND.simulated)
    st.subheader("The steps, and what changed")
    st.caption(
        "Lines marked + are new or changed since the previous step; lines marked − were removed. "
        "Each kernel's docstring is the prose above its code."
    )
    compiled = show_steps_facts(
        [step.kernel for step in spec.steps],
        key="kernels.compile_target",  # the real compiler's facts for a chosen GPU
        threads_per_block=step_threads(spec, params),
    )
    for i, (source, step) in enumerate(zip(step_sources(spec), spec.steps)):
        needs = (
            f" — needs {step.needs}: not in Numba's simulator"
            if step.needs and BACKEND.simulated and not BACKEND.lab_simulator
            else ""
        )
        with st.expander(f"{source.label}: {step.changed} ({source.changed} lines changed){needs}", expanded=False):
            if i in compiled:
                facts_line(compiled[i])
            glossary.markdown(source.why)
            st.code(source.as_diff(), language="diff")
            if source.helpers:
                st.caption("Device functions it calls:")
                st.code(source.helpers, language="python")
            if i in compiled:
                code_listings(compiled[i], in_expanders=False)
    from ui.views.trace import show_kernel_traces  # the memory trace of every step

    show_kernel_traces(spec)


__all__ = ["RUNS_KEY", "latest", "remember", "show_run", "show_sources"]
