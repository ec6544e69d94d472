"""Launch config: how blocks and threads map to data, what block size costs, and the
machine code numba-cuda built for the kernel."""

import streamlit as st

import gpu
from gpu.experiments.launch import run_indexing, run_launch_sweep
from gpu.core.timing import RepeatPolicy
from ui.frame import frame
from ui.reference import panel_after_run, panel_before_run
from ui.views.launch import INDEXING_KEY, SWEEP_KEY, indexing_form, show_indexing, show_inspector, show_sweep, sweep_form
from ui.runner import run_experiment

device = frame(
    "Launch config",
    ":material/grid_view:",
    "The article says to *experiment with different values of block and thread sizes, and print the "
    "corresponding values in the GPU kernel*. Here a probe kernel does exactly that for every thread, "
    "a sweep times the kernel for each block size, and the inspector shows the code the GPU runs.",
)
panel_before_run("launch")
explorer, sweep, inspector = st.tabs(["Thread-indexing explorer", "Block-size sweep", "Kernel inspector"])

with explorer:
    params = indexing_form(device)
    if params is not None:
        run = run_experiment(
            "indexing probe",
            lambda progress: run_indexing(params.n, params.threads_per_block, params.grid_stride_blocks, on_progress=progress),
            uses_cpu=gpu.BACKEND.simulated,  # simulated threads are CPU work
        )
        if run is not None:
            st.session_state[INDEXING_KEY] = run
    if INDEXING_KEY in st.session_state:
        show_indexing(st.session_state[INDEXING_KEY])
    else:
        st.info("Pick N and threads per block, then press **Run probe**. Try N = 1000 with 256 threads: 24 threads of the last block have nothing to do.")

with sweep:
    sweep_params = sweep_form(device)
    if sweep_params is not None:
        p = sweep_params
        result = run_experiment(
            "launch sweep",
            lambda progress: run_launch_sweep(
                p.n, p.block_sizes, extra_block_size=p.extra_block_size, grid_stride_multiples=p.grid_stride_multiples,
                policy=RepeatPolicy.count(p.repeats), on_progress=progress,
            ),
            uses_cpu=gpu.BACKEND.simulated,
        )
        if result is not None:
            st.session_state[SWEEP_KEY] = result
    if SWEEP_KEY in st.session_state:
        show_sweep(st.session_state[SWEEP_KEY])
    else:
        st.info("Choose N and the configurations, then press **Run sweep**.")

with inspector:
    show_inspector()

panel_after_run("launch")
