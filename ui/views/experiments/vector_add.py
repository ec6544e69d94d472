"""Widgets and result display for the Vector add page."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gpu.core import cpu
from gpu.core.device import device_info
from gpu.core.limits import (
    SIMULATED_THREAD_COST,
    SIMULATOR_MAX_N,
    kernel_cap,
    load_config,
    max_cpu_vector_n,
    max_vector_n,
)
from gpu.core.timing import ALLOCATION_RULE, format_seconds
from gpu.core.words import format_gbps, times_words
from gpu.experiments.vector_add.experiment import EXPERIMENT, vectorised
from gpu.experiments.vector_add.partial import PartialRun
from gpu.experiments.vector_add.report import (
    article_in_words,
    explain_difference,
    recorded_pinned_s,
    vector_add_sentence,
)
from gpu.experiments.vector_add.result import VectorAddRun
from gpu.service.references import ReferenceRun
from ui import glossary
from ui.charts import common as charts
from ui.downloads import download
from ui.forms import stale_key
from ui.reference import show_article_figures

RESULT_KEY = "vector_add.result"


def limits_caption() -> str:
    """The limits a Vector add run is admitted under, next to the form."""
    admission, fast = load_config(), vectorised()
    cap = kernel_cap(vectorised=fast)
    if cap is not None:  # the simulator: the CPU runs at N, the simulated kernel at most at its cap
        cost = "the simulator's vectorised tier" if fast else f"about {SIMULATED_THREAD_COST}"
        return (
            f"Limits here: N ≤ {max_cpu_vector_n():,} (free host memory and this server's limit); the CPU runs at N, "
            "the "
            f"simulated kernel at most at N = {cap:,} ({cost}); threads per block "
            f"1–{device_info().max_threads_per_block}; repeats 1–{admission.max_repeats}; simulated N × passes ≤ "
            f"{admission.max_work:,}; "
            f"CPU N × passes ≤ {admission.max_cpu_work:,} per NumPy/Numba implementation, together."
        )
    limit = max_vector_n()
    return (
        f"Limits here: N ≤ {limit:,} (free memory{' and the simulator cap' if limit <= SIMULATOR_MAX_N else ''}, "
        f"and this server's limit); threads per block 1–{device_info().max_threads_per_block}; "
        f"repeats 1–{admission.max_repeats}; N × passes ≤ {admission.max_work:,}."
    )


def show_stale_note(run: VectorAddRun) -> None:
    """Say that the result below belongs to earlier inputs when the last Run press was refused."""
    if st.session_state.get(stale_key(EXPERIMENT)):
        st.warning(
            f"The inputs above were rejected, so nothing new ran: the results below are from the previous run "
            f"(N = {run.n:,}, {run.threads_per_block} threads per block, {run.gpu['total'].n_samples} repeats).",
            icon=":material/history:",
        )


def describe(run: VectorAddRun) -> str:
    """What was measured, how many samples, on what: the subtitle of every chart."""
    samples = run.gpu["total"].n_samples
    size = f"CPU at N = {run.n:,}, simulated kernel at N = {run.kernel_n:,}" if run.gpu_capped else f"N = {run.n:,}"
    return (
        f"{size} float32 · {run.blocks_per_grid:,} blocks × {run.threads_per_block} threads · "
        f"{samples} samples after {run.policy.warmup} warm-up · {run.device.name} ({run.backend})"
    )


def show_agreement(run: VectorAddRun) -> None:
    rows = [a.to_dict() for a in run.agreement.values()]
    if run.agree and run.gpu_capped:
        st.success(
            f"Results agree: every implementation is bit-identical to NumPy (the CPU's at N = {run.n:,}, the simulated "
            f"kernel's at N = {run.kernel_n:,}, where it ran; max |difference| 0).",
            icon=":material/check_circle:",
        )
    elif run.agree:
        st.success(
            f"Results agree: every implementation is bit-identical to NumPy ({run.n:,} of {run.n:,} elements, max "
            "|difference| 0).",
            icon=":material/check_circle:",
        )
    else:
        bad = [a.implementation for a in run.agreement.values() if not a.passed]
        st.error(f"Results differ from NumPy for: {', '.join(bad)}. See the table below.", icon=":material/error:")
    skipped = [t.name for t in run.cpu.values() if t.stats is None]
    if skipped:
        st.caption(f"Not checked (not run): {', '.join(cpu.LABELS[s] for s in skipped)}.")
    with st.expander("Agreement details"):
        st.dataframe(agreement_table(rows), hide_index=True)


def agreement_table(rows: list[dict]) -> pd.DataFrame:
    """``BitAgreement.to_dict()`` rows with the names a reader knows, not the code's."""
    names = {**cpu.LABELS, "gpu": "GPU kernel"}
    table = pd.DataFrame(rows)
    table["implementation"] = [names.get(i, i) for i in table["implementation"]]
    return table.rename(
        columns={
            "n": "elements compared",
            "identical": "bit-identical",
            "mismatches": "elements that differ",
            "max_abs_diff": "max |difference|",
            "allclose": "within np.allclose",
            "passed": "agrees",
        }
    )


def show_metrics(run: VectorAddRun) -> None:
    """Speedups in words ("about 320x faster than NumPy"), times and bandwidth with units."""
    simulated = run.backend == "simulator"
    if run.gpu_capped or simulated:  # a simulated time is never a headline, nor a ratio against one
        show_capped_metrics(run)
        return
    cols = st.columns(4)
    for col, baseline in zip(cols[:2], ("python", "numpy")):
        end_to_end, kernel = run.speedup(baseline, "total"), run.speedup(baseline, "kernel")
        name = cpu.LABELS[baseline].split(" (")[0]
        if end_to_end is None or kernel is None:
            col.metric(f"GPU vs {name}", "not run", help=f"{cpu.LABELS[baseline]} was not chosen.")
            continue
        tag = " (estimate)" if end_to_end.estimated else ""
        col.metric(
            f"GPU end to end vs {name}{tag}",
            _ratio(end_to_end.factor),
            help=f"{cpu.LABELS[baseline]} median ÷ GPU wall-clock end-to-end median (copies included): the GPU is "
                 f"{times_words(end_to_end.factor, name, simulated=simulated)}.",
        )
        col.metric(
            f"Kernel only vs {name}{tag}",
            _ratio(kernel.factor),
            help=f"{cpu.LABELS[baseline]} median ÷ kernel median: the kernel is "
                 f"{times_words(kernel.factor, name, simulated=simulated)}.",
        )
    cols[2].metric(
        "Kernel time (median)",
        format_seconds(run.gpu["kernel"].median_s),
        help=f"{run.gpu['kernel'].n_samples} samples.",
    )
    if run.compile_s >= 1e-6:
        cols[2].metric(
            "Kernel compile (once)",
            format_seconds(run.compile_s),
            help="JIT compile, or load from Numba's cache; excluded from every timing.",
        )
    else:
        cols[2].metric(
            "Kernel compile (once)",
            "cached",
            help="Already compiled by this process earlier (nothing to measure); compiling is excluded from every "
                 "timing.",
        )
    cols[3].metric(
        "Kernel bandwidth",
        format_gbps(run.kernel_bandwidth_gbps),
        help="12 bytes per element (read a, b; write c) ÷ kernel median."
        + (" Simulated: not GPU performance." if simulated else ""),
    )
    cols[3].metric("GPU end to end (median)", format_seconds(run.gpu["total"].median_s))


def show_capped_metrics(run: VectorAddRun) -> None:
    """In the simulator: your CPU's times at your N (real, measured now) and the launch's shape; no GPU time."""
    where = (f"the simulated kernel ran at N = {run.kernel_n:,}, the simulator's cap" if run.gpu_capped
             else "the simulated kernel ran at the same N")
    st.caption(
        f"Your CPU at N = {run.n:,}, measured now; {where}. Simulated kernel times are in the chart and table below, "
        "marked simulated: the simulator runs each GPU thread in Python, so they say nothing about a GPU."
    )
    cols = st.columns(4)
    for col, name in zip(cols, ("python", "numpy", "numba-parallel")):
        timing = run.cpu.get(name)
        label = f"Your {cpu.LABELS[name].split(' (')[0]}" if name != "numba-parallel" else "Your Numba parallel"
        if timing is None:
            col.metric(label, "not run", help=f"{cpu.LABELS[name]} was not chosen.")
        else:
            col.metric(
                label,
                ("estimate " if timing.estimated else "") + format_seconds(timing.median_s),
                help=timing.skipped
                or (f"Median of {timing.stats.n_samples} samples at N = {run.n:,} on this machine's CPU, measured now."
                    if timing.stats is not None else None),
            )
    idle = run.blocks_per_grid * run.threads_per_block - run.kernel_n
    cols[3].metric(
        "GPU launch",
        f"{run.blocks_per_grid:,} × {run.threads_per_block}",
        help=f"Blocks × threads per block at N = {run.kernel_n:,}: {idle:,} idle threads, masked off by the guard. "
        "The recorded real GPU's times are beside your CPU's above.",
    )


def _ratio(factor: float) -> str:
    """The metric value, short enough for a quarter of the page: "320x faster", "920kx slower" (never 7.1e-06x)."""
    from gpu.core.words import factor_text

    if factor != factor or factor <= 0:
        return "—"
    if 0.95 <= factor <= 1.05:
        return "about as fast"
    return f"{factor_text(factor if factor > 1 else 1 / factor, compact=True)} {'faster' if factor > 1 else 'slower'}"


def samples_frame(run: VectorAddRun) -> pd.DataFrame:
    """The samples download's rows: integer N, seconds, the backend; the metadata lives in the JSON download."""
    frame = run.to_frame()
    frame["n"] = frame["n"].astype("int64")
    return frame.drop(columns=["backend"]).assign(backend=run.backend)


def stats_table(run: VectorAddRun) -> pd.DataFrame:
    frame = run.to_frame()
    table = charts.summarise(frame)
    columns = ["measure", "median_ms", "min_ms", "max_ms", "samples", "kind"]
    if run.gpu_capped:  # two sizes in one table: each row says its own
        n_of = charts.label_measures(frame).groupby("measure")["n"].first()
        table["N"] = table["measure"].map(n_of)
        columns.insert(1, "N")
    if run.backend == "simulator":  # each GPU row says whose time it is
        gpu_rows = table["measure"].isin([*charts.GPU_PHASE_ORDER, charts.MEASURE_LABELS[("gpu", "total")]])
        table.loc[gpu_rows, "measure"] = table.loc[gpu_rows, "measure"] + " (simulated)"
    for col in ("median_ms", "min_ms", "max_ms"):  # "1.16 s", "912 ns": a unit that fits, not 1164.6192 or 0.0009 ms
        table[col] = [format_seconds(ms / 1e3) for ms in table[col]]
    return table[columns].rename(columns={"median_ms": "median", "min_ms": "min", "max_ms": "max"})


def show_run(run: VectorAddRun) -> None:
    """Everything about one run: agreement, metrics, charts, table, downloads, article."""
    from ui.views import cpu_vs_recorded

    article = run.article
    show_stale_note(run)
    for warning in run.warnings:
        st.warning(warning, icon=":material/warning:")
    if run.gpu_capped and (note := run.gpu_note):
        st.info(
            f"{note[0].upper()}{note[1:]}. The GPU figures to compare with are the recorded real "
            "GPU's, "
            "below; the simulated kernel's own are further down, labelled with their N.",
            icon=":material/memory:",
        )
    show_agreement(run)
    if run.backend == "simulator":
        cpu_vs_recorded.show_vector_add(run)
    show_metrics(run)
    subtitle = ("GPU times SIMULATED, not GPU performance · " if run.backend == "simulator" else "") + describe(
        run
    )  # first: long subtitles are cut at the end
    frame = run.to_frame()
    if run.backend == "simulator":  # simulated times are never charted beside real ones, nor ranked by phase
        st.altair_chart(
            charts.time_comparison_chart(
                frame[frame["implementation"] != "gpu"], f"your CPU, measured now, at N = {run.n:,}"
            ),
            width="stretch",
        )
        st.caption(
            f"The simulated kernel (N = {run.kernel_n:,}) is not charted: its times measure Python on this CPU, not "
            "a GPU, so they are listed in the table below, marked simulated, and compared with nothing. The recorded "
            "GPU's phases are under **On a real GPU**."
        )
    else:
        st.altair_chart(charts.time_comparison_chart(frame, subtitle), width="stretch")
        st.altair_chart(charts.gpu_breakdown_chart(frame, subtitle), width="stretch")
    st.subheader("Statistics")
    glossary.caption(
        "Wall clock for CPU and GPU end to end; CUDA events for GPU "
        f"phases{' (wall clock in the simulator)' if run.backend == 'simulator' else ''}. {run.policy.describe()}. "
        f"Rules: {ALLOCATION_RULE}; the L2 is flushed before every GPU sample; the kernel alone is timed behind a "
        "verified stream hold "
        f'({run.gpu["kernel"].retries} samples retried with a longer hold); a figure from fewer than 3 samples is '
        'marked "n<3".'
    )
    st.dataframe(stats_table(run), hide_index=True, width="stretch")
    from ui.telemetry_note import show_telemetry

    show_telemetry(run.telemetry, "run")
    left, right = st.columns(2)
    download("Download run (JSON)", run.to_dict(), f"vector_add_{run.n}.json", "application/json",
             key="download_json", stamp=True, where=left)
    download(
        "Download samples (CSV)",
        samples_frame(run),
        f"vector_add_{run.n}.csv",
        "text/csv",
        key="download_csv",
        stamp=True,
        where=right,
        help="One row per sample: implementation, phase, sample, seconds, estimated, n, methodology_version. The "
             "run's settings and device are in the JSON download.",
    )
    if article is not None:
        st.subheader("As in the article")
        gpu_at = " (simulated)" if run.backend == "simulator" else ""
        if article.n < run.n:
            st.caption(
                f"The article's method ran at N = {article.n:,}, the simulator's cap, on both sides, so its speedup "
                "compares one N; "
                f"your CPU at N = {run.n:,} is compared with the recorded GPU above."
            )
        left, right = st.columns(2)
        left.markdown("**The article's method** (copy a, b *and* c in; mean of 3 wall-clock runs)")
        lines = article.lines()
        if run.backend == "simulator":  # a ratio against a simulated GPU time is no speedup
            lines = [*lines[:-1], "GPU speedup: not computed (the GPU time is simulated)"]
        left.code("\n".join(lines), language=None)
        sizes = f"; CPU at N = {run.n:,}, simulated GPU at N = {run.kernel_n:,}" if run.gpu_capped else ""
        right.markdown(
            f"**The careful method** (output allocated on the device; phases timed with events; medians{sizes})"
        )
        right.code(
            "\n".join(
                [
                    f"Results bit-identical: {run.agree}",
                    f"CPU (Python loop): {run.cpu['python'].median_s:.6f} "
                    f"seconds{' (estimated)' if run.cpu['python'].estimated else ''}"
                    if "python" in run.cpu
                    else "CPU (Python loop): not run",
                    f"GPU end to end: {run.gpu['total'].median_s:.6f} seconds{gpu_at}",
                    f"GPU kernel only: {run.gpu['kernel'].median_s:.6f} seconds{gpu_at}",
                ]
            ),
            language=None,
        )
        st.caption(article_in_words(article))
        if run.backend != "simulator":  # its shares of a simulated time would be read as the GPU's
            st.info(explain_difference(article, run), icon=":material/lightbulb:")


def show_partial(partial: PartialRun[VectorAddRun]) -> None:
    """A run still going: what is measured so far (agreement, chart, table) and, in the table, each row still
    running named and marked so, with no number. Redrawn in one place by ``run_declared``; no download, no
    History row: those are the completed run's (``show_run``)."""
    run = partial.run
    st.info(partial.status_line(), icon=":material/hourglass_top:")
    names = {**cpu.LABELS, "gpu": "GPU kernel" + (f" (simulated, N = {run.kernel_n:,})" if run.gpu_capped else "")}
    if run.agree:
        checked = ", ".join(names[a.implementation] for a in run.agreement.values())
        st.success(f"Bit-identical to NumPy so far: {checked}.", icon=":material/check_circle:")
    else:
        bad = ", ".join(names[a.implementation] for a in run.agreement.values() if not a.passed)
        st.error(f"Results differ from NumPy for: {bad}.", icon=":material/error:")
    frame = run.to_frame()
    if run.backend == "simulator":  # as in show_run: simulated times are tabled, never charted
        frame = frame[frame["implementation"] != "gpu"]
    if not frame.empty:
        where = f"your CPU, measured now, at N = {run.n:,}" if run.backend == "simulator" else describe(run)
        st.altair_chart(charts.time_comparison_chart(frame, f"so far: {where}"), width="stretch")
    running = pd.DataFrame({"measure": partial.running_labels, "median": "still running", "kind": "still running"})
    measured = stats_table(run)
    if "N" in measured:
        measured["N"] = [f"{n:,}" for n in measured["N"]]
    measured = measured.astype(str)  # text throughout: a row still running has no number in any column
    st.dataframe(pd.concat([measured, running], ignore_index=True).fillna(""), hide_index=True, width="stretch")


def recorded(ref: ReferenceRun) -> None:
    from ui.charts import common as charts

    run = VectorAddRun.recorded(ref)
    if run is None:  # Recorded.read refuses such a run at load; said here all the same
        raise LookupError(f"{ref.key} holds no vector add breakdown run")
    glossary.markdown(vector_add_sentence(run, recorded_pinned_s(ref)))
    article = ref.article()
    if article is not None:
        st.markdown(
            f"**{run.device.name}, the article's own method** (mean of 3 wall-clock runs, c copied in too): Python "
            "loop "
            f"{format_seconds(article['cpu_time_s'])}, GPU {format_seconds(article['gpu_time_s'])}, printed “GPU "
            f"speedup: {article['speedup']:.2f}x”."
        )
    show_article_figures()
    frame = run.to_frame()
    subtitle = f"recorded: {describe(run)}"
    st.altair_chart(charts.time_comparison_chart(frame, subtitle), width="stretch", key="reference.vector_add.times")
    st.altair_chart(charts.gpu_breakdown_chart(frame, subtitle), width="stretch", key="reference.vector_add.breakdown")
