"""Widgets and result display for the Vector add page."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from gpu.core import cpu
from gpu.service.admission import check_work, load_config
from gpu.core.limits import InputError, check_n, check_repeats, check_threads_per_block, max_vector_n
from gpu.core.timing import format_factor, format_seconds
from gpu.experiments.vector_add import ArticleRun, VectorAddRun, explain_difference
from ui.charts import common as charts


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
        tpb = mid.number_input("Threads per block", min_value=1, max_value=device_max_threads, value=256, step=32, key="threads_per_block", help=f"1 to {device_max_threads}; multiples of 32 keep every warp full.")
        repeats = right.number_input("Repeats", min_value=1, max_value=1000, value=5, key="repeats", help="Timed runs after one warm-up run (1 to 1000).")
        impls = st.multiselect("CPU implementations", options=list(cpu.IMPLEMENTATIONS), default=list(cpu.IMPLEMENTATIONS), format_func=cpu.LABELS.get, key="cpu_impls")
        article = st.checkbox("Also run it as in the article (copy c in too, mean of three wall-clock runs)", value=True, key="article")
        submitted = st.form_submit_button("Run", type="primary")
    admission = load_config()
    st.caption(f"Limits here: N ≤ {limit:,} (free memory{' and the simulator cap' if limit <= 16_384 else ''}, and this server's limit); threads per block 1–{device_max_threads}; repeats 1–{admission.max_repeats}; N × (repeats + 1) ≤ {admission.max_work:,}.")
    if not submitted:
        return None
    try:
        params = VectorAddParams(
            n=check_n(n_text, limit),
            threads_per_block=int(tpb),
            repeats=check_repeats(repeats),
            cpu_impls=tuple(impls),
            article=article,
        )
        check_work(params.n, params.repeats, config=admission)
        for warning in check_threads_per_block(params.threads_per_block, device_max_threads):
            st.warning(warning)
    except InputError as exc:
        st.error(str(exc))
        return None
    return params


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
    cols = st.columns(4)
    for col, baseline in zip(cols[:2], ("python", "numpy")):
        end_to_end, kernel = run.speedup(baseline, "total"), run.speedup(baseline, "kernel")
        if end_to_end is None:
            col.metric(f"vs {cpu.LABELS[baseline]}", "not run")
            continue
        tag = " (estimated)" if end_to_end.estimated else ""
        col.metric(f"GPU end to end vs {cpu.LABELS[baseline]}{tag}", format_factor(end_to_end.factor), help="CPU median ÷ GPU wall-clock end-to-end median (copies included).")
        col.metric(f"Kernel only vs {cpu.LABELS[baseline]}{tag}", format_factor(kernel.factor), help="CPU median ÷ kernel median (CUDA events).")
    cols[2].metric("Kernel time (median)", format_seconds(run.gpu["kernel"].median_s))
    cols[2].metric("Kernel compile (once)", format_seconds(run.compile_s), help="JIT compile or load from Numba's cache; excluded from every timing.")
    cols[3].metric("Kernel bandwidth", f"{run.kernel_bandwidth_gbps:,.4g} GB/s", help="12 bytes per element (read a, b; write c) ÷ kernel median.")
    cols[3].metric("GPU end to end (median)", format_seconds(run.gpu["total"].median_s))


def stats_table(run: VectorAddRun) -> pd.DataFrame:
    table = charts.summarise(run.to_frame())
    return table[["measure", "median_ms", "min_ms", "max_ms", "samples", "kind"]].rename(
        columns={"median_ms": "median (ms)", "min_ms": "min (ms)", "max_ms": "max (ms)"}
    )


def show_run(run: VectorAddRun, article: ArticleRun | None) -> None:
    """Everything about one run: agreement, metrics, charts, table, downloads, article."""
    for warning in run.warnings:
        st.warning(warning)
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
    payload = run.to_dict() | ({"article": article.to_dict()} if article else {})
    left.download_button("Download run (JSON)", json.dumps(payload, indent=2), file_name=f"vector_add_{run.n}.json", mime="application/json", key="download_json")
    right.download_button("Download samples (CSV)", frame.to_csv(index=False), file_name=f"vector_add_{run.n}.csv", mime="text/csv", key="download_csv")
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
        st.info(explain_difference(article, run))
