"""Vector add: the article's experiment at one size, with the full time breakdown."""

import streamlit as st

import gpu
from gpu.core.limits import max_cpu_vector_n
from gpu.experiments.vector_add.experiment import EXPERIMENT
from ui.forms import experiment_form
from ui.frame import frame
from ui.reference import panel_after_run, panel_before_run
from ui.runner import run_declared
from ui.views.experiments.vector_add import RESULT_KEY, limits_caption, recorded, show_partial, show_run
from ui.views.free_gpu import experiment_notebook_button

assert EXPERIMENT.page is not None  # a page's experiment declares its sidebar entry
frame(
    EXPERIMENT.page.label,
    EXPERIMENT.page.icon,
    "c = a + b for N float32 elements: the article's Python loop, NumPy and Numba on the "
    "CPU against the CUDA kernel, checked for agreement and timed phase by phase.",
    simulator_note="Here every result is checked bit for bit and your CPU is timed at your N; the kernel's time is "
    "Python running each thread, so the GPU figures beside your CPU's are the recorded ones.",
)
panel_before_run("vector-add")
default_n = min(EXPERIMENT.param("n").default_for(gpu.BACKEND.simulated), max_cpu_vector_n())  # what fits memory now
params = experiment_form(EXPERIMENT, defaults={"n": default_n}, limits_caption=limits_caption)
if params is not None and (run := run_declared(EXPERIMENT, params, show_partial=show_partial)) is not None:
    st.session_state[RESULT_KEY] = run

if RESULT_KEY in st.session_state:
    show_run(st.session_state[RESULT_KEY])
else:
    st.info("Choose N and launch settings, then press **Run**.", icon=":material/play_circle:")

panel_after_run("vector-add", recorded)
experiment_notebook_button("vector-add")  # run it on a free GPU
