"""Pure chart builders for the Kernels page: a catalog run's summary in, ``alt.Chart`` out.

Colours: one per kind of implementation (Numba GPU step, GPU library, CPU), shared by
both charts; GPU phases use the lab's phase colours (ui/charts/common.py).
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from gpu.core.series import labels
from ui.charts.common import COLORS, log_axis

KIND_COLORS = {"GPU step (Numba)": "#f58518", "GPU library": "#4c78a8", "CPU": "#72b7b2"}
PHASE_LABELS = labels("h2d", "launch", "kernel", "d2h")  # allocation is before any sample: in no phase
PHASE_COLORS = {name: COLORS[name] for name in PHASE_LABELS.values()}


def _kind_scale(kinds) -> alt.Scale:
    domain = [k for k in KIND_COLORS if k in set(kinds)]
    return alt.Scale(domain=domain, range=[KIND_COLORS[k] for k in domain])


def _timed(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows with a time (measured or estimated), in ms, with a display label for estimates."""
    rows = summary[summary["seconds"].notna()].copy()
    rows["median_ms"] = rows["seconds"] * 1e3
    rows["min_ms"] = rows["min_s"].astype(float) * 1e3
    rows["max_ms"] = rows["max_s"].astype(float) * 1e3
    rows["measure"] = rows["label"]
    rows["kind_shown"] = rows["estimated"].map({True: "estimate (not run)", False: "measured"})
    rows["few"] = rows["few_samples"].astype(bool) & ~rows["estimated"].astype(bool) if "few_samples" in rows else False
    rows["marks"] = rows["marks"].fillna("") if "marks" in rows else ""
    return rows


def _tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip("label:N", title="implementation"),
        alt.Tooltip("kind_label:N", title="kind"),
        alt.Tooltip("median_ms:Q", title="median (ms)", format=",.4~r"),
        alt.Tooltip("min_ms:Q", title="min (ms)", format=",.4~r"),
        alt.Tooltip("max_ms:Q", title="max (ms)", format=",.4~r"),
        alt.Tooltip("samples:Q", title="samples"),
        alt.Tooltip("gbps:Q", title="GB/s", format=",.4~r"),
        alt.Tooltip("gflops:Q", title="GFLOP/s", format=",.4~r"),
        alt.Tooltip("launch:N", title="launch"),
        alt.Tooltip("kind_shown:N", title="measured?"),
        alt.Tooltip("few:N", title="fewer than 3 samples"),
    ]


def steps_time_chart(summary: pd.DataFrame, subtitle: str) -> alt.Chart:
    """Every implementation's time (GPU: the kernel alone; CPU: the call) on a log axis.

    A dot at the median, a min–max whisker, the value as text; estimates are hollow
    diamonds. ``summary`` is ``KernelRun.summary_frame()``; skipped rows are left out.
    """
    rows = _timed(summary)
    order = list(rows["label"])
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=320))
    x_scale = alt.Scale(type="log")
    color = alt.Color("kind_label:N", scale=_kind_scale(rows["kind_label"]), title="kind")
    base = alt.Chart(rows)
    whiskers = base.transform_filter("!datum.estimated").mark_rule(strokeWidth=2).encode(
        y=y, x=alt.X("min_ms:Q", scale=x_scale), x2="max_ms:Q", color=color, tooltip=_tooltip())
    dots = base.mark_point(size=140, strokeWidth=2).encode(
        y=y,
        x=alt.X(
            "median_ms:Q",
            scale=x_scale,
            title="time (ms, log scale): GPU kernel alone, CPU call",
            axis=log_axis(list(rows["min_ms"]) + list(rows["max_ms"]) + list(rows["median_ms"])),
        ),
        color=color,
        fill=alt.condition("datum.estimated", alt.value("white"), color),
        # hollow diamond = estimate is said in the title: a shape legend here drew without symbols
        shape=alt.Shape(
            "kind_shown:N",
            scale=alt.Scale(domain=["measured", "estimate (not run)"], range=["circle", "diamond"]),
            legend=None,
        ),
        tooltip=_tooltip(),
    )
    labels = base.mark_text(align="left", dx=10, dy=-10, fontSize=11).encode(
        y=y, x=alt.X("median_ms:Q", scale=x_scale), text="text:N",
    ).transform_calculate(text="(datum.estimated ? 'estimate ' : '') + " + _TIME_TEXT + " + datum.marks")
    # a figure from fewer than 3 samples cannot show its spread: a grey square says so
    few = base.transform_filter("datum.few").mark_square(size=260, filled=False, strokeWidth=1.5, color="#777").encode(
        y=y, x=alt.X("median_ms:Q", scale=x_scale), tooltip=_tooltip())
    return (whiskers + dots + few + labels).properties(
        title=alt.TitleParams(
            "Time per implementation (median, min–max)",
            subtitle=[
                subtitle,
                "hollow diamond = estimate, not run · grey square and * = fewer than 3 samples · "
                "° = the bytes fit in the L2",
            ],
        ),
        height=alt.Step(30),
    )


# Vega expression: a median in ms as "1.43 s", "166 ms", "80.5 µs" (never "1.43e+3 ms").
_TIME_TEXT = ("(datum.median_ms >= 1000 ? format(datum.median_ms / 1000, ',.3~r') + ' s' : "
              "datum.median_ms >= 1 ? format(datum.median_ms, ',.3~r') + ' ms' : "
              "format(datum.median_ms * 1000, ',.3~r') + ' µs')")


def _rate_unit(largest_g: float, base: str) -> tuple[float, str]:
    """(divisor, unit) for values given in G``base``: the largest unit the largest value reaches."""
    for scale, prefix in ((1.0, "G"), (1e-3, "M"), (1e-6, "k")):
        if largest_g >= scale:
            return scale, f"{prefix}{base}"
    return 1e-9, base


def throughput_chart(
    summary: pd.DataFrame, subtitle: str, metric: str = "gbps", peak: float | None = None
) -> alt.Chart:
    """GPU implementations' GB/s (``metric`` "gbps") or GFLOP/s ("gflops") as bars, with % of the
    device's peak as text and the peak as a rule when known."""
    rows = summary[(summary["kind"] != "cpu") & summary[metric].notna()].copy()
    # one unit that keeps the largest bar's number short (simulated GPUs move kB/s, not GB/s)
    largest = max([peak or 0.0, *rows[metric].astype(float)]) if len(rows) else (peak or 1.0)
    scale, unit = _rate_unit(largest, "B/s" if metric == "gbps" else "FLOP/s")
    rows["value"] = rows[metric].astype(float) / scale
    peak = peak / scale if peak else peak
    marks = rows["marks"].fillna("") if "marks" in rows else [""] * len(rows)
    rows["text"] = [f"{v:,.3g} {unit}{m}" + (f" · {f:.0%} of peak" if f == f and f is not None else "")
                    for v, f, m in zip(rows["value"], rows["fraction_of_peak"].astype(float), marks)]
    order = list(rows["label"])
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=320))
    tooltip = [alt.Tooltip("label:N", title="implementation"), alt.Tooltip("value:Q", title=unit, format=",.4~r"),
               alt.Tooltip("fraction_of_peak:Q", title="share of peak", format=".1%"),
               alt.Tooltip("vs_best_library:Q", title="× best library's time", format=".3~r")]
    # room to the right of the longest bar (or the peak) for its label
    right = max([peak or 0.0, *rows["value"]]) * 1.45 if len(rows) else 1.0
    bars = alt.Chart(rows).mark_bar(height=20).encode(
        y=y, x=alt.X("value:Q", title=f"{unit} (linear)", scale=alt.Scale(domain=[0, right], nice=False)),
        color=alt.Color("kind_label:N", scale=_kind_scale(rows["kind_label"]), title="kind"), tooltip=tooltip)
    text = alt.Chart(rows).mark_text(align="left", dx=4, fontSize=11).encode(y=y, x="value:Q", text="text:N")
    layers = bars + text
    if peak:
        rule = alt.Chart(pd.DataFrame({"peak": [peak], "label": [f"peak {peak:,.4g} {unit}"]}))
        layers = layers + rule.mark_rule(strokeDash=[6, 3], color="#e45756").encode(x="peak:Q", tooltip=["label:N"])
    return layers.properties(
        title=alt.TitleParams(f"Throughput of the GPU implementations ({unit})", subtitle=subtitle), height=alt.Step(30)
    )


def phases_chart(frame: pd.DataFrame, subtitle: str) -> alt.Chart:
    """Where each GPU step's end-to-end time goes: H2D, launch, kernel, D2H (medians, stacked, linear)."""
    steps = frame[(frame["kind"] == "step") & frame["phase"].isin(PHASE_LABELS)]
    medians = steps.groupby(["label", "phase"], sort=False)["seconds"].median().reset_index()
    medians["measure"] = medians["phase"].map(PHASE_LABELS)
    medians["ms"] = medians["seconds"] * 1e3
    medians["stack"] = medians["phase"].map(list(PHASE_LABELS).index)
    domain = [m for m in PHASE_COLORS if m in set(medians["measure"])]
    return (
        alt.Chart(medians)
        .mark_bar(height=20)
        .encode(
            y=alt.Y("label:N", title=None, sort=list(dict.fromkeys(medians["label"])), axis=alt.Axis(labelLimit=320)),
            x=alt.X("ms:Q", title="time (ms, linear)", stack="zero"),
            color=alt.Color(
                "measure:N",
                scale=alt.Scale(domain=domain, range=[PHASE_COLORS[m] for m in domain]),
                title="phase",
                sort=domain,
            ),
            order=alt.Order("stack:Q"),
            tooltip=[
                alt.Tooltip("label:N", title="step"),
                alt.Tooltip("measure:N", title="phase"),
                alt.Tooltip("ms:Q", title="median (ms)", format=",.4~r"),
            ],
        )
        .properties(
            title=alt.TitleParams("Where each GPU step's time goes (medians)", subtitle=subtitle), height=alt.Step(30)
        )
    )


__all__ = ["KIND_COLORS", "PHASE_LABELS", "phases_chart", "steps_time_chart", "throughput_chart"]
