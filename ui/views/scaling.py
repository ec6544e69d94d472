"""Widgets, running and result display for the Scaling page.

Cancelling: while a sweep runs the page shows a Stop button. Streamlit stops a running
script at its next ``st.*`` call when a button is pressed, which here is the progress
update between two steps (a kernel is never interrupted). Before every update the
partial result is kept in session state, so the rerun that follows the press finds it
and shows it as a stopped sweep. The engine also asks ``stop_requested()`` between
steps, which ends the sweep cleanly when the stop flag is set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pandas as pd
import streamlit as st

from gpu.core import reference
from gpu.service.admission import check_sweep_points, check_work, load_config
from gpu.core.backend import BACKEND
from gpu.core.limits import InputError, check_threads_per_block, max_vector_n
from gpu.core.peaks import Peaks, measure_peaks
from gpu.experiments.scaling import (
    DEFAULT_MIN_N, IMPL_LABELS, IMPLS, SweepConfig, SweepProgress, SweepRun, make_config, repeat_policy,
    run_sweep, sweep_sizes,
)
from gpu.core.timing import format_seconds
from ui.charts import scaling as scaling_charts
from ui.runner import run_experiment

RESULT_KEY = "scaling.result"
PARTIAL_KEY = "scaling.partial"  # the last snapshot of a running sweep
STOP_KEY = "scaling.stop_requested"
SIMULATOR_DEFAULT_MAX_N = 4096  # 2^10..2^12 in the simulator: a few seconds, not a minute
DEFAULT_REPEATS = 3


@dataclass(frozen=True)
class ScalingParams:
    config: SweepConfig
    measure_peaks: bool


def init_state() -> None:
    st.session_state.setdefault(RESULT_KEY, None)
    st.session_state.setdefault(PARTIAL_KEY, None)
    st.session_state.setdefault(STOP_KEY, False)


def request_stop() -> None:
    """The Stop button's callback."""
    st.session_state[STOP_KEY] = True


def stop_requested() -> bool:
    """Asked by the engine between steps."""
    return bool(st.session_state.get(STOP_KEY, False))


def default_max_n(limit: int, repeats: int = DEFAULT_REPEATS) -> int:
    """The largest size that fits memory and this server's work budget for a default sweep."""
    if BACKEND.simulated:
        limit = min(limit, SIMULATOR_DEFAULT_MAX_N)
    config = load_config()
    n = limit
    while n > DEFAULT_MIN_N and sum(sweep_sizes(DEFAULT_MIN_N, n)) * (repeats + 1) > config.max_work:
        n //= 2
    return max(n, 1)


def default_impls() -> list[str]:
    """Every implementation; references only where their library can run."""
    return [impl for impl in IMPLS if impl not in reference.REFERENCES or reference.unavailable_reason(impl) is None]


def form_ui(device_max_threads: int) -> ScalingParams | None:
    """Draw the sweep form; return validated parameters when "Run sweep" was pressed."""
    limit = max_vector_n()
    default_hi = default_max_n(limit)
    with st.form("scaling"):
        c1, c2, c3 = st.columns(3)
        min_text = c1.text_input("Smallest N", value="2^10", key="min_n", help="A whole number such as 1024, 1e3 or 2^10.")
        max_text = c2.text_input("Largest N", value=f"{default_hi}", key="max_n", help=f"At most {limit:,} here (free memory and this server's limits).")
        spacing = c3.radio("Sizes", ["pow2", "decade"], horizontal=True, key="spacing",
                           format_func={"pow2": "powers of two", "decade": "decades"}.get,
                           help="Every power of two (or of ten) between the ends, plus both ends.")
        impls = st.multiselect("Implementations", list(IMPLS), default=default_impls(), format_func=IMPL_LABELS.get, key="impls",
                               help="CuPy and PyTorch run only where they are installed and a GPU is present; otherwise they are listed as skipped.")
        c1, c2, c3, c4 = st.columns(4)
        tpb = c1.number_input("Threads per block", min_value=1, max_value=device_max_threads, value=256, step=32, key="threads_per_block")
        mode = c2.radio("Repeat policy", ["count", "until_stable"], key="repeat_mode",
                        format_func={"count": "fixed count", "until_stable": "until stable"}.get,
                        help="Fixed count: that many timed runs per point. Until stable: sample until the noise is below the target or the budget per point is spent (the nvbench way). Warm-up runs are always excluded.")
        repeats = c2.number_input("Repeats (most, when until stable)", min_value=1, max_value=1000, value=DEFAULT_REPEATS, key="repeats")
        noise_pct = c3.number_input("Noise target (% stdev/mean)", min_value=0.0, value=5.0, step=0.5, key="noise_pct",
                                    help="Points noisier than this are flagged; until stable stops when it is reached.")
        budget_s = c3.number_input("Budget per point (s, until stable)", min_value=0.0, value=0.5, step=0.1, key="budget_s")
        python_budget_s = c4.number_input("Python-loop budget per point (s)", min_value=0.0, value=2.0, step=0.5, key="python_budget_s",
                                          help="The Python loop runs only while its estimate fits; above, its estimate is shown, dashed.")
        peaks = c4.checkbox("Measure the physical limits", value=True, key="measure_peaks",
                            help="Device-to-device, pinned host↔device and NumPy host copies: the ceilings on the bandwidth chart.")
        submitted = st.form_submit_button("Run sweep", type="primary")
    st.caption(f"Limits here: N ≤ {limit:,}; default largest N {default_hi:,} fits memory and this server's work budget.")
    if not submitted:
        return None
    try:
        policy = repeat_policy(mode, int(repeats), max_noise=float(noise_pct) / 100 if noise_pct < 100 else 1.0, budget_s=float(budget_s) if mode == "until_stable" else None)
        config = make_config(min_text, max_text, impls, spacing=spacing, threads_per_block=int(tpb), policy=policy,
                             python_budget_s=float(python_budget_s), limit=limit)
        check_sweep_points(len(config.sizes))
        check_work(sum(config.sizes), policy.n_repeat, 1, policy.warmup)
        for warning in check_threads_per_block(config.threads_per_block, device_max_threads):
            st.warning(warning)
    except InputError as exc:
        st.error(str(exc))
        return None
    return ScalingParams(config, bool(peaks))


def run(params: ScalingParams) -> SweepRun | None:
    """Run the sweep through ``run_experiment`` with a progress bar and a Stop button."""
    state = st.session_state
    state[STOP_KEY] = False
    state[PARTIAL_KEY] = None
    left, right = st.columns([5, 1])
    bar = left.progress(0.0, text="Waiting for the GPU…")
    stop_slot = right.empty()
    stop_slot.button("Stop", key="scaling.stop", on_click=request_stop, help="Stops between two steps; what was measured stays.")

    def work(progress) -> SweepRun:
        peaks: Peaks | None = None
        if params.measure_peaks:
            peaks = measure_peaks(quick=BACKEND.simulated, on_progress=progress)

        def on_progress(p: SweepProgress) -> None:
            state[PARTIAL_KEY] = p.partial  # kept if a Stop press interrupts the next call
            bar.progress(p.fraction, text=f"Measuring {p.message}")
            progress(p.message)

        return run_sweep(params.config, peaks=peaks, on_progress=on_progress, should_stop=lambda: stop_requested())

    result = run_experiment("scaling sweep", work)
    state[PARTIAL_KEY] = None
    stop_slot.empty()
    if result is not None:
        bar.progress(1.0, text="Sweep finished" if result.complete else f"Sweep stopped: {result.stopped}")
    else:
        bar.empty()
    return result


def recover_interrupted() -> SweepRun | None:
    """A sweep interrupted by the Stop button left its partial result: return it, marked."""
    partial = st.session_state.get(PARTIAL_KEY)
    if partial is None:
        return None
    st.session_state[PARTIAL_KEY] = None
    st.session_state[STOP_KEY] = False
    return replace(partial, stopped="cancelled")


def describe(run: SweepRun) -> str:
    """Chart subtitle: what was measured, how many samples, on what."""
    cfg = run.config
    sizes = run.sizes
    span = f"N = {sizes[0]:,} to {sizes[-1]:,} ({len(sizes)} sizes)" if sizes else "no sizes measured"
    return f"{span} · float32 · {cfg.threads_per_block} threads per block · {cfg.policy.describe()} · {run.device.name} ({run.backend})"


def table(run: SweepRun) -> pd.DataFrame:
    frame = run.to_frame()
    out = pd.DataFrame(
        {
            "N": frame["n"],
            "series": frame["label"],
            "median (ms)": frame["median_s"] * 1e3,
            "min (ms)": frame["min_s"] * 1e3,
            "max (ms)": frame["max_s"] * 1e3,
            "samples": frame["samples"],
            "noise (%)": frame["noise"] * 100,
            "noisy": frame["noisy"],
            "estimated": frame["estimated"],
            "GB/s": frame["bandwidth_gbps"],
            "% of limit": frame["pct_of_ceiling"],
            "agrees with NumPy": frame["agree"],
            "error": frame["error"],
        }
    )
    return out


def show_result(run: SweepRun) -> None:
    """Everything about one sweep: status, crossovers, charts, table, downloads."""
    if run.stopped:
        st.warning(f"Sweep stopped ({run.stopped}) after {run.steps_done} of {run.steps_planned} steps; the points measured so far are shown.")
    for impl, why in run.skipped:
        st.info(f"{IMPL_LABELS[impl]} skipped: {why}.")
    for p in run.failures:
        st.error(f"N = {p.n:,}, {p.series}: {p.error}. The sweep went on.")
    if not run.points:
        st.info("No point was measured before the sweep stopped.")
        return
    if run.agree:
        st.success("Every result is bit-identical to NumPy's at every size measured.", icon=":material/check_circle:")
    else:
        bad = sorted({(p.n, p.series) for p in run.points if p.agree is False})
        st.error("Results differ from NumPy at: " + ", ".join(f"N = {n:,} ({s})" for n, s in bad[:10]), icon=":material/error:")

    st.subheader("Where the GPU starts to win")
    sentences = run.crossover_sentences()
    st.markdown("\n".join(f"- {s}" for s in sentences) if sentences else "- Choose the GPU and at least one CPU implementation to find crossovers.")
    if run.backend == "simulator":
        st.caption("Simulated kernels are thousands of times slower than a GPU: these crossovers say nothing about real hardware.")

    cols = st.columns(4)
    cols[0].metric("Sizes measured", f"{len(run.sizes)}")
    cols[1].metric("Steps", f"{run.steps_done} of {run.steps_planned}")
    cols[2].metric("Wall time", format_seconds(run.wall_s), help="Kernel compile excluded.")
    overhead = run.overhead_fraction
    measured = run.measuring_s > 0 and 0 <= overhead < 1
    cols[3].metric("Outside the timing calls", f"{overhead:.0%}" if measured else "not measured",
                   help="Inputs, checks and bookkeeping: the sweep's own overhead." if measured else "The sweep recorded no time inside its timing calls to compare with.")

    subtitle = describe(run)
    frame = run.to_frame()
    crossovers = [c.to_dict() for c in run.crossovers()]
    noisy = int(frame["noisy"].sum())
    st.altair_chart(scaling_charts.time_chart(frame, crossovers, subtitle), width="stretch")
    if noisy:
        st.caption(f"{noisy} point{'s' if noisy != 1 else ''} (ringed red) are noisier than {run.config.policy.max_noise:.0%}: treat them with care.")
    peaks = run.peaks.to_frame() if run.peaks else None
    st.altair_chart(scaling_charts.bandwidth_chart(frame, peaks, subtitle), width="stretch")
    if run.peaks is not None:
        st.caption("Limits: " + "; ".join(f"{lim.label} — {f'{lim.gbps:,.4g} GB/s' if lim.gbps else 'unknown'} ({lim.how if lim.gbps else lim.skipped})" for lim in run.peaks.limits) + ". Vector add moves 12 bytes per element; copies within one memory count read and write.")
    if frame["share"].notna().any():
        st.altair_chart(scaling_charts.share_chart(frame, subtitle), width="stretch")

    st.subheader("Every point")
    st.dataframe(table(run), hide_index=True, width="stretch")
    left, right = st.columns(2)
    stem = f"scaling_{run.config.min_n}_{run.config.max_n}"
    left.download_button("Download sweep (JSON)", json.dumps(run.to_dict(), indent=2, default=str), file_name=f"{stem}.json",
                         mime="application/json", key="scaling.download_json")
    right.download_button("Download points (CSV)", points_csv(run), file_name=f"{stem}.csv", mime="text/csv", key="scaling.download_csv",
                          help="One row per size and series with a plain header; the sweep's settings and device are in the JSON download.")


def points_csv(run: SweepRun) -> str:
    """Plain CSV for spreadsheets: one header line, integer N; metadata lives in the JSON download."""
    frame = run.to_frame()
    frame["n"] = frame["n"].astype("int64")
    return frame.to_csv(index=False)
