"""The "Your CPU beside a real GPU" panel: drawn after a run in the simulator.

The CPU figures of the run, measured now at the user's N, in one column; the recorded
real-GPU figures at the same N (or the nearest recorded N, said so) in the other, each
headed by what it is. The wording comes from ``gpu.report.cpu_vs_recorded``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gpu.core.timing import format_seconds
from gpu.report.cpu_vs_recorded import (
    GPU_MEASURES,
    YOUR_CPU,
    SweepVsRecorded,
    VectorAddVsRecorded,
    sweep_vs_recorded,
    vector_add_vs_recorded,
)
from ui import glossary
from ui.charts import cpu_vs_recorded as charts
from ui.resources import references

TITLE = "Your CPU beside a real GPU"


def _sentences(sentences: list[str]) -> None:
    glossary.markdown("\n".join(f"- {s}" for s in sentences))


def _figures_table(rows: list[tuple[str, str]], heading: str) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["measure", heading])


def _caveat(caveat: str | None) -> None:
    """The recorded GPU column was measured under older rules (when it was): said beside it."""
    if caveat:
        st.caption(f":material/history: The recorded GPU figures were {caveat}; your CPU runs on warm caches, "
                   "and those GPU samples ran with a warm L2 too.")


def show_vector_add(run) -> VectorAddVsRecorded | None:
    """The Vector add run's CPU figures beside the recorded GPU's; returns what was shown (None: nothing recorded)."""
    comparison = vector_add_vs_recorded(run, references())
    with st.container(border=True, key="cpu_vs_recorded"):
        st.subheader(TITLE, anchor="your-cpu-beside-a-real-gpu")
        if comparison is None:
            st.caption("No recorded GPU run or no CPU figure to compare: choose at least one CPU implementation.")
            return None
        rec = comparison.recorded
        left, right = st.columns(2)
        left.markdown(f"**{YOUR_CPU}** · N = {comparison.cpu_n:,}")
        left.dataframe(
            _figures_table(
                [(f.label, ("estimate " if f.estimated else "") + format_seconds(f.median_s)) for f in comparison.cpu],
                "median",
            ),
            hide_index=True,
            width="stretch",
        )
        right.markdown(f"**{rec.label}** · N = {rec.n:,}" + ("" if rec.exact else " (nearest recorded)"))
        right.dataframe(_figures_table(
            [(label, format_seconds(rec.phases[m])) for m, label in GPU_MEASURES.items() if m in rec.phases], "median"),
            hide_index=True, width="stretch")
        if not rec.exact:
            st.warning(
                f"The GPU column is at N = {rec.n:,}, not yours: no run was recorded at N = {rec.requested_n:,}, and "
                f"{rec.n:,} is the nearest recorded size ({rec.size_difference}).",
                icon=":material/straighten:",
            )
        _sentences(comparison.sentences())
        _caveat(rec.caveat)
        subtitle = f"your CPU at N = {comparison.cpu_n:,} · {rec.label} at N = {rec.n:,} ({rec.source})"
        st.altair_chart(
            charts.one_size_chart(comparison.to_frame(), subtitle), width="stretch", key="cpu_vs_recorded.chart"
        )
    return comparison


def show_sweep(run) -> SweepVsRecorded | None:
    """The sweep's CPU series beside the recorded GPU at each size; returns what was shown."""
    comparison = sweep_vs_recorded(run, references())
    with st.container(border=True, key="cpu_vs_recorded_sweep"):
        st.subheader(TITLE, anchor="your-cpu-beside-a-real-gpu")
        if comparison is None:
            st.caption("No recorded GPU run holds these sizes, or the sweep measured no CPU implementation.")
            return None
        _sentences(comparison.sentences())
        _caveat(next((r.caveat for r in comparison.recorded if r.caveat), None))
        frame = comparison.to_frame()
        subtitle = f"your CPU: {YOUR_CPU} · recorded GPU: {comparison.label} ({comparison.recorded[-1].source})"
        st.altair_chart(charts.sweep_chart(frame, subtitle), width="stretch", key="cpu_vs_recorded.sweep_chart")
        with st.expander("Every figure, with the N it was measured or recorded at"):
            table = frame.assign(**{"median (ms)": frame["median_s"] * 1e3}).drop(columns=["median_s"])
            st.dataframe(
                table.rename(columns={"n": "your N", "recorded_n": "N of this figure"}),
                hide_index=True,
                width="stretch",
            )
    return comparison


__all__ = ["TITLE", "show_sweep", "show_vector_add"]
