"""What the real CUDA compiler says about a kernel, shown where the visitor is, GPU or not.

The Launch config page's kernel inspector and every step on the Kernels page call
``show_kernel_facts`` / ``show_steps_facts``: a target picker (the device present on a GPU,
else the H100/H200), one sentence of static facts from NVVM + ptxas (gpu/core/compiler.py),
and the PTX and SASS. Compiling happens in a subprocess and is cached on disk, so a page
pays for it once per kernel, target and toolkit.

A compile has three outcomes (``CompileFacts.status``), and the pages keep them apart: the
facts; the compiler's refusal of the kernel (red, with its message); and no verdict at all,
because the compiler could not run here (a toolkit library missing: the page names it, says
``make run`` installs the compiler wheels, and that the kernel is not at fault).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import streamlit as st

from gpu.catalog.kernel_index import launch_of
from gpu.core.arch import DEFAULT_TARGET, TARGETS, Target, target_for_cc
from gpu.core.backend import BACKEND
from gpu.core.compiler import (
    NOT_THE_KERNEL,
    CompileFacts,
    CompileRequest,
    available_targets,
    compile_many,
    unavailable_sentence,
)
from gpu.core.device import device_info
from ui import glossary

if TYPE_CHECKING:
    import pandas as pd  # imported where a table is built: the annotation only names it

NO_FIGURE = "—"  # a table cell without a figure; the caption under the table says why
LISTING_HEIGHT_PX = 360  # PTX runs to hundreds of lines: a scrolling box keeps the page readable
SIMULATOR_BLIND_SPOTS = (
    "What the simulator cannot tell: whether a kernel compiles for a GPU (hence the compiler's facts here), "
    "every data race between threads (it runs them one at a time: the trace finds races from the accesses), "
    "and timing."
)


def simulator_line() -> None:
    """The one line each page with compiler facts shows about the simulator's blind spots."""
    st.caption(f":material/visibility_off: {SIMULATOR_BLIND_SPOTS}")


def default_target() -> str:
    """The present GPU's target when it is in the table, else the H100/H200's."""
    if not BACKEND.simulated:
        cc = device_info().compute_capability
        try:
            major, minor = (int(x) for x in str(cc).split(".")[:2])
            target = target_for_cc((major, minor))
        except ValueError:  # no "major.minor" (unpacking one part raises ValueError too)
            target = None
        if target is not None:
            return target.name
    return DEFAULT_TARGET


def target_picker(key: str) -> Target:
    """A choice of compile target, labelled by GPU ("H100/H200 · sm_90"); returns the Target."""
    names = [t.name for t in available_targets()] or list(TARGETS)
    default = default_target()
    here = " (this GPU)" if not BACKEND.simulated else ""
    label = lambda n: f"{TARGETS[n].gpus} · {n}" + (here if n == default else "")  # noqa: E731
    name = st.selectbox(
        "Compile for",
        names,
        index=names.index(default) if default in names else 0,
        format_func=label,
        key=key,
        help="The compiler runs here for any of these GPUs; no GPU is needed to compile.",
    )
    return TARGETS[name]


@st.cache_resource(max_entries=512, show_spinner="Compiling with NVVM and ptxas…")
def cached_facts(requests: tuple[CompileRequest, ...], target: str) -> tuple[CompileFacts, ...]:
    """Facts for requests on one target; the compiler also keeps them on disk."""
    return tuple(compile_many(list(requests), [target], sass=True))


def request_of(kernel) -> CompileRequest | None:
    """The compile request of a kernel as its module declares it launched (None if undeclared)."""
    found = launch_of(kernel)
    if found is None:
        return None
    entry, launch = found
    return CompileRequest(
        entry.name, launch.signatures[0], entry.name, module=entry.module, threads_per_block=launch.threads_per_block
    )


def facts_line(facts: CompileFacts) -> None:
    """The facts as one sentence: red only when the compiler rejected the kernel; a note on how
    to get the compiler when it could not run here."""
    if facts.unavailable:
        st.info(f"**{facts.kernel}**: {facts.sentence()}.", icon=":material/build:")
    elif facts.ok:
        glossary.markdown(f":material/memory: **{facts.kernel}** {facts.sentence()}.")
        if facts.spill_stores_bytes:
            st.caption(
                f"Spills: {facts.spill_stores_bytes:,} bytes stored to and {facts.spill_loads_bytes:,} read from local "
                "memory per thread."
            )
    else:
        st.error(f"**{facts.kernel}** {facts.sentence()}", icon=":material/error:")


def code_listings(facts: CompileFacts, in_expanders: bool = True) -> None:
    """PTX and SASS listings; as expanders, or as tabs where the caller is already in an expander."""
    if not facts.ok or not facts.ptx:
        return
    ptx_title = f"PTX for {facts.target} ({len(facts.ptx.splitlines())} lines)"
    sass_title = f"SASS for {facts.target} (nvdisasm)"
    if in_expanders:
        with st.expander(ptx_title):
            st.code(facts.ptx, language=None, line_numbers=True, height=LISTING_HEIGHT_PX)
        if facts.sass:
            with st.expander(sass_title):
                st.code(facts.sass, language=None, line_numbers=True, height=LISTING_HEIGHT_PX)
    else:
        tabs = st.tabs([ptx_title, sass_title] if facts.sass else [ptx_title])
        with tabs[0]:
            st.code(facts.ptx, language=None, line_numbers=True, height=LISTING_HEIGHT_PX)
        if facts.sass:
            with tabs[1]:
                st.code(facts.sass, language=None, line_numbers=True, height=LISTING_HEIGHT_PX)
    if not facts.sass:
        st.caption(facts.sass_note or "SASS: no disassembler in the toolkit wheels.")


def show_kernel_facts(kernel, key: str) -> None:
    """Target picker, facts sentence, PTX and SASS for one kernel (the Launch config inspector)."""
    st.markdown("**What the compiler says**")
    request = request_of(kernel)
    if request is None:
        st.caption("This kernel's module declares no LAUNCHES entry, so there is nothing to compile it with.")
        return
    target = target_picker(key)
    facts = cached_facts((request,), target.name)[0]
    facts_line(facts)
    code_listings(facts)
    simulator_line()


def show_steps_facts(
    kernels: list, key: str, threads_per_block: list[int | None] | None = None
) -> dict[int, CompileFacts]:
    """The target picker for a page's steps, compiled together; returns facts by the
    kernel's position in ``kernels`` (missing where a kernel declares no launch).

    ``threads_per_block[i]``, where given, is kernel i's block size in the run or form shown:
    occupancy depends on it, and the LAUNCHES default (256) is not what a 128-thread run used.
    """
    requests = {i: r for i, k in enumerate(kernels) if (r := request_of(k)) is not None}
    for i, tpb in enumerate(threads_per_block or ()):
        if tpb and i in requests:
            requests[i] = replace(requests[i], threads_per_block=int(tpb))
    cols = st.columns([1, 2])
    with cols[0]:
        target = target_picker(key)
    with cols[1]:
        glossary.caption(f"Each step below is compiled here for {target.label} by NVVM and ptxas: registers, spills, "
                         "shared memory and theoretical occupancy are static facts from the compiler, not "
                         "measurements.")
    facts = cached_facts(tuple(requests.values()), target.name)
    unavailable = [f for f in facts if f.unavailable]
    if unavailable:
        st.info(f"{unavailable_sentence(target.label, unavailable[0].missing, unavailable[0].error)}."
                .replace(NOT_THE_KERNEL, "these kernels are not at fault"), icon=":material/build:")
    table = facts_table(facts)
    numbers = {
        c: st.column_config.NumberColumn(format="localized", help=glossary.help_for(c))
        for c in NUMBER_COLUMNS
        if table[c].map(lambda v: isinstance(v, int)).all()
    }
    st.dataframe(table, hide_index=True, width="stretch", column_config=glossary.column_config(table.columns) | numbers)
    if why := missing_figures_caption(facts):
        st.caption(why)
    simulator_line()
    return dict(zip(requests, facts))


NUMBER_COLUMNS = ("threads per block", "registers per thread", "spilled bytes", "shared memory (bytes)")


def compiles_cell(f: CompileFacts) -> str:
    if f.ok:
        return "yes"
    if f.unavailable:
        return NO_FIGURE
    return "no, rejected: " + (f.error or "").splitlines()[0][:80]


def facts_table(facts) -> pd.DataFrame:
    """One row per kernel: the compiler's figures, readable headers; "—" where there is no
    figure (``missing_figures_caption`` says why), never an empty "None"."""
    import pandas as pd

    def figure(value, f: CompileFacts):
        return value if f.ok and value is not None else NO_FIGURE

    rows = []
    for f in facts:
        occupancy = f.occupancy if f.ok else None
        rows.append(
            {
                "kernel": f.kernel,
                "threads per block": f.threads_per_block if f.threads_per_block is not None else NO_FIGURE,
                "registers per thread": figure(f.registers_per_thread, f),
                "spilled bytes": figure(f.spill_stores_bytes, f),
                "shared memory (bytes)": figure(f.shared_memory_bytes, f),
                "occupancy": f"{occupancy.percent} at {f.threads_per_block} threads/block" if occupancy else NO_FIGURE,
                "limited by": (occupancy.limiter if occupancy.fraction < 1 else "nothing (full)")
                if occupancy
                else NO_FIGURE,
                "compiles": compiles_cell(f),
            }
        )
    table = pd.DataFrame(rows)
    for column in NUMBER_COLUMNS:  # a column with a "—" is text: figures with thousands separators
        if not table.empty and not table[column].map(lambda v: isinstance(v, int)).all():
            table[column] = table[column].map(lambda v: f"{v:,}" if isinstance(v, int) else v)
    return table


def missing_figures_caption(facts) -> str | None:
    """Why a cell of the facts table says "—", or None when every cell has its figure."""
    reasons = []
    if any(f.unavailable for f in facts):
        reasons.append("the compiler could not run here (see above), so there is no figure: "
                       "this says nothing about the kernel")
    if any(f.rejected for f in facts):
        reasons.append("the compiler rejected the kernel (its message is in the compiles column)")
    if any(f.ok and f.occupancy is None for f in facts):
        reasons.append("no block size is declared, so there is no occupancy")
    return f"{NO_FIGURE} where " + "; ".join(reasons) + "." if reasons else None


__all__ = [
    "NO_FIGURE",
    "SIMULATOR_BLIND_SPOTS",
    "code_listings",
    "facts_line",
    "facts_table",
    "missing_figures_caption",
    "show_kernel_facts",
    "show_steps_facts",
    "simulator_line",
]
