"""A run's GPU telemetry where its figures are: a warning when clocks dropped, else one caption."""

from __future__ import annotations

import streamlit as st

from gpu.core.telemetry import describe


def show_telemetry(summary: dict | None, what: str = "run") -> None:
    """Warn beside the figures when the GPU slowed during the ``what``; otherwise say
    what was read (or why nothing could be). Nothing when the result predates telemetry."""
    if summary is None:
        return
    if summary.get("flagged"):
        st.warning(
            f"GPU clocks dropped during this {what}, so its figures may be low: " + "; ".join(summary.get("flags", [])),
            icon=":material/speed:",
        )
    else:
        st.caption(describe(summary))


__all__ = ["show_telemetry"]
