"""Process-wide objects shared by every session, held in ``st.cache_resource``.

Bounded by construction: one lock per device and one set of facts per device.
"""

from __future__ import annotations

import streamlit as st

import gpu  # noqa: F401  (decides the backend before anything imports numba.cuda)
from gpu.device import DeviceInfo, device_info
from gpu.serial import FifoLock


@st.cache_resource(max_entries=16, show_spinner=False)
def device_lock(index: int = 0) -> FifoLock:
    """The one lock that serialises GPU work on device ``index`` across all users."""
    return FifoLock(name=f"gpu{index}")


@st.cache_resource(max_entries=16, show_spinner="Reading device facts…")
def device_facts(index: int = 0) -> DeviceInfo:
    return device_info(index)
