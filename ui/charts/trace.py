"""Pure chart builders for the memory trace: which threads read and wrote which cells.

Input: ``TraceReport.picture`` as a DataFrame, one row per (array, cell, thread, kind)
with columns array, row, col, index, global_thread, thread, block, kind. A 2-D array is
drawn as it is; a 1-D array in rows of 32 elements (one warp's worth).
"""

from __future__ import annotations

from collections.abc import Iterable

import altair as alt
import pandas as pd

from ui.charts.common import FIT

KIND_COLORS = {"read": "#1f77b4", "write": "#ff7f0e", "atomic": "#9467bd"}
TOUCHED_FILL = "#e3e3e3"  # cells some other thread touched
CELL_PX = 12  # the largest cell; smaller when the panels would not fit side by side
MIN_CELL_PX = 5
FIT_WIDTH_PX = 860  # the app's main column, less the axes
PANEL_AXES_PX = 70  # each panel's row axis and spacing
MAX_CELLS_PER_ARRAY = 4096  # beyond this the cells are too small to read


def _axis(count: int, title: str) -> alt.Axis:
    step = 8 if count > 16 else 4 if count > 8 else 1  # a label every few cells, not one per cell
    return alt.Axis(title=title, values=list(range(0, count, step)), labelAngle=0, grid=False, ticks=False)


def access_map_spec(picture: pd.DataFrame, threads: Iterable[int], title: str, subtitle: str = "") -> dict:
    """One panel per array: every touched cell in grey, the cells ``threads`` (global thread
    ids) read / wrote / added to atomically in colour; tooltips say which thread did what.

    Arrays with more than ``MAX_CELLS_PER_ARRAY`` touched cells are left out.

    A Vega-Lite spec, not an Altair chart: the chart names its data, and the rows join the spec as its datasets once
    Altair has built it. Altair copies a chart's inline rows at every step of building and validating it (an access
    map of 765 accesses took 0.19-0.30 s of CPU, against 0.14 s for this, half of it validating the spec against the
    Vega-Lite schema: the tests do that), and a DataFrame would go through its data transformer, a global that
    Streamlit swaps, under a lock of its own, while it converts another session's chart.
    """
    chosen = set(int(t) for t in threads)
    groups = [(array, cells, int(cells["row"].max()) + 1, int(cells["col"].max()) + 1)
              for array, cells in picture.groupby("array", sort=False)]
    groups = [g for g in groups if g[2] * g[3] <= MAX_CELLS_PER_ARRAY]
    total_cols = sum(g[3] for g in groups) or 1
    cell = max(MIN_CELL_PX, min(CELL_PX, (FIT_WIDTH_PX - PANEL_AXES_PX * len(groups)) // total_cols))
    datasets: dict[str, list[dict]] = {}

    def named(rows: pd.DataFrame, name: str) -> alt.NamedData:
        datasets[name] = rows.to_dict("records")
        return alt.NamedData(name=name)

    panels = []
    for number, (array, cells, rows, cols) in enumerate(groups):
        x = alt.X("col:O", scale=alt.Scale(domain=list(range(cols))), axis=_axis(cols, "column"))
        y = alt.Y("row:O", scale=alt.Scale(domain=list(range(rows))), axis=_axis(rows, "row"))
        touched = cells.drop_duplicates(["row", "col"])[["row", "col", "index"]]
        base = alt.Chart(named(touched, f"touched-{number}")).mark_rect(
            fill=TOUCHED_FILL, stroke="white", strokeWidth=0.5).encode(
            x=x, y=y, tooltip=[alt.Tooltip("index:N", title="element")])
        mine = cells[cells["global_thread"].isin(chosen)]
        kinds = list(KIND_COLORS)  # one domain for every panel: hconcat panels share the colour scale
        highlight = (
            alt.Chart(named(mine, f"chosen-{number}"))
            .mark_rect(stroke="white", strokeWidth=0.5)
            .encode(
                x=x,
                y=y,
                color=alt.Color(
                    "kind:N",
                    title="access",
                    scale=alt.Scale(domain=kinds, range=[KIND_COLORS[k] for k in kinds]),
                    legend=alt.Legend(orient="bottom", symbolOpacity=1),
                ),
                tooltip=[
                    alt.Tooltip("index:N", title="element"),
                    alt.Tooltip("kind:N", title="access"),
                    alt.Tooltip("thread:N", title="thread (x, y, z)"),
                    alt.Tooltip("block:N", title="block (x, y, z)"),
                    alt.Tooltip("global_thread:Q", title="global thread id"),
                ],
            )
        )
        panels.append((base + highlight).properties(title=str(array), width=cols * cell, height=rows * cell))
    if not panels:
        empty = named(pd.DataFrame({"text": ["no array small enough to draw"]}), "empty")
        panels = [alt.Chart(empty).mark_text().encode(text="text:N")]
    spec = alt.hconcat(*panels, spacing=24).properties(
        title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined, anchor="start"),
        usermeta={"embedOptions": {"renderer": "canvas"}}).to_dict(validate=False)  # tests/test_trace_charts.py does
    spec["datasets"] = datasets
    return spec


def sectors_chart(rows: pd.DataFrame, title: str) -> alt.LayerChart:
    """Sectors per request at each global-memory access, step by step: a bar for the sectors
    touched, a black tick at the ideal (the bytes asked for, packed into 32-byte sectors).

    ``rows``: columns step, access (a label), sectors_per_request, ideal_sectors_per_request, in display order.
    """
    data = rows.assign(label=rows["step"] + " — " + rows["access"])
    top = (
        int(max(data["sectors_per_request"].max(), data["ideal_sectors_per_request"].max())) + 4
    )  # a labelled line every 4 sectors
    y = alt.Y("label:N", title=None, sort=list(data["label"]), axis=alt.Axis(labelLimit=420))
    tooltip = [alt.Tooltip("step:N"), alt.Tooltip("access:N"),
               alt.Tooltip("sectors_per_request:Q", title="sectors touched per request", format=".1f"),
               alt.Tooltip("ideal_sectors_per_request:Q", title="ideal", format=".1f")]
    bars = alt.Chart(data).mark_bar(color="#d62728", height=14).encode(
        y=y, x=alt.X("sectors_per_request:Q", title="32-byte sectors per warp request (bar: touched; tick: ideal)",
                     axis=alt.Axis(values=list(range(0, top + 1, 4)), format="d")), tooltip=tooltip)
    ticks = (
        alt.Chart(data)
        .mark_tick(color="black", thickness=2, size=20)
        .encode(y=y, x="ideal_sectors_per_request:Q", tooltip=tooltip)
    )
    return (bars + ticks).properties(title=alt.TitleParams(title, anchor="start"), height=alt.Step(24), autosize=FIT)
