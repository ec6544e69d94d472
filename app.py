"""Kernel Lab home: what the lab is, where kernels run, and the experiments."""

import streamlit as st

import gpu
from ui.frame import frame

device = frame("Kernel Lab", "🧪")

st.markdown(
    """
A hands-on lab for a first GPU kernel. It takes the classic tutorial — **vector addition
as a Python loop on the CPU and as a Numba CUDA kernel** — and turns it into an
instrument: choose sizes and launch settings, run the CPU implementations and the
kernel, check that every result is **bit-identical** to NumPy, and see where the time
goes: host→device copies, the kernel, device→host copies, the CPU.
"""
)

st.subheader("Where kernels run")
if gpu.BACKEND.simulated:
    st.markdown(f"**Numba's CUDA simulator** — {gpu.BACKEND.reason}. Every experiment works, at small sizes, and every timing is labelled as simulated.")
else:
    st.markdown(f"**{device.name}** (compute capability {device.compute_capability}, {device.multiprocessors} multiprocessors).")

st.subheader("Experiments")
st.page_link("pages/1_Vector_add.py", label="Vector add — the article's experiment, one size, full breakdown", icon="➕")
st.page_link("pages/2_Scaling.py", label="Scaling — every size of a range: where the GPU starts to win, bandwidth against the limits", icon="📈")
st.page_link("pages/3_Launch_config.py", label="Launch config — which thread handles which element; block-size sweep; the kernel's PTX", icon="🧮")
st.page_link("pages/4_Transfers.py", label="Transfers — host-link bandwidth, pinned memory, streams: the copies that decide whether the GPU pays off", icon="🔁")
st.page_link("pages/7_Kernels.py", label="Kernels — five kernels after vector add, each from naive to near the hardware, checked and timed side by side", icon=":material/view_timeline:")
st.page_link("pages/8_Roofline.py", label="Roofline — every measured kernel step against the device's memory and FP32 roofs", icon=":material/show_chart:")
st.page_link("pages/5_History.py", label="History — every saved run: filter, compare, export", icon="🗂️")
st.page_link("pages/6_Device.py", label="Device — hardware, driver and library facts", icon="🖥️")
