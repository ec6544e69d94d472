"""Widgets and result display for the Transfers page.

The forms come from the declarations (ui.forms); ``show_*`` draw a finished result and
the ``*_caption`` functions the limits under each form. All measuring happens in
``gpu.experiments.transfers.experiment``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import gpu
from gpu.catalog.render import to_json
from gpu.core.timing import ALLOCATION_RULE, format_factor, format_seconds
from gpu.core.words import format_bytes
from gpu.experiments.transfers import charts as transfers_charts
from gpu.experiments.transfers.bandwidth import (
    SIMULATED_NOTE,
    BandwidthCurves,
    max_copy_bytes,
    series_label,
)
from gpu.experiments.transfers.experiment import (
    MAX_CHUNKS,
    MAX_ITERATIONS,
    MAX_STREAMS,
    STRATEGIES,
    StrategyComparison,
    max_transfer_n,
)
from gpu.experiments.transfers.report import transfers_sentence, verdict
from gpu.service.references import ReferenceRun
from ui import glossary
from ui.downloads import download
from ui.telemetry_note import show_telemetry

BANDWIDTH_KEY = "transfers.bandwidth"
STRATEGIES_KEY = "transfers.strategies"

SIMULATOR_WARNING = (
    "**Pinning, streams and overlap are not simulated.** In the CUDA simulator every copy is a "
    "NumPy copy, pinned and mapped memory are ordinary arrays, and streams run one operation "
    "after another — so every timing on this page is meaningless here. The page still runs at "
    "small sizes, and every strategy's result is still checked bit for bit against NumPy."
)



# --- bandwidth ---------------------------------------------------------------------------


def bandwidth_caption() -> str:
    limit = max_copy_bytes()
    return (f"Sizes up to {format_bytes(limit)} here "
            f"({'the simulator cap' if gpu.BACKEND.simulated else 'free host and device memory'}); every 4× between "
            "the ends.")


def describe_bandwidth(curves: BandwidthCurves) -> str:
    samples = curves.points[0].stats.n_samples if curves.points else 0
    return (
        f"copies of {format_bytes(curves.sizes[0])} to {format_bytes(curves.sizes[-1])} · CUDA events, median of "
        f"{samples} "
        f"samples per point after {curves.policy.warmup} warm-up · D2D counts read + write · {curves.device.name} "
        f"({curves.backend})"
    )


def bandwidth_table(curves: BandwidthCurves) -> pd.DataFrame:
    """GB/s at the median: one row per size, one column per curve."""
    rows = []
    for size in curves.sizes:
        row: dict[str, str | float | None] = {"size": format_bytes(size)}
        for key in curves.series():
            point = curves.point(*key, size)
            row[f"{series_label(*key)} (GB/s)"] = round(point.bandwidth_gbps, 3) if point else None
        rows.append(row)
    return pd.DataFrame(rows)


def show_bandwidth(curves: BandwidthCurves) -> None:
    for note in curves.notes:
        if note != SIMULATED_NOTE:
            st.warning(note, icon=":material/warning:")
    simulated = curves.backend == "simulator"
    if simulated:  # every copy is a NumPy copy: its "bandwidth" is this CPU's memcpy, not a link's
        st.markdown(
            "**SIMULATED:** each copy here is a NumPy copy in this machine's memory, so these figures describe no "
            "PCIe link and no GPU: they are listed in the table below, not charted, compared or called plateaus. "
            "The recorded GPU's copy bandwidth is under **On a real GPU**."
        )
    else:
        st.markdown("**Plateaus, in words**")
        st.markdown("\n".join(f"- {p.sentence}" for p in curves.plateaus()))
    h2d_pinned, h2d_pageable = curves.plateau("h2d", "pinned"), curves.plateau("h2d", "pageable")
    if not simulated and h2d_pinned and h2d_pageable and h2d_pageable.peak_gbps > 0:  # pinning is not simulated
        st.markdown(
            f"- Pinned H2D reaches **{format_factor(h2d_pinned.peak_gbps / h2d_pageable.peak_gbps)}** pageable H2D's "
            "best bandwidth."
        )
    frame = curves.to_frame()
    if not simulated:
        plateaus = [p.to_dict() for p in curves.plateaus()]
        st.altair_chart(transfers_charts.bandwidth_chart(frame, plateaus, describe_bandwidth(curves)), width="stretch")
    with st.expander("Bandwidth table" + (" (simulated)" if simulated else "")):
        table = bandwidth_table(curves)
        if simulated:
            table = table.rename(columns={c: c.replace("(GB/s)", "(GB/s, simulated)") for c in table.columns})
        st.dataframe(table, hide_index=True, width="stretch", column_config=glossary.column_config(table.columns))
    left, right = st.columns(2)
    download("Download bandwidth (JSON)", curves.to_dict(), "transfers_bandwidth.json", "application/json",
             key="bw_download_json", stamp=True, where=left)
    download("Download bandwidth samples (CSV)", frame, "transfers_bandwidth.csv", "text/csv",
             key="bw_download_csv", stamp=True, where=right)


# --- strategies --------------------------------------------------------------------------


def strategies_caption() -> str:
    return (
        f"Limits here: N ≤ {max_transfer_n():,}; chunks 1 to min(N, {MAX_CHUNKS}); streams 1 to min(chunks, "
        f"{MAX_STREAMS}); "
        f"K 1 to {MAX_ITERATIONS:,}."
    )



def describe_strategies(result: StrategyComparison) -> str:
    return (
        f"N = {result.n:,} float32 · {result.threads_per_block} threads per block · {result.policy.n_repeat} samples "
        "per strategy after "
        f"{result.policy.warmup} warm-up · {result.chunks} chunks on {result.streams} streams · K = "
        f"{result.iterations} · "
        f"{result.device.name} ({result.backend})"
    )


def strategy_table(result: StrategyComparison) -> pd.DataFrame:
    """Per strategy, fastest first on a GPU (in the declared order in the simulator, where nothing is ranked):
    medians per vector add, memory, agreement, what it does."""
    rows = []
    simulated = result.backend == "simulator"
    tag = " (simulated)" if simulated else ""  # every time column says whose time it is
    for s in result.strategies.values() if simulated else result.ranking:
        # times as "436 ms", "22.2 µs": a unit that fits each, not 435.6701 or 0.0222 ms; "—" where a phase does not
        # exist
        row = {"strategy": s.label, f"end to end{tag}": format_seconds(s.cost_s), "samples": s.total.n_samples,
               "marks": "n<3" if s.few_samples else ""}  # beside the figure: fewer than 3 samples, spread unknown
        for phase, label in (
            ("h2d", "H2D"),
            ("launch", "launch"),
            ("kernel", "kernel"),
            ("d2h", "D2H"),
            ("span", "copies + kernels, span"),
        ):
            row[f"{label}{tag}"] = format_seconds(s.phase_cost_s(phase)) if phase in s.phases else "—"
        row.update({"host memory": s.host_memory, "bit-identical": s.agreement.passed, "what it does": s.description})
        rows.append(row)
    return pd.DataFrame(rows)


def show_agreement(result: StrategyComparison) -> None:
    if result.agree:
        st.success(
            f"Results agree: every strategy's c is bit-identical to NumPy "
            f"({result.n:,} of {result.n:,} elements each).",
            icon=":material/check_circle:",
        )
    else:
        bad = [s.label for s in result.strategies.values() if not s.agreement.passed]
        st.error(f"Results differ from NumPy for: {', '.join(bad)}. See the table below.", icon=":material/error:")


def show_strategy_metrics(result: StrategyComparison) -> None:
    """On a GPU: the winner, what chunking bought, and how much the two engines overlapped."""
    cols = st.columns(3)
    if result.winner is not None:
        cols[0].metric(
            f"Fastest: {result.winner.label}",
            format_seconds(result.winner.cost_s),
            help="Median wall-clock time per vector add (for data kept on the device: per kernel run, copies "
                 "amortised).",
        )
    if result.chunked_speedup is not None:
        cols[1].metric(
            "Chunked streams vs one chunk",
            format_factor(result.chunked_speedup),
            help="Median end to end of the one-chunk pinned run ÷ the chunked run's (same buffers, same code).",
        )
    if result.overlap is not None:
        cols[2].metric(
            "Chunked timeline with two engines busy",
            f"{result.overlap:.0%}",
            help="Share of the chunked run's span during which copies and kernels (or both copy directions) ran at "
                 "once, from the engine lanes.",
        )


def show_strategy_facts(result: StrategyComparison) -> None:
    """The simulator's comparison, headed by what is real there: agreement and what each strategy moves.

    No strategy wins in the simulator (pinning, streams and overlap are not simulated), so no
    winner, speedup or overlap is a headline; the simulated times stay in the chart and table, tagged.
    """
    cols = st.columns(4)
    agreeing = sum(s.agreement.passed for s in result.strategies.values())
    cols[0].metric(
        "Strategies agree",
        f"{agreeing} of {len(result.strategies)}",
        help="Each strategy's c checked bit for bit against NumPy.",
    )
    cols[1].metric("Strategies run here", f"{len(result.strategies)} of {len(result.strategies) + len(result.skipped)}",
                   help="The ones not run are named below, with why.")
    cols[2].metric(
        "Copied per vector add",
        format_bytes(result.bytes_moved),
        help=f"a and b to the device, c back: {result.bytes_moved:,} bytes (unless the data stays on the device).",
    )
    cols[3].metric(
        "Chunks on streams",
        f"{result.chunks} on {result.streams}",
        help="The chunked strategy's split; one-chunk runs the same code on one stream.",
    )
    glossary.caption(
        "Which strategy wins cannot be known here: copies are NumPy copies, pinned memory is ordinary memory and "
        "streams run "
        "one after another. The times below are the simulator's, marked simulated; the page's verdict needs a GPU."
    )


def show_strategies(result: StrategyComparison) -> None:
    """Agreement, the verdict, metrics, the breakdown, the timeline, table and downloads."""
    for note in result.notes:
        if note != SIMULATED_NOTE:
            st.warning(note, icon=":material/warning:")
    show_agreement(result)
    simulated = result.backend == "simulator"
    if simulated:  # no winner can be named here: lead with what is real
        show_strategy_facts(result)
    else:
        st.info(verdict(result))
    for key, why in result.skipped.items():
        st.caption(f"Not run: {STRATEGIES[key]} — {why}.")
    if not simulated:
        show_strategy_metrics(result)
    subtitle = ("SIMULATED, not GPU times · " if simulated else "") + describe_strategies(
        result
    )  # first: a long subtitle is cut at its end
    frame = result.to_frame()
    if simulated:  # a chart of simulated strategies would rank them by what no GPU does
        st.caption(
            "The simulated strategies are not charted or ranked: pinning, streams and overlap do not exist in the "
            "simulator. Their times are in the table below, marked simulated, in the order the page lists them."
        )
    else:
        order = [s.key for s in result.ranking]
        st.altair_chart(transfers_charts.strategy_breakdown_chart(frame, order, subtitle), width="stretch")
    if result.intervals and not simulated:
        lanes = st.radio(
            "Timeline lanes",
            options=["stream", "engine"],
            horizontal=True,
            key="timeline_lanes",
            format_func={"stream": "one per stream", "engine": "one per engine"}.get,
        )
        st.altair_chart(transfers_charts.timeline_chart(result.timeline_frame(lanes), subtitle, lanes), width="stretch")
        st.caption(
            "Each bar is one chunk's phase between two CUDA events on its stream, timed from one start event. "
            "On stream lanes a copy's bar includes any wait for a busy copy engine; engine lanes infer when each copy "
            "really started."
            + (" Simulated: the streams ran one after another." if result.backend == "simulator" else "")
        )
    st.subheader("Strategies in numbers")
    st.caption(
        "Medians per vector add; CUDA events for "
        f"phases{' (wall clock in the simulator)' if result.backend == 'simulator' else ''}, wall clock end to end. "
        f"{result.policy.describe()}. "
        f'Rule: {ALLOCATION_RULE} — except "as in the article", whose cuda.to_device allocates while it copies (its '
        'H2D includes allocating a, b and c).'
    )
    st.dataframe(strategy_table(result), hide_index=True, width="stretch")
    show_telemetry(result.telemetry)
    left, right = st.columns(2)
    download("Download strategies (JSON)", to_json(result), f"transfers_strategies_{result.n}.json",
             "application/json", key="st_download_json", stamp=True, where=left)
    download("Download strategy samples (CSV)", frame, f"transfers_strategies_{result.n}.csv", "text/csv",
             key="st_download_csv", stamp=True, where=right)


def recorded(ref: ReferenceRun) -> None:
    from gpu.experiments.transfers import charts as charts

    curves, strategies = BandwidthCurves.recorded(ref), StrategyComparison.recorded(ref)
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
