"""Transfers: the copies that decide whether the GPU pays off, and the ways to pay less."""

import streamlit as st

from gpu.core.timing import RepeatPolicy
from gpu.experiments.transfers import run_bandwidth_curves, run_strategies
from ui.views import transfers as view
from ui.frame import frame
from ui.reference import panel_after_run, panel_before_run
from ui.runner import run_experiment

device = frame(
    "Transfers",
    ":material/swap_horiz:",
    "For one vector add the copies over the host link cost far more than the kernel — the "
    "lesson the article's single number hides. Measure the link itself, then do the same "
    "vector add six ways and see which copies you can avoid, hide or make cheaper.",
    simulator_note=view.SIMULATOR_WARNING,
)
panel_before_run("transfers")
view.init_state()

st.header("Host-link bandwidth")
st.markdown(
    "Host→device, device→host and device→device copies against size, with **pageable** (ordinary) and "
    "**pinned** (page-locked) host memory — the way CUDA's bandwidthTest and nvbandwidth measure it."
)
bw = view.bandwidth_form_ui()
if bw is not None:
    curves = run_experiment(
        "transfers bandwidth",
        lambda progress: run_bandwidth_curves(bw.sizes, bw.series, RepeatPolicy.count(bw.repeats), on_progress=progress),
    )
    if curves is not None:
        st.session_state[view.BANDWIDTH_KEY] = curves
if st.session_state[view.BANDWIDTH_KEY] is not None:
    view.show_bandwidth(st.session_state[view.BANDWIDTH_KEY])
else:
    st.caption("Choose sizes and press **Measure bandwidth**.")

st.header("Strategies for the same vector add")
st.markdown(
    "As in the article · careful (output on the device) · pinned host memory · data kept on the device · "
    "chunked streams (copies of one chunk overlap other chunks' kernels and copies) · mapped zero-copy host memory."
)
params = view.strategy_form_ui(device.max_threads_per_block)
if params is not None:
    comparison = run_experiment(
        "transfer strategies",
        lambda progress: run_strategies(
            params.n,
            params.threads_per_block,
            params.chunks,
            params.streams,
            params.iterations,
            RepeatPolicy.count(params.repeats),
            on_progress=progress,
        ),
    )
    if comparison is not None:
        st.session_state[view.STRATEGIES_KEY] = comparison
if st.session_state[view.STRATEGIES_KEY] is not None:
    view.show_strategies(st.session_state[view.STRATEGIES_KEY])
else:
    st.caption("Choose N, chunks and streams, then press **Compare strategies**.")

panel_after_run("transfers")
