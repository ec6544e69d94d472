"""History: every saved run — filter, compare in one chart, export; imported checks and
the recorded GPUs side by side under Compare GPUs."""

import streamlit as st

from gpu.experiments.base import PageLink
from ui.frame import frame
from ui.resources import current_store
from ui.views.history import (
    compare_gpus_ui,
    compare_ui,
    export_ui,
    filters_ui,
    load_records,
    show_comparison,
    show_runs_table,
    upload_ui,
)
from ui.views.submissions import show_submissions

PAGE = PageLink(
    "History", ":material/history:", 70, "saved runs, imported checks and recorded GPUs: filter, compare, export"
)

frame(
    PAGE.label,
    PAGE.icon,
    "Every completed run from every page is saved with its parameters, device, library "
    "versions and all samples. Filter, compare runs in one chart, and export. Runs cannot "
    "be deleted or changed from the app. The GPU checks committed with the lab are shown "
    "under **Compare GPUs** and are never mixed into your history.",
)

store = current_store()
upload_ui(store)
records = load_records(store)
yours, kernels, gpus = st.tabs(
    [":material/list: Your runs", ":material/edit_note: Kernels you wrote", ":material/compare: Compare GPUs"]
)

with gpus:
    compare_gpus_ui(records or [])

with kernels:
    show_submissions()

with yours:
    if records is None:
        pass  # load_records said why
    elif not records:
        st.info("No runs saved yet: run an experiment (Vector add, in the sidebar) and it appears here.")
    else:
        filters = filters_ui(records)
        shown = [r for r in records if filters.keep(r)]
        if not shown:
            st.info("No saved run matches these filters.")
        else:
            table = show_runs_table(shown)
            st.subheader("Compare")
            show_comparison(compare_ui(shown, records))
            st.subheader("Export")
            export_ui(shown, table)
