"""What the memory trace shows: the Kernels page's per-step section and the Launch config
page's coalesced-vs-strided comparison.

Traces run in a fresh child process (``gpu.trace.child``; the simulator is not
thread-safe and, on a GPU machine, not the app's backend), and the lab's kernels at a
given size are deterministic, so their reports are cached (bounded) per kernel and size.
The Kernels page lets the learner choose the traced size, up to ``MAX_TRACE_WORK``.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import streamlit as st

from gpu.core.limits import InputError
from gpu.core.safe_text import shown
from gpu.trace import MAX_TRACE_WORK
from gpu.trace.analysis import CANNOT_SEE, WARP
from gpu.trace.child import TraceFailed, run_in_child
from gpu.trace.report import TraceReport
from ui import glossary
from ui.charts import trace as charts

MAX_CACHED = 32  # trace sets kept (a few sizes of each of the lab's kernels)
SUBMISSION_KEY = "trace.write_kernel"  # the prefix of Write a kernel's trace widgets' keys
AUTOMATIC = "(automatic)"  # the traced test picker's default, the trace's own choice (no test of that name is offered)


@st.cache_data(max_entries=MAX_CACHED, show_spinner=False)
def cached_traces(names: tuple[str, ...], n: int | None = None) -> list:
    """Reports (or why not) for lab kernels at size ``n`` (None: each one's trace size), traced together in one
    child process.

    The simulator is CPU work: a trace queues for the CPU lock like the CPU benchmarks (only on a cache miss).
    """
    from ui.resources import cpu_lock

    with cpu_lock().hold(f"memory trace of {', '.join(names)}"):
        return run_in_child([(name, n) for name in names])


def trace_size_ui(names: tuple[str, ...], key: str) -> int | None:
    """The traced size N the learner chose for these lab kernels (one size for all), or None after an error shown.

    A number input bounded by the smallest of their bounds (``MAX_TRACE_WORK`` of work: N, N × N or N³);
    every kernel's own check then runs on the value, so a refused size says what is wrong and what is allowed.
    """
    from gpu.trace.lab import find

    kernels = [find(name) for name in names]
    most = min(k.max_n for k in kernels)
    default = min(min(k.default_n for k in kernels), most)
    n = st.number_input(
        "Traced size N",
        min_value=1,
        max_value=most,
        value=default,
        step=1,
        key=key,
        help=f"The problem size each step is traced at (default {default:,}: small enough that every block is "
        f"traced and drawn). At most {most:,} here: a trace's work ({kernels[0].work_help}) is bounded by "
        f"{MAX_TRACE_WORK:,} so that it stays interactive; at most 8 blocks are traced whatever the size.",
    )
    try:
        for kernel in kernels:
            kernel.check_n(n)
    except InputError as exc:
        st.error(f"Traced size: {exc}", icon=":material/error:")
        return None
    return int(n)


def sites_table(report: TraceReport) -> pd.DataFrame:
    """One row per access site: line, the expression, memory, what a warp's request costs."""
    rows = []
    for s in report.sectors:
        rows.append(
            {
                "line": s.line,
                "access": f"{s.kind} {s.text}",
                "memory": "global",
                "per warp request": f"{s.sectors_per_request:.1f} sectors (ideal {s.ideal_sectors_per_request:.1f})",
                "requests": s.requests,
            }
        )
    for b in report.banks:
        rows.append(
            {
                "line": b.line,
                "access": f"{b.kind} {b.text}",
                "memory": "shared",
                "per warp request": "no bank conflict"
                if b.max_ways <= 1
                else f"{b.ways:.1f}-way bank conflict (max {b.max_ways})",
                "requests": b.requests,
            }
        )
    return (
        pd.DataFrame(rows).sort_values(["line", "memory"], kind="stable").reset_index(drop=True)
        if rows
        else pd.DataFrame()
    )


def lesson(report: TraceReport) -> str:
    """The one sentence a step's trace teaches: its worst global access and its worst shared one."""
    parts = []
    if report.sectors:
        worst = max(report.sectors, key=lambda s: (s.excess, s.sectors_per_request))
        parts.append(
            f"the {worst.kind} `{worst.text}` (line {worst.line}) touches **{worst.sectors_per_request:.1f} sectors** "
            f"per warp request (ideal {worst.ideal_sectors_per_request:.1f})"
        )
    if report.banks:
        worst_b = max(report.banks, key=lambda b: b.ways)
        parts.append(
            "shared memory has no bank conflicts"
            if worst_b.max_ways <= 1
            else f"the shared {worst_b.kind} `{worst_b.text}` (line {worst_b.line}) is a **{worst_b.ways:.0f}-way bank "
                 "conflict**"
        )
    intervals = report.barrier_intervals
    parts.append(
        "no barrier" if intervals == 1 else f"**{intervals} barrier intervals** per block ({intervals - 1} syncthreads)"
    )
    if report.collectives:
        parts.append(f"warp collectives: **{report.collectives_text()}** (values between lanes, not memory)")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."  # not str.capitalize(): it lowercases the code in the sentence


def show_findings(report: TraceReport) -> None:
    """Clean in green, or every race, out-of-bounds access and divergence with thread and line."""
    if report.problems:
        st.error(report.headline(), icon=":material/error:")
        for item in (*report.races, *report.out_of_bounds, *report.divergence):
            st.markdown(f"- {shown(item)}")
        if report.error:
            st.markdown(f"- the kernel stopped: {shown(report.error)}")
    else:
        st.success(report.headline(), icon=":material/check_circle:")


MAPS_KEY = "trace.maps"  # session dict: a picture's key -> (what it was drawn from, its SVG)


def map_svg(key: str, report: TraceReport, frame: pd.DataFrame, threads: Iterable[int], title: str) -> str:
    """The access map of ``threads`` in ``frame`` (``report``'s picture, or a part of it that depends on ``key``
    alone), built once per picture and choice in this session: the report, the threads and the title are compared
    with those last drawn under ``key``, and the page's other runs (each pause in typing in the editor, a hint
    opened) send the kept SVG again. One is kept per picture on the page (its widget key)."""
    maps = st.session_state.setdefault(MAPS_KEY, {})
    drawn_from = (report, tuple(threads), title)
    held = maps.get(key)
    if held is not None and held[0] == drawn_from:
        return held[1]
    svg = charts.access_map_svg(frame, threads, title, report.label)
    maps[key] = (drawn_from, svg)
    return svg


def draw_map(svg: str, where=st) -> None:
    """An access map on the page (``where``: a column, or the page): as Markdown that allows HTML, since ``st.html``
    keeps HTML only and drops an SVG whole (its text is escaped by ``charts.access_map_svg``)."""
    where.markdown(svg, unsafe_allow_html=True)


def show_picture(report: TraceReport, key: str) -> None:
    """The access map for one warp or one thread, picked with a slider; or why there is none."""
    if report.picture is None:
        st.caption(
            f"No picture: it is drawn for launches of up to a few blocks, fully traced ({report.blocks_total:,} "
            f"block{'s' if report.blocks_total != 1 else ''} here)."
        )
        return
    if not report.picture:
        st.caption("No picture: the launch recorded no memory access" + (
            " (the kernel stopped before it made one)." if report.error else "."))
        return
    frame = pd.DataFrame(list(report.picture))
    left, right = st.columns([1, 3])
    unit = left.radio(
        "Show",
        ["one warp", "one thread"],
        horizontal=True,
        key=f"{key}.unit",
        help="A warp's 32 threads issue each load and store together: that is what sectors per request counts.",
    )
    last = int(frame["global_thread"].max())
    if unit == "one warp":
        warp = right.slider("Warp (global id: block × warps per block + warp)", 0, last // WARP, 0, key=f"{key}.warp")
        first = warp * WARP
        threads: range | list[int] = range(first, first + WARP)
        who = f"warp {warp} (threads {first:,}–{first + WARP - 1:,})"
    else:
        thread = right.slider("Thread (global id)", 0, last, 0, key=f"{key}.thread")
        threads = [thread]
        row = frame[frame["global_thread"] == thread].head(1)
        who = (
            f"thread {row['thread'].iloc[0]} of block {row['block'].iloc[0]}"
            if len(row)
            else f"thread {thread} (made no access)"
        )
    title = f"What {who} read and wrote (grey: other threads' cells)"
    draw_map(map_svg(key, report, frame, threads, title))


def show_kernel_traces(spec) -> None:
    """The Kernels page's section: every step traced at a size the learner picks, compared, then step by step."""
    st.subheader("What the trace shows")
    glossary.caption(
        "Each step runs once at a small size in Kernel Lab's CUDA simulator with every global and shared memory "
        "access recorded (on a GPU machine too, in a separate process): races (threads not ordered by a "
        "syncthreads, or within a warp by a syncwarp; a plain store against an atomic included), out-of-bounds "
        "accesses and barrier divergence with the thread and line, 32-byte sectors per warp request (as Nsight "
        "Compute counts them) and shared-memory bank conflicts. Warp shuffles run too: they move values between "
        "lanes, not memory, so they are counted, not drawn. " + CANNOT_SEE
    )
    if not st.toggle(
        "Trace every step", key="trace.kernels.on", help="A few seconds per kernel the first time; then cached."
    ):
        return
    names = tuple(f"{spec.key}-{s.key}" for s in spec.steps)
    n = trace_size_ui(names, key=f"trace.kernels.{spec.key}.n")
    if n is None:
        return
    with st.spinner(f"Tracing {len(names)} steps in the simulator…"):
        try:
            results = cached_traces(names, n)
        except TraceFailed as exc:
            st.error(f"The trace did not finish: {exc}.", icon=":material/error:")
            return
    reports = {s.key: r for s, r in zip(spec.steps, results)}
    sector_rows = [
        {
            "step": s.label,
            "access": f"line {x.line} {x.kind} {x.text}",
            **{k: getattr(x, k) for k in ("sectors_per_request", "ideal_sectors_per_request")},
        }
        for s in spec.steps
        if isinstance(reports[s.key], TraceReport)
        for x in reports[s.key].sectors
    ]
    if sector_rows:
        st.altair_chart(
            charts.sectors_chart(pd.DataFrame(sector_rows), "Global memory: sectors per warp request, step by step"),
            width="stretch",
        )
    tabs = st.tabs([s.label for s in spec.steps])
    for tab, step in zip(tabs, spec.steps):
        with tab:
            report = reports[step.key]
            if isinstance(report, str):
                st.warning(report)
                continue
            glossary.markdown(lesson(report))
            show_findings(report)
            st.table(sites_table(report), hide_index=True)  # (``show_submission_trace``: why a plain table)
            show_picture(report, key=f"trace.kernels.{spec.key}.{step.key}")
            glossary.caption(f"{report.label}: {report.blocks_traced:,} of {report.blocks_total:,} blocks of "
                       f"{report.threads_per_block:,} threads traced, {report.accesses:,} accesses recorded. "
                       f"Line numbers are those of {report.source}."
                       + "".join(f" {note}" for note in report.notes if note.startswith("This step launches")))


def show_coalescing_demo() -> None:
    """Launch config: the same data read by consecutive threads, then by threads 32 elements apart."""
    st.subheader("Coalesced and strided: the same data, read two ways")
    st.caption(
        "Both kernels copy every element of a once. In the first, thread i reads a[i]; in the second, neighbouring "
        "threads read elements 32 apart. The trace counts the 32-byte sectors each warp's load touches."
    )
    if not st.toggle("Trace both kernels", key="trace.launch.on", help="A few seconds the first time; then cached."):
        return
    with st.spinner("Tracing in the simulator…"):
        try:
            coalesced, strided = cached_traces(("copy-coalesced", "copy-strided"))
        except TraceFailed as exc:
            st.error(f"The trace did not finish: {exc}.", icon=":material/error:")
            return
    cols = st.columns(2)
    for col, report, name in (
        (cols[0], coalesced, "coalesced: a[i]"),
        (cols[1], strided, "strided: 32 elements apart"),
    ):
        load = next(s for s in report.sectors if s.kind == "read")
        col.metric(
            f"Sectors per warp load, {name}",
            f"{load.sectors_per_request:.0f}",
            help=f"Ideal: {load.ideal_sectors_per_request:.0f} (32 float32 = 128 bytes). Line {load.line}: {load.text}",
        )
        frame = pd.DataFrame(list(report.picture or ()))
        if not frame.empty:
            frame = frame[frame["array"].str.startswith("a ")]
            draw_map(map_svg(f"trace.launch.{name}", report, frame, range(WARP), "What warp 0 of block 0 reads"), col)


def submission_test_ui(problem) -> str | None:
    """Write a kernel: which of the problem's functional tests the trace runs (its size), or None for the default.

    Bounded by construction: a problem's tests are small, and the trace runs at most 8 blocks of any.
    """
    sizes = {c.name: ", ".join(f"{k} = {v:,}" for k, v in c.sizes.items()) for c in problem.tests}
    # the default is an option of its own, not None: Streamlit draws a selectbox whose kept value is None with no
    # option chosen ("Choose an option"), which the default read as from the page's second run on
    chosen = st.selectbox(
        "Trace at the size of test",
        [AUTOMATIC, *(name for name in sizes if name != AUTOMATIC)],
        format_func=lambda name: f"{name} ({sizes[name]})" if name != AUTOMATIC
        else "automatic: the smallest test where every loop runs twice and every block shape appears",
        key=f"{SUBMISSION_KEY}.test.{problem.key}",
        help="After the verdict, one test is run again in the simulator with every memory access recorded. "
        "Choose which one: a small test is easy to read in the picture, a larger one shows more blocks.",
    )
    return None if chosen == AUTOMATIC else chosen


def show_submission_trace(problem: str, report) -> None:
    """Write a kernel: races, out-of-bounds accesses, divergence and coalescing of the submission, per line.
    ``report``: the submission's trace (a TraceReport, or one line saying why there is none; None: not traced)."""
    if report is None:
        return
    st.markdown("**What the trace shows**: one test run again in the simulator with every memory access recorded.")
    if isinstance(report, str):
        st.caption(report)
        return
    glossary.markdown(lesson(report))
    show_findings(report)
    sites = sites_table(report)
    if not sites.empty:  # a kernel that touched no memory has no sites: no empty table
        # a row per access site of the source: a few rows of text read (and search) best as a plain table, and it
        # draws in a fraction of a grid's time (a class's pages draw their traces at once: four pages of Write a
        # kernel spent about 1.3 s less of headless Chromium's CPU on their traces with a table than with a grid)
        st.table(sites, hide_index=True)
    show_picture(report, key=f"trace.write_kernel.{problem}")
    glossary.caption(f"{report.label}: {report.blocks_traced:,} of {report.blocks_total:,} blocks traced, "
               f"{report.accesses:,} accesses recorded. " + CANNOT_SEE)
