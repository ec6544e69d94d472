"""Launch config: how blocks and threads map to data, what block size costs, what a launch
from Python costs, and the machine code numba-cuda built for the kernel."""

import streamlit as st

import gpu
from gpu.experiments.launch.experiment import LAUNCH_SWEEP
from gpu.experiments.launch.indexing import DRAW_LIMIT_THREADS, INDEXING
from gpu.experiments.launch.overhead import EXPERIMENT as OVERHEAD
from ui.forms import experiment_form
from ui.frame import frame
from ui.reference import panel_after_run, panel_before_run
from ui.runner import run_declared
from ui.views.experiments.launch import (
    INDEXING_KEY,
    OVERHEAD_KEY,
    SWEEP_KEY,
    recorded,
    show_indexing,
    show_inspector,
    show_launch_overhead,
    show_sweep,
)
from ui.views.free_gpu import launch_notebook_button
from ui.views.trace import show_coalescing_demo

assert LAUNCH_SWEEP.page is not None  # a page's experiment declares its sidebar entry
frame(
    LAUNCH_SWEEP.page.label,
    LAUNCH_SWEEP.page.icon,
    "The article says to *experiment with different values of block and thread sizes, and print the "
    "corresponding values in the GPU kernel*. Here a probe kernel does exactly that for every thread, "
    "a sweep times the kernel for each block size, and the inspector shows the code the GPU runs.",
    simulator_note="Here you see which thread handles which element for any launch, every result checked; block-size "
    "timings are the simulator's, so only the recorded sweep shows what a block size costs on a GPU.",
)
panel_before_run("launch")
explorer, sweep, overhead, inspector = st.tabs(
    ["Thread-indexing explorer", "Block-size sweep", "Launch overhead", "Kernel inspector"]
)

with explorer:
    params = experiment_form(
        INDEXING,
        submit_label="Run probe",
        limits_caption=lambda: (
            f"The chart draws up to {DRAW_LIMIT_THREADS:,} threads; larger launches get the summary only."
        ),
    )
    if params is not None and (run := run_declared(INDEXING, params)) is not None:
        st.session_state[INDEXING_KEY] = run
    if INDEXING_KEY in st.session_state:
        show_indexing(st.session_state[INDEXING_KEY])
    else:
        st.info(
            "Pick N and threads per block, then press **Run probe**. Try N = 1000 with 256 threads: 24 threads of the "
            "last block have nothing to do."
        )
    show_coalescing_demo()  # the memory trace: coalesced vs strided reads of the same data

with sweep:
    simulated_note = (
        "In the simulator every thread costs about 0.1 ms: keep N to a few thousand." if gpu.BACKEND.simulated else ""
    )
    sweep_params = experiment_form(LAUNCH_SWEEP, submit_label="Run sweep", limits_caption=lambda: simulated_note)
    if sweep_params is not None and (result := run_declared(LAUNCH_SWEEP, sweep_params)) is not None:
        st.session_state[SWEEP_KEY] = result
    if SWEEP_KEY in st.session_state:
        show_sweep(st.session_state[SWEEP_KEY])
    else:
        st.info("Choose N and the configurations, then press **Run sweep**.")
    launch_notebook_button()  # run the sweep on a free GPU

with overhead:
    st.markdown(
        "What does launching a kernel from Python cost? An empty kernel is launched many times back to back "
        "along every path below; each sample is the host's time per launch. The engine prepares each launch once "
        "(numba-cuda's own argument packing, done once for its device arrays) and then calls only the driver's "
        "cuLaunchKernel; the ladder shows each step from the article's launch down to it, beside CuPy's."
    )
    overhead_params = experiment_form(OVERHEAD, submit_label="Measure launch overhead")
    if overhead_params is not None and (measured := run_declared(OVERHEAD, overhead_params)) is not None:
        st.session_state[OVERHEAD_KEY] = measured
    if OVERHEAD_KEY in st.session_state:
        show_launch_overhead(st.session_state[OVERHEAD_KEY])

with inspector:
    show_inspector()

panel_after_run("launch", recorded)
