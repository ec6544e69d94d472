"""The "On a real GPU" panel: the recorded result of a page's experiment, for every visitor.

Most people who open the lab have no NVIDIA GPU; the committed ``python -m gpu check``
runs (``gpu.service.references``) show them what the experiment looks like on one, drawn
with the same chart builders as a live run, with one sentence of what it shows and the
run's provenance. In the simulator the panel leads the page (open); on a GPU it sits
below the live run, closed, as a comparison. Recorded runs are never saved to History.

The ``*_sentence`` functions are pure (result objects in, text out) and tested.
"""

from __future__ import annotations

import streamlit as st

from gpu.core.timing import format_seconds
from gpu.experiments.base import Recorded
from gpu.experiments.registry import experiments
from gpu.report.scaling import crossover_conditions
from gpu.service.references import ARTICLE, ReferenceRun
from ui import glossary
from ui.format import factor_text, format_gbps, times_words
from ui.resources import references  # pages and app.py read it from here too

PANEL_TITLE = "On a real GPU"


# --- one sentence per experiment ------------------------------------------------------------


def _few(stats) -> str:
    """" (one sample)" / " (2 samples)" after a figure from fewer than 3 samples, else ""."""
    if stats is None or not stats.few_samples:
        return ""
    return " (one sample)" if stats.n_samples == 1 else f" ({stats.n_samples} samples)"


def vector_add_sentence(run, pinned_s: float | None = None) -> str:
    """What the recorded vector add shows: the kernel against NumPy, then end to end with copies."""
    numpy = run.cpu.get("numpy")
    kernel, total = run.gpu["kernel"].median_s, run.gpu["total"].median_s
    k_few, t_few = _few(run.gpu["kernel"]), _few(run.gpu["total"])
    if numpy is None or numpy.stats is None:
        return (f"On the {run.device.name} at N = {run.n:,} the kernel alone takes {format_seconds(kernel)}{k_few} and "
                f"the whole GPU add with copies {format_seconds(total)}{t_few}.")
    np_s = numpy.median_s
    text = (
        f"On the {run.device.name} at N = {run.n:,} the kernel alone takes {format_seconds(kernel)}{k_few}, "
        f"{times_words(np_s / kernel, 'NumPy')} ({format_seconds(np_s)}{_few(numpy.stats)}), but with pageable copies "
        "the whole GPU add takes "
        f"{format_seconds(total)}{t_few}, {times_words(np_s / total, 'NumPy')}"
    )
    if pinned_s is not None:
        text += f"; with pinned host memory it takes {format_seconds(pinned_s)} (Transfers page)"
    return text + "."


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


def launch_sentence(run) -> str:
    """How much block size matters at a large N, from the recorded sweep."""
    per_element = sorted(
        (c for c in run.configs if c.kind == "one thread per element"), key=lambda c: c.threads_per_block
    )
    best = run.best
    text = (f"On the {run.device.name} at N = {run.n:,}, the best launch is {best.label} "
            f"({format_seconds(best.kernel.median_s)}{_few(best.kernel).replace(' (', ', ').rstrip(')')})")
    if per_element and per_element[0] is not best:
        small = per_element[0]
        text += f"; {small.label} take {factor_text(small.kernel.median_s / best.kernel.median_s)} as long"
    big = [c.kernel.median_s for c in per_element if c.threads_per_block >= 128]
    if len(big) >= 2:
        text += (f", while from 128 threads per block up the times differ by at most {max(big) / min(big) - 1:.0%}: "
                 "memory bandwidth, not the launch shape, sets the time")
    return text + "."


def transfers_sentence(curves, strategies) -> str:
    """Pinned against pageable copies, and what each strategy costs for one vector add."""
    parts = []
    if curves is not None:
        pinned, pageable = curves.plateau("h2d", "pinned"), curves.plateau("h2d", "pageable")
        if pinned and pageable:
            parts.append(
                f"host→device copies from pinned memory reach {format_gbps(pinned.peak_gbps)} against "
                f"{format_gbps(pageable.peak_gbps)} from pageable memory"
            )
    if strategies is not None:
        s = strategies.strategies
        costs = [
            f"{format_seconds(s[k].cost_s)} {label}"
            for k, label in (
                ("article", "as in the article"),
                ("pinned", "with pinned memory"),
                ("resident", "with the data kept on the device"),
            )
            if k in s
        ]
        if costs:
            parts.append(
                f"one vector add at N = {strategies.n:,} takes "
                + ", ".join(costs[:-1])
                + (f" and {costs[-1]}" if len(costs) > 1 else costs[0])
            )
    device = (curves or strategies).device.name if (curves or strategies) is not None else "GPU"
    return (
        f"On the {device}, " + "; ".join(parts) + "."
        if parts
        else f"No transfer figures were recorded on the {device}."
    )


# --- drawing ----------------------------------------------------------------------------------


def provenance_caption(ref: ReferenceRun) -> None:
    """Device, driver, versions, date, commit and command of a recorded run, always visible."""
    st.caption("  \n".join(ref.provenance.lines()))


def show_article_figures() -> None:
    """The article's own T4 result, labelled as published, not measured."""
    a = ARTICLE
    st.markdown(
        f"**NVIDIA T4 (Colab), {a.provenance.label}:** Python loop {format_seconds(a.cpu_time_s)}, GPU "
        f"{format_seconds(a.gpu_time_s)} including the copies — the article's “GPU speedup: {a.speedup:.2f}x” at N = "
        f"{a.n:,}."
    )


def _vector_add(ref: ReferenceRun) -> None:
    from ui.charts import common as charts
    from ui.views.vector_add import describe

    run = ref.vector_add()
    pinned = ref.strategies("small")
    pinned_s = (
        pinned.strategies["pinned"].cost_s
        if pinned is not None and pinned.n == run.n and "pinned" in pinned.strategies
        else None
    )
    glossary.markdown(vector_add_sentence(run, pinned_s))
    article = ref.article()
    if article is not None:
        st.markdown(
            f"**{run.device.name}, the article's own method** (mean of 3 wall-clock runs, c copied in too): Python "
            "loop "
            f"{format_seconds(article['cpu_time_s'])}, GPU {format_seconds(article['gpu_time_s'])}, printed “GPU "
            f"speedup: {article['speedup']:.2f}x”."
        )
    show_article_figures()
    frame = run.to_frame()
    subtitle = f"recorded: {describe(run)}"
    st.altair_chart(charts.time_comparison_chart(frame, subtitle), width="stretch", key="reference.vector_add.times")
    st.altair_chart(charts.gpu_breakdown_chart(frame, subtitle), width="stretch", key="reference.vector_add.breakdown")


def _scaling(ref: ReferenceRun) -> None:
    from ui.charts import scaling as charts
    from ui.views.scaling import describe

    run = ref.sweep()
    glossary.markdown(scaling_sentence(run))
    frame = run.to_frame()
    subtitle = f"recorded: {describe(run)}"
    st.altair_chart(
        charts.time_chart(frame, [c.to_dict() for c in run.crossovers()], subtitle),
        width="stretch",
        key="reference.scaling.time",
    )
    st.altair_chart(
        charts.bandwidth_chart(frame, run.peaks.to_frame() if run.peaks else None, subtitle),
        width="stretch",
        key="reference.scaling.bandwidth",
    )
    from ui.views.scaling import show_other_series

    show_other_series(frame, [c.to_dict() for c in run.crossovers()], subtitle, "reference.scaling.other_series")


def _launch(ref: ReferenceRun) -> None:
    from ui.charts import launch as charts
    from ui.views.launch import describe_sweep

    run = ref.launch_sweep()
    glossary.markdown(launch_sentence(run))
    frame = run.to_frame()
    subtitle = f"recorded: {describe_sweep(run)}"
    st.altair_chart(charts.sweep_time_chart(frame, subtitle), width="stretch", key="reference.launch.time")
    st.altair_chart(
        charts.sweep_bandwidth_chart(frame, subtitle, run.device.peak_bandwidth_gbps),
        width="stretch",
        key="reference.launch.bandwidth",
    )


def _transfers(ref: ReferenceRun) -> None:
    from ui.charts import transfers as charts
    from ui.views.transfers import describe_bandwidth, describe_strategies

    curves, strategies = ref.bandwidth(), ref.strategies("small")
    glossary.markdown(transfers_sentence(curves, strategies))
    if curves is not None:
        st.altair_chart(
            charts.bandwidth_chart(
                curves.to_frame(), [p.to_dict() for p in curves.plateaus()], f"recorded: {describe_bandwidth(curves)}"
            ),
            width="stretch",
            key="reference.transfers.bandwidth",
        )
    if strategies is not None:
        order = [s.key for s in strategies.ranking]
        st.altair_chart(
            charts.strategy_breakdown_chart(
                strategies.to_frame(), order, f"recorded: {describe_strategies(strategies)}"
            ),
            width="stretch",
            key="reference.transfers.strategies",
        )


def panels() -> dict[str, Recorded]:
    """Every recorded-run panel the declarations name (``Experiment.recorded``), by name."""
    return {e.recorded.name: e.recorded for e in experiments() if e.recorded is not None}


def reference_panel(experiment: str, *, expanded: bool | None = None) -> ReferenceRun | None:
    """Draw the recorded result of ``experiment`` in an "On a real GPU" expander.

    ``expanded`` defaults to closed: the recorded run is one click away, below the page's own form and run.
    Returns the reference shown, or None when no committed run holds the experiment.
    """
    declared = panels()
    if experiment not in declared:
        raise ValueError(
            f"experiment must be one of {tuple(declared)} (the declarations' recorded panels), got {experiment!r}"
        )
    refs = references()
    ref = refs.best(experiment)
    open_ = bool(expanded)
    with st.container(border=True, key=f"reference_panel_{experiment.replace('-', '_')}"):
        st.subheader(f"{PANEL_TITLE}: {ref.provenance.device if ref else 'no recorded run'}", anchor="on-a-real-gpu")
        if ref is None:
            st.caption("No committed `python -m gpu check` run holds this experiment yet (see benchmarks/README).")
            return None
        st.caption(f":material/verified: Recorded by `python -m gpu check` on real hardware — {ref.provenance.label}.")
        provenance_caption(ref)
        if ref.caveat:  # recorded before the current rules: said before any figure
            st.warning(
                f"This run was {ref.caveat}" + (f"; {ref.l2_note}." if ref.l2_note else "."), icon=":material/history:"
            )
        with st.expander(
            "The recorded result" + ("" if open_ else " (compare with your run above)"),
            expanded=open_,
            icon=":material/monitoring:",
        ):
            try:
                draw = declared[experiment].draw
                if draw is None:
                    st.caption(
                        "This experiment declares no drawing of a recorded run; its figures are in the check's files."
                    )
                else:
                    draw.resolve()(ref)
            except Exception as exc:  # a reference that no longer rebuilds must not break the page
                st.warning(f"The recorded run {ref.key} could not be drawn: {exc}", icon=":material/warning:")
    return ref


def panel_before_run(experiment: str) -> None:
    """Call where the page starts. The form comes first on every backend (issue 28: nothing stands between a
    newcomer and the Run button), so this draws nothing; kept so a page's shape reads the same everywhere."""


def panel_after_run(experiment: str) -> None:
    """Call where the page ends: the recorded real GPU's run, below the form and the live run."""
    reference_panel(experiment)
