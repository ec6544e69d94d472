"""Run it on a free GPU, from the pages: download a notebook, upload the result file it writes.

Most visitors have no NVIDIA GPU; Colab and Kaggle lend a T4 for free. A page offers its notebook
(``gpu.notebook.build``), the learner runs it there, and History or Write a kernel imports the one file
it writes (``gpu.notebook.importing``): checked field by field, a learner's kernel judged again in the
lab's sandbox, saved apart as "self-reported on <device>".
"""

from __future__ import annotations

import json

import streamlit as st

from gpu.notebook.build import EXPERIMENTS, experiment_notebook, problem_notebook, result_name
from ui.downloads import download

HOW = ("Open it in [Colab](https://colab.research.google.com) (*File → Upload notebook*) or on Kaggle, choose a GPU "
       "runtime (a T4 is free), *Run all*, then import the `{result}` it writes on **History** (or Write a kernel) or "
       "with `python -m gpu import {result}`. It is shown as *self-reported on* your GPU, apart from the lab's runs.")


def experiment_notebook_button(key: str) -> None:
    """The download of experiment ``key``'s notebook (nothing for an experiment without one)."""
    if key not in EXPERIMENTS:
        return
    with st.container(border=True, key=f"free_gpu_{key.replace('-', '_')}"):
        st.markdown("**Run it on a free GPU** — this experiment as a notebook, with the lab's checks and timing.")
        download("Download the notebook", lambda: json.dumps(experiment_notebook(key), indent=1),
                 f"kernel-lab-{key}.ipynb", "application/x-ipynb+json", key=f"free_gpu.{key}.download")
        st.caption(HOW.format(result=result_name(key)))


def scaling_notebook_button() -> None:
    """Scaling: the size sweep's notebook."""
    experiment_notebook_button("scaling")


def launch_notebook_button() -> None:
    """Launch config: the block-size sweep's notebook."""
    experiment_notebook_button("launch-sweep")


def transfers_notebook_button() -> None:
    """Transfers: the strategies' notebook."""
    experiment_notebook_button("transfers")


def kernels_notebook_button(kernel_key: str) -> None:
    """Kernels: the notebook of the chosen catalog kernel (every step of its ladder)."""
    experiment_notebook_button(kernel_key)


def self_reported_steps(records, kernel_key: str):
    """One row per step of the newest GPU run per device imported from ``kernel_key``'s notebook (pure): the
    step, its median kernel-alone time, the GB/s of the bytes the kernel must move, and the share of that
    device's memory peak (from the file's clock and bus width, which the import checked)."""
    import pandas as pd

    from gpu.core.timing import format_seconds

    rows, seen = [], set()
    for r in records:
        imported = r.result.get("imported")
        if (r.experiment != kernel_key or r.simulated or not isinstance(imported, dict)
                or not imported.get("self_reported")):
            continue
        device = str(imported.get("device") or r.device_name)
        if device in seen:
            continue
        seen.add(device)
        moved, peak = r.result.get("bytes_moved"), (r.result.get("device") or {}).get("peak_bandwidth_gbps")
        for step, impl in (r.result.get("implementations") or {}).items():
            median = ((impl.get("phases") or {}).get("kernel") or {}).get("median_s")
            if not median:
                continue
            gbps = moved / median / 1e9 if moved else None
            rows.append({"run": f"{imported.get('label')} · {r.short_id}", "step": impl.get("label", step),
                         "median": format_seconds(median), "GB/s": None if gbps is None else round(gbps, 1),
                         "% of peak": None if not (gbps and peak) else round(100 * gbps / peak, 1)})
    return pd.DataFrame(rows, columns=["run", "step", "median", "GB/s", "% of peak"])


def kernels_self_reported(kernel_key: str) -> None:
    """Kernels: the chosen kernel's ladder as learners' notebooks timed it on their own GPUs, when any was imported."""
    from ui.resources import current_store
    from ui.views.history import load_records

    frame = self_reported_steps(load_records(current_store(), warn=False) or [], kernel_key)
    if frame.empty:
        return
    st.markdown("**Self-reported on learners' own GPUs** — this kernel's notebook, run on their GPU and imported: "
                "the lab checked the file and bounded each time by the device's memory peak, not measured it.")
    st.dataframe(frame, hide_index=True, key=f"free_gpu.{kernel_key}.self_reported")


def problem_notebook_button(problem_key: str, source: str) -> None:
    """The download of a notebook that checks and times ``source`` (the editor's kernel) for the problem."""
    from gpu.notebook.build import threads_per_block
    from gpu.problems import get

    with st.container(border=True, key="free_gpu_problem"):
        st.markdown("**Run it on a free GPU** — your kernel above, with this problem's tests and the lab's timing.")
        try:  # a file the notebook could not run is said here, not on click
            get(problem_key).threads_for(threads_per_block(source))
        except Exception as exc:  # InputError (it does not parse), or the problem's Refusal
            st.caption(f"No notebook for this source yet: {exc}")
            return
        download("Download the notebook", lambda: json.dumps(problem_notebook(problem_key, source), indent=1),
                 f"kernel-lab-{problem_key}.ipynb", "application/x-ipynb+json",
                 key=f"free_gpu.{problem_key}.download")
        st.caption(HOW.format(result=result_name(problem_key)))


def self_report_upload(key: str, *, name: str | None = None) -> None:
    """Import a notebook's result file; ``key`` keeps the widget apart on each page."""
    from gpu.notebook.importing import import_self_report
    from gpu.notebook.selfreport import MAX_BYTES, SelfReportProblem
    from gpu.service.store import StoreError
    from ui.run_record import browser_session_id
    from ui.views.history import uploads_enabled

    with st.expander("Import a result from a notebook (self-reported)", icon=":material/upload_file:"):
        st.caption("The `kernel-lab-result-*.json` a lab notebook wrote on your GPU. It is checked field by field; a "
                   "kernel is judged again in the lab's sandbox; a time faster than the GPU's memory allows is "
                   "refused. It is shown as self-reported, apart from the runs the lab measured.")
        if not uploads_enabled():
            st.caption(":material/lock: Uploads are off on this shared server; `python -m gpu import FILE` works.")
            return
        upload = st.file_uploader("result file", type=["json"], max_upload_size=max(1, MAX_BYTES // 2**20),
                                  key=f"{key}.self_report")
        if upload is None:
            return
        done = st.session_state.get(f"{key}.self_reported")
        if done and done[0] == upload.file_id:  # the same upload on a rerun: import once
            st.success(done[1], icon=":material/check_circle:")
            return
        try:
            result = import_self_report(upload.getvalue(), source=upload.name, session_id=browser_session_id(),
                                        name=name)
        except (SelfReportProblem, StoreError) as exc:
            st.error(f"{upload.name} was not imported: {exc}", icon=":material/error:")
            return
        st.session_state[f"{key}.self_reported"] = (upload.file_id, result.summary())
        st.success(result.summary(), icon=":material/check_circle:")


SELF_REPORTED = "self-reported on "  # the device of every imported leaderboard entry starts so


def show_self_reported(problem) -> None:
    """The problem's self-reported entries, one table per device, apart from the lab's own leaderboard."""
    import pandas as pd

    from gpu.core.timing import format_seconds
    from gpu.sandbox.submissions import SubmissionStore
    from gpu.service.store import StoreError

    try:
        store = SubmissionStore()
        devices = [d for d in store.devices(problem.key) if d.startswith(SELF_REPORTED)]
        boards = {d: store.leaderboard(problem.key, d) for d in devices}
    except StoreError:
        return  # the lab's own leaderboard above already says why
    if not any(boards.values()):
        from gpu.core.backend import BACKEND

        if BACKEND.simulated:  # the leaderboard above holds no GPU time here: say so plainly
            st.caption(f":material/memory: **On a real GPU:** no kernel for {problem.title} has been timed on a real "
                       "GPU here yet — download the notebook above to time yours on a free one, then import its "
                       "result.")
        return
    st.subheader("On a real GPU: self-reported on learners' own GPUs", anchor="self-reported")
    st.caption("Timed by a lab notebook on the learner's GPU and imported from its result file: the lab judged each "
               "kernel again in its sandbox and refused impossible times, but did not time these itself. Each device "
               "is ranked on its own, never against the lab's runs.")
    for device, entries in boards.items():
        if not entries:
            continue
        st.markdown(f"**{device}**")
        rows = [{"Rank": i + 1, "Name": e.name,
                 "Kernel time (as reported)": format_seconds(e.median_s) if e.median_s else "simulated: not timed",
                 "GB/s": f"{e.gbps:,.1f}" if e.gbps else "—",
                 "Share of peak": f"{e.percent_of_peak:.0f} %" if e.percent_of_peak else "—",
                 "Imported at (UTC)": e.created_at.replace("T", " ")[:16]} for i, e in enumerate(entries)]
        st.table(pd.DataFrame(rows), hide_index=True)


__all__ = ["experiment_notebook_button", "kernels_notebook_button", "kernels_self_reported", "launch_notebook_button",
           "problem_notebook_button", "scaling_notebook_button", "self_report_upload", "self_reported_steps",
           "show_self_reported", "transfers_notebook_button"]
