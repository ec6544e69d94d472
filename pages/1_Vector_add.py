"""Vector add: the article's experiment at one size, with the full time breakdown."""

import streamlit as st

from gpu.core.limits import SIMULATOR_MAX_N
from gpu.experiments.vector_add import run_article_method, run_vector_add
from gpu.core.timing import RepeatPolicy
from ui.frame import frame
from ui.reference import panel_after_run, panel_before_run
from ui.runner import run_experiment
from ui.views.vector_add import RESULT_KEY, PhaseProgress, VectorAddOutcome, estimate_text, form_ui, plan_steps, show_run

device = frame(
    "Vector add",
    ":material/add_circle:",
    "c = a + b for N float32 elements: the article's Python loop, NumPy and Numba on the "
    "CPU against the CUDA kernel, checked for agreement and timed phase by phase.",
)
panel_before_run("vector-add")
default_n = 10_000_000 if device.backend == "cuda" else 4096
params = form_ui(min(default_n, SIMULATOR_MAX_N) if device.backend != "cuda" else default_n, device.max_threads_per_block)

if params is not None:
    simulated = device.backend != "cuda"
    steps = plan_steps(params, simulated)
    bar = st.progress(0.0, text=f"Waiting for the device… {estimate_text(params, simulated)}")
    tracker = PhaseProgress(bar, steps, simulated)

    def work(progress):
        def say(message: str) -> None:
            tracker(message)
            progress(message)

        run = run_vector_add(params.n, params.threads_per_block, RepeatPolicy.count(params.repeats), params.cpu_impls, on_progress=say)
        article = None
        if params.article:
            say("the article's method")
            article = run_article_method(params.n, params.threads_per_block)
        return VectorAddOutcome(run, article)

    outcome = run_experiment("vector add", work)
    tracker.finish()
    if outcome is not None:
        st.session_state[RESULT_KEY] = outcome

if RESULT_KEY in st.session_state:
    show_run(st.session_state[RESULT_KEY].run, st.session_state[RESULT_KEY].article)
else:
    st.info("Choose N and launch settings, then press **Run**.", icon=":material/play_circle:")

panel_after_run("vector-add")
