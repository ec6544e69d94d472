"""Pure chart builders for the Scaling page: ``SweepRun.to_frame()`` in, ``alt.Chart`` out.

Sizes span decades, so N is on a log axis everywhere; times and bandwidths too. The
phase shares are stacked on a linear axis (never stack on a log axis). Colours come
from the shared palette in ``ui.charts.common``.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from gpu.core.words import format_gbps
from ui.charts.common import color_scale, log_axis, n_axis

TIME_SERIES = (
    "gpu-total",
    "gpu-launch-kernel",
    "gpu-kernel",
    "gpu-ilp",
    "python",
    "numpy",
    "numba",
    "numba-parallel",
    "cupy",
    "torch",
)
# The series that carry the lesson, drawn by default: the kernel alone, the GPU end to end with its
# copies, and NumPy on the CPU. The others (launch, ILP, Python loop, Numba, CuPy, PyTorch) are
# ``other_series`` for a second chart (``time_chart(..., series=other_series(frame))``).
LESSON_SERIES = ("gpu-kernel", "gpu-total", "numpy")
PHASES = ("gpu-h2d", "gpu-kernel", "gpu-d2h")
N_AXIS = alt.Axis(format="~s", title="N (elements per vector, log scale)")
LIMIT_LABEL_COLUMNS, LIMIT_LABEL_STEP_PX = 2, 300  # a limit's label is at most ~290 px at font size 10


def _n_x(data: pd.DataFrame | None = None) -> alt.X:
    """N on a log axis that ends where the data ends (no empty decade past the last size)."""
    if data is not None and not data.empty:
        lo, hi = int(data["n"].min()), int(data["n"].max())
        scale = alt.Scale(type="log", domain=[lo, hi], nice=False)
        axis = n_axis(data["n"], N_AXIS.title)
    else:
        scale, axis = alt.Scale(type="log"), N_AXIS
    return alt.X("n:Q", scale=scale, axis=axis)


def _legend(title: str, **extra) -> alt.Legend:
    """Legends below the plot, in columns: never clipped by the chart's height, symbols opaque."""
    return alt.Legend(title=title, orient="bottom", columns=4, labelLimit=220, symbolOpacity=1, **extra)


KIND_LEGEND = dict(symbolType="stroke", symbolStrokeColor="#555", symbolStrokeWidth=2, symbolSize=300)
FIT = alt.AutoSizeParams(type="fit-x", contains="padding")  # titles and legends inside the chart's box


def time_data(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of the time chart: every series but the copy phases, with ms columns."""
    rows = frame[frame["series"].isin(TIME_SERIES) & frame["median_s"].notna() & (frame["median_s"] > 0)].copy()
    for col in ("median", "min", "max"):
        rows[f"{col}_ms"] = rows[f"{col}_s"] * 1e3
    rows["kind"] = rows["estimated"].map({True: "estimate (not run)", False: "measured"})
    rows["noise_pct"] = rows["noise"] * 100
    rows["few"] = rows["few_samples"] & ~rows["estimated"] if "few_samples" in rows else False
    return rows.reset_index(drop=True)


def crossover_data(crossovers: list[dict]) -> pd.DataFrame:
    """Markers for the crossovers found ("from" only): n, short label, sentence."""
    rows = []
    for c in crossovers:
        if c["kind"] == "from" and c["n"]:
            who = {"gpu-kernel": "kernel", "gpu-launch-kernel": "kernel + launch"}.get(c["gpu"], "end to end")
            # from fewer than 3 samples the crossing has no known spread: never drawn as an exact "="
            few = bool(c.get("few_samples"))
            rows.append({"n": c["n"], "marker": f"{who} ≈ {c['baseline_label']}" + (" (n<3)" if few else ""),
                         "text": c["text"], "few": few})
    return pd.DataFrame(rows, columns=["n", "marker", "text", "few"])


def _time_tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip("label:N", title="series"),
        alt.Tooltip("n:Q", title="N", format=","),
        alt.Tooltip("median_ms:Q", title="median (ms)", format=",.4~r"),
        alt.Tooltip("min_ms:Q", title="min (ms)", format=",.4~r"),
        alt.Tooltip("max_ms:Q", title="max (ms)", format=",.4~r"),
        alt.Tooltip("samples:Q", title="samples"),
        alt.Tooltip("few:N", title="fewer than 3 samples"),
        alt.Tooltip("noise_pct:Q", title="noise (% stdev/mean)", format=".1f"),
        alt.Tooltip("noisy:N", title="noisy"),
        alt.Tooltip("kind:N", title="kind"),
        alt.Tooltip("bandwidth_gbps:Q", title="bandwidth (GB/s)", format=",.4~r"),
    ]


def other_series(frame: pd.DataFrame) -> list[str]:
    """The time series a sweep holds beyond ``LESSON_SERIES``, in ``TIME_SERIES`` order."""
    present = set(time_data(frame)["series"])
    return [s for s in TIME_SERIES if s in present and s not in LESSON_SERIES]


def samples_line(data: pd.DataFrame) -> str:
    """What a chart's points are: how many series and sizes, and how many samples each point has."""
    measured = data[~data["estimated"]] if "estimated" in data else data
    counts = sorted({int(c) for c in measured["samples"].dropna()}) if "samples" in measured else []
    per_point = (f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}") if counts else "no"
    series = data["label"].nunique()
    sizes = data["n"].nunique()
    return (f"{series} series × {sizes} size{'s' if sizes != 1 else ''}; each point the median of {per_point} "
            f"sample{'s' if counts != [1] else ''}")


def time_chart(
    frame: pd.DataFrame, crossovers: list[dict], subtitle: str, series: Sequence[str] | None = LESSON_SERIES
) -> alt.LayerChart:
    """Median time against N per series, log–log, with a min–max band, noisy points
    ringed, estimates dashed, and a dashed rule where the GPU overtakes a CPU series.

    ``series``: which to draw (default ``LESSON_SERIES``, the three that carry the lesson;
    None draws all). A crossover is marked only when both its series are drawn.
    """
    data = time_data(frame)
    if series is not None:
        data = data[data["series"].isin(series)].reset_index(drop=True)
        crossovers = [c for c in crossovers if c.get("gpu") in series and c.get("baseline", "numpy") in series]
    labels = list(dict.fromkeys(data["label"]))
    color = alt.Color("label:N", scale=color_scale(labels), title="series", sort=labels, legend=_legend("series"))
    y_scale = alt.Scale(type="log")
    base = alt.Chart(data).encode(x=_n_x(data), color=color)
    band = (
        base.transform_filter("!datum.estimated")
        .mark_area(opacity=0.18)
        .encode(
            y=alt.Y(
                "min_ms:Q",
                scale=y_scale,
                title="time (ms, log scale)",
                axis=log_axis(list(data["min_ms"]) + list(data["max_ms"]) + list(data["median_ms"])),
            ),
            y2="max_ms:Q",
            tooltip=_time_tooltip(),
        )
    )
    line = base.mark_line(point=alt.OverlayMarkDef(filled=True, size=40)).encode(
        y=alt.Y("median_ms:Q", scale=y_scale),
        strokeDash=alt.StrokeDash(
            "kind:N",
            title="kind",
            scale=alt.Scale(domain=["measured", "estimate (not run)"], range=[[1, 0], [5, 4]]),
            legend=None,
        ),  # "dashed = estimate" is in the title
        tooltip=_time_tooltip(),
    )
    noisy = (
        base.transform_filter("datum.noisy")
        .mark_point(size=160, filled=False, strokeWidth=2, color="#d62728")
        .encode(y=alt.Y("median_ms:Q", scale=y_scale), color=alt.value("#d62728"), tooltip=_time_tooltip())
    )
    # a figure from fewer than 3 samples cannot show its spread: a grey square says so
    few = base.transform_filter("datum.few").mark_square(size=90, filled=False, strokeWidth=1.5, color="#777").encode(
        y=alt.Y("median_ms:Q", scale=y_scale), color=alt.value("#777"), tooltip=_time_tooltip()
    )
    layers = [band, line, noisy, few]
    marks = crossover_data(crossovers)
    if not marks.empty:
        rule = alt.Chart(marks).mark_rule(color="#444").encode(
            x=alt.X("n:Q"), strokeDash=alt.condition("datum.few", alt.value([1, 4]), alt.value([3, 3])),
            tooltip=[alt.Tooltip("text:N", title="crossover"), alt.Tooltip("n:Q", title="N ≈", format=",.3~s")],
        )
        text = (
            alt.Chart(marks)
            .mark_text(angle=270, align="right", baseline="bottom", dx=-4, dy=-2, fontSize=10, color="#444")
            .encode(x=alt.X("n:Q"), y=alt.value(4), text="marker:N")
        )
        layers += [rule, text]
    return alt.LayerChart(layer=list(layers)).properties(
        title=alt.TitleParams(
            "Time against N (median; band = min–max; red ring = noisy; grey square = fewer than 3 samples; dashed = "
            "estimate)",
            subtitle=[subtitle, samples_line(data)] if subtitle else samples_line(data),
            anchor="start",
        ),
        height=380,
        autosize=FIT,
    )


def bandwidth_data(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[frame["bandwidth_gbps"].notna() & (frame["bandwidth_gbps"] > 0)].copy()
    rows["kind"] = rows["estimated"].map({True: "estimate (not run)", False: "measured"})
    fits = rows["fits_l2"] if "fits_l2" in rows else pd.Series(False, index=rows.index)
    rows["l2"] = fits.map({True: "fits in L2", False: "beyond L2"})
    return rows.reset_index(drop=True)


def bandwidth_chart(frame: pd.DataFrame, peaks: pd.DataFrame | None, subtitle: str) -> alt.LayerChart:
    """Effective bandwidth (GB/s, log) against N per series, with a horizontal rule per
    physical limit (``Peaks.to_frame()``: label, gbps, how) and % of the limit in tooltips."""
    data = bandwidth_data(frame)
    labels = list(dict.fromkeys(data["label"]))
    y = alt.Y(
        "bandwidth_gbps:Q",
        scale=alt.Scale(type="log"),
        title="effective bandwidth (GB/s, log scale)",
        axis=log_axis(
            list(data["bandwidth_gbps"].dropna())
            + (list(peaks["gbps"].dropna()) if peaks is not None and "gbps" in peaks else [])
        ),
    )
    tooltip = [
        alt.Tooltip("label:N", title="series"),
        alt.Tooltip("n:Q", title="N", format=","),
        alt.Tooltip("bandwidth_gbps:Q", title="GB/s", format=",.4~r"),
        alt.Tooltip("ceiling:N", title="limit"),
        alt.Tooltip("pct_of_ceiling:Q", title="% of that limit", format=".1f"),
        alt.Tooltip("pct_of_device_peak:Q", title="% of device peak", format=".1f"),
        alt.Tooltip("samples:Q", title="samples"),
        alt.Tooltip("l2:N", title="working set"),
        alt.Tooltip("kind:N", title="kind"),
    ]
    lines = (
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=36))
        .encode(
            x=_n_x(data),
            y=y,
            shape=alt.Shape(
                "l2:N",
                title="working set",
                scale=alt.Scale(domain=["fits in L2", "beyond L2"], range=["diamond", "circle"]),
                legend=_legend("working set"),
            ),
            color=alt.Color(
                "label:N", scale=color_scale(labels), title="series", sort=labels, legend=_legend("series")
            ),
            strokeDash=alt.StrokeDash(
                "kind:N",
                title="kind",
                scale=alt.Scale(domain=["measured", "estimate (not run)"], range=[[1, 0], [5, 4]]),
                legend=None,
            ),  # "dashed = estimate" is in the title
            tooltip=tooltip,
        )
    )
    layers = [lines]
    if peaks is not None and not peaks.empty:
        limits = peaks[peaks["gbps"].notna()].copy()
        limits = limits.sort_values("gbps").reset_index(drop=True)
        limits["text"] = [f"{label}: {format_gbps(gbps)}" for label, gbps in zip(limits["label"], limits["gbps"])]
        # neighbouring limits are often close (pinned H2D and D2H, host copies): in each pair, from the
        # bottom, the lower label sits below its line and the upper one above its own (they part), and
        # each pair steps right of the last, so no two labels print over each other
        limits["above"] = [i % 2 == 1 for i in range(len(limits))]
        limits["column"] = [(i // 2) % LIMIT_LABEL_COLUMNS for i in range(len(limits))]
        rule_tip = [
            alt.Tooltip("label:N", title="limit"),
            alt.Tooltip("gbps:Q", title="GB/s", format=",.4~r"),
            alt.Tooltip("how:N", title="how"),
        ]
        layers.append(
            alt.Chart(limits).mark_rule(strokeDash=[6, 3], color="#555").encode(y=alt.Y("gbps:Q"), tooltip=rule_tip)
        )
        for (above, column), part in limits.groupby(["above", "column"]):
            layers.append(
                alt.Chart(part)
                .mark_text(
                    align="left",
                    baseline="bottom" if above else "top",
                    x=4 + LIMIT_LABEL_STEP_PX * int(column),
                    dy=-2 if above else 2,
                    fontSize=10,
                    color="#555",
                )
                .encode(y=alt.Y("gbps:Q"), text="text:N")
            )
    return alt.LayerChart(layer=list(layers)).properties(
        title=alt.TitleParams(
            "Effective bandwidth against N, with the physical limits (dashed lines)", subtitle=subtitle, anchor="start"
        ),
        height=380,
        autosize=FIT,
    )


def share_data(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[frame["series"].isin(PHASES) & frame["share"].notna()].copy()
    rows["order"] = rows["series"].map(PHASES.index)
    rows["share_pct"] = rows["share"] * 100
    rows["median_ms"] = rows["median_s"] * 1e3
    return rows.reset_index(drop=True)


def share_chart(frame: pd.DataFrame, subtitle: str) -> alt.Chart:
    """Share of H2D, kernel and D2H in the GPU time against N: stacked areas on a linear
    0–100% axis (N on a log axis)."""
    data = share_data(frame)
    labels = [label for label in ("H2D copy", "Kernel", "D2H copy") if label in set(data["label"])]
    return (
        alt.Chart(data)
        .mark_area(opacity=0.85)
        .encode(
            x=_n_x(data),
            y=alt.Y(
                "share:Q",
                stack="zero",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%", title="share of H2D + kernel + D2H (linear)"),
            ),
            color=alt.Color("label:N", scale=color_scale(labels), title="phase", sort=labels, legend=_legend("phase")),
            order=alt.Order("order:Q"),
            tooltip=[
                alt.Tooltip("label:N", title="phase"),
                alt.Tooltip("n:Q", title="N", format=","),
                alt.Tooltip("share_pct:Q", title="share (%)", format=".1f"),
                alt.Tooltip("median_ms:Q", title="median (ms)", format=",.4~r"),
                alt.Tooltip("samples:Q", title="samples"),
            ],
        )
        .properties(
            title=alt.TitleParams(
                "Where the GPU time goes as N grows (normalised H2D / kernel / D2H)", subtitle=subtitle, anchor="start"
            ),
            height=300,
            autosize=FIT,
        )
    )

