"""Scaling: the vector add over a range of sizes — where the GPU starts to win, and how
close each implementation comes to what the memory system can deliver."""

import streamlit as st

from ui.views import scaling as scaling_view
from ui.frame import frame
from ui.runner import save_results
from ui.reference import panel_after_run, panel_before_run

device = frame(
    "Scaling",
    ":material/trending_up:",
    "The article measures one size. Here the vector add runs at every size of a range, on the "
    "GPU (end to end with copies, and the kernel alone), on the CPU and, where installed, through "
    "CuPy and PyTorch: where does the GPU start to win, and how close does each come to the "
    "hardware's limits? Beside the article's kernel runs one that adds 4 elements per thread: "
    "not the article's, but it shows what the last part of the bandwidth takes — more loads in "
    "flight per thread than one element each provides.",
)
panel_before_run("scaling")
scaling_view.init_state()
params = scaling_view.form_ui(device.max_threads_per_block)

if params is not None:
    result = scaling_view.run(params)
    if result is not None:
        st.session_state[scaling_view.RESULT_KEY] = result
else:
    interrupted = scaling_view.recover_interrupted()  # a Stop press ended the last run mid-way
    if interrupted is not None:
        st.session_state[scaling_view.RESULT_KEY] = interrupted
        # what it measured is saved too, marked stopped ("stopped": "cancelled", "complete": false)
        run_ids, problem = save_results("scaling sweep", interrupted, interrupted.device.index or 0)
        if problem:
            st.warning(problem, icon=":material/warning:")
        elif run_ids:
            st.caption(f"The stopped sweep was saved to History as run {run_ids[0][:8]}, marked stopped.")

if st.session_state[scaling_view.RESULT_KEY] is not None:
    scaling_view.show_result(st.session_state[scaling_view.RESULT_KEY])
else:
    st.info("Choose a size range and implementations, then press **Run sweep**.")

panel_after_run("scaling")
