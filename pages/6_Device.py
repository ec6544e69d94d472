"""Device: what the engine runs on — backend, GPU facts, physical peaks, versions."""

import pandas as pd
import streamlit as st

import gpu
from gpu.catalog.base import PageLink
from gpu.core.device import host_info, library_versions
from ui.frame import frame
from ui.resources import current_store
from ui.views.history import load_records
from ui.views.recorded_devices import show_recorded_devices

PAGE = PageLink("Device", ":material/memory:", 80, "hardware, driver and library facts")

device = frame(PAGE.label, PAGE.icon)

st.subheader("Backend")
st.markdown(f"**{gpu.BACKEND.label}** — {gpu.BACKEND.reason}.")

st.subheader("GPU")
peak = device.peak_bandwidth_gbps
facts = {
    "name": device.name,
    "compute capability": device.compute_capability or "— (simulated)",
    "multiprocessors (SMs)": device.multiprocessors or "—",
    "memory": f"{device.total_memory_bytes / 2**30:,.1f} GiB"
    if device.total_memory_bytes
    else "— (shares host memory)",
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

show_recorded_devices(load_records(current_store(), warn=False))  # the real GPUs every page quotes

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

st.subheader("Telemetry (live)")
from gpu.core.telemetry import read_now  # noqa: E402


@st.fragment(run_every=2.0)
def _live_telemetry() -> None:
    """Clocks, temperature, power and clock-event reasons, refreshed every 2 s (NVML)."""
    sample, why = read_now(device.index or 0)  # the CUDA ordinal: found in NVML by PCI bus id
    if sample is None:
        st.info(why)
        return
    cols = st.columns(4)
    cols[0].metric("SM clock", f"{sample.sm_clock_mhz:,.0f} MHz" if sample.sm_clock_mhz else "—")
    cols[1].metric("Memory clock", f"{sample.mem_clock_mhz:,.0f} MHz" if sample.mem_clock_mhz else "—")
    cols[2].metric("Temperature", f"{sample.temperature_c:.0f} °C" if sample.temperature_c is not None else "—")
    cols[3].metric("Power", f"{sample.power_w:,.0f} W" if sample.power_w is not None else "—")
    slow = sample.slowdowns
    (st.warning if slow else st.caption)(
        ("Clocks slowed now: " + ", ".join(slow))
        if slow
        else (
            "Clock-event reasons: "
            + (", ".join(sample.reasons) or "none")
            + ". Every GPU run records these before, during and after, and is flagged if clocks dropped."
        )
    )


_live_telemetry()
