"""Pure chart builders: tidy DataFrame in, ``alt.Chart`` out. No Streamlit here.

One colour per measure on every page (``COLORS``), tooltips with units and sample
counts, log axes where values span decades, and never stacked bars on a log axis.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from gpu.core.series import SERIES, label

# One colour per measure, shared by every page and chart (the table is gpu/core/series.py).
COLORS: dict[str, str] = {s.label: s.color for s in SERIES.values()}

# Vector add's (implementation, phase) -> the series' label.
MEASURE_LABELS: dict[tuple[str, str], str] = {
    **{("gpu", phase): label(phase) for phase in ("h2d", "launch", "kernel", "d2h", "total")},
    **{(impl, "cpu"): label(impl) for impl in ("python", "numpy", "numba", "numba-parallel")},
}

GPU_PHASE_ORDER = [label(phase) for phase in ("h2d", "launch", "kernel", "d2h")]
FIT = alt.AutoSizeParams(type="fit-x", contains="padding")  # titles and legends inside the chart's box
KIND_DOMAIN = ["measured", "estimate (not run)", "measured, fewer than 3 samples"]


def decades(values, inside: tuple[float, float] | None = None) -> list[float]:
    """10^k for every decade the finite positive ``values`` touch, limited to ``inside`` (lo, hi) if given."""
    import math

    finite = [v for v in values if v and v > 0 and v == v and math.isfinite(v)]
    if not finite:
        return []
    lo, hi = math.floor(math.log10(min(finite))), math.ceil(math.log10(max(finite)))
    ticks = [10.0**k for k in range(lo, hi + 1)]
    return [t for t in ticks if inside is None or inside[0] <= t <= inside[1]]


def log_axis(values, format: str = ",~r", inside: tuple[float, float] | None = None, **axis) -> alt.Axis:
    """A log axis with one labelled tick and one grid line per decade (no wall of minor grid lines),
    labels in plain numbers (``format``: ",~r" gives 0.001 and 10,000, never 1e-3 or 1e+4).

    ``inside``: the scale's domain when it is set and not "nice" (ticks outside it would be drawn off the axis).
    """
    ticks = decades(values, inside)
    return alt.Axis(values=ticks, format=format, grid=True, **axis) if ticks else alt.Axis(format=format, **axis)


def n_axis(ns, title: str) -> alt.Axis:
    """A log N axis whose domain is the sizes measured: one tick and grid line per decade inside it
    ("1k", "1M") when it spans two or more, else one per size measured ("1,024", "4,096"), never
    Vega's minor ticks (1.2k, 1.4k, ... each with its grid line)."""
    sizes = sorted({int(n) for n in ns if n and n > 0})
    if not sizes:
        return alt.Axis(format="~s", title=title)
    inside = decades(sizes, inside=(sizes[0], sizes[-1]))
    if len(inside) >= 2:
        return alt.Axis(values=inside, format="~s", grid=True, title=title)
    step = max(1, -(-len(sizes) // 8))  # at most about 8 labels
    return alt.Axis(values=sizes[::step], format=",", grid=True, title=title, labelOverlap=True)


def color_scale(measures: list[str] | None = None) -> alt.Scale:
    """The shared colour scale, limited to ``measures`` (in COLORS order) if given."""
    domain = [m for m in COLORS if measures is None or m in measures]
    return alt.Scale(domain=domain, range=[COLORS[m] for m in domain])


def label_measures(frame: pd.DataFrame) -> pd.DataFrame:
    """Add a ``measure`` column (display label) from implementation and phase."""
    out = frame.copy()
    out["measure"] = [
        MEASURE_LABELS.get((impl, phase), f"{impl} {phase}") for impl, phase in zip(out["implementation"], out["phase"])
    ]
    return out


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Per measure: median, min, max (ms), sample count and whether it is an estimate."""
    labelled = label_measures(frame)
    grouped = labelled.groupby("measure", sort=False)
    summary = grouped["seconds"].agg(["median", "min", "max", "count"]).reset_index()
    summary["estimated"] = grouped["estimated"].any().to_numpy()
    for col in ("median", "min", "max"):
        summary[f"{col}_ms"] = summary[col] * 1e3
    summary["samples"] = summary["count"].where(~summary["estimated"], 0)
    summary["kind"] = summary["estimated"].map({True: "estimate (not run)", False: "measured"})
    # a figure from fewer than 3 samples cannot show its spread: said in the tooltip, every time
    summary["kind"] = summary["kind"].where(~summary["samples"].between(1, 2), "measured, fewer than 3 samples")
    order = list(COLORS)
    summary["order"] = summary["measure"].map(lambda m: order.index(m) if m in order else len(order))
    return summary.sort_values("order").drop(columns=["median", "min", "max", "count", "order"]).reset_index(drop=True)


def _tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip("measure:N", title="measure"),
        alt.Tooltip("median_ms:Q", title="median (ms)", format=",.4~r"),
        alt.Tooltip("min_ms:Q", title="min (ms)", format=",.4~r"),
        alt.Tooltip("max_ms:Q", title="max (ms)", format=",.4~r"),
        alt.Tooltip("samples:Q", title="samples"),
        alt.Tooltip("kind:N", title="kind"),
    ]


def time_comparison_chart(frame: pd.DataFrame, subtitle: str) -> alt.Chart:
    """Every implementation and GPU phase side by side on a log axis: a dot at the
    median, a min–max whisker, the value as text; estimates hollow and labelled.

    Dots rather than bars: a bar needs a zero baseline, which a log axis does not have.
    ``frame`` is ``VectorAddRun.to_frame()``.
    """
    summary = summarise(frame)
    measures = list(summary["measure"])
    y = alt.Y("measure:N", sort=measures, title=None, axis=alt.Axis(labelLimit=260))
    x_scale = alt.Scale(type="log")
    color = alt.Color("measure:N", scale=color_scale(measures), legend=None)
    axis = log_axis(list(summary["min_ms"]) + list(summary["max_ms"]) + list(summary["median_ms"]))
    base = alt.Chart(summary)
    whiskers = base.transform_filter("!datum.estimated").mark_rule(strokeWidth=2).encode(
        y=y, x=alt.X("min_ms:Q", scale=x_scale), x2="max_ms:Q", color=color, tooltip=_tooltip()
    )
    dots = base.mark_point(size=140, strokeWidth=2).encode(
        y=y,
        x=alt.X("median_ms:Q", scale=x_scale, title="time (ms, log scale)", axis=axis),
        color=color,
        fill=alt.condition("datum.estimated", alt.value("white"), color),
        shape=alt.Shape(
            "kind:N", scale=alt.Scale(domain=KIND_DOMAIN, range=["circle", "diamond", "square"]), legend=None
        ),  # said in the title
        tooltip=_tooltip(),
    )
    labels = (
        base.mark_text(align="left", dx=10, dy=-10, fontSize=11)
        .encode(
            y=y,
            x=alt.X("median_ms:Q", scale=x_scale),
            text=alt.Text("label:N"),
        )
        .transform_calculate(
            label="(datum.estimated ? 'estimate ' : '') + (datum.median_ms >= 1000 ? format(datum.median_ms / 1000, "
                  "',.3~r') + ' s'"
            " : datum.median_ms >= 1 ? format(datum.median_ms, ',.3~r') + ' ms' : format(datum.median_ms * 1000, "
            "',.3~r') + ' µs')"
        )
    )
    return (whiskers + dots + labels).properties(
        title=alt.TitleParams(
            "Time per implementation and GPU phase (dot = median, line = min–max; hollow diamond = estimate, not run)",
            subtitle=subtitle,
            anchor="start",
        ),
        height=alt.Step(32),
        autosize=FIT,
    )


def gpu_breakdown_chart(frame: pd.DataFrame, subtitle: str) -> alt.Chart:
    """Where the GPU end-to-end time goes: H2D, kernel, D2H stacked on a linear axis,
    with the wall-clock end-to-end median as a marker for comparison."""
    summary = summarise(frame)
    phases = summary[summary["measure"].isin(GPU_PHASE_ORDER)].copy()
    phases["row"] = "GPU"
    phases["stack_order"] = phases["measure"].map(GPU_PHASE_ORDER.index)
    total = summary[summary["measure"] == "GPU end to end"].copy()
    total["row"] = "GPU"
    measures = [m for m in GPU_PHASE_ORDER if m in set(phases["measure"])] + ["GPU end to end"]
    x = alt.X("median_ms:Q", title="time (ms, linear)", stack="zero", axis=alt.Axis(format=",.4~r", tickCount=6))
    bars = alt.Chart(phases).mark_bar(height=30).encode(
        y=alt.Y("row:N", title=None),
        x=x,
        color=alt.Color("measure:N", scale=color_scale(measures), title="measure", sort=measures,
                        legend=alt.Legend(orient="bottom", direction="horizontal", symbolOpacity=1, labelLimit=200)),
        order=alt.Order("stack_order:Q"),
        tooltip=_tooltip(),
    )
    marker = alt.Chart(total).mark_tick(thickness=3, size=44).encode(
        y=alt.Y("row:N", title=None),
        x=alt.X("median_ms:Q"),
        color=alt.Color("measure:N", scale=color_scale(measures)),
        tooltip=_tooltip(),
    )
    return (bars + marker).properties(
        title=alt.TitleParams(
            "Where the GPU time goes (medians; tick = wall-clock end to end)", subtitle=subtitle, anchor="start"
        ),
        height=60,
        autosize=FIT,
    )
