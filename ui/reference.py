"""The "On a real GPU" panel: the recorded result of a page's experiment, for every visitor.

Most people who open the lab have no NVIDIA GPU; the committed ``python -m gpu check``
runs (``gpu.service.references``) show them what the experiment looks like on one, drawn
with the same chart builders as a live run, with one sentence of what it shows and the
run's provenance. In the simulator the panel leads the page (open); on a GPU it sits
below the live run, closed, as a comparison. Recorded runs are never saved to History.

Each experiment draws its own panel: its page hands ``panel_after_run`` the ``recorded(ref)`` of its view
(``ui/views/experiments/<name>.py``), and the lead above the form says one sentence from the ``lesson(ref)``
of its folder's ``report``; this module frames them (title, provenance, open or closed). The declaration's
``Recorded`` names the slot and how the run is read; it names no drawing (the engine never names ui/).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import streamlit as st

from gpu.catalog.base import Experiment, Recorded
from gpu.catalog.registry import experiments
from gpu.core.backend import BACKEND
from gpu.core.timing import format_seconds
from gpu.service.references import ARTICLE, ReferenceRun
from ui import glossary
from ui.resources import references  # pages and app.py read it from here too

PANEL_TITLE = "On a real GPU"


# --- drawing ----------------------------------------------------------------------------------


def provenance_caption(ref: ReferenceRun) -> None:
    """Device, driver, versions, date, commit and command of a recorded run, always visible."""
    st.caption("  \n".join(ref.provenance.lines()))


def show_article_figures() -> None:
    """The article's own T4 result, labelled as published, not measured."""
    a = ARTICLE
    st.markdown(
        f"**NVIDIA T4 (Colab), {a.provenance.label}:** Python loop {format_seconds(a.cpu_time_s)}, GPU "
        f"{format_seconds(a.gpu_time_s)} including the copies — the article's “GPU speedup: {a.speedup:.2f}x” at N = "
        f"{a.n:,}."
    )


Drawing = Callable[[ReferenceRun], None]  # a view's recorded(ref): draws the recorded run in the panel


def panels() -> dict[str, Recorded]:
    """Every recorded-run panel the declarations name (``Experiment.recorded``), by name."""
    return {e.recorded.name: e.recorded for e in experiments() if e.recorded is not None}


def declaring(name: str) -> Experiment:
    """The first declaration (in the registry's order) whose recorded panel is ``name``."""
    return next(e for e in experiments() if e.recorded is not None and e.recorded.name == name)


def reference_panel(experiment: str, draw: Drawing | None = None, *, expanded: bool | None = None
                    ) -> ReferenceRun | None:
    """Draw the recorded result of ``experiment`` in an "On a real GPU" expander.

    ``expanded`` defaults to closed (``panel_after_run`` opens it in the simulator, where it is the only GPU figure).
    Returns the reference shown, or None when no committed run holds the experiment.
    """
    declared = panels()
    if experiment not in declared:
        raise ValueError(
            f"experiment must be one of {tuple(declared)} (the declarations' recorded panels), got {experiment!r}"
        )
    refs = references()
    ref = refs.best(experiment)
    open_ = bool(expanded)
    with st.container(border=True, key=f"reference_panel_{experiment.replace('-', '_')}"):
        st.subheader(f"{PANEL_TITLE}: {ref.provenance.device if ref else 'no recorded run'}", anchor="on-a-real-gpu")
        if ref is None:
            st.caption("No committed `python -m gpu check` run holds this experiment yet (see benchmarks/README).")
            return None
        st.caption(f":material/verified: Recorded by `python -m gpu check` on real hardware — {ref.provenance.label}.")
        provenance_caption(ref)
        if ref.caveat:  # recorded before the current rules: said before any figure
            st.warning(
                f"This run was {ref.caveat}" + (f"; {ref.l2_note}." if ref.l2_note else "."), icon=":material/history:"
            )
        with st.expander(
            "The recorded result" + ("" if open_ else " (compare with your run above)"),
            expanded=open_,
            icon=":material/monitoring:",
        ):
            try:
                if draw is None:
                    st.caption(
                        "This page draws no recorded run; its figures are in the check's files."
                    )
                else:
                    draw(ref)
            except Exception as exc:  # a reference that no longer rebuilds must not break the page
                st.warning(f"The recorded run {ref.key} could not be drawn: {exc}", icon=":material/warning:")
    return ref


def lesson(experiment: str, ref: ReferenceRun) -> str | None:
    """The recorded run's lesson in one sentence: ``lesson(ref)`` in the ``report`` module of the folder that
    declares the panel (None where the folder words none, or it cannot be read)."""
    folder = declaring(experiment).run.__module__.rpartition(".")[0]  # the folder of the declared run
    try:
        words = getattr(importlib.import_module(f"{folder}.report"), "lesson", None)
        return words(ref) if words is not None else None
    except Exception:  # a lead that cannot be worded must not break the page; the panel below still draws
        return None


def panel_before_run(experiment: str) -> None:
    """Call where the page starts. On a GPU this draws nothing: the form comes first. In the simulator the page
    leads with what is real, in one paragraph above the form: the recorded run's lesson, with its device, date
    and rules (what the page's simulated run can and cannot show is its banner's ``simulator_note``). The whole
    recorded run is open below the form (``panel_after_run``)."""
    if not BACKEND.simulated:
        return
    ref = references().best(experiment)
    with st.container(key=f"lead_{experiment.replace('-', '_')}"):  # no border: the form stays in the first screen
        if ref is None:
            st.markdown(":material/memory: **On a real GPU:** no run of this experiment has been recorded on a real "
                        "GPU yet.")
        else:
            rules = f", {ref.caveat}" if ref.caveat else ", today's rules"
            said = lesson(experiment, ref) or "the recorded result is below, open."
            glossary.markdown(f":material/memory: **On a real GPU** ({ref.provenance.device}{rules}): {said} "
                              "[The recorded run ↓](#on-a-real-gpu)")  # its jargon explained in its help


def panel_after_run(experiment: str, draw: Drawing | None = None) -> None:
    """Call where the page ends: the recorded real GPU's run drawn by ``draw`` (the page's view's ``recorded``),
    below the form and the live run (open in the simulator, where it is the page's only GPU figure; closed on a
    GPU, as a comparison)."""
    reference_panel(experiment, draw, expanded=BACKEND.simulated)
