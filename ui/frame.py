"""The shared frame: the first call of every page (page config, backend badge, sidebar)."""

from __future__ import annotations

import streamlit as st

import gpu
from gpu.device import DeviceInfo
from gpu.limits import SIMULATOR_MAX_N
from ui.resources import device_facts

SIMULATOR_BANNER = (
    "**CUDA simulator — timings are not GPU performance.** No CUDA GPU was found, so "
    "kernels run in Numba's simulator (Python threads on the CPU, about 0.1 ms per GPU "
    f"thread). Results are still checked exactly; sizes are capped at N = {SIMULATOR_MAX_N:,}."
)


def frame(title: str, icon: str = "🧪", intro: str | None = None) -> DeviceInfo:
    """Set up a page: config, title, backend badge and sidebar facts. Returns the device."""
    st.set_page_config(page_title=f"{title} · Kernel Lab", page_icon=icon, layout="wide")
    device = device_facts()
    st.title(f"{icon} {title}")
    if gpu.BACKEND.simulated:
        st.warning(SIMULATOR_BANNER, icon="⚠️")
    if intro:
        st.markdown(intro)
    with st.sidebar:
        badge(device)
        from ui.runner import sidebar_status  # queue state, admission limits, history status

        sidebar_status()
    return device


def badge(device: DeviceInfo) -> None:
    """One line on where kernels run, coloured by backend, plus the key facts."""
    if gpu.BACKEND.simulated:
        st.markdown(":orange-badge[CUDA simulator] timings are not GPU performance")
    else:
        st.markdown(f":green-badge[CUDA] {device.name}")
        facts = [f"compute capability {device.compute_capability}", f"{device.multiprocessors} SMs"]
        if device.total_memory_bytes:
            facts.append(f"{device.total_memory_bytes / 2**30:.0f} GiB")
        st.caption(" · ".join(facts))
