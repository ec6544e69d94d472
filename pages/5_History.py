"""History: saved runs — this browser session's under "Your runs", every server's under
"Everyone's runs" — filter, compare in one chart, export; imported checks and the recorded
GPUs side by side under Compare GPUs."""

import streamlit as st

from gpu.catalog.base import PageLink
from ui.frame import frame
from ui.learner import class_mode, who
from ui.resources import current_store
from ui.run_record import browser_session_id
from ui.views.free_gpu import self_report_upload
from ui.views.history import compare_gpus_ui, load_records, runs_tab, upload_ui
from ui.views.submissions import show_submissions

PAGE = PageLink(
    "History", ":material/history:", 70, "saved runs, imported checks and recorded GPUs: filter, compare, export"
)

frame(
    PAGE.label,
    PAGE.icon,
    "Every completed run from every page is saved with its parameters, device, library "
    "versions and all samples. **Your runs** are yours: on your own machine every run the app saved, on a class's "
    "demo the runs saved under the name you picked (kept across reloads and tabs); the "
    "history database is shared by every Kernel Lab under this user account, so everyone's "
    "runs (other sessions, other servers, the command line) are one tab away. Filter, compare "
    "runs in one chart, and export. Runs cannot be deleted or changed from the app. The GPU "
    "checks committed with the lab are shown under **Compare GPUs** and are never mixed into "
    "your history.",
)

store = current_store()
upload_ui(store)
self_report_upload("history")  # a notebook's result from a free GPU, kept apart as self-reported
every = load_records(store)
mine = load_records(store, browser_session_id(), warn=False) if every is not None else None
yours, everyone, kernels, gpus = st.tabs(
    [
        ":material/person: Your runs",
        ":material/groups: Everyone's runs",
        ":material/edit_note: Kernels you wrote",
        ":material/compare: Compare GPUs",
    ]
)

with yours:
    if mine and every:
        st.caption(f"{len(mine)} of the {len(every)} saved runs listed are yours.")
    runs_tab(
        mine,
        "history",
        "No runs of yours saved yet: run an experiment (Vector add, in the sidebar) and it appears "
        "here. " + (f"{len(every)} runs from others are under **Everyone's runs**." if every else ""),
    )

with everyone:
    st.caption(
        "Every run in this history database: this session's, other browser sessions', other Kernel Lab servers' "
        "under the same user account, and the command line's. Runs saved before sessions were recorded are only here."
    )
    runs_tab(
        every, "history.all",
        "No runs saved yet: run an experiment (Vector add, in the sidebar) and it appears here.",
    )

with gpus:
    compare_gpus_ui(mine or [])

with kernels:  # on a class's demo only your own kernels (nobody sees another learner's code)
    me = who()
    if me.needs_name:
        st.info("Pick your name in the sidebar: the kernels you pass on **Write a kernel** are listed under it.")
    else:
        show_submissions(me.learner.name if class_mode() and me.learner else None)
