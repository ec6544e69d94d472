"""Kernel Lab home: what the lab is, a start-here path, the headline recorded-GPU result."""

import streamlit as st

import gpu
from gpu.catalog.base import PageLink
from gpu.experiments.vector_add.home import article_story, headline_intro, headline_metrics
from gpu.experiments.vector_add.result import VectorAddRun
from ui import glossary
from ui.frame import frame
from ui.glossary import as_markdown as glossary_markdown
from ui.learner import teacher
from ui.navigation import visible_links
from ui.reference import provenance_caption, references
from ui.script_compile import guard

guard()  # Streamlit compiles the pages under the lab's parser lock (ui/script_compile.py)

PAGE = PageLink("Home", ":material/home:", 0)  # the sidebar entry of this file (ui/navigation.py reads it)

device = frame("Kernel Lab", ":material/science:")

st.markdown(
    """
A hands-on lab for a first GPU kernel. It takes the classic tutorial — **vector addition
as a Python loop on the CPU and as a Numba CUDA kernel** — and turns it into an
instrument: choose sizes and launch settings, run the CPU implementations and the
kernel, check that every result is **bit-identical** to NumPy, and see where the time
goes: host→device copies, the kernel, device→host copies, the CPU.
"""
)

st.subheader("The answer on a real GPU", anchor="headline")
refs = references()
ref = refs.best("vector-add")
run = VectorAddRun.recorded(ref) if ref is not None else None
if ref is not None and run is not None:
    st.markdown(headline_intro(ref, run.n))
    if ref.caveat:  # recorded before today's rules: said before any figure
        st.warning(f"These figures were {ref.caveat}.", icon=":material/history:")
    metrics = headline_metrics(ref, refs.article)
    per_row = 3  # each label names both sides of its ratio: wide enough to be read whole
    for start in range(0, len(metrics), per_row):
        for col, (label, value, why) in zip(st.columns(per_row), metrics[start:start + per_row]):
            col.metric(label, value, help=why)
    provenance_caption(ref)
else:
    st.caption("No recorded GPU run is committed under benchmarks/ yet.")

st.subheader("Start here", anchor="start-here")
glossary.markdown(
    "1. **The article** the lab is built on — [its story, below](#the-article): a Python loop against a CUDA "
    "kernel at N = 10,000,000, and one number: “GPU speedup: 84.50x” on a T4.\n"
    "2. **Vector add** — run the article's experiment yourself: your CPU at the article's N beside the same "
    "experiment recorded on an H200. The kernel alone is far ahead of NumPy; the copies are not.\n"
    "3. **Transfers** — why the copies cost so much, and how pinned memory and keeping data on the device change "
    "that.\n"
    "4. **Scaling** — every size of a range: from which N the GPU starts to win.\n"
    "5. **Launch config** — which thread handles which element, and what block size costs.\n"
    "6. **Kernels** and **Roofline** — the kernels a course teaches next (reduction, transpose, stencil, "
    "histogram, matmul), each from naive to near the hardware, against the device's limits.\n"
    "7. **Write a kernel** — write your own, have it checked against NumPy, traced for races, and (on a GPU) "
    "timed and ranked.\n"
    "8. **History** — your saved runs beside the recorded GPUs and the article's T4 (*Compare GPUs*)."
)
if gpu.BACKEND.simulated:
    st.caption(
        f"Here kernels run in {gpu.BACKEND.label} (no GPU was found): every result is checked exactly as on a GPU, "
        "simulated times are never shown as GPU performance, and every page also shows a run recorded on a real GPU."
    )
else:
    st.caption(
        f"Kernels run on **{device.name}** (compute capability {device.compute_capability}, {device.multiprocessors} "
        "multiprocessors)."
    )

with st.expander("Glossary: the words the pages use", icon=":material/menu_book:"):
    st.markdown(glossary_markdown())

st.subheader("Experiments")
for page in visible_links(teacher()):  # every page but Home, from the declarations and the pages' own PAGE
    if page.script != "app.py":
        st.page_link(page.script, label=f"{page.label} — {page.blurb}" if page.blurb else page.label, icon=page.icon)

st.subheader("The article", anchor="the-article")
st.markdown(article_story(refs.article))
