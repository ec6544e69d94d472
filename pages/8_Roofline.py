"""Roofline: every kernel step measured in this session (and in recorded GPU runs) under the device's roofs."""

from pathlib import Path

import pandas as pd
import streamlit as st

import gpu
from gpu.catalog.base import PageLink
from gpu.core.copies import bandwidth_gbps, time_copy
from gpu.core.roofline import device_roofs
from gpu.core.timing import RepeatPolicy
from gpu.report.roofline_points import add_vector_add, ranked_recorded, recorded_runs, session_points
from ui import glossary
from ui.charts.roofline import roofline_chart
from ui.frame import frame
from ui.resources import references
from ui.runner import run_experiment
from ui.views.kernels import RUNS_KEY

ROOT = Path(__file__).resolve().parent.parent
COPY_KEY = "roofline.copy_gbps"
COPY_BYTES = 256 * 2**20  # well beyond any L2 cache, and a fraction of a second to copy

PAGE = PageLink(
    "Roofline", ":material/show_chart:", 60, "every measured kernel step against the device's memory and FP32 roofs"
)

device = frame(
    PAGE.label,
    PAGE.icon,
    "Each point is a measured kernel: its arithmetic intensity (FLOPs per byte) against "
    "the GFLOP/s it achieved, under the device's two roofs. **Intensity is computed from "
    "the bytes the algorithm must move at least** (each input read once, each output "
    "written once), **not from hardware counters**: a kernel that re-reads memory does "
    "more traffic than its point assumes.",
)

roofs = device_roofs(device, copy_gbps=st.session_state.get(COPY_KEY))
session = session_points(
    [run.to_dict() for run in st.session_state.get(RUNS_KEY, [])], roofs, device.name, gpu.BACKEND.kind
)
vector_add = st.session_state.get("vector_add.result")
if vector_add is not None:
    add_vector_add(session, vector_add.n, vector_add.gpu["kernel"].median_s)
refs = references()
# this session's runs first; then the recorded runs, today's rules and the widest spread of intensities first
sets = [s for s in [session] if s.points or s.off_roofline] + ranked_recorded(recorded_runs(ROOT / "benchmarks"), refs)

if not sets:
    st.info("Nothing measured yet: run a kernel on the **Kernels** page (or **Vector add**), then come back.")
    st.stop()

def _label(points) -> str:
    ref = refs.get(points.source.removeprefix("recorded: ")) if points.source.startswith("recorded: ") else None
    rules = "" if ref is None else (", recorded before today's rules" if ref.caveat else ", today's rules")
    return f"{points.source} — {points.device}{rules}"


labels = [_label(s) for s in sets]
choice = st.selectbox("Measurements", range(len(sets)), format_func=lambda i: labels[i], key="roofline.set",
                      help="This session's runs, or a recorded `python -m gpu check` run on a real GPU (read-only).")
chosen = sets[choice]
chosen_ref = refs.get(chosen.source.removeprefix("recorded: ")) if chosen.source.startswith("recorded: ") else None
if chosen_ref is not None and chosen_ref.caveat:  # measured under older rules: said before its points
    st.warning(f"This run was {chosen_ref.caveat}.", icon=":material/history:")
if chosen.backend == "simulator":
    st.warning(
        "These points come from the CUDA simulator: they show where each kernel's intensity puts it, not GPU "
        "performance. "
        "The simulator has no memory clock or FP32 units, so it has no roofs.",
        icon=":material/warning:",
    )
points = pd.DataFrame(chosen.points)
if not points.empty:
    simulated_tag = (
        "SIMULATED rates, not GPU performance · " if chosen.backend == "simulator" else ""
    )  # first: long subtitles are cut at the end
    subtitle = f"{simulated_tag}{chosen.device} · {chosen.source} · roofs: {chosen.roofs.how or 'unknown'}"
    st.altair_chart(roofline_chart(points, chosen.roofs, subtitle), width="stretch")
facts = []
if chosen.roofs.memory_gbps:
    facts.append(f"memory roof {chosen.roofs.memory_gbps:,.0f} GB/s (2 × memory clock × bus width)")
if chosen.roofs.copy_gbps:
    facts.append(f"{chosen.roofs.copy_label} {chosen.roofs.copy_gbps:,.0f} GB/s")
if chosen.roofs.fp32_gflops:
    facts.append(
        f"FP32 roof {chosen.roofs.fp32_gflops:,.0f} GFLOP/s (SMs × FP32 lanes per SM × 2 × clock; lanes from the CUDA "
        "C++ Programming Guide's arithmetic-instruction throughput table)"
    )
if chosen.roofs.ridge:
    facts.append(f"ridge at {chosen.roofs.ridge:.3g} FLOP/byte")
glossary.caption("; ".join(facts) + "." if facts else "No roofs are known for these measurements.")
for note in chosen.notes:
    st.caption(f"Note: {note}.")
glossary.caption("Vector add sits at 1/12 FLOP/byte (one add per 12 bytes); reduction near 1/4, the stencil near 5/8; "
           "matrix multiply at N/6, climbing toward the ridge as N grows.")

sim = (
    " (simulated)" if chosen.backend == "simulator" else ""
)  # the intensity is the algorithm's; the rates are the simulator's
if not points.empty:
    shown = [
        c
        for c in ("kernel", "step", "size", "intensity", "gflops", "gbps", "fraction", "bound")
        if points[c].notna().any()
    ]  # no column of blanks
    st.dataframe(points[shown], hide_index=True, width="stretch",
                 column_config={"intensity": st.column_config.NumberColumn("FLOP/byte", format="%.3g"),
                                "gflops": st.column_config.NumberColumn(f"GFLOP/s{sim}", format="%.4g"),
                                "gbps": st.column_config.NumberColumn(f"GB/s{sim}", format="%.4g"),
                                "fraction": st.column_config.NumberColumn("share of roof", format="percent")})
if chosen.off_roofline:
    glossary.markdown("**Not on a FLOP/s roofline**: transpose and histogram do no floating-point arithmetic "
                      "(0 FLOPs), so only their bandwidth against the memory roof says how close they are.")
    off = pd.DataFrame(chosen.off_roofline)
    st.dataframe(
        off[[c for c in ("kernel", "step", "size", "gbps", "fraction") if off[c].notna().any()]],
        hide_index=True,
        width="stretch",
        column_config={
            "gbps": st.column_config.NumberColumn(f"GB/s{sim}", format="%.4g"),
            "fraction": st.column_config.NumberColumn("share of memory roof", format="percent"),
        },
    )

if (
    chosen is session
    and not gpu.BACKEND.simulated
    and st.button(
        "Measure the device-to-device copy",
        icon=":material/speed:",
        key="roofline.measure_copy",
        help="Adds the measured copy as a dashed memory roof: what the memory really delivers.",
    )
):
    nbytes = COPY_BYTES
    result = run_experiment(
        "Device copy", lambda _progress: time_copy("d2d", nbytes, RepeatPolicy.count(5))[0].median_s, uses_cpu=False
    )
    if result is not None:  # seconds (a plain number: nothing is saved to History)
        st.session_state[COPY_KEY] = bandwidth_gbps("d2d", nbytes, result)
        st.rerun()
