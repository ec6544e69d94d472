"""Pure chart builders for the memory trace: which threads read and wrote which cells.

Input: ``TraceReport.picture`` as a DataFrame, one row per (array, cell, thread, kind)
with columns array, row, col, index, global_thread, thread, block, kind. A 2-D array is
drawn as it is; a 1-D array in rows of 32 elements (one warp's worth).
"""

from __future__ import annotations

from typing import Iterable

import altair as alt
import pandas as pd

KIND_COLORS = {"read": "#1f77b4", "write": "#ff7f0e", "atomic": "#9467bd"}
TOUCHED_FILL = "#e3e3e3"  # cells some other thread touched
CELL_PX = 12
MAX_CELLS_PER_ARRAY = 4096  # beyond this the cells are too small to read


def _axis(count: int, title: str) -> alt.Axis:
    step = 8 if count > 16 else 4 if count > 8 else 1  # a label every few cells, not one per cell
    return alt.Axis(title=title, values=list(range(0, count, step)), labelAngle=0, grid=False, ticks=False)


def access_map_chart(picture: pd.DataFrame, threads: Iterable[int], title: str, subtitle: str = "") -> alt.HConcatChart:
    """One panel per array: every touched cell in grey, the cells ``threads`` (global thread
    ids) read / wrote / added to atomically in colour; tooltips say which thread did what.

    Arrays with more than ``MAX_CELLS_PER_ARRAY`` touched cells are left out.
    """
    chosen = set(int(t) for t in threads)
    panels = []
    for array, cells in picture.groupby("array", sort=False):
        rows, cols = int(cells["row"].max()) + 1, int(cells["col"].max()) + 1
        if rows * cols > MAX_CELLS_PER_ARRAY:
            continue
        x = alt.X("col:O", scale=alt.Scale(domain=list(range(cols))), axis=_axis(cols, "column"))
        y = alt.Y("row:O", scale=alt.Scale(domain=list(range(rows))), axis=_axis(rows, "row"))
        touched = cells.drop_duplicates(["row", "col"])[["row", "col", "index"]]
        base = alt.Chart(touched).mark_rect(fill=TOUCHED_FILL, stroke="white", strokeWidth=0.5).encode(
            x=x, y=y, tooltip=[alt.Tooltip("index:N", title="element")])
        mine = cells[cells["global_thread"].isin(chosen)]
        kinds = [k for k in KIND_COLORS if k in set(mine["kind"])] or ["read"]
        highlight = alt.Chart(mine).mark_rect(stroke="white", strokeWidth=0.5).encode(
            x=x, y=y,
            color=alt.Color("kind:N", title="access", scale=alt.Scale(domain=kinds, range=[KIND_COLORS[k] for k in kinds]),
                            legend=alt.Legend(orient="bottom", symbolOpacity=1)),
            tooltip=[alt.Tooltip("index:N", title="element"), alt.Tooltip("kind:N", title="access"),
                     alt.Tooltip("thread:N", title="thread (x, y, z)"), alt.Tooltip("block:N", title="block (x, y, z)"),
                     alt.Tooltip("global_thread:Q", title="global thread id")],
        )
        panels.append((base + highlight).properties(title=str(array), width=cols * CELL_PX, height=rows * CELL_PX))
    if not panels:
        panels = [alt.Chart(pd.DataFrame({"text": ["no array small enough to draw"]})).mark_text().encode(text="text:N")]
    return alt.hconcat(*panels, spacing=24).properties(
        title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined, anchor="start"))


def sectors_chart(rows: pd.DataFrame, title: str) -> alt.Chart:
    """Sectors per request at each global-memory access, against the ideal (the bytes asked for, packed).

    ``rows``: columns access (a label), sectors_per_request, ideal_sectors_per_request, step.
    """
    long = rows.melt(id_vars=["step", "access"], value_vars=["sectors_per_request", "ideal_sectors_per_request"],
                     var_name="measure", value_name="sectors")
    long["measure"] = long["measure"].map({"sectors_per_request": "touched", "ideal_sectors_per_request": "ideal (bytes asked ÷ 32)"})
    return alt.Chart(long).mark_bar().encode(
        y=alt.Y("access:N", title=None, sort=None, axis=alt.Axis(labelLimit=320)),
        yOffset=alt.YOffset("measure:N"),
        x=alt.X("sectors:Q", title="32-byte sectors per warp request", axis=alt.Axis(tickMinStep=1, format="d", grid=False)),
        color=alt.Color("measure:N", title=None, scale=alt.Scale(domain=["touched", "ideal (bytes asked ÷ 32)"], range=["#d62728", "#bdbdbd"]),
                        legend=alt.Legend(orient="bottom")),
        row=alt.Row("step:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left", labelFontWeight="bold"), sort=None),
        tooltip=[alt.Tooltip("step:N"), alt.Tooltip("access:N"), alt.Tooltip("measure:N"), alt.Tooltip("sectors:Q", format=".1f")],
    ).properties(title=alt.TitleParams(title, anchor="start"), width=360)
