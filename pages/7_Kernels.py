"""Kernels: the catalog. Pick a kernel, run every step from naive to near the hardware, side by side."""


import streamlit as st

from gpu.catalog.declare import KERNELS, PAGE, kernel_module
from gpu.catalog.registry import get
from ui import glossary
from ui.forms import experiment_form, stale_key
from ui.frame import frame
from ui.runner import run_declared
from ui.views.free_gpu import kernels_notebook_button, kernels_self_reported
from ui.views.kernels import latest, remember, show_run, show_sources
from ui.views.recorded_kernel import show_recorded_steps

frame(
    PAGE.label,
    PAGE.icon,
    "The kernels that GPU courses teach after vector add, each as a sequence of Numba "
    "kernels from the obvious version to one near the hardware's limit: measured and "
    "checked like vector add, side by side with NumPy, Numba on the CPU and the GPU "
    "libraries. Every step's source is below, with what changed highlighted.",
)
key = st.selectbox("Kernel", KERNELS, format_func=lambda k: get(k).title, key="kernels.kernel")
experiment = get(key)
spec = kernel_module(key).SPEC
glossary.caption(f"{experiment.title}: {experiment.summary}.")
form_side, recorded_side = st.columns([2, 3], gap="medium")
with recorded_side:  # the real GPU's ladder first, beside the form of the simulated run
    show_recorded_steps(key, experiment.title)
    kernels_self_reported(key)  # the ladder as learners' notebooks timed it, when imported
    kernels_notebook_button(key)  # run every step on a free GPU
with form_side:
    params = experiment_form(experiment)
if params is not None:
    run = run_declared(experiment, params)
    if run is not None:
        remember(run)

shown = latest(key)
if shown is not None:
    if st.session_state.get(stale_key(experiment)):
        st.warning("The results below belong to the previous inputs; fix the inputs above and press **Run** again.")
    show_run(shown)
else:
    st.info("Choose a size and press **Run**: every step, library and CPU implementation runs on the same inputs.")
show_sources(spec)
glossary.caption("Every step you run here also appears on the **Roofline** page (sidebar).")
