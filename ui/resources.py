"""Process-wide objects shared by every session, held in ``st.cache_resource``.

Bounded by construction: one lock per device, one CPU lock (both shared with the
other app processes of this host through files: gpu/service/devicelock.py), one set of facts per
device, one history store per database path, and the committed reference runs.
"""

from __future__ import annotations

import streamlit as st

import gpu  # noqa: F401  (decides the backend before anything imports numba.cuda)
from gpu.core.device import DeviceInfo, device_count, device_info
from gpu.service.devicelock import FileFifoLock, default_lock_dir, usable_dir
from gpu.service.references import References, load_references
from gpu.service.store import HistoryStore, default_path, open_store


@st.cache_resource(max_entries=16, show_spinner=False)
def device_lock(index: int = 0) -> FileFifoLock:
    """The one lock that serialises GPU work on device ``index`` across all users and app processes of this host."""
    return FileFifoLock(name=f"gpu{index}", directory=usable_dir(default_lock_dir()))


@st.cache_resource(max_entries=1, show_spinner=False)
def cpu_lock() -> FileFifoLock:
    """The one lock that serialises CPU benchmarks (they compete for cores and memory bandwidth) on this host."""
    return FileFifoLock(name="cpu", directory=usable_dir(default_lock_dir()))


@st.cache_resource(max_entries=16, show_spinner="Reading device facts…")
def device_facts(index: int = 0) -> DeviceInfo:
    return device_info(index)


@st.cache_resource(max_entries=1, show_spinner=False)
def devices() -> int:
    """How many devices runs can use (the simulator counts as one)."""
    return device_count()


@st.cache_resource(max_entries=4, show_spinner=False)
def history_store(path: str) -> HistoryStore:
    """The history database at ``path``, opened (or repaired, or marked unavailable) once."""
    return open_store(path)


def current_store() -> HistoryStore:
    """The history database this process uses ($KERNEL_LAB_DB or the user's data directory)."""
    return history_store(str(default_path()))


@st.cache_resource(max_entries=1, show_spinner=False)
def references() -> References:
    """Every committed reference run (recorded on real GPUs), loaded and validated once per process."""
    return load_references()
