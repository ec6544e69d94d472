"""The shared frame: the first call of every page (page config, backend badge, sidebar)."""

from __future__ import annotations

import streamlit as st

import gpu
from gpu.core.device import DeviceInfo
from gpu.core.limits import max_vector_n
from ui.resources import device_facts
from ui.runner import sidebar_status


def simulator_banner() -> str:
    """The warning every page shows when kernels run in the simulator."""
    return (
        "**CUDA simulator — timings are not GPU performance.** No CUDA GPU was found, so "
        "kernels run in Numba's simulator (Python threads on the CPU, about 0.1 ms per GPU "
        f"thread). Results are still checked exactly; sizes are capped at N = {max_vector_n():,}."
    )


def frame(title: str, icon: str = "🧪", intro: str | None = None) -> DeviceInfo:
    """Set up a page: config, title, backend badge and sidebar facts. Returns the device."""
    st.set_page_config(page_title=f"{title} · Kernel Lab", page_icon=icon, layout="wide")
    device = device_facts()
    st.title(f"{icon} {title}")
    if gpu.BACKEND.simulated:
        st.warning(simulator_banner(), icon="⚠️")
    if intro:
        st.markdown(intro)
    with st.sidebar:
        badge(device)
        sidebar_status()  # device picker, queue state, admission limits, history status
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
