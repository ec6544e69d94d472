"""Pure chart builders for the memory trace: which threads read and wrote which cells (the access map, a plain
SVG), and the sectors each warp request touched (an Altair chart).

Input: ``TraceReport.picture`` as a DataFrame, one row per (array, cell, thread, kind)
with columns array, row, col, index, global_thread, thread, block, kind. A 2-D array is
drawn as it is; a 1-D array in rows of 32 elements (one warp's worth).
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

import altair as alt
import pandas as pd

from ui.charts.common import FIT

KIND_COLORS = {"read": "#1f77b4", "write": "#ff7f0e", "atomic": "#9467bd"}
TOUCHED_FILL = "#e3e3e3"  # cells some other thread touched
CELL_PX = 12  # the largest cell; smaller when the panels would not fit side by side
MIN_CELL_PX = 5
FIT_WIDTH_PX = 860  # the app's main column
MAX_CELLS_PER_ARRAY = 4096  # beyond this the cells are too small to read


def _step(count: int, cell: int) -> int:
    """A label every few cells, not one per cell, and never closer than ``LABEL_GAP_PX``."""
    step = 8 if count > 16 else 4 if count > 8 else 1
    while step * cell < LABEL_GAP_PX:
        step *= 2
    return step


# The access map's layout (px): the title block, each panel's row labels and title, the column labels, the legend.
TITLE_PX, SUBTITLE_PX, PANEL_TITLE_PX, ROW_LABELS_PX, COL_LABELS_PX, LEGEND_PX, SPACING_PX = 18, 16, 18, 34, 30, 26, 24
PANEL_AXES_PX = ROW_LABELS_PX + SPACING_PX  # each panel's width besides its cells
LABEL_GAP_PX = 12  # an axis label's height: row labels at least this far apart
CHAR_PX = 7  # about a character's width at the labels' sizes: a one-column array's panel still fits its title
MAX_THREADS_NAMED = 4  # a cell's tooltip names this many of the chosen threads that touched it, then counts the rest


def _text(x: float, y: float, text: str, size: int = 11, anchor: str = "start", extra: str = "") -> str:
    return (f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}"{extra}>{escape(text)}</text>')


def access_map_svg(picture: pd.DataFrame, threads: Iterable[int], title: str, subtitle: str = "") -> str:
    """One panel per array: every touched cell in grey, the cells ``threads`` (global thread ids) read / wrote /
    added to atomically in colour (a cell both read and written shows the later kind: write over read, atomic
    over both); each coloured cell's tooltip names its element, its kinds of access and the threads that made them.

    Arrays with more than ``MAX_CELLS_PER_ARRAY`` touched cells are left out.

    A static SVG, every text in it escaped, for ``st.markdown(..., unsafe_allow_html=True)`` (``st.html``'s
    sanitizer keeps HTML only and drops an SVG whole; the line break after the opening tag makes the SVG one HTML
    block of Markdown). The grey cells are one path per array, so a picture's page nodes are its chosen cells and
    its labels. It was a Vega-Lite chart: on Write a kernel, which draws no other chart in the simulator, the first
    one cost headless Chromium about half a second of its main thread (Vega's code compiled, then the chart drawn),
    and the server about 0.14 s of CPU per picture and choice building its spec.
    """
    chosen = {int(t) for t in threads}
    arrays: dict[str, list[dict]] = {}
    for access in picture.to_dict("records"):  # plain rows: a DataFrame's groupby per cell cost ten times as much
        arrays.setdefault(str(access["array"]), []).append(access)
    groups = [(array, accesses, max(a["row"] for a in accesses) + 1, max(a["col"] for a in accesses) + 1)
              for array, accesses in arrays.items()]
    groups = [g for g in groups if g[2] * g[3] <= MAX_CELLS_PER_ARRAY]
    total_cols = sum(g[3] for g in groups) or 1
    cell = max(MIN_CELL_PX, min(CELL_PX, (FIT_WIDTH_PX - PANEL_AXES_PX * len(groups)) // total_cols))
    top = TITLE_PX + (SUBTITLE_PX if subtitle else 0) + 8
    parts = [_text(0, 14, title, 13, extra=' font-weight="bold"')]
    if subtitle:
        parts.append(_text(0, 14 + SUBTITLE_PX, subtitle, 11, extra=' fill="#555"'))
    x0, bottom = 0, top
    for array, accesses, rows, cols in groups:
        gx, gy = x0 + ROW_LABELS_PX, top + PANEL_TITLE_PX
        parts.append(_text(gx, top + 12, array, 12, extra=' font-weight="bold"'))
        touched = dict.fromkeys((a["row"], a["col"]) for a in accesses)
        outline = "".join(f"M{gx + c * cell},{gy + r * cell}h{cell}v{cell}h-{cell}z" for r, c in touched)
        parts.append(f'<path d="{outline}" fill="{TOUCHED_FILL}" stroke="white" stroke-width="0.5">'
                     f"<title>{escape(array)}: cells the other threads touched</title></path>")
        mine: dict[tuple[int, int], list[dict]] = {}
        for a in accesses:
            if a["global_thread"] in chosen:
                mine.setdefault((a["row"], a["col"]), []).append(a)
        for (r, c), made in sorted(mine.items()):
            kinds = [k for k in KIND_COLORS if any(a["kind"] == k for a in made)]
            who = {a["global_thread"]: f"thread {a['thread']} of block {a['block']} (global {a['global_thread']})"
                   for a in made}
            named = list(who.values())
            more = len(named) - MAX_THREADS_NAMED
            tip = (f"{made[0]['index']} of {array}: {', '.join(kinds)} by "
                   + "; ".join(named[:MAX_THREADS_NAMED]) + (f"; and {more} more" if more > 0 else ""))
            parts.append(f'<rect x="{gx + c * cell}" y="{gy + r * cell}" width="{cell}" height="{cell}" '
                         f'fill="{KIND_COLORS[kinds[-1]]}" stroke="white" stroke-width="0.5">'
                         f"<title>{escape(tip)}</title></rect>")
        for r in range(0, rows, _step(rows, cell)):
            parts.append(_text(gx - 4, gy + r * cell + cell / 2 + 4, str(r), 10, "end"))
        for c in range(0, cols, _step(cols, cell)):
            parts.append(_text(gx + c * cell + cell / 2, gy + rows * cell + 12, str(c), 10, "middle"))
        parts.append(_text(gx + cols * cell / 2, gy + rows * cell + 25, "column", 10, "middle", ' fill="#555"'))
        parts.append(_text(x0 + 8, gy + rows * cell / 2, "row", 10, "middle",
                           f' fill="#555" transform="rotate(-90 {x0 + 8} {gy + rows * cell / 2:g})"'))
        x0 = gx + max(cols * cell, CHAR_PX * len(array), CHAR_PX * len("column")) + SPACING_PX  # room for its labels
        bottom = max(bottom, gy + rows * cell + COL_LABELS_PX)
    if not groups:
        parts.append(_text(0, top + 14, "No array small enough to draw.", 12))
        bottom = top + 24
    legend = [*KIND_COLORS.items(), ("other threads", TOUCHED_FILL)]
    lx = 0
    for name, colour in legend:
        parts.append(f'<rect x="{lx}" y="{bottom + 6}" width="10" height="10" fill="{colour}"/>')
        parts.append(_text(lx + 14, bottom + 15, name, 11))
        lx += 24 + CHAR_PX * len(name)
    width, height = max(x0 - SPACING_PX, lx, CHAR_PX * len(title)), bottom + LEGEND_PX
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" style="max-width: 100%; height: auto" '
            f'font-family="sans-serif">\n<title>{escape(title)}</title>{"".join(parts)}</svg>')


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
