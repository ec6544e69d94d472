"""Pure chart builders: your CPU, measured now, beside a recorded real GPU.

Input frames come from ``gpu.report.cpu_vs_recorded`` (``to_frame()``): one row per
figure with its ``source`` ("your CPU, measured now" or "<device>, recorded <date>").
The source is drawn as the mark's shape (one size) or the line's dash (a sweep), and
named in the legend and every tooltip, so a recorded figure is never read as measured.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from gpu.report.cpu_vs_recorded import GPU_MEASURES, YOUR_CPU
from ui.charts.common import COLORS, FIT, log_axis, n_axis

# report labels -> the shared palette's names (one colour per measure on every page)
PALETTE_NAME = {GPU_MEASURES["kernel"]: "Kernel", GPU_MEASURES["total"]: "GPU end to end",
                GPU_MEASURES["h2d"]: "H2D copy", GPU_MEASURES["d2h"]: "D2H copy"}


def _colors(measures: list[str]) -> alt.Scale:
    return alt.Scale(domain=measures, range=[COLORS.get(PALETTE_NAME.get(m, m), "#888") for m in measures])


def _with_ms(frame: pd.DataFrame) -> pd.DataFrame:
    data = frame[frame["median_s"].notna() & (frame["median_s"] > 0)].copy()
    data["median_ms"] = data["median_s"] * 1e3
    data["kind"] = data["estimated"].map({True: "estimate (not run)", False: "measured"})
    return data.reset_index(drop=True)


def one_size_chart(frame: pd.DataFrame, subtitle: str) -> alt.LayerChart:
    """Each CPU implementation and recorded GPU phase as a dot on a log time axis,
    labelled with its time; circles are your CPU, squares the recorded GPU, hollow = estimate."""
    data = _with_ms(frame)
    data["row"] = [
        f"{m} — {'your CPU' if s == YOUR_CPU else 'recorded GPU'}" for m, s in zip(data["measure"], data["source"])
    ]
    rows = list(data["row"])
    measures = list(dict.fromkeys(data["measure"]))
    sources = list(dict.fromkeys(data["source"]))
    x_scale = alt.Scale(type="log")
    y = alt.Y("row:N", sort=rows, title=None, axis=alt.Axis(labelLimit=320))
    color = alt.Color("measure:N", scale=_colors(measures), legend=None)
    tooltip = [
        alt.Tooltip("source:N", title="source"),
        alt.Tooltip("measure:N", title="measure"),
        alt.Tooltip("n:Q", title="N", format=","),
        alt.Tooltip("median_ms:Q", title="median (ms)", format=",.4~r"),
        alt.Tooltip("kind:N", title="kind"),
    ]
    base = alt.Chart(data)
    dots = base.mark_point(size=150, strokeWidth=2).encode(
        y=y,
        x=alt.X("median_ms:Q", scale=x_scale, title="time (ms, log scale)", axis=log_axis(list(data["median_ms"]))),
        color=color,
        fill=alt.condition("datum.estimated", alt.value("white"), color),
        # the title says circle = your CPU, square = recorded GPU, and every row label names its
        # source: a legend of this shape scale drew without its symbols (a filled condition)
        shape=alt.Shape(
            "source:N", scale=alt.Scale(domain=sources, range=["circle", "square"][: len(sources)]), legend=None
        ),
        tooltip=tooltip,
    )
    labels = (
        base.mark_text(align="left", dx=11, dy=-9, fontSize=11)
        .encode(y=y, x=alt.X("median_ms:Q", scale=x_scale), text="text:N")
        .transform_calculate(
            text="(datum.estimated ? 'estimate ' : '') + (datum.median_ms >= 1000 ? format(datum.median_ms / 1000, "
                 "',.3~r') + ' s'"
            " : datum.median_ms >= 1 ? format(datum.median_ms, ',.3~r') + ' ms' : format(datum.median_ms * 1000, "
            "',.3~r') + ' µs')"
        )
    )
    return (dots + labels).properties(
        title=alt.TitleParams(
            "Your CPU, measured now, beside the recorded GPU (median; circle = your CPU, square = recorded GPU; hollow "
            "= estimate)",
            subtitle=subtitle,
            anchor="start",
        ),
        height=alt.Step(30),
        autosize=FIT,
    )


def sweep_chart(frame: pd.DataFrame, subtitle: str) -> alt.LayerChart:
    """Median time against N, log–log: your CPU series solid, the recorded GPU dashed."""
    data = _with_ms(frame)
    data["series"] = [
        f"{m} ({'your CPU' if s == YOUR_CPU else 'recorded GPU'})" for m, s in zip(data["measure"], data["source"])
    ]
    series = list(dict.fromkeys(data["series"]))
    measure_of = {str(s): str(m) for s, m in zip(data["series"], data["measure"])}
    color = alt.Color(
        "series:N",
        sort=series,
        title=None,
        scale=alt.Scale(
            domain=series, range=[COLORS.get(PALETTE_NAME.get(measure_of[s], measure_of[s]), "#888") for s in series]
        ),
        legend=alt.Legend(orient="bottom", columns=3, labelLimit=320, symbolOpacity=1),
    )
    sources = list(dict.fromkeys(data["source"]))
    dash = alt.StrokeDash(
        "source:N", scale=alt.Scale(domain=sources, range=[[1, 0], [6, 4]][: len(sources)]), legend=None
    )
    n_range = (int(data["n"].min()), int(data["n"].max()))
    x = alt.X("n:Q", scale=alt.Scale(type="log", domain=list(n_range), nice=False),
              axis=n_axis(data["n"], "N (elements per vector, log scale)"))
    tooltip = [
        alt.Tooltip("source:N", title="source"),
        alt.Tooltip("measure:N", title="measure"),
        alt.Tooltip("n:Q", title="your N", format=","),
        alt.Tooltip("recorded_n:Q", title="N of this figure", format=","),
        alt.Tooltip("median_ms:Q", title="median (ms)", format=",.4~r"),
        alt.Tooltip("kind:N", title="kind"),
    ]
    lines = (
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=40))
        .encode(
            x=x,
            y=alt.Y(
                "median_ms:Q",
                scale=alt.Scale(type="log"),
                title="time (ms, log scale)",
                axis=log_axis(list(data["median_ms"])),
            ),
            color=color,
            strokeDash=dash,
            detail="series:N",
            tooltip=tooltip,
        )
    )
    return lines.properties(
        title=alt.TitleParams(
            "Your CPU, measured now (solid), beside the recorded GPU (dashed): time against N",
            subtitle=subtitle,
            anchor="start",
        ),
        height=340,
        autosize=FIT,
    )


__all__ = ["one_size_chart", "sweep_chart"]
