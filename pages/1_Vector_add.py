"""Vector add: the article's experiment at one size, with the full time breakdown."""

import streamlit as st

import gpu
from gpu.core.limits import max_vector_n
from gpu.experiments.vector_add import EXPERIMENT
from ui.forms import experiment_form, stale_key
from ui.frame import frame
from ui.runner import run_declared
from ui.views.vector_add import limits_caption, show_run

RESULT = "vector_add.result"

frame(
    "Vector add",
    "➕",
    "c = a + b for N float32 elements: the article's Python loop, NumPy and Numba on the "
    "CPU against the CUDA kernel, checked for agreement and timed phase by phase.",
)
default_n = min(EXPERIMENT.param("n").default_for(gpu.BACKEND.simulated), max_vector_n())  # what fits memory now
params = experiment_form(EXPERIMENT, defaults={"n": default_n}, limits_caption=limits_caption)
if params is not None:
    run = run_declared(EXPERIMENT, params)
    if run is not None:
        st.session_state[RESULT] = run

if RESULT in st.session_state:
    if st.session_state.get(stale_key(EXPERIMENT)):
        st.warning("The results below belong to the previous inputs; fix the inputs above and press **Run** again.")
    show_run(st.session_state[RESULT])
else:
    st.info("Choose N and launch settings, then press **Run**.")
