"""Widgets and display for the History page: filters, the runs table, comparison, export.

Read-only by design: the app offers no way to delete or edit a saved run (one user must
not remove another's history); deleting is ``python -m gpu history-delete`` on the server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from gpu.service.store import HistoryStore, RunRecord, StoreError
from ui.charts.history import compare_chart, compare_subtitle, has_samples, run_label, runs_frame, samples_frame

MAX_LISTED = 500  # newest runs loaded per page view: bounded work per rerun
DEFAULT_COMPARED = 2


@dataclass(frozen=True)
class HistoryFilters:
    experiments: tuple[str, ...]
    devices: tuple[str, ...]
    backends: tuple[str, ...]

    def keep(self, record: RunRecord) -> bool:
        return (
            (not self.experiments or record.experiment in self.experiments)
            and (not self.devices or (record.device_name or "unknown") in self.devices)
            and (not self.backends or record.backend in self.backends)
        )


def load_records(store: HistoryStore) -> list[RunRecord] | None:
    """The newest runs, or None after showing why history cannot be read."""
    if store.problem:
        st.warning(store.problem, icon=":material/warning:")
    if not store.available:
        return None
    try:
        return store.runs(limit=MAX_LISTED)
    except StoreError as exc:
        st.error(f"{exc}. Experiments still run; try again later.")
        return None


def filters_ui(records: list[RunRecord]) -> HistoryFilters:
    """Three multiselects (empty means all); returns the chosen filters."""
    left, mid, right = st.columns(3)
    experiments = sorted({r.experiment for r in records})
    devices = sorted({r.device_name or "unknown" for r in records})
    backends = sorted({r.backend for r in records})
    backend_names = {"simulator": "CUDA simulator (simulated timings)", "cuda": "CUDA"}
    return HistoryFilters(
        tuple(left.multiselect("Experiment", experiments, key="history.experiment", placeholder="All experiments")),
        tuple(mid.multiselect("Device", devices, key="history.device", placeholder="All devices")),
        tuple(right.multiselect("Backend", backends, key="history.backend", format_func=lambda b: backend_names.get(b, b), placeholder="All backends")),
    )


def compare_ui(records: list[RunRecord]) -> list[RunRecord]:
    """Pick runs to compare (default: the newest runs of the newest run's experiment)."""
    by_id = {r.run_id: r for r in records}
    with_samples = [r for r in records if has_samples(r)] or records
    newest = with_samples[0].experiment
    default = [r.run_id for r in with_samples if r.experiment == newest][:DEFAULT_COMPARED]
    current = st.session_state.get("history.compare")
    if current is not None and any(run_id not in by_id for run_id in current):
        st.session_state["history.compare"] = [run_id for run_id in current if run_id in by_id]
    chosen = st.multiselect(
        "Compare runs",
        list(by_id),
        default=default if "history.compare" not in st.session_state else None,
        format_func=lambda run_id: f"{run_label(by_id[run_id])} · {by_id[run_id].created_at} · {by_id[run_id].device_name or 'unknown'}",
        key="history.compare",
        help="Runs of the same experiment compare measure by measure; any runs can be shown together.",
    )
    return [by_id[run_id] for run_id in chosen]


def show_runs_table(records: list[RunRecord]) -> pd.DataFrame:
    table = runs_frame(records)
    simulated = int(table["simulated"].sum()) if "simulated" in table else 0
    st.caption(
        f"{len(table)} run{'s' if len(table) != 1 else ''}, newest first"
        + (f"; {simulated} ran in the CUDA simulator (timings are not GPU performance)" if simulated else "")
        + (f". Only the newest {MAX_LISTED} are loaded; `python -m gpu history --json` lists all." if len(records) >= MAX_LISTED else ".")
    )
    st.dataframe(table.drop(columns=["run_id", "simulated"], errors="ignore"), hide_index=True, width="stretch", key="history.table")
    return table


def show_comparison(chosen: list[RunRecord]) -> None:
    if not chosen:
        st.info("Pick one or more runs above to compare their timings.")
        return
    samples = samples_frame(chosen)
    if samples.empty:
        st.info("The chosen runs hold no timing samples to chart.")
        return
    if len({r.experiment for r in chosen}) > 1:
        st.caption("These runs come from different experiments: only measures with the same name are comparable.")
    st.altair_chart(compare_chart(samples, compare_subtitle(samples)), width="stretch")
    summary = samples.groupby(["run", "measure"], as_index=False).agg(median_ms=("seconds", "median"), min_ms=("seconds", "min"), max_ms=("seconds", "max"), samples=("seconds", "size"))
    for col in ("median_ms", "min_ms", "max_ms"):
        summary[col] = summary[col] * 1e3
    st.dataframe(summary.rename(columns={"median_ms": "median (ms)", "min_ms": "min (ms)", "max_ms": "max (ms)"}), hide_index=True, width="stretch")


def export_ui(records: list[RunRecord], table: pd.DataFrame) -> None:
    """Downloads of the filtered runs: table (CSV), every sample (CSV), full records (JSON)."""
    left, mid, right = st.columns(3)
    left.download_button("Runs (CSV)", table.to_csv(index=False), file_name="kernel_lab_runs.csv", mime="text/csv", key="history.download_runs_csv")
    mid.download_button("Samples (CSV)", samples_frame(records).to_csv(index=False), file_name="kernel_lab_samples.csv", mime="text/csv", key="history.download_samples_csv")
    payload = json.dumps([r.to_dict() for r in records], indent=2)
    right.download_button("Runs with all samples (JSON)", payload, file_name="kernel_lab_runs.json", mime="application/json", key="history.download_json")
