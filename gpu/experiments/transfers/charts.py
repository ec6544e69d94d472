"""Pure chart builders for the Transfers page: tidy frames in, ``alt.Chart`` out.

- ``bandwidth_chart``: copy bandwidth against size, log–log (sizes span five decades),
  one colour per direction, dashed for pageable host memory, plateaus as rules.
- ``strategy_breakdown_chart``: each strategy's phases per vector add, stacked on a
  linear axis (never stacked on a log axis), with the wall-clock end to end as a tick.
- ``timeline_chart``: a Gantt chart of the chunked run, one lane per stream or engine.

Colours come from the shared palette in ``ui.charts.common``.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from gpu.core.series import labels
from ui.charts.common import color_scale, log_axis

DIRECTION_MEASURES = labels("h2d", "d2h", "d2d")
PHASE_MEASURES = labels("h2d", "launch", "kernel", "d2h", "span")
MEMORY_DASH = {"pinned": [1, 0], "device": [1, 0], "pageable": [6, 4]}
# Vega expression: bytes as binary units on the size axis.
SIZE_LABEL = (
    "datum.value >= 1073741824 ? format(datum.value / 1073741824, ',~r') + ' GiB' : "
    "datum.value >= 1048576 ? format(datum.value / 1048576, ',~r') + ' MiB' : "
    "datum.value >= 1024 ? format(datum.value / 1024, ',~r') + ' KiB' : format(datum.value, ',~r') + ' B'"
)


def _size_text(nbytes: float) -> str:
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def bandwidth_points(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per curve point from ``BandwidthCurves.to_frame()``: GB/s at the median
    time, min–max GB/s, sample count, and display labels."""
    grouped = frame.groupby(["series", "direction", "memory", "nbytes"], sort=False)
    points = grouped.agg(
        median_s=("seconds", "median"),
        min_s=("seconds", "min"),
        max_s=("seconds", "max"),
        samples=("seconds", "count"),
        bytes_counted=("bytes_counted", "first"),
        pinned_ok=("pinned_ok", "all"),
    ).reset_index()
    points["gbps"] = points["bytes_counted"] / points["median_s"] / 1e9
    points["gbps_low"] = points["bytes_counted"] / points["max_s"] / 1e9
    points["gbps_high"] = points["bytes_counted"] / points["min_s"] / 1e9
    points["median_us"] = points["median_s"] * 1e6
    points["measure"] = points["direction"].map(DIRECTION_MEASURES)
    points["size"] = points["nbytes"].map(_size_text)
    points["memory_shown"] = [
        "pageable (pinning failed)" if m == "pinned" and not ok else m
        for m, ok in zip(points["memory"], points["pinned_ok"])
    ]
    return points


def _bandwidth_tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip("series:N", title="copy"),
        alt.Tooltip("memory_shown:N", title="host memory"),
        alt.Tooltip("size:N", title="size"),
        alt.Tooltip("gbps:Q", title="GB/s (median)", format=",.4~r"),
        alt.Tooltip("gbps_low:Q", title="GB/s (slowest sample)", format=",.4~r"),
        alt.Tooltip("gbps_high:Q", title="GB/s (fastest sample)", format=",.4~r"),
        alt.Tooltip("median_us:Q", title="median time (µs)", format=",.4~r"),
        alt.Tooltip("samples:Q", title="samples"),
    ]


def bandwidth_chart(frame: pd.DataFrame, plateaus: list[dict], subtitle: str) -> alt.LayerChart:
    """Bandwidth against copy size per direction and host memory (log–log), with each
    reached plateau as a dotted rule. ``plateaus`` are ``Plateau.to_dict()`` rows."""
    points = bandwidth_points(frame)
    measures = [m for m in DIRECTION_MEASURES.values() if m in set(points["measure"])]
    color = alt.Color("measure:N", scale=color_scale(measures), title="direction", sort=measures)
    dash = alt.StrokeDash(
        "memory:N",
        title="host memory",
        scale=alt.Scale(domain=list(MEMORY_DASH), range=list(MEMORY_DASH.values())),
        legend=None,  # said in the title: a legend of dashes drew its labels without their symbols
    )
    sizes = sorted({int(b) for b in points["nbytes"]})  # one tick and grid line per size measured (every 4x)
    x = alt.X(
        "nbytes:Q",
        scale=alt.Scale(type="log", base=2),
        axis=alt.Axis(labelExpr=SIZE_LABEL, title="copy size (log scale)", values=sizes, grid=True),
    )
    y_scale = alt.Scale(type="log")
    gbps = [
        *points["gbps"],
        *points["gbps_low"],
        *points["gbps_high"],
        *(p["plateau_gbps"] for p in plateaus if p.get("plateau_gbps")),
    ]
    base = alt.Chart(points).encode(x=x, color=color, detail="series:N")
    lines = base.mark_line(point=alt.OverlayMarkDef(filled=True, size=45)).encode(
        y=alt.Y("gbps:Q", scale=y_scale, title="bandwidth (GB/s, log scale)", axis=log_axis(gbps)),
        strokeDash=dash,
        tooltip=_bandwidth_tooltip(),
    )
    whiskers = base.mark_rule(opacity=0.5).encode(
        y=alt.Y("gbps_low:Q", scale=y_scale), y2="gbps_high:Q", tooltip=_bandwidth_tooltip()
    )
    layers = [whiskers, lines]
    reached = pd.DataFrame(
        [
            {
                "series": (f"{p['direction'].upper()} {p['memory']}" if p["direction"] != "d2d" else "D2D"),
                "measure": DIRECTION_MEASURES[p["direction"]],
                "plateau_gbps": p["plateau_gbps"],
                "sentence": p["sentence"],
            }
            for p in plateaus
            if p.get("plateau_gbps")
        ],
        columns=["series", "measure", "plateau_gbps", "sentence"],
    )
    if not reached.empty:
        rules = (
            alt.Chart(reached)
            .mark_rule(strokeDash=[2, 3], opacity=0.7)
            .encode(
                y=alt.Y("plateau_gbps:Q", scale=y_scale),
                color=alt.Color("measure:N", scale=color_scale(measures)),
                tooltip=[
                    alt.Tooltip("series:N", title="plateau of"),
                    alt.Tooltip("plateau_gbps:Q", title="GB/s", format=",.4~r"),
                    alt.Tooltip("sentence:N", title="in words"),
                ],
            )
        )
        layers.append(rules)
    return alt.LayerChart(layer=list(layers)).properties(
        title=alt.TitleParams(
            "Copy bandwidth against size "
            "(median; dashed = pageable memory; whiskers = sample range; dotted = plateaus)",
            subtitle=subtitle,
        ),
        height=360,
    )


def breakdown_data(frame: pd.DataFrame, order: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """From ``StrategyComparison.to_frame()``: (phase medians per vector add, end-to-end
    medians), both with ms columns, strategies in ``order`` (fastest first)."""
    grouped = frame.groupby(["strategy", "label", "phase"], sort=False)["per_result_s"]
    summary = grouped.agg(["median", "min", "max", "count"]).reset_index()
    for col in ("median", "min", "max"):
        summary[f"{col}_ms"] = summary[col] * 1e3
    summary["samples"] = summary["count"]
    summary["rank"] = summary["strategy"].map({k: i for i, k in enumerate(order)})
    phases = summary[summary["phase"] != "total"].copy()
    phases["measure"] = phases["phase"].map(PHASE_MEASURES)
    phases["stack_order"] = phases["phase"].map({p: i for i, p in enumerate(PHASE_MEASURES)})
    totals = summary[summary["phase"] == "total"].copy()
    totals["measure"] = "GPU end to end"
    return phases.reset_index(drop=True), totals.reset_index(drop=True)


def _breakdown_tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip("label:N", title="strategy"),
        alt.Tooltip("measure:N", title="measure"),
        alt.Tooltip("median_ms:Q", title="median per vector add (ms)", format=",.4~r"),
        alt.Tooltip("min_ms:Q", title="min (ms)", format=",.4~r"),
        alt.Tooltip("max_ms:Q", title="max (ms)", format=",.4~r"),
        alt.Tooltip("samples:Q", title="samples"),
    ]


def strategy_breakdown_chart(frame: pd.DataFrame, order: list[str], subtitle: str) -> alt.LayerChart:
    """Each strategy's phases per vector add stacked on a linear axis, fastest first;
    a tick marks its wall-clock end to end."""
    phases, totals = breakdown_data(frame, order)
    labels = list(totals.sort_values("rank")["label"]) or list(dict.fromkeys(phases["label"]))
    measures = [m for m in PHASE_MEASURES.values() if m in set(phases["measure"])] + ["GPU end to end"]
    y = alt.Y("label:N", sort=labels, title=None, axis=alt.Axis(labelLimit=320))
    color = alt.Color(
        "measure:N", scale=color_scale(measures), title="measure", sort=measures, legend=alt.Legend(labelLimit=260)
    )
    bars = alt.Chart(phases).mark_bar(height=20).encode(
        y=y,
        x=alt.X("median_ms:Q", title="time per vector add (ms, linear)", stack="zero"),
        color=color,
        order=alt.Order("stack_order:Q"),
        tooltip=_breakdown_tooltip(),
    )
    ticks = (
        alt.Chart(totals)
        .mark_tick(thickness=3, size=28)
        .encode(y=y, x=alt.X("median_ms:Q"), color=color, tooltip=_breakdown_tooltip())
    )
    labels_text = alt.Chart(totals).mark_text(align="left", dx=6, fontSize=11).encode(
        y=y, x=alt.X("median_ms:Q"), text=alt.Text("median_ms:Q", format=",.3~r")
    )
    return alt.LayerChart(layer=[bars, ticks, labels_text]).properties(
        title=alt.TitleParams(
            "Where each strategy's time goes, per vector add (medians; tick = wall-clock end to end, ms)",
            subtitle=subtitle,
        ),
        height=alt.Step(34),
    )


def timeline_chart(timeline: pd.DataFrame, subtitle: str, lanes: str = "stream") -> alt.Chart:
    """Gantt chart from ``StrategyComparison.timeline_frame(lanes)``: one row per run and
    lane, one bar per chunk and phase, time from the run's start event (ms)."""
    data = timeline.copy()
    data["row"] = data["run"] + " · " + data["lane"]
    data["measure"] = data["phase"].map(PHASE_MEASURES)
    rows = list(
        dict.fromkeys(
            data.sort_values(["run", "lane"], key=lambda s: s.map(_lane_key) if s.name == "lane" else s)["row"]
        )
    )
    measures = [m for m in ("H2D copy", "Kernel", "D2H copy") if m in set(data["measure"])]
    how = (
        "per engine (copy starts inferred: one copy at a time per engine)"
        if lanes == "engine"
        else "per stream (as recorded by CUDA events)"
    )
    return (
        alt.Chart(data)
        .mark_bar(height=16, cornerRadius=2, stroke="white", strokeWidth=0.5)
        .encode(
            y=alt.Y("row:N", sort=rows, title=None, axis=alt.Axis(labelLimit=320)),
            x=alt.X("start_ms:Q", title="time from the start event (ms)"),
            x2="end_ms:Q",
            color=alt.Color("measure:N", scale=color_scale(measures), title="phase", sort=measures),
            tooltip=[
                alt.Tooltip("run:N", title="run"),
                alt.Tooltip("lane:N", title="lane"),
                alt.Tooltip("chunk:Q", title="chunk"),
                alt.Tooltip("stream:Q", title="stream"),
                alt.Tooltip("measure:N", title="phase"),
                alt.Tooltip("start_ms:Q", title="start (ms)", format=",.4~r"),
                alt.Tooltip("end_ms:Q", title="end (ms)", format=",.4~r"),
                alt.Tooltip("duration_ms:Q", title="duration (ms)", format=",.4~r"),
            ],
        )
        .properties(
            title=alt.TitleParams(f"Timeline of the chunked run and the one-chunk baseline, {how}", subtitle=subtitle),
            height=alt.Step(24),
        )
    )


def _lane_key(lane: str) -> str:
    """Engine lanes in pipeline order; stream lanes by number."""
    order = {"H2D copy engine": "0", "compute (kernels)": "1", "D2H copy engine": "2"}
    if lane in order:
        return order[lane]
    if lane.startswith("stream "):
        return f"{int(lane.split()[1]):04d}"
    return lane
