"""History: every saved run — filter, compare in one chart, export."""

import streamlit as st

from ui.frame import frame
from ui.views.history import compare_ui, export_ui, filters_ui, load_records, show_comparison, show_runs_table
from ui.resources import current_store

frame(
    "History",
    ":material/history:",
    "Every completed run from every page is saved with its parameters, device, library "
    "versions and all samples. Filter, compare runs in one chart, and export. Runs cannot "
    "be deleted or changed from the app.",
)

records = load_records(current_store())
if records is None:
    st.stop()
if not records:
    st.info("No runs saved yet: run an experiment (Vector add, in the sidebar) and it appears here.")
    st.stop()

filters = filters_ui(records)
shown = [r for r in records if filters.keep(r)]
if not shown:
    st.info("No saved run matches these filters.")
    st.stop()

table = show_runs_table(shown)
st.subheader("Compare")
show_comparison(compare_ui(shown))
st.subheader("Export")
export_ui(shown, table)
