"""The Device page's "On a real GPU": the GPUs the lab holds recorded runs of, with their facts, and the GPUs
learners self-reported from a notebook; said plainly when there are none. Figures come from the check files
(``gpu.service.references``) and the imported result files as they were written."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gpu.report.compare_gpus import recorded_peers
from ui.resources import references


def _facts(device: dict) -> dict:
    peak = device.get("peak_bandwidth_gbps")
    clock, bus = device.get("memory_clock_khz"), device.get("memory_bus_width_bits")
    return {
        "compute capability": device.get("compute_capability") or "—",
        "SMs": device.get("multiprocessors") or "—",
        "memory clock": f"{clock / 1e3:,.0f} MHz" if clock else "—",
        "bus width": f"{bus} bits" if bus else "—",
        "peak memory bandwidth": f"{peak:,.0f} GB/s" if peak else "—",
    }


def show_recorded_devices(every_run: list | None = None) -> None:
    """One row per recorded device and method (its newest run), then each self-reported device."""
    st.subheader("On a real GPU", anchor="on-a-real-gpu")
    rows = []
    for ref in recorded_peers(references().runs).peers:
        breakdown = ref.part("breakdown", "run") or {}
        rows.append({"device": ref.provenance.device, "source": f"recorded {ref.provenance.when} ({ref.key})",
                     "rules": ref.caveat.split(";")[0] if ref.caveat else "today's rules",  # the caveat's first clause
                     **_facts(dict(breakdown.get("device") or {}))})
    for r in every_run or []:
        imported = r.result.get("imported")
        if isinstance(imported, dict) and imported.get("self_reported") and not r.simulated:
            rows.append({"device": r.device_name, "source": f"{imported.get('label')} ({r.created_at[:10]})",
                         "rules": "a notebook's: L2 flushed, no verified hold",
                         **_facts(dict(r.result.get("device") or {}))})
    if not rows:
        st.caption("No run of any kernel has been recorded on a real GPU here yet.")
        return
    st.caption("The GPUs whose runs every page sets beside its own (recorded by `python -m gpu check`, or "
               "self-reported from a notebook): their facts as each run recorded them, not this machine's.")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


__all__ = ["show_recorded_devices"]
