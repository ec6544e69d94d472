"""History's "Kernels you wrote" tab: every passing Write-a-kernel submission saved, with its source.

The submissions live in their own table of the History database (gpu/sandbox/submissions.py);
this view lists them newest first, filters by problem, and shows a chosen one's code. Like
runs, they cannot be deleted from the app (`python -m gpu submissions delete ID` is the admin's).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gpu.core.timing import format_seconds
from gpu.problems import problems

MAX_SHOWN = 500  # newest first; a class of 30 writing every problem fits


TIMING_COLUMNS = ("Kernel time", "GB/s", "Share of peak", "vs the lab's kernel", "Ranked")


def submissions_frame(entries) -> pd.DataFrame:
    """One row per saved submission, in words (no raw identifiers, no None).

    When every entry comes from the simulator (which checks kernels but does not time
    them) the timing columns would be all blanks, so they are left out.
    """
    entries = list(entries)
    titles = {p.key: p.title for p in problems()}
    frame = pd.DataFrame([{
        "Passed at (UTC)": e.created_at.replace("T", " ")[:16],
        "Problem": titles.get(e.problem, e.problem),
        "Name": e.name,
        "Device": e.device,
        "Kernel time": format_seconds(e.median_s) if e.median_s else "not timed (simulator)",
        "GB/s": f"{e.gbps:,.1f}" if e.gbps else "—",
        "Share of peak": f"{e.percent_of_peak:.0f} %" if e.percent_of_peak else "—",
        "vs the lab's kernel": f"{e.ratio_to_reference:.2f}×" if e.ratio_to_reference else "—",
        "Ranked": "yes" if e.ranked else "no (faster than the memory roof allows)",
        "Id": e.id[:8],
    } for e in entries])
    if entries and all(e.backend == "simulator" for e in entries):
        frame = frame.drop(columns=list(TIMING_COLUMNS))
    return frame


def show_submissions(own: str | None = None) -> None:
    """The tab: a table of saved submissions, a problem filter and the chosen one's source. ``own``: only the
    submissions saved under that learner's name (a class's demo: a learner never sees another learner's code)."""
    from gpu.sandbox.submissions import SubmissionStore
    from gpu.service.store import StoreError

    try:
        entries = SubmissionStore().all(limit=MAX_SHOWN, name=own)
    except StoreError as exc:
        st.warning(f"Saved kernels cannot be read: {exc}", icon=":material/warning:")
        return
    if not entries:
        st.info("No kernel saved yet: pass every test of a problem on **Write a kernel** and it appears here.")
        return
    titles = {p.key: p.title for p in problems()}
    keys = sorted({e.problem for e in entries}, key=lambda k: list(titles).index(k) if k in titles else len(titles))
    chosen = st.multiselect("Problems", keys, format_func=lambda k: titles.get(k, k), key="history.submission_problems",
                            placeholder="every problem")
    shown = [e for e in entries if not chosen or e.problem in chosen]
    st.caption(
        f"{len(shown):,} passing submissions, newest first"
        + (f" (the newest {MAX_SHOWN:,})" if len(entries) == MAX_SHOWN else "")
        + ". The simulator checks kernels but does not time them."
    )
    st.dataframe(submissions_frame(shown), hide_index=True, width="stretch")
    pick = st.selectbox(
        "Show the code of",
        range(len(shown)),
        key="history.submission_code",
        format_func=lambda i: (
            f"{shown[i].name} · {titles.get(shown[i].problem, shown[i].problem)} · "
            f"{shown[i].created_at[:16].replace('T', ' ')}"
        ),
    )
    if pick is not None:
        st.code(shown[pick].source, language="python")


__all__ = ["show_submissions", "submissions_frame"]
