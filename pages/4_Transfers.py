"""Transfers: the copies that decide whether the GPU pays off, and the ways to pay less."""

import streamlit as st

from gpu.experiments.transfers.bandwidth import BANDWIDTH
from gpu.experiments.transfers.experiment import STRATEGIES_EXPERIMENT
from ui import glossary
from ui.forms import experiment_form
from ui.frame import frame
from ui.reference import panel_after_run, panel_before_run
from ui.runner import run_declared
from ui.views.experiments import transfers as view
from ui.views.free_gpu import transfers_notebook_button

assert BANDWIDTH.page is not None  # a page's experiment declares its sidebar entry
frame(
    BANDWIDTH.page.label,
    BANDWIDTH.page.icon,
    "For one vector add the copies over the host link cost far more than the kernel — the "
    "lesson the article's single number hides. Measure the link itself, then do the same "
    "vector add six ways and see which copies you can avoid, hide or make cheaper.",
    simulator_note=view.SIMULATOR_WARNING,
)
panel_before_run("transfers")  # what its simulated run cannot show is in the banner above

st.header("Host-link bandwidth")
glossary.markdown(
    "Host→device, device→host and device→device copies against size, with **pageable** (ordinary) and "
    "**pinned** (page-locked) host memory — the way CUDA's bandwidthTest and nvbandwidth measure it."
)
bw = experiment_form(BANDWIDTH, submit_label="Measure bandwidth", limits_caption=view.bandwidth_caption)
if bw is not None and (curves := run_declared(BANDWIDTH, bw)) is not None:
    st.session_state[view.BANDWIDTH_KEY] = curves
if st.session_state.get(view.BANDWIDTH_KEY) is not None:
    view.show_bandwidth(st.session_state[view.BANDWIDTH_KEY])
else:
    st.caption("Choose sizes and press **Measure bandwidth**.")

st.header("Strategies for the same vector add")
glossary.markdown(
    "As in the article · careful (output on the device) · pinned host memory · data kept on the device · "
    "chunked streams (copies of one chunk overlap other chunks' kernels and copies) · mapped zero-copy host memory."
)
params = experiment_form(STRATEGIES_EXPERIMENT, submit_label="Compare strategies", defaults={"bandwidth": False},
                         limits_caption=view.strategies_caption)
if params is not None and (run := run_declared(STRATEGIES_EXPERIMENT, params)) is not None:
    st.session_state[view.STRATEGIES_KEY] = run.strategies
if st.session_state.get(view.STRATEGIES_KEY) is not None:
    view.show_strategies(st.session_state[view.STRATEGIES_KEY])
else:
    st.caption("Choose N, chunks and streams, then press **Compare strategies**.")

panel_after_run("transfers", view.recorded)
transfers_notebook_button()  # on a free GPU: below the results, so Run stays in the first screen
