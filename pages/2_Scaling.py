"""Scaling: the vector add over a range of sizes — where the GPU starts to win, and how
close each implementation comes to what the memory system can deliver."""

import streamlit as st

from gpu.experiments.scaling.experiment import EXPERIMENT
from ui.forms import experiment_form, stale_key
from ui.frame import frame
from ui.reference import panel_after_run, panel_before_run
from ui.runner import recover_stopped, run_declared
from ui.views.experiments import scaling as scaling_view
from ui.views.free_gpu import scaling_notebook_button

RESULT = scaling_view.RESULT_KEY

assert EXPERIMENT.page is not None  # a page's experiment declares its sidebar entry
frame(
    EXPERIMENT.page.label,
    EXPERIMENT.page.icon,
    "The vector add at every size of a range: from which N the GPU wins, and how close each implementation "
    "comes to the hardware's limits.",
    simulator_note="Here your CPU is timed, the kernel only checked: the crossover is the recorded GPU's.",
)
panel_before_run("scaling")
params = experiment_form(EXPERIMENT, submit_label="Run sweep", limits_caption=scaling_view.limits_caption)
if params is not None:
    result = run_declared(EXPERIMENT, params)
else:
    result = recover_stopped(EXPERIMENT)  # a Stop press ended the last run mid-way: saved, marked stopped
if result is not None:
    st.session_state[RESULT] = result

if st.session_state.get(RESULT) is not None:
    if st.session_state.get(stale_key(EXPERIMENT)):
        st.warning("The inputs above were rejected, so nothing new ran: the sweep below is from the previous run.",
                   icon=":material/history:")
    scaling_view.show_result(st.session_state[RESULT])
else:
    st.info("Choose a size range and implementations, then press **Run sweep**.", icon=":material/play_circle:")

panel_after_run("scaling", scaling_view.recorded)
scaling_notebook_button()  # the sweep on a free GPU: below the results, so Run stays in the first screen
