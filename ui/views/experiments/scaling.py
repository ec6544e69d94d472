"""Result display for the Scaling page (the form, the run and its Stop button come from
the declaration: ui.forms and ui.runner)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gpu.catalog.render import to_json
from gpu.core.limits import SIMULATED_THREAD_COST, kernel_cap, max_cpu_vector_n
from gpu.core.timing import ALLOCATION_RULE, format_seconds
from gpu.experiments.scaling import charts as scaling_charts
from gpu.experiments.scaling.config import IMPL_LABELS
from gpu.experiments.scaling.experiment import default_max_n
from gpu.experiments.scaling.report import (
    SIMULATED_NOT_COMPARED,
    crossover_conditions,
    crossover_sentences,
    scaling_sentence,
)
from gpu.experiments.scaling.result import SweepRun
from gpu.service.references import ReferenceRun
from ui import glossary
from ui.downloads import download

RESULT_KEY = "scaling.result"


def limits_caption() -> str:
    cap = kernel_cap()
    kernels = (
        f" Simulated kernels run only up to N = {cap:,} (about {SIMULATED_THREAD_COST}); above it, the CPU alone."
        if cap
        else ""
    )
    return (
        f"Limits here: N ≤ {max_cpu_vector_n():,}; the default largest N {default_max_n():,} fits memory and this "
        "server's work budget."
        + kernels
    )


def describe(run: SweepRun) -> str:
    """Chart subtitle: what was measured, how many samples, on what."""
    cfg = run.config
    sizes = run.sizes
    span = f"N = {sizes[0]:,} to {sizes[-1]:,} ({len(sizes)} sizes)" if sizes else "no sizes measured"
    return (f"{span} · float32 · {cfg.threads_per_block} threads per block · {cfg.policy.describe()} · "
            f"{run.device.name} ({run.backend})")


def table(run: SweepRun) -> pd.DataFrame:
    frame = run.to_frame()
    out = pd.DataFrame(
        {
            "N": frame["n"],
            # in the simulator every GPU row says whose time it is
            "series": [f"{label} (simulated)" if run.backend == "simulator" and series.startswith("gpu") else label
                       for label, series in zip(frame["label"], frame["series"])],
            "median (ms)": frame["median_s"] * 1e3,
            "min (ms)": frame["min_s"] * 1e3,
            "max (ms)": frame["max_s"] * 1e3,
            "samples": frame["samples"],
            "noise (%)": frame["noise"] * 100,
            "noisy": frame["noisy"],
            "estimated": frame["estimated"],
            "GB/s": frame["bandwidth_gbps"],
            "% of limit": frame["pct_of_ceiling"],
            "agrees with NumPy": frame["agree"],
            "error": frame["error"],
        }
    )
    return out


def show_result(run: SweepRun) -> None:
    """Everything about one sweep: status, crossovers, charts, table, downloads."""
    if run.stopped:
        st.warning(
            f"Sweep stopped ({run.stopped}) after {run.steps_done} of {run.steps_planned} steps; the points measured "
            "so far are shown."
        )
    for impl, why in run.skipped:
        st.info(f"{IMPL_LABELS[impl]} skipped: {why}.")
    if run.kernel_note:
        note = run.kernel_note
        st.info(
            f"{note[0].upper()}{note[1:]}. Your CPU's figures at those sizes are set beside a recorded real GPU's "
            "below.",
            icon=":material/memory:",
        )
    for p in run.failures:
        st.error(f"N = {p.n:,}, {p.series}: {p.error}. The sweep went on.")
    if not run.points:
        st.info("No point was measured before the sweep stopped.")
        return
    if run.agree:
        st.success("Every result is bit-identical to NumPy's at every size measured.", icon=":material/check_circle:")
    else:
        bad = sorted({(p.n, p.series) for p in run.points if p.agree is False})
        st.error(
            "Results differ from NumPy at: " + ", ".join(f"N = {n:,} ({s})" for n, s in bad[:10]),
            icon=":material/error:",
        )

    simulated = run.backend == "simulator"
    if simulated:  # what is real leads: your CPU beside a recorded real GPU; simulated times are never compared
        from ui.views import cpu_vs_recorded

        cpu_vs_recorded.show_sweep(run)
        st.caption(SIMULATED_NOT_COMPARED)
    else:
        st.subheader("Where the GPU starts to win")
        sentences = crossover_sentences(run)
        st.markdown(
            "\n".join(f"- {s}" for s in sentences)
            if sentences
            else "- Choose the GPU and at least one CPU implementation to find crossovers."
        )
        if sentences:
            st.caption(crossover_conditions(run))

    cols = st.columns(4)
    cols[0].metric("Sizes measured", f"{len(run.sizes)}")
    cols[1].metric("Steps", f"{run.steps_done} of {run.steps_planned}")
    cols[2].metric(
        "Wall time",
        format_seconds(run.wall_s),
        help="From the first measured step to the last: kernel compile and input generation excluded.",
    )
    overhead = run.overhead_fraction
    measured = run.sampled_s > 0 and 0 <= overhead < 1
    cols[3].metric(
        "Overhead",
        f"{overhead:.0%}" if measured else "not measured",
        help=(
            "1 − (sum of the timed samples ÷ wall time). Inside: only the recorded samples (each series' timed runs). "
            "Outside: warm-up runs, input uploads, stream holds, L2 flushes, agreement checks, freeing memory and "
            "bookkeeping."
            if measured
            else "The sweep recorded no timed sample to compare with its wall time."
        ),
    )

    subtitle = describe(run)
    frame = run.to_frame()
    if simulated:  # your CPU is charted; the simulated kernels are tabled below and compared with nothing
        show_simulated_charts(run, frame, subtitle)
    else:
        show_gpu_charts(run, frame, subtitle)

    st.subheader("Every point")
    st.dataframe(table(run), hide_index=True, width="stretch")
    from ui.telemetry_note import show_telemetry

    show_telemetry(run.telemetry, "sweep")
    left, right = st.columns(2)
    stem = f"scaling_{run.config.min_n}_{run.config.max_n}"
    download("Download sweep (JSON)", to_json(run), f"{stem}.json", "application/json",
             key="scaling.download_json", stamp=True, where=left)
    download(
        "Download points (CSV)",
        points_frame(run),
        f"{stem}.csv",
        "text/csv",
        key="scaling.download_csv",
        stamp=True,
        where=right,
        help="One row per size and series with a plain header; the sweep's settings and device are in the JSON "
             "download.",
    )


def show_simulated_charts(run: SweepRun, frame, subtitle: str) -> None:
    """In the simulator: your CPU's series against N (measured now, real); no simulated series, limit or share."""
    cpu_series = [s for s in ("numpy", "numba", "numba-parallel", "python") if s in set(frame["series"])]
    if cpu_series:
        st.altair_chart(
            scaling_charts.time_chart(frame, [], f"your CPU, measured now · {subtitle}", series=cpu_series),
            width="stretch",
        )
    st.caption(
        "The simulated kernels (up to the simulator's cap) are not charted: their times measure Python on this CPU, "
        "so they sit in the table below, marked simulated, and are set against neither your CPU nor the memory's "
        "limits. The recorded GPU's curves are in *Your CPU beside a real GPU* above."
    )


def show_gpu_charts(run: SweepRun, frame, subtitle: str) -> None:
    """On a GPU: time against N with the crossovers, bandwidth against the limits, the other series, the shares."""
    crossovers = [c.to_dict() for c in run.crossovers()]
    noisy = int(frame["noisy"].sum())
    st.altair_chart(scaling_charts.time_chart(frame, crossovers, subtitle), width="stretch")
    st.caption(
        f"Rules: {ALLOCATION_RULE}; the L2 is "
        f"{'NOT flushed (warm-cache option)' if run.config.warm_l2 else 'flushed before every GPU sample'}; "
        "kernels alone (and CuPy / PyTorch) are timed behind a verified stream hold; a grey square marks a point from "
        "fewer than 3 samples; "
        "crossovers are ranges where the min–max bands overlap."
    )
    if noisy:
        st.caption(
            f"{noisy} point{'s' if noisy != 1 else ''} (ringed red) are noisier than "
            f"{run.config.policy.max_noise:.0%}: treat them with care."
        )
    peaks = run.peaks.to_frame() if run.peaks else None
    st.altair_chart(scaling_charts.bandwidth_chart(frame, peaks, subtitle), width="stretch")
    show_other_series(frame, crossovers, subtitle, "scaling.other_series")
    if run.peaks is not None:
        st.caption(
            "Limits: "
            + "; ".join(
                f"{lim.label} — {f'{lim.gbps:,.4g} GB/s' if lim.gbps else 'unknown'} "
                f"({lim.how if lim.gbps else lim.skipped})"
                for lim in run.peaks.limits
            )
            + ". Vector add moves 12 bytes per element; copies within one memory count read and write."
        )
    if frame["share"].notna().any():
        st.altair_chart(scaling_charts.share_chart(frame, subtitle), width="stretch")


def points_frame(run: SweepRun) -> pd.DataFrame:
    """The points download's rows (plain CSV for spreadsheets): integer N; metadata lives in the JSON download."""
    frame = run.to_frame()
    frame["n"] = frame["n"].astype("int64")
    frame["backend"] = run.backend  # every row says whether it timed a GPU or the simulator
    return frame


def show_other_series(frame, crossovers: list[dict], subtitle: str, key: str) -> None:
    """The sweep's other time series (launch, ILP, Python loop, Numba, CuPy, PyTorch) in a second chart, folded."""
    others = scaling_charts.other_series(frame)
    if not others:
        return
    labels = ", ".join(dict.fromkeys(frame.loc[frame["series"].isin(others), "label"]))
    st.caption("The chart shows the three series that carry the lesson: the kernel alone, the GPU end to end with its "
               "copies, and NumPy. The others are below.")
    with st.expander(f"More series: {labels}", icon=":material/stacked_line_chart:"):
        st.altair_chart(
            scaling_charts.time_chart(frame, crossovers, subtitle, series=others), width="stretch", key=key
        )


def recorded(ref: ReferenceRun) -> None:
    from gpu.experiments.scaling import charts as charts

    run = SweepRun.recorded(ref)
    if run is None:  # the panel asks only runs that hold a sweep (References.best)
        st.info(f"{ref.title} holds no Scaling sweep.")
        return
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


    show_other_series(frame, [c.to_dict() for c in run.crossovers()], subtitle, "reference.scaling.other_series")
