"""Widgets and display for the History page: filters, the runs table, comparison, export.

Read-only by design: the app offers no way to delete or edit a saved run (one user must
not remove another's history); deleting is ``python -m gpu history-delete`` on the server.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from gpu.core import settings as _settings
from gpu.core.timing import format_seconds
from gpu.service.store import HistoryStore, RunRecord, StoreError
from ui.charts.history import (
    at_n_text,
    compare_chart,
    compare_subtitle,
    declared_by_name,
    has_samples,
    param_labels,
    readable_cell,
    run_label,
    runs_frame,
    samples_frame,
)
from ui.downloads import download
from ui.format import readable_time

MAX_LISTED = 500  # newest runs loaded per page view: bounded work per rerun
DEFAULT_COMPARED = 2
UPLOADS_ENV = _settings.UPLOADS.name  # "1" allows importing check files from the browser, "0" forbids it
LOCAL_ADDRESSES = ("localhost", "127.0.0.1", "::1")


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


def load_records(store: HistoryStore, session_id: str | None = None, *, warn: bool = True) -> list[RunRecord] | None:
    """The newest runs (only those ``session_id`` saved, when given), or None after showing why
    history cannot be read. ``warn`` shows the store's problem (once per page, not per tab)."""
    if store.problem and warn:
        st.warning(store.problem, icon=":material/warning:")
    if not store.available:
        return None
    try:
        return store.runs(limit=MAX_LISTED, session_id=session_id)
    except StoreError as exc:
        st.error(f"{exc}. Experiments still run; try again later.")
        return None


def filters_ui(records: list[RunRecord], key: str = "history") -> HistoryFilters:
    """Three multiselects (empty means all); returns the chosen filters. ``key`` prefixes the widgets' keys."""
    left, mid, right = st.columns(3)
    experiments = sorted({r.experiment for r in records})
    devices = sorted({r.device_name or "unknown" for r in records})
    backends = sorted({r.backend for r in records})
    backend_names = {"simulator": "CUDA simulator (simulated timings)", "cuda": "CUDA"}
    return HistoryFilters(
        tuple(left.multiselect("Experiment", experiments, key=f"{key}.experiment", placeholder="All experiments")),
        tuple(mid.multiselect("Device", devices, key=f"{key}.device", placeholder="All devices")),
        tuple(
            right.multiselect(
                "Backend",
                backends,
                key=f"{key}.backend",
                format_func=lambda b: backend_names.get(b, b),
                placeholder="All backends",
            )
        ),
    )


def compare_ui(shown: list[RunRecord], every: list[RunRecord] | None = None, key: str = "history") -> list[RunRecord]:
    """Pick runs to compare (default: the newest runs of the newest run's experiment).

    The choice survives the filters: runs chosen earlier and now hidden by a filter stay
    chosen (marked "hidden by the filters") until removed here.
    """
    every = every if every is not None else shown
    by_id = {r.run_id: r for r in every}
    shown_ids = [r.run_id for r in shown]
    declared = declared_by_name()  # once, not per run
    with_samples = [r for r in shown if has_samples(r, declared)] or shown
    newest = with_samples[0].experiment
    default = [r.run_id for r in with_samples if r.experiment == newest][:DEFAULT_COMPARED]
    state = f"{key}.compare"
    current = st.session_state.get(state)
    if current is not None and any(run_id not in by_id for run_id in current):  # gone from the database
        st.session_state[state] = [run_id for run_id in current if run_id in by_id]
    kept = [run_id for run_id in (st.session_state.get(state) or []) if run_id not in shown_ids]
    hidden = set(kept)
    chosen = st.multiselect(
        "Compare runs",
        shown_ids + kept,
        default=default if state not in st.session_state else None,
        format_func=lambda run_id: (
            f"{run_label(by_id[run_id])} · {readable_time(by_id[run_id].created_at)} · "
            f"{by_id[run_id].device_name or 'unknown'}"
            + (" · hidden by the filters" if run_id in hidden else "")
        ),
        key=state,
        help="Runs of the same experiment compare measure by measure; any runs can be shown together. Changing the "
             "filters keeps your choice.",
    )
    return [by_id[run_id] for run_id in chosen]


def show_runs_table(records: list[RunRecord], key: str = "history") -> pd.DataFrame:
    table = runs_frame(records)
    simulated = int(table["simulated"].sum()) if "simulated" in table else 0
    st.caption(
        f"{len(table)} run{'s' if len(table) != 1 else ''}, newest first"
        + (f"; {simulated} ran in the CUDA simulator (timings are not GPU performance)" if simulated else "")
        + (
            f". Only the newest {MAX_LISTED} are loaded; `python -m gpu history --json` lists all."
            if len(records) >= MAX_LISTED
            else "."
        )
    )
    shown = table.drop(columns=["run_id", "simulated"], errors="ignore")
    if "created_at" in shown:
        shown = shown.assign(created_at=shown["created_at"].map(readable_time)).rename(
            columns={"created_at": "measured"}
        )
    shown = shown.astype(object).where(shown.notna(), "—")  # a parameter a run does not have (a sweep's single N)
    shown = shown.map(readable_cell).rename(columns={**param_labels(), "kernel_n": "kernel's N (simulator's cap)"})
    st.dataframe(shown, hide_index=True, width="stretch", key=f"{key}.table")
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
    summary = comparison_summary(samples)
    st.caption("Each figure with the N it was measured at: in the simulator a vector add's kernel runs at the "
               "simulator's cap while its CPU implementations run at the run's N.")
    st.dataframe(summary, hide_index=True, width="stretch")


def comparison_summary(samples: pd.DataFrame) -> pd.DataFrame:
    """Per run and measure: median, min, max in their units, each saying its N (and "simulated")."""
    summary = samples.groupby(["run", "measure"], as_index=False, sort=False, dropna=False).agg(
        median=("seconds", "median"),
        min=("seconds", "min"),
        max=("seconds", "max"),
        samples=("seconds", "size"),
        n=("n", "first"),
        simulated=("simulated", "first"),
    )
    for col in ("median", "min", "max"):  # each in its own unit (µs to s), not a bare 135.2716
        summary[col] = summary[col].map(format_seconds)
    summary["median"] = [  # "3.67 s (simulated, at N = 16,384)": never a figure without its N
        f"{m} {at_n_text(n, bool(sim))}".strip()
        for m, n, sim in zip(summary["median"], summary["n"], summary["simulated"])
    ]
    summary["measured at N"] = [f"{int(n):,}" if n == n and n is not None else "—" for n in summary["n"]]
    return summary[["run", "measure", "measured at N", "median", "min", "max", "samples"]]


def export_ui(records: list[RunRecord], table: pd.DataFrame, key: str = "history") -> None:
    """Downloads of the filtered runs: table (CSV), every sample (CSV), full records (JSON)."""
    left, mid, right = st.columns(3)
    # Not stamped anew: each saved run keeps the methodology version it was measured under (its JSON, and a column
    # of the samples CSV).
    download("Runs (CSV)", table, "kernel_lab_runs.csv", "text/csv", key=f"{key}.download_runs_csv",
             where=left)
    download("Samples (CSV)", samples_frame(records), "kernel_lab_samples.csv", "text/csv",
             key=f"{key}.download_samples_csv", where=mid)
    download("Runs with all samples (JSON)", [r.to_dict() for r in records], "kernel_lab_runs.json",
             "application/json", key=f"{key}.download_json", where=right)


def runs_tab(records: list[RunRecord] | None, key: str, empty: str) -> None:
    """One tab of runs: filters, the table, the comparison and the exports (``key`` keeps each tab's widgets apart)."""
    if records is None:
        return  # load_records said why
    if not records:
        st.info(empty)
        return
    filters = filters_ui(records, key)
    shown = [r for r in records if filters.keep(r)]
    if not shown:
        st.info("No saved run matches these filters.")
        return
    table = show_runs_table(shown, key)
    st.subheader("Compare")
    show_comparison(compare_ui(shown, records, key))
    st.subheader("Export")
    export_ui(shown, table, key)


# --- importing a check file -------------------------------------------------------------------


def uploads_enabled() -> bool:
    """Uploads are on when the app serves only this machine (localhost), off on a shared demo.

    ``KERNEL_LAB_UPLOADS=1`` turns them on anywhere (``make demo DEMO_UPLOADS=1``), ``=0`` off.
    """
    configured = _settings.settings().uploads
    if configured is not None:
        return configured
    try:
        address = str(st.get_option("server.address") or "")
    except Exception:
        address = ""
    return address in LOCAL_ADDRESSES


def upload_ui(store: HistoryStore) -> None:
    """Import a check.json (from ``python -m gpu check --out DIR`` on any GPU) into History."""
    from gpu.core.safe_text import shown
    from gpu.service.importer import MAX_IMPORT_BYTES, ImportProblem, import_check

    with st.expander("Import a GPU check from another machine", icon=":material/upload_file:"):
        st.markdown(
            "Run `python -m gpu check --out DIR` where there is a GPU (a cloud notebook with a T4, a laptop), then add "
            "`DIR/check.json` here or with `python -m gpu history import DIR/check.json`. The file is checked field by "
            "field "
            f"(at most {MAX_IMPORT_BYTES // 2**20} MiB); a rejected file changes nothing."
        )
        if not uploads_enabled():
            st.caption(
                f":material/lock: Uploads are off on this shared server. The operator can allow them ({UPLOADS_ENV}=1, "
                "`make demo DEMO_UPLOADS=1`); the command line import always works."
            )
            return
        if not store.writable:
            st.caption(f":material/lock: History is not writable here: {store.problem}")
            return
        upload = st.file_uploader(
            "check.json",
            type=["json"],
            max_upload_size=MAX_IMPORT_BYTES // 2**20,  # MB: the box says the importer's own limit, not "200MB"
            key="history.upload",
            help="The check.json that `python -m gpu check --out DIR` wrote.",
        )
        if upload is None:
            return
        raw = upload.getvalue()
        done = st.session_state.get("history.imported")
        if done and done[0] == upload.file_id:  # the same upload on a rerun: say it once, import once
            st.success(done[1], icon=":material/check_circle:")
            return
        try:
            from ui.run_record import browser_session_id

            result = import_check(store, raw, source=upload.name, session_id=browser_session_id())
        except ImportProblem as exc:
            st.error(f"{shown(upload.name)} was not imported: {exc}", icon=":material/error:")
            return
        except StoreError as exc:
            st.error(f"{shown(upload.name)} was not imported: {exc}", icon=":material/error:")
            return
        message = f"{result.summary()} They are listed below, marked “imported”."
        st.session_state["history.imported"] = (upload.file_id, message)
        st.success(message, icon=":material/check_circle:")


# --- Compare GPUs -------------------------------------------------------------------------------


def compare_gpus_ui(records: list[RunRecord]) -> None:
    """Vector add across devices: the article's T4, the recorded GPUs (one per device and method), runs
    self-reported from notebooks (from every saved run) and your own (``records``)."""
    from ui.resources import current_store
    from ui.views import compare_gpus

    every = load_records(current_store(), warn=False) or []
    compare_gpus.show(records, every)
