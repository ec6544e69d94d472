"""Widgets and result display for the Launch config page (explorer, sweep, inspector)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gpu.catalog.render import to_json
from gpu.core.timing import format_seconds
from gpu.experiments.launch import charts as launch_charts
from gpu.experiments.launch.experiment import KIND_ONE_PER_ELEMENT, LaunchSweepRun
from gpu.experiments.launch.indexing import DRAW_LIMIT_THREADS, IndexingRun
from gpu.experiments.launch.report import explanation, launch_sentence
from gpu.kernels.inspect import KERNELS, KernelInspection, inspect_kernel
from gpu.service.references import ReferenceRun
from ui import glossary
from ui.downloads import download
from ui.views.compile_facts import show_kernel_facts

INDEXING_KEY = "launch.indexing"
SWEEP_KEY = "launch.sweep"


# --- the explorer ---------------------------------------------------------------------






def show_indexing(run: IndexingRun) -> None:
    """Summary metrics, the verification line, the thread grid (or why not), the records."""
    s = run.summary
    for warning in run.warnings:
        st.warning(warning)
    cols = st.columns(5)
    cols[0].metric(
        "Blocks launched",
        f"{s.blocks:,}",
        help="ceil(N / threads per block)" if not s.grid_stride else "chosen for the grid-stride launch",
    )
    cols[1].metric("Threads launched", f"{s.threads_launched:,}", help="blocks × threads per block")
    cols[2].metric(
        "Idle threads",
        f"{s.idle_threads:,}",
        help="Threads whose position ≥ N: the guard masks them off (grid-stride: they get no element).",
    )
    cols[3].metric(
        "Idle warps",
        f"{s.idle_warps:,} of {s.warps_launched:,}",
        help=f"Warps with no working lane. Another {s.partial_warps:,} warps are partly idle (some lanes masked, or "
             "missing because the block size is not a multiple of 32).",
    )
    cols[4].metric(
        "Last block wasted",
        f"{s.last_block_wasted_fraction:.1%}",
        help=f"{s.last_block_idle_threads} of its {s.threads_per_block} threads do nothing.",
    )
    if s.grid_stride:
        st.caption(
            f"Grid-stride: stride = blockDim.x × gridDim.x = {s.threads_per_block} × {s.blocks} = {s.stride:,}; each "
            f"thread adds {s.min_elements_per_thread}–{s.max_elements_per_thread} elements."
        )
    if run.probed:
        if run.passed:
            coverage = " Every element was added exactly once." if run.coverage_ok else ""
            st.success(
                f"The probe kernel's records for all {s.threads_launched:,} threads match `position = tx + bx * bw` "
                "computed in NumPy, "
                f"and c = a + b bit for bit.{coverage}",
                icon=":material/check_circle:",
            )
        else:
            st.error(
                f"The probe disagrees with the arithmetic: records match {run.records_match}, sums match "
                f"{run.sums_match}, coverage {run.coverage_ok}.",
                icon=":material/error:",
            )
    if run.note:
        st.info(run.note)
    if not run.drawable:
        return
    color_by = st.radio(
        "Colour cells by",
        ["block", "warp"],
        horizontal=True,
        key="indexing_color",
        help="Idle threads stay grey either way.",
    )
    frame = run.to_frame()
    subtitle = (
        f"N = {s.n:,} · {s.blocks:,} blocks × {s.threads_per_block} threads{' (grid-stride)' if s.grid_stride else ''} "
        "· "
        f"records from one probe launch on {run.device.name} ({run.backend})"
    )
    st.altair_chart(
        launch_charts.thread_grid_chart(frame, s.n, color_by, grid_stride=s.grid_stride, subtitle=subtitle),
        width="content",
    )
    if run.handled_by is not None and s.n <= DRAW_LIMIT_THREADS:
        st.altair_chart(
            launch_charts.element_owner_chart(run.handled_by, s.threads_per_block, subtitle), width="content"
        )
    with st.expander("Per-thread records (as the probe wrote them)"):
        st.dataframe(frame.rename(columns=PROBE_HEADERS), hide_index=True, width="stretch")


# the probe's fields, as a reader knows them (the formula column spells out tx, bx and bw)
PROBE_HEADERS = {
    "tx": "tx (threadIdx.x)",
    "bx": "bx (blockIdx.x)",
    "bw": "bw (blockDim.x)",
    "position": "position",
    "warp": "warp",
    "masked": "idle (masked by the guard)",
    "elements": "elements added",
    "lane": "lane in warp",
    "handled": "elements it handled",
    "formula": "how the position is computed",
}


# --- the sweep ------------------------------------------------------------------------





def describe_sweep(run: LaunchSweepRun) -> str:
    samples = run.configs[0].kernel.n_samples if run.configs else 0
    how = "CUDA events, kernel alone" if run.backend == "cuda" else "wall clock"
    tag = "SIMULATED, not GPU times · " if run.backend != "cuda" else ""  # first: long subtitles are cut at the end
    return (f"{tag}N = {run.n:,} float32 ({run.bytes_moved / 1e6:,.3g} MB moved per kernel) · {samples} samples per "
            f"configuration after {run.policy.warmup} warm-up ({how}) · {run.device.name} ({run.backend})")


def idle_threads(run: LaunchSweepRun, config) -> int:
    """Threads launched beyond N: the guard masks them off (a fact of the launch, not a measurement)."""
    return max(0, config.blocks * config.threads_per_block - run.n)


def sweep_table(run: LaunchSweepRun, frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per configuration: its shape, then its times ("218 ms", "6.1 µs") and bandwidth in units that fit."""
    from gpu.core.words import format_gbps

    table = launch_charts.sweep_summary(run.to_frame() if frame is None else frame)
    idle = {c.label: idle_threads(run, c) for c in run.configs}
    sim = " (simulated)" if run.backend == "simulator" else ""  # beside every simulated figure
    out = pd.DataFrame(
        {"configuration": table["label"], "blocks": table["blocks"], "idle threads": table["label"].map(idle)}
    )
    for col, name in (("median_us", "median"), ("min_us", "min"), ("max_us", "max")):
        out[f"{name}{sim}"] = [format_seconds(us / 1e6) for us in table[col]]
    out[f"bandwidth (median){sim}"] = [format_gbps(g) for g in table["bandwidth_gbps"]]
    if table["occupancy_pct"].notna().any():  # the simulator has none: no column of blanks
        out["occupancy"] = [f"{pct:.0f}%" if pct == pct else "—" for pct in table["occupancy_pct"]]
        out["occupancy from"] = table["occupancy_source"]
    out["samples"], out["marks"] = table["samples"], table["marks"]
    return out


def show_sweep(run: LaunchSweepRun) -> None:
    for warning in run.warnings:
        st.warning(warning)
    if run.agree:
        st.success(
            f"Every configuration produced c = a + b bit for bit ({run.n:,} elements each).",
            icon=":material/check_circle:",
        )
    else:
        bad = [c.label for c in run.configs if not c.agree]
        st.error(f"Wrong results for: {', '.join(bad)}.", icon=":material/error:")
    simulated = run.backend == "simulator"
    peak = run.device.peak_bandwidth_gbps
    if simulated:
        show_sweep_facts(run)
    else:
        best = run.best
        slowest = max(run.configs, key=lambda c: c.kernel.median_s)
        bw = run.bandwidth_gbps(best.kernel.median_s)
        st.markdown(
            f"**Best configuration:** {best.label} — {best.blocks:,} blocks × {best.threads_per_block} threads."
        )
        cols = st.columns(3)
        cols[0].metric("Best kernel time (median)", format_seconds(best.kernel.median_s))
        cols[1].metric(
            "Best bandwidth",
            f"{bw:,.3g} GB/s",
            help="12 bytes per element ÷ median kernel time"
            + (f"; {bw / peak:.0%} of the {peak:,.0f} GB/s theoretical peak" if peak else ""),
        )
        cols[2].metric(
            "Slowest ÷ best", f"{slowest.kernel.median_s / best.kernel.median_s:.2f}×", help=f"slowest: {slowest.label}"
        )
    subtitle = describe_sweep(run)
    frame = run.to_frame()
    if simulated:  # simulated times are not charted: a chart of them across configurations reads as a ranking
        frame["best"] = False  # and no configuration is "best" on them
        st.caption(
            "Simulated times are not charted across configurations: they measure Python on this CPU, so a chart "
            "would rank block sizes by something no GPU does. They are in the table below, marked simulated."
        )
    else:
        st.altair_chart(launch_charts.sweep_time_chart(frame, subtitle), width="stretch")
        st.altair_chart(launch_charts.sweep_bandwidth_chart(frame, subtitle, peak), width="stretch")
    st.info(explanation(run))
    if frame["occupancy"].notna().any():
        sources = sorted(set(frame["occupancy_source"]) - {"not available"})
        st.altair_chart(
            launch_charts.occupancy_chart(frame, f"{subtitle} · occupancy from: {', '.join(sources)}"), width="stretch"
        )
        st.caption(
            "Occupancy “driver” is cuOccupancyMaxActiveBlocksPerMultiprocessor for the compiled kernel; “calculated” "
            "is derived from its registers and the device's per-SM limits (approximate)."
        )
    else:
        glossary.caption("Occupancy: not available here (the simulator compiles nothing and has no multiprocessors).")
    shown = sweep_table(run, frame)
    st.dataframe(shown, hide_index=True, width="stretch", column_config=glossary.column_config(shown.columns))
    from ui.telemetry_note import show_telemetry  # marks and clocks beside the table

    glossary.caption(
        "Marks: n<3 = fewer than 3 samples (spread unknown); fits in L2 = a, b and c fit in the L2 (may be served from "
        "cache)."
    )
    show_telemetry(run.telemetry, "sweep")
    download("Download sweep (JSON)", to_json(run), f"launch_sweep_{run.n}.json", "application/json",
             key="sweep_download", stamp=True)


def show_sweep_facts(run: LaunchSweepRun) -> None:
    """The simulator's sweep, headed by what is real: agreement and each launch's shape; no time."""
    per_element = [c for c in run.configs if c.kind == KIND_ONE_PER_ELEMENT]
    most_idle = max(run.configs, key=lambda c: idle_threads(run, c))
    cols = st.columns(4)
    cols[0].metric("Configurations agree", f"{sum(c.agree for c in run.configs)} of {len(run.configs)}",
                   help="c = a + b checked bit for bit against NumPy after the timed runs.")
    cols[1].metric(
        "Blocks launched",
        f"{min(c.blocks for c in run.configs):,} to {max(c.blocks for c in run.configs):,}",
        help="One thread per element: ceil(N / threads per block). Grid-stride: a multiple of the multiprocessors.",
    )
    cols[2].metric(
        "Most idle threads",
        f"{idle_threads(run, most_idle):,}",
        help=f"{most_idle.label}: threads launched beyond N, masked off by the guard.",
    )
    cols[3].metric(
        "Block sizes tried",
        f"{len({c.threads_per_block for c in per_element or run.configs})}",
        help=", ".join(sorted({str(c.threads_per_block) for c in run.configs}, key=int)) + " threads per block.",
    )
    st.caption(
        "No time is a headline here: the simulator runs every GPU thread in Python, so its times (chart and table "
        "below, "
        "marked simulated) say nothing about a GPU. What is real: the agreement, each launch's shape, and the "
        "compiler's "
        "facts in the Kernel inspector tab."
    )


# --- the inspector --------------------------------------------------------------------


@st.cache_resource(max_entries=len(KERNELS), show_spinner="Compiling and inspecting the kernel…")
def cached_inspection(kernel: str) -> KernelInspection:
    """One inspection per kernel per process: the compiled code does not change."""
    return inspect_kernel(kernel)


def annotated_excerpt(result: KernelInspection, code: str = "PTX") -> str:
    """The pointed-out lines with their numbers and a comment saying what each does."""
    rows = [h for h in result.highlights if h.code == code]
    width = max((len(h.text) for h in rows), default=0)
    comment = "//" if code == "PTX" else "/*"
    return "\n".join(
        f"{h.line_no:>4}  {h.text:<{width}}  {comment} {h.role}: {h.note}{' */' if code == 'SASS' else ''}"
        for h in rows
    )


def article_source(source: str) -> str:
    """The kernel's source as the article writes it: ``@cuda.jit``, not the lab's cache switch."""
    import re

    return re.sub(r"@cuda\.jit\((?:cache=[^)]*)\)", "@cuda.jit", source)


def show_inspector() -> None:
    kernel = st.radio(
        "Kernel", list(KERNELS), format_func=lambda k: KERNELS[k][1], horizontal=True, key="inspect_kernel"
    )
    show_kernel_facts(KERNELS[kernel][0], key="launch.compile_target")  # the real compiler, here too
    try:
        result = cached_inspection(kernel)
    except Exception as exc:  # a toolkit problem must not break the page
        st.error(f"Could not compile or inspect the kernel: {exc}")
        return
    if not result.available:
        st.info(result.reason, icon=":material/info:")
        st.markdown(
            "**The kernel's Python source** — in the simulator this is what runs, one Python thread per GPU thread:"
        )
        st.code(article_source(result.source), language="python")
        return
    cols = st.columns(5)
    cols[0].metric("Registers per thread", result.regs_per_thread)
    cols[1].metric(
        "Local memory per thread", f"{result.local_mem_per_thread_bytes} B", help="Spills and local arrays; 0 is ideal."
    )
    cols[2].metric(
        "Shared memory per block",
        f"{result.shared_mem_per_block_bytes} B",
        help="Static shared memory; vector add uses none.",
    )
    cols[3].metric(
        "Max threads per block",
        result.max_threads_per_block,
        help="The largest block the device allows for this compiled kernel (registers can lower it).",
    )
    cols[4].metric("Constant memory", f"{result.const_mem_bytes} B")
    st.caption(
        f"{result.description} · {result.signature} · compute capability {result.compute_capability} · "
        f"{result.device_name}"
    )
    left, right = st.columns(2)
    left.markdown("**Python source**")
    left.code(article_source(result.source), language="python")
    right.markdown("**The PTX lines that do the work**")
    if result.highlights:
        right.code(annotated_excerpt(result, "PTX"), language=None)
    if result.roles_missing:
        why = (
            " Numba compiles `range(start, N, stride)` into a trip count computed up front, so the loop's bound "
            "shows up as that count compared with 0 or 1, not as `i < N`."
            if result.kernel == "grid_stride" else ""
        )
        right.caption(f"Not pointed out in this PTX: {', '.join(result.roles_missing)}.{why}")
    ptx = result.ptx or ""  # an available inspection holds its PTX
    with st.expander(f"Full PTX ({len(ptx.splitlines())} lines)"):
        st.code(ptx, language=None, line_numbers=True)
    if result.sass:
        with st.expander("SASS (the GPU's machine code, from nvdisasm)"):
            excerpt = annotated_excerpt(result, "SASS")
            if excerpt:
                st.code(excerpt, language=None)
            st.code(result.sass, language=None, line_numbers=True)
    else:
        st.caption(result.sass_note or "SASS not available.")


# --- launch overhead ------------------------------------------------------------------

OVERHEAD_KEY = "launch.overhead"



def show_launch_overhead(run) -> None:
    """The table, chart and breakdown of a ``LaunchOverheadRun``."""
    from gpu.experiments.launch.overhead import ENGINE_TARGET, PATHS, format_step

    rows = [
        {"path": PATHS[k], "median (µs)": v.median_s * 1e6, "min (µs)": v.min_s * 1e6, "max (µs)": v.max_s * 1e6,
         "samples": v.n_samples, "flag": "fewer than 3 samples" if v.few_samples else ""}
        for k, v in run.paths.items()
    ]
    simulated = run.backend == "simulator"
    if simulated:  # a simulated launch is a Python call into the simulator: nothing a GPU's driver does
        for row in rows:
            for column in ("median (µs)", "min (µs)", "max (µs)"):
                row[column.replace("(µs)", "(µs, simulated)")] = row.pop(column)
    show_launch_ladder(run)
    st.markdown("**Every path**")
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    if simulated:
        st.caption(
            "Simulated: each launch here is a Python call into the simulator, not a trip through a GPU's driver, so "
            "the paths are tabled and neither charted, ranked, differenced nor judged against the target. The "
            "recorded GPU's launch overheads are under **On a real GPU**."
        )
        for k, why in run.skipped.items():
            st.caption(f"{PATHS[k]}: skipped — {why}")
        return
    subtitle = f"{run.device.name} ({run.backend}); {run.launches_per_sample} launches per sample"
    st.altair_chart(launch_charts.launch_overhead_chart(run.to_frame(), subtitle), use_container_width=True)
    if run.engine_ratio is not None:
        verdict = "within" if run.engine_ratio <= ENGINE_TARGET else "NOT within"
        st.markdown(
            f"The engine's launch is **{run.engine_ratio:.2g}x** the fastest path with the same three array arguments "
            f"({PATHS[run.engine_baseline]}): "
            f"{verdict} the {ENGINE_TARGET:g}x target."
        )
    if run.breakdown():
        st.markdown(
            "Where the article's launch goes:\n" + "\n".join(f"- {w}: {format_step(s)}" for w, s in run.breakdown())
        )
    for k, why in run.skipped.items():
        st.caption(f"{PATHS[k]}: skipped — {why}")


def show_launch_ladder(run) -> None:
    """The vector add's launch rung by rung, article to CuPy; ranked against CuPy only on a GPU."""
    simulated = run.backend == "simulator"
    unit = "median (µs, simulated)" if simulated else "median (µs)"
    rows = []
    for rung in run.ladder():
        row = {"rung": rung["label"], unit: None if rung["median_s"] is None else rung["median_s"] * 1e6}
        if not simulated:
            row["÷ CuPy RawKernel"] = rung["vs_cupy"]
        row["note"] = f"skipped: {rung['skipped']}" if rung["skipped"] else ""
        rows.append(row)
    st.markdown("**The vector add's launch, rung by rung** (three device arrays; every path sampled round-robin, "
                "the garbage collector off)")
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def recorded(ref: ReferenceRun) -> None:
    from gpu.experiments.launch import charts as charts

    run = LaunchSweepRun.recorded(ref)
    if run is None:  # Recorded.read refuses such a run at load; said here all the same
        raise LookupError(f"{ref.key} holds no block-size sweep")
    glossary.markdown(launch_sentence(run))
    frame = run.to_frame()
    subtitle = f"recorded: {describe_sweep(run)}"
    st.altair_chart(charts.sweep_time_chart(frame, subtitle), width="stretch", key="reference.launch.time")
    st.altair_chart(
        charts.sweep_bandwidth_chart(frame, subtitle, run.device.peak_bandwidth_gbps),
        width="stretch",
        key="reference.launch.bandwidth",
    )
