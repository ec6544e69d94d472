"""History's Compare GPUs: the article's experiment on every device the lab knows of, one row per device and method.

Peers are chosen by ``gpu.report.compare_gpus``: the newest recorded run of each (device, method), the
article's published T4, runs imported from a notebook (self-reported, one per device, the newest) and your
own newest GPU runs. Superseded recorded runs are folded below the charts, and a run that is not a peer says
why. Each source keeps one colour in both charts.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gpu.report.compare_gpus import recorded_peers
from gpu.service.store import RunRecord
from ui.charts.history import article_entry, gpus_bandwidth_chart, gpus_time_chart, vector_add_entry

MAX_COMPARED_OWN = 6  # your newest vector-add runs
MAX_SELF_REPORTED = 6  # devices with a self-reported run


def _imported(r: RunRecord) -> dict:
    """A run's ``imported`` mapping ({} for a run measured here; older rows may hold a bare flag)."""
    imported = r.result.get("imported")
    return imported if isinstance(imported, dict) else {}


def _self_reported(records: list[RunRecord]) -> list[RunRecord]:
    """The newest self-reported vector-add run per device, from every saved run (not only this session's)."""
    newest: dict[str, RunRecord] = {}
    for r in records:
        imported = _imported(r)
        if r.experiment == "vector-add" and imported.get("self_reported") and not r.simulated:
            newest.setdefault(str(imported.get("device") or r.device_name), r)
    return list(newest.values())[:MAX_SELF_REPORTED]


def show(mine: list[RunRecord], every: list[RunRecord]) -> None:
    from ui.resources import references

    refs = references()
    split = recorded_peers(refs.runs)
    rows = article_entry(f"NVIDIA T4 — article ({refs.article.provenance.label})", refs.article.n,
                         refs.article.cpu_time_s, refs.article.gpu_time_s)
    for ref in split.peers:
        before = " †" if ref.caveat else ""  # † explained below: recorded before the rules
        rules = "older method" if ref.caveat else "today's rules"
        cut = ", check cut short" if not ref.finished else ""
        rows += vector_add_entry(f"{ref.provenance.device} — recorded {ref.provenance.when}, {rules} "
                                 f"({ref.key}{cut}){before}", "recorded reference", ref.sections["breakdown"]["run"])
    for r in _self_reported(every):
        label = _imported(r).get("label") or f"self-reported on {r.device_name}"
        rows += vector_add_entry(f"{label} — {r.created_at[:10]}, N = {r.result.get('n'):,}", "self-reported",
                                 r.result)
    vector_adds = [r for r in mine if r.experiment == "vector-add" and isinstance(r.result.get("gpu"), dict)
                   and not _imported(r).get("self_reported")]
    own = [r for r in vector_adds if not r.simulated]  # a simulated figure is never set beside a GPU's
    for r in own[:MAX_COMPARED_OWN]:
        kind = "imported" if r.result.get("imported") else "your run"
        kernel_n = r.result.get("gpu_n") or r.result.get("n") or r.params.get("n")
        at = f"N = {kernel_n:,}" if isinstance(kernel_n, int) else "N unknown"
        rows += vector_add_entry(f"{r.device_name or 'unknown'} — {kind} {r.short_id}, {at}", kind, r.result)
    left_out = len(vector_adds) - len(own)
    frame = pd.DataFrame(rows)
    st.markdown(
        "The article's experiment on every device this lab knows of, **one row per device and method**: the "
        "article's own T4 figures (published, not measured here), the newest GPU check committed with the lab for "
        "each device and measurement method (read-only), results **self-reported** from a notebook on a learner's "
        "own GPU (timed there, not by the lab), imported checks and your newest runs. Sizes differ between sources "
        "(each row says its N); runs in the CUDA simulator are left out, since they time the simulator, not a GPU; "
        "\\* = fewer than 3 samples. † = recorded before L2 flushing and verified holds; single-sample points marked "
        "(their small sizes may have been served from the L2)."
    )
    if left_out:
        st.caption(f":material/info: {left_out} saved vector-add run{'s' if left_out != 1 else ''} from the CUDA "
                   f"simulator {'are' if left_out != 1 else 'is'} not shown here: simulator timings are not GPU "
                   "performance and are never set beside a GPU's.")
    st.altair_chart(gpus_time_chart(frame), width="stretch", key="history.gpus_time")
    if frame["bandwidth_gbps"].notna().any():
        st.altair_chart(gpus_bandwidth_chart(frame), width="stretch", key="history.gpus_bandwidth")
    if split.folded or split.excluded:
        with st.expander(f"Recorded runs not compared ({len(split.folded) + len(split.excluded)})",
                         icon=":material/unfold_more:"):
            for ref, newer in split.folded:
                st.markdown(f"**{ref.title}** — superseded by {newer.key} (same device and method, recorded later).")
            for ref, why in split.excluded:
                st.markdown(f"**{ref.title}** — {why}.")
    with st.expander("Where the recorded figures come from"):
        for ref in refs.runs:
            st.markdown(f"**{ref.title}**")
            st.caption("  \n".join(ref.provenance.lines()))
        st.markdown(f"**{refs.article.provenance.device}** — {refs.article.provenance.label}")
        st.caption(refs.article.provenance.note)


__all__ = ["show"]
