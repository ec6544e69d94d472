"""Widgets and result display for the Vector add page."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from gpu.core import cpu
from gpu.service.admission import check_work, load_config
from gpu.core.limits import InputError, check_n, check_repeats, check_threads_per_block, max_vector_n, parse_size
from gpu.core.timing import format_seconds
from gpu.experiments.vector_add import ArticleRun, VectorAddRun, explain_difference
from gpu.report.words import format_gbps, times_words
from ui.charts import common as charts

RESULT_KEY = "vector_add.result"
REJECTED_KEY = "vector_add.rejected"  # the last Run press was refused: the result shown is older


@dataclass(frozen=True)
class VectorAddParams:
    n: int
    threads_per_block: int
    repeats: int
    cpu_impls: tuple[str, ...]
    article: bool


def form_ui(default_n: int, device_max_threads: int) -> VectorAddParams | None:
    """Draw the form; return validated parameters when Run was pressed, else None."""
    limit = max_vector_n()
    with st.form("vector_add"):
        left, mid, right = st.columns(3)
        n_text = left.text_input("N (elements per vector)", value=f"{default_n}", key="n", help=f"A whole number such as 1000000, 1e6 or 2^20. At most {limit:,} here.")
        tpb = mid.text_input("Threads per block", value="256", key="threads_per_block", help=f"A whole number from 1 to {device_max_threads}, such as 256 or 2^8; multiples of 32 keep every warp full.")
        repeats = right.text_input("Repeats", value="5", key="repeats", help="Timed runs after one warm-up run: a whole number such as 5 or 1e2.")
        impls = st.multiselect("CPU implementations", options=list(cpu.IMPLEMENTATIONS), default=list(cpu.IMPLEMENTATIONS), format_func=cpu.LABELS.get, key="cpu_impls")
        article = st.checkbox("Also run it as in the article (copy c in too, mean of three wall-clock runs)", value=True, key="article")
        submitted = st.form_submit_button("Run", type="primary")
    admission = load_config()
    st.caption(f"Limits here: N ≤ {limit:,} (free memory{' and the simulator cap' if limit <= 16_384 else ''}, and this server's limit); threads per block 1–{device_max_threads}; repeats 1–{admission.max_repeats}; N × (repeats + 1) ≤ {admission.max_work:,}.")
    if not submitted:
        return None
    try:
        n = check_n(n_text, limit)
        threads = parse_size(tpb, "threads per block")
        warnings = check_threads_per_block(threads, device_max_threads)
        params = VectorAddParams(
            n=n,
            threads_per_block=threads,
            repeats=check_repeats(parse_size(repeats, "repeats")),
            cpu_impls=tuple(impls),
            article=article,
        )
        check_work(params.n, params.repeats, config=admission)
    except InputError as exc:
        st.error(str(exc), icon=":material/error:")
        st.session_state[REJECTED_KEY] = True
        return None
    st.session_state[REJECTED_KEY] = False
    for warning in warnings:
        st.warning(warning, icon=":material/warning:")
    return params


@dataclass(frozen=True)
class VectorAddOutcome:
    """One press of Run: the careful run and, when asked for, the article's method.

    Saved to History as one record (the article's printout inside the run's), so History
    lists one row per Vector add run.
    """

    run: VectorAddRun
    article: ArticleRun | None = None

    def to_dict(self) -> dict:
        return self.run.to_dict() | ({"article": self.article.to_dict()} if self.article else {})


SIMULATED_S_PER_THREAD = 1.5e-4  # the simulator runs about 0.1-0.2 ms per GPU thread (DESIGN.md)


def plan_steps(params: VectorAddParams, simulated: bool) -> list[tuple[str, float]]:
    """The run's phases in order with an estimate of each (seconds), for the progress bar.

    Messages match what ``run_vector_add`` reports. In the simulator the kernel launches
    dominate (one simulated thread each); on a GPU everything but the Python loop is short.
    """
    from gpu.core.cpu import estimate_python_loop_s

    launches = params.repeats + 1
    per_launch = params.n * SIMULATED_S_PER_THREAD if simulated else 0.01
    python_s = min(estimate_python_loop_s(params.n), 10.0) * launches if "python" in params.cpu_impls else 0.0
    steps = [("compiling the kernel", 0.5), ("timing the GPU kernel and copies", launches * per_launch * (1 if simulated else 2))]
    for name in params.cpu_impls:
        steps.append((f"timing the CPU: {cpu.LABELS[name]}", python_s if name == "python" else 0.05 * launches + (0.5 if "numba" in name else 0)))
    if params.article:
        steps.append(("the article's method", 4 * per_launch + (python_s / launches * 3 if python_s else 0)))
    return steps


class PhaseProgress:
    """A progress bar that names the phase, its step number and the time left (estimated)."""

    def __init__(self, bar, steps: list[tuple[str, float]], simulated: bool):
        self.bar, self.steps, self.simulated = bar, steps, simulated
        self.total = sum(w for _m, w in steps) or 1.0

    def __call__(self, message: str) -> None:
        index = next((i for i, (m, _w) in enumerate(self.steps) if message.startswith(m)), None)
        if index is None:
            return
        done = sum(w for _m, w in self.steps[:index])
        left = self.total - done
        where = " in the simulator" if self.simulated else ""
        self.bar.progress(min(done / self.total, 0.99), text=f"Step {index + 1} of {len(self.steps)}: {message} — about {_eta(left)} left{where} (estimate)")

    def finish(self) -> None:
        self.bar.empty()


def _eta(seconds: float) -> str:
    if seconds < 2:
        return "a second"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


def estimate_text(params: VectorAddParams, simulated: bool) -> str:
    total = sum(w for _m, w in plan_steps(params, simulated))
    return f"This run should take about {_eta(total)}" + (" in the simulator (about 0.15 ms per simulated GPU thread)." if simulated else ".")


def show_stale_note(run: VectorAddRun) -> None:
    """Say that the result below belongs to earlier inputs when the last Run press was refused."""
    if st.session_state.get(REJECTED_KEY):
        st.warning(
            f"The inputs above were rejected, so nothing new ran: the results below are from the previous run "
            f"(N = {run.n:,}, {run.threads_per_block} threads per block, {run.gpu['total'].n_samples} repeats).",
            icon=":material/history:",
        )


def describe(run: VectorAddRun) -> str:
    """What was measured, how many samples, on what: the subtitle of every chart."""
    samples = run.gpu["total"].n_samples
    return (
        f"N = {run.n:,} float32 · {run.blocks_per_grid:,} blocks × {run.threads_per_block} threads · "
        f"{samples} samples after {run.policy.warmup} warm-up · {run.device.name} ({run.backend})"
    )


def show_agreement(run: VectorAddRun) -> None:
    rows = [a.to_dict() for a in run.agreement.values()]
    if run.agree:
        st.success(f"Results agree: every implementation is bit-identical to NumPy ({run.n:,} of {run.n:,} elements, max |difference| 0).", icon=":material/check_circle:")
    else:
        bad = [a.implementation for a in run.agreement.values() if not a.passed]
        st.error(f"Results differ from NumPy for: {', '.join(bad)}. See the table below.", icon=":material/error:")
    skipped = [t.name for t in run.cpu.values() if t.stats is None]
    if skipped:
        st.caption(f"Not checked (not run): {', '.join(cpu.LABELS[s] for s in skipped)}.")
    with st.expander("Agreement details"):
        st.dataframe(pd.DataFrame(rows), hide_index=True)


def show_metrics(run: VectorAddRun) -> None:
    """Speedups in words ("about 320x faster than NumPy"), times and bandwidth with units."""
    simulated = run.backend == "simulator"
    cols = st.columns(4)
    for col, baseline in zip(cols[:2], ("python", "numpy")):
        end_to_end, kernel = run.speedup(baseline, "total"), run.speedup(baseline, "kernel")
        name = cpu.LABELS[baseline].split(" (")[0]
        if end_to_end is None:
            col.metric(f"GPU vs {name}", "not run", help=f"{cpu.LABELS[baseline]} was not chosen.")
            continue
        tag = " (estimate)" if end_to_end.estimated else ""
        col.metric(f"GPU end to end vs {name}{tag}", _ratio(end_to_end.factor),
                   help=f"{cpu.LABELS[baseline]} median ÷ GPU wall-clock end-to-end median (copies included): the GPU is {times_words(end_to_end.factor, name, simulated=simulated)}.")
        col.metric(f"Kernel only vs {name}{tag}", _ratio(kernel.factor),
                   help=f"{cpu.LABELS[baseline]} median ÷ kernel median: the kernel is {times_words(kernel.factor, name, simulated=simulated)}.")
    cols[2].metric("Kernel time (median)", format_seconds(run.gpu["kernel"].median_s), help=f"{run.gpu['kernel'].n_samples} samples.")
    if run.compile_s >= 1e-6:
        cols[2].metric("Kernel compile (once)", format_seconds(run.compile_s), help="JIT compile, or load from Numba's cache; excluded from every timing.")
    else:
        cols[2].metric("Kernel compile (once)", "cached", help="Already compiled by this process earlier (nothing to measure); compiling is excluded from every timing.")
    cols[3].metric("Kernel bandwidth", format_gbps(run.kernel_bandwidth_gbps), help="12 bytes per element (read a, b; write c) ÷ kernel median." + (" Simulated: not GPU performance." if simulated else ""))
    cols[3].metric("GPU end to end (median)", format_seconds(run.gpu["total"].median_s))


def _ratio(factor: float) -> str:
    """The metric value, short enough for a quarter of the page: "320x faster", "920kx slower" (never 7.1e-06x)."""
    from gpu.report.words import factor_text

    if factor != factor or factor <= 0:
        return "—"
    if 0.95 <= factor <= 1.05:
        return "about as fast"
    return f"{factor_text(factor if factor > 1 else 1 / factor, compact=True)} {'faster' if factor > 1 else 'slower'}"


def samples_csv(run: VectorAddRun) -> str:
    """Plain CSV: a one-line header, integer N, seconds; the metadata lives in the JSON download."""
    frame = run.to_frame()
    frame["n"] = frame["n"].astype("int64")
    return frame.drop(columns=["backend"]).assign(backend=run.backend).to_csv(index=False)


def stats_table(run: VectorAddRun) -> pd.DataFrame:
    table = charts.summarise(run.to_frame())
    return table[["measure", "median_ms", "min_ms", "max_ms", "samples", "kind"]].rename(
        columns={"median_ms": "median (ms)", "min_ms": "min (ms)", "max_ms": "max (ms)"}
    )


def show_run(run: VectorAddRun, article: ArticleRun | None) -> None:
    """Everything about one run: agreement, metrics, charts, table, downloads, article."""
    show_stale_note(run)
    for warning in run.warnings:
        st.warning(warning, icon=":material/warning:")
    show_agreement(run)
    show_metrics(run)
    subtitle = describe(run)
    frame = run.to_frame()
    st.altair_chart(charts.time_comparison_chart(frame, subtitle), width="stretch")
    st.altair_chart(charts.gpu_breakdown_chart(frame, subtitle), width="stretch")
    st.subheader("Statistics")
    st.caption(f"Wall clock for CPU and GPU end to end; CUDA events for GPU phases{' (wall clock in the simulator)' if run.backend == 'simulator' else ''}. {run.policy.describe()}.")
    st.dataframe(stats_table(run), hide_index=True, width="stretch")
    left, right = st.columns(2)
    payload = VectorAddOutcome(run, article).to_dict()
    left.download_button("Download run (JSON)", json.dumps(payload, indent=2), file_name=f"vector_add_{run.n}.json", mime="application/json", key="download_json")
    right.download_button("Download samples (CSV)", samples_csv(run), file_name=f"vector_add_{run.n}.csv", mime="text/csv", key="download_csv",
                          help="One row per sample: implementation, phase, sample, seconds, estimated, n. The run's settings and device are in the JSON download.")
    if article is not None:
        st.subheader("As in the article")
        left, right = st.columns(2)
        left.markdown("**The article's method** (copy a, b *and* c in; mean of 3 wall-clock runs)")
        left.code("\n".join(article.lines()), language=None)
        right.markdown("**The careful method** (output allocated on the device; phases timed with events; medians)")
        right.code(
            "\n".join(
                [
                    f"Results bit-identical: {run.agree}",
                    f"CPU (Python loop): {run.cpu['python'].median_s:.6f} seconds{' (estimated)' if run.cpu['python'].estimated else ''}" if "python" in run.cpu else "CPU (Python loop): not run",
                    f"GPU end to end: {run.gpu['total'].median_s:.6f} seconds",
                    f"GPU kernel only: {run.gpu['kernel'].median_s:.6f} seconds",
                ]
            ),
            language=None,
        )
        if article.backend == "simulator":
            st.caption(f"In words: the article's “GPU speedup” here means the simulated GPU was {times_words(article.speedup, 'the Python loop', simulated=True)}.")
        st.info(explain_difference(article, run), icon=":material/lightbulb:")
