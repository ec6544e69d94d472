"""Device: what the engine runs on — backend, GPU facts, physical peaks, versions."""

import pandas as pd
import streamlit as st

import gpu
from gpu.core.device import host_info, library_versions
from ui.frame import frame

device = frame("Device", ":material/memory:")

st.subheader("Backend")
st.markdown(f"**{gpu.BACKEND.label}** — {gpu.BACKEND.reason}.")

st.subheader("GPU")
peak = device.peak_bandwidth_gbps
facts = {
    "name": device.name,
    "compute capability": device.compute_capability or "— (simulated)",
    "multiprocessors (SMs)": device.multiprocessors or "—",
    "memory": f"{device.total_memory_bytes / 2**30:,.1f} GiB" if device.total_memory_bytes else "— (shares host memory)",
    "memory clock": f"{device.memory_clock_khz / 1e3:,.0f} MHz" if device.memory_clock_khz else "—",
    "memory bus width": f"{device.memory_bus_width_bits} bits" if device.memory_bus_width_bits else "—",
    "peak memory bandwidth": f"{peak:,.0f} GB/s (2 × clock × bus width)" if peak else "— (not available)",
    "max threads per block": device.max_threads_per_block,
    "warp size": device.warp_size,
    "CUDA driver": device.driver_version or "—",
    "CUDA runtime": device.runtime_version or "—",
}
st.table(pd.DataFrame({"value": [str(v) for v in facts.values()]}, index=list(facts)))
for note in device.notes:
    st.caption(note)

st.subheader("Host")
host = host_info()
st.table(
    pd.DataFrame(
        {
            "value": [
                host.cpu,
                str(host.logical_cores),
                f"{host.memory_total_bytes / 2**30:,.1f} GiB" if host.memory_total_bytes else "—",
                f"{host.memory_available_bytes / 2**30:,.1f} GiB",
                host.python,
                host.platform,
            ]
        },
        index=["CPU", "logical cores", "memory", "memory available", "Python", "platform"],
    )
)

st.subheader("Libraries")
versions = library_versions()
st.table(pd.DataFrame({"version": [v or "not installed" for v in versions.values()]}, index=list(versions)))
