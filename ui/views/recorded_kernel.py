"""The Kernels page's "On a real GPU" block: the chosen kernel's steps as recorded, drawn first.

Every visitor sees each step's recorded time, GB/s and share of the memory peak before the form, with
the run's provenance (and its caveat when it was measured under older rules); when no committed run
holds the kernel, the block says so plainly. The figures come from ``gpu.report.recorded_steps``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gpu.core.backend import BACKEND
from gpu.report.recorded_steps import RecordedKernel, recorded_kernel
from ui import glossary
from ui.resources import references

SIMULATED_RUN = (
    "**Your run here, in the simulator:** every step's result is checked against NumPy, and each step's source, "
    "launch and threads are shown; a step's time is Python running its threads, so the simulated times do not rank "
    "the steps — the recorded ones do."
)


def show_recorded_steps(experiment: str, title: str) -> RecordedKernel | None:
    """Draw the recorded steps of catalog kernel ``experiment``; returns what was shown (None: nothing recorded)."""
    recorded = recorded_kernel(experiment, references())
    with st.container(border=True, key=f"recorded_steps_{experiment}"):
        if recorded is None:
            st.subheader("On a real GPU: not measured yet", anchor="on-a-real-gpu")
            st.caption(
                f"No committed `python -m gpu check` run holds {title} yet, so no real-GPU figure is shown for it. "

            )
        else:
            st.subheader(f"On a real GPU: {recorded.device}", anchor="on-a-real-gpu")
            glossary.markdown(recorded.ladder_sentence())
            if recorded.caveat:  # measured under older rules: said before the figures
                st.warning(f"This run was {recorded.caveat}.", icon=":material/history:")
            table = pd.DataFrame(recorded.rows())[["step", "time", "GB/s", "% of peak"]]  # samples: the caption
            table["GB/s"] = [f"{v:,.1f}" if v == v and v is not None else "—" for v in table["GB/s"]]
            table["% of peak"] = [f"{v:.2f} %" if v == v and v is not None else "—"  # a CPU row: no GPU peak
                                  for v in table["% of peak"]]
            st.dataframe(table, hide_index=True, width="stretch")
            cut = "" if recorded.finished else " (the check was cut short after this section finished)"
            lines = "  \n".join(recorded.provenance.lines())
            samples = sorted({s.samples for s in recorded.steps if s.samples})
            counted = f"median of {'/'.join(map(str, samples))} samples" if samples else "medians"
            with st.expander("Where these figures come from"):
                st.caption(
                    f"Recorded by `python -m gpu check`, not measured in this session: {recorded.size}, the kernel "
                    f"alone on the GPU ({counted}), the call on the CPU; {recorded.provenance.label}{cut}.  \n{lines}"
                )
        if BACKEND.simulated:
            st.caption(SIMULATED_RUN)
    return recorded


__all__ = ["SIMULATED_RUN", "show_recorded_steps"]
