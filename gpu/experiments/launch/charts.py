"""Pure chart builders for the Launch config page: DataFrames in, ``alt.Chart`` out.

- ``thread_grid_chart``: one cell per launched thread, blocks as tiles (a row per warp,
  a column per lane), coloured by block or by warp; idle threads grey and dashed;
  tooltips with the index arithmetic. Input: ``IndexingRun.to_frame()``.
- ``element_owner_chart``: grid-stride only — which thread added each element.
- ``sweep_time_chart`` / ``sweep_bandwidth_chart`` / ``occupancy_chart``: the block-size
  sweep per configuration with min–max spread and the best marked. Input:
  ``LaunchSweepRun.to_frame()``.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from gpu.kernels.vector_add_timing import BYTES_PER_ELEMENT
from ui.charts.common import COLORS

LANES = 32  # threads per warp: one row of a block tile
TARGET_COLUMNS = 100  # cells across before block tiles wrap to the next row
CELL_PX = 10
IDLE_FILL = "#e3e3e3"
IDLE_STROKE = "#8a8a8a"
KIND_COLORS = {"one thread per element": COLORS["Kernel"], "grid-stride": COLORS.get("Kernel, grid-stride", "#9467bd")}
COLOR_CHOICES = ("block", "warp")
LEGEND_LIMIT = 20  # more categories than this: no legend (the tooltip says which)


# --- the thread grid ------------------------------------------------------------------


def thread_layout(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, int, int]:
    """Place every thread cell and every block label.

    Returns (cells, labels, columns, rows): cells gets x, x2, y, y2 (cell units, y
    downwards) plus tooltip texts; labels holds one "block b" per tile.
    """
    tpb = int(frame["bw"].iloc[0])
    tile_w = min(tpb, LANES)
    tile_h = -(-tpb // LANES)
    blocks = int(frame["bx"].max()) + 1
    per_row = max(1, min(blocks, TARGET_COLUMNS // (tile_w + 1)))
    cells = frame.copy()
    tile_col = cells["bx"] % per_row
    tile_row = cells["bx"] // per_row
    cells["x"] = tile_col * (tile_w + 1) + cells["tx"] % LANES
    cells["y"] = tile_row * (tile_h + 2) + 1 + cells["tx"] // LANES  # a label row above each tile
    cells["x2"] = cells["x"] + 1
    cells["y2"] = cells["y"] + 1
    cells["block"] = cells["bx"].map(lambda b: f"block {b}")
    cells["warp_label"] = cells["warp"].map(lambda w: f"warp {w}")
    cells["state"] = cells["masked"].map({True: "idle (masked by the guard)", False: "works"})
    labels = pd.DataFrame({"bx": range(blocks)})
    labels["x"] = (labels["bx"] % per_row) * (tile_w + 1)
    labels["y"] = (labels["bx"] // per_row) * (tile_h + 2)
    labels["text"] = labels["bx"].map(lambda b: f"block {b}")
    columns = per_row * (tile_w + 1) - 1
    rows = (-(-blocks // per_row)) * (tile_h + 2) - 1
    return cells, labels, columns, rows


def guard_text(position: int, n: int, grid_stride: bool) -> str:
    """What the guard decides for one thread, in words."""
    if grid_stride:
        return f"start {position} {'<' if position < n else '≥'} N = {n}: " + (
            "loops over its elements" if position < n else "no element, idle"
        )
    if position < n:
        return f"{position} < N = {n}: adds element {position}"
    return f"{position} ≥ N = {n}: masked off, idle"


def thread_grid_chart(
    frame: pd.DataFrame, n: int, color_by: str = "block", *, grid_stride: bool = False, subtitle: str = ""
) -> alt.LayerChart:
    """One cell per launched thread, grouped into block tiles (rows = warps, columns = lanes).

    ``color_by`` "block" or "warp" (warp within its block). Idle threads are grey with a
    dashed outline whatever the colouring. ``frame`` is ``IndexingRun.to_frame()``.
    """
    if color_by not in COLOR_CHOICES:
        raise ValueError(f"color_by must be one of {COLOR_CHOICES}, got {color_by!r}")
    if frame.empty:
        raise ValueError("no thread records to draw")
    cells, labels, columns, rows = thread_layout(frame)
    cells["guard"] = [guard_text(int(p), n, grid_stride) for p in cells["position"]]
    cells = cells[
        [
            "thread",
            "tx",
            "bx",
            "bw",
            "position",
            "warp",
            "lane",
            "masked",
            "handled",
            "formula",
            "guard",
            "block",
            "warp_label",
            "x",
            "x2",
            "y",
            "y2",
        ]
    ]  # only what is drawn
    field = "block" if color_by == "block" else "warp_label"
    domain = list(dict.fromkeys(cells.sort_values(["bx", "warp"])[field]))
    legend = alt.Legend(title=color_by, symbolType="square") if len(domain) <= LEGEND_LIMIT else None
    color = alt.Color(f"{field}:N", scale=alt.Scale(domain=domain, scheme="tableau20"), legend=legend, title=color_by)
    tooltip = [
        alt.Tooltip("thread:Q", title="global thread"),
        alt.Tooltip("formula:N", title="index"),
        alt.Tooltip("tx:Q", title="threadIdx.x (tx)"),
        alt.Tooltip("bx:Q", title="blockIdx.x (bx)"),
        alt.Tooltip("bw:Q", title="blockDim.x (bw)"),
        alt.Tooltip("warp:Q", title="warp in block"),
        alt.Tooltip("lane:Q", title="lane in warp"),
        alt.Tooltip("guard:N", title="guard"),
        alt.Tooltip("handled:N", title="elements added"),
    ]
    x = alt.X("x:Q", scale=alt.Scale(domain=[0, columns + 1], nice=False, zero=True), axis=None)
    y = alt.Y("y:Q", scale=alt.Scale(domain=[0, rows + 1], nice=False, reverse=True), axis=None)
    working = alt.Chart(cells).transform_filter("!datum.masked").mark_rect(stroke="white", strokeWidth=0.5).encode(
        x=x, x2="x2:Q", y=y, y2="y2:Q", color=color, tooltip=tooltip
    )
    idle = alt.Chart(cells).transform_filter("datum.masked").mark_rect(
        fill=IDLE_FILL, stroke=IDLE_STROKE, strokeDash=[2, 2], strokeWidth=0.8
    ).encode(x=x, x2="x2:Q", y=y, y2="y2:Q", tooltip=tooltip)
    names = (
        alt.Chart(labels)
        .mark_text(align="left", baseline="top", fontSize=9, dy=1, color="#555")
        .encode(
            x=alt.X("x:Q", scale=alt.Scale(domain=[0, columns + 1], nice=False)),
            y=alt.Y("y:Q", scale=alt.Scale(domain=[0, rows + 1], nice=False, reverse=True)),
            text="text:N",
        )
    )
    cell_px = max(4, min(CELL_PX, 760 // max(columns + 1, 1)))  # leaves room for the legend in a wide page
    idle_count = int(cells["masked"].sum())
    title_line = f"{len(cells):,} threads in {cells['bx'].nunique():,} blocks; {idle_count:,} idle (grey, dashed)"
    return (working + idle + names).properties(
        title=alt.TitleParams(
            f"Every launched thread — {title_line}",
            subtitle=[subtitle, "Rows are warps (32 lanes); hover a cell for position = tx + bx * bw."]
            if subtitle
            else "Rows are warps (32 lanes); hover a cell for position = tx + bx * bw.",
        ),
        width=(columns + 1) * cell_px,
        height=(rows + 1) * cell_px,
        autosize=alt.AutoSizeParams(type="pad"),  # width/height are the grid itself; titles and legend add to them
    )


def element_owner_frame(handled_by, threads_per_block: int) -> pd.DataFrame:
    """One row per element: which thread added it, that thread's block, and the loop step."""
    owner = pd.Series(list(handled_by), dtype="int64")
    stride = int(owner.max()) + 1 if len(owner) else 1
    frame = pd.DataFrame({"element": range(len(owner)), "thread": owner})
    frame["bx"] = frame["thread"] // threads_per_block
    frame["tx"] = frame["thread"] % threads_per_block
    frame["step"] = frame["element"] // max(stride, 1)
    frame["block"] = frame["bx"].map(lambda b: f"block {b}")
    frame["col"] = frame["element"] % 64
    frame["row"] = frame["element"] // 64
    return frame


def element_owner_chart(handled_by, threads_per_block: int, subtitle: str = "") -> alt.Chart:
    """Grid-stride: one cell per element (64 to a row) coloured by the block whose thread added it."""
    frame = element_owner_frame(handled_by, threads_per_block)
    blocks = list(dict.fromkeys(frame.sort_values("bx")["block"]))
    legend = alt.Legend(title="added by", symbolType="square") if len(blocks) <= LEGEND_LIMIT else None
    rows = int(frame["row"].max()) + 1 if len(frame) else 1
    return (
        alt.Chart(frame)
        .mark_rect(stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("col:O", axis=None),
            y=alt.Y("row:O", axis=alt.Axis(title="element ÷ 64", labelExpr="datum.value * 64")),
            color=alt.Color("block:N", scale=alt.Scale(domain=blocks, scheme="tableau20"), legend=legend),
            tooltip=[
                alt.Tooltip("element:Q", title="element"),
                alt.Tooltip("thread:Q", title="added by global thread"),
                alt.Tooltip("bx:Q", title="its block (bx)"),
                alt.Tooltip("tx:Q", title="its tx"),
                alt.Tooltip("step:Q", title="on its loop step"),
            ],
        )
        .properties(
            title=alt.TitleParams(
                "Grid-stride: which thread added each element (element i ← thread i mod stride)", subtitle=subtitle
            ),
            width=64 * CELL_PX,
            height=rows * CELL_PX,
            autosize=alt.AutoSizeParams(type="pad"),
        )
    )


# --- the block-size sweep -------------------------------------------------------------


def sweep_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: median/min/max kernel time (µs), bandwidth (GB/s), occupancy, samples."""
    grouped = frame.groupby("label", sort=False)
    out = grouped.agg(
        order=("order", "first"),
        kind=("kind", "first"),
        threads_per_block=("threads_per_block", "first"),
        blocks=("blocks", "first"),
        median_s=("seconds", "median"),
        min_s=("seconds", "min"),
        max_s=("seconds", "max"),
        samples=("seconds", "count"),
        occupancy=("occupancy", "first"),
        occupancy_source=("occupancy_source", "first"),
        best=("best", "first"),
        n=("n", "first"),
    ).reset_index()
    flag = lambda col: (  # noqa: E731
        frame.groupby("label", sort=False)[col].first().reindex(out["label"]).fillna(False).astype(bool).to_numpy()
        if col in frame
        else False
    )
    out["few_samples"] = out["samples"] < 3
    out["l2_resident"] = flag("l2_resident")
    bytes_moved = BYTES_PER_ELEMENT * out["n"]
    for col in ("median", "min", "max"):
        out[f"{col}_us"] = out[f"{col}_s"] * 1e6
    out["bandwidth_gbps"] = bytes_moved / out["median_s"] / 1e9
    out["bandwidth_low_gbps"] = bytes_moved / out["max_s"] / 1e9  # slowest sample
    out["bandwidth_high_gbps"] = bytes_moved / out["min_s"] / 1e9  # fastest sample
    out["occupancy_pct"] = out["occupancy"] * 100
    out["marker"] = out["best"].map({True: "best", False: ""})
    # n<3 and L2 marks beside "best" (never "*" for best: "*" means fewer than 3 samples)
    out["marks"] = [
        ", ".join(m for m in (("best" if b else ""), ("n<3" if f else ""), ("fits in L2" if l2 else "")) if m)
        for b, f, l2 in zip(out["best"], out["few_samples"], out["l2_resident"])
    ]
    return out.sort_values("order").reset_index(drop=True)


def _sweep_tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip("label:N", title="configuration"),
        alt.Tooltip("blocks:Q", title="blocks", format=","),
        alt.Tooltip("threads_per_block:Q", title="threads per block"),
        alt.Tooltip("median_us:Q", title="median kernel time (µs)", format=",.4~r"),
        alt.Tooltip("min_us:Q", title="min (µs)", format=",.4~r"),
        alt.Tooltip("max_us:Q", title="max (µs)", format=",.4~r"),
        alt.Tooltip("bandwidth_gbps:Q", title="bandwidth at median (GB/s)", format=",.4~r"),
        alt.Tooltip("occupancy_pct:Q", title="occupancy (%)", format=".0f"),
        alt.Tooltip("occupancy_source:N", title="occupancy from"),
        alt.Tooltip("samples:Q", title="samples"),
        alt.Tooltip("marks:N", title="marks"),
    ]


def _config_x(order: list[str]) -> alt.X:
    return alt.X(
        "label:N",
        sort=order,
        title="launch configuration",
        axis=alt.Axis(labelAngle=-30, labelOverlap=False, labelLimit=240),
    )


def _kind_color() -> alt.Color:
    return alt.Color(
        "kind:N", scale=alt.Scale(domain=list(KIND_COLORS), range=list(KIND_COLORS.values())), title="kernel"
    )


def sweep_time_chart(frame: pd.DataFrame, subtitle: str) -> alt.LayerChart:
    """Median kernel time per configuration (points), min–max whiskers, the best starred."""
    data = sweep_summary(frame)
    order = list(data["label"])
    spread = data["max_us"].max() / max(data["min_us"].min(), 1e-12)
    y_scale = alt.Scale(type="log") if spread > 20 else alt.Scale(zero=False)
    y_title = "kernel time (µs" + (", log scale)" if spread > 20 else ")")
    base = alt.Chart(data).encode(x=_config_x(order), tooltip=_sweep_tooltip())
    if spread > 20:  # one labelled tick per decade, plain numbers (never "1e+7", no wall of minor grid lines)
        from ui.charts.common import log_axis

        decades = log_axis(list(data["min_us"]) + list(data["max_us"])).values
        y_axis = alt.Axis(values=decades, format=",~f", grid=True)
    else:
        y_axis = alt.Axis(format=",~f", labelOverlap="greedy", tickCount=6)
    whiskers = base.mark_rule(strokeWidth=2).encode(
        y=alt.Y("min_us:Q", scale=y_scale, title=y_title, axis=y_axis), y2="max_us:Q", color=_kind_color()
    )
    points = base.mark_point(filled=True, size=70).encode(y=alt.Y("median_us:Q", scale=y_scale), color=_kind_color())
    best = (
        base.transform_filter("datum.best")
        .mark_point(shape="diamond", size=260, filled=False, strokeWidth=2, color="black")
        .encode(y=alt.Y("median_us:Q", scale=y_scale))
    )
    label = (
        base.transform_filter("datum.best")
        .mark_text(dy=-16, fontWeight="bold")
        .encode(y=alt.Y("median_us:Q", scale=y_scale), text="marker:N")
    )
    # a figure from fewer than 3 samples cannot show its spread: a grey square says so
    few = (
        base.transform_filter("datum.few_samples")
        .mark_square(size=200, filled=False, strokeWidth=1.5, color="#777")
        .encode(y=alt.Y("median_us:Q", scale=y_scale))
    )
    return (whiskers + points + best + few + label).properties(
        title=alt.TitleParams("Kernel time per launch configuration (median; whisker = min–max; diamond = best; "
                              "grey square = fewer than 3 samples)", subtitle=subtitle, anchor="start"), height=300,
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
    )


def sweep_bandwidth_chart(frame: pd.DataFrame, subtitle: str, peak_gbps: float | None = None) -> alt.LayerChart:
    """Effective bandwidth (12 bytes per element / median time) per configuration, with the
    fastest–slowest sample range and, when known, the device's theoretical peak."""
    data = sweep_summary(frame)
    order = list(data["label"])
    base = alt.Chart(data).encode(x=_config_x(order), tooltip=_sweep_tooltip())
    bars = base.mark_bar(opacity=0.85).encode(
        y=alt.Y("bandwidth_gbps:Q", title="effective bandwidth (GB/s)", axis=alt.Axis(format=",.6~r")),
        color=_kind_color(),
    )
    whiskers = base.mark_rule(color="black").encode(y="bandwidth_low_gbps:Q", y2="bandwidth_high_gbps:Q")
    best = (
        base.transform_filter("datum.best")
        .mark_text(dy=-8, fontWeight="bold")
        .encode(y="bandwidth_high_gbps:Q", text="marker:N")
    )
    layers = [bars, whiskers, best]
    if peak_gbps:
        peak = pd.DataFrame({"peak": [peak_gbps], "text": [f"theoretical peak {peak_gbps:,.0f} GB/s"]})
        layers.append(
            alt.Chart(peak)
            .mark_rule(strokeDash=[6, 4], color="#e45756")
            .encode(y="peak:Q", tooltip=[alt.Tooltip("text:N", title="device")])
        )
        layers.append(
            alt.Chart(peak)
            .mark_text(align="left", dx=4, dy=-6, color="#e45756")
            .encode(y="peak:Q", x=alt.value(0), text="text:N")
        )
    return alt.LayerChart(layer=list(layers)).properties(
        title=alt.TitleParams(
            "Effective bandwidth per configuration (bar = median; whisker = fastest–slowest sample)",
            subtitle=subtitle,
            anchor="start",
        ),
        height=300,
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
    )


def occupancy_chart(frame: pd.DataFrame, subtitle: str) -> alt.Chart:
    """Theoretical occupancy per configuration (resident warps / the SM's maximum)."""
    data = sweep_summary(frame)
    data = data[data["occupancy"].notna()]
    if data.empty:
        raise ValueError("no occupancy figures to chart (the simulator has none)")
    order = list(data["label"])
    return alt.Chart(data).mark_bar().encode(
        x=_config_x(order),
        y=alt.Y("occupancy_pct:Q", title="theoretical occupancy (%)", scale=alt.Scale(domain=[0, 100])),
        color=_kind_color(),
        tooltip=_sweep_tooltip(),
    ).properties(title=alt.TitleParams("Occupancy: how full each multiprocessor can be", subtitle=subtitle), height=220)


# --- launch overhead ---------------------------------------------------------------------


OVERHEAD_ROW_PX = 36  # per path: its dot, min-max line and sample ticks readable, never squeezed (>= 28 px)
OVERHEAD_LABEL_PX = 460  # the longest path label (about 65 characters at 11 px) in full


def launch_overhead_chart(frame: pd.DataFrame, subtitle: str) -> alt.LayerChart:
    """µs per launch per path (``LaunchOverheadRun.to_frame()``): median dot, min–max rule,
    every sample as a tick; a path with fewer than 3 samples is labelled so.

    Each path gets ``OVERHEAD_ROW_PX`` of height (a step, whatever the number of paths) and
    its whole label (``OVERHEAD_LABEL_PX``, never cut off); the subtitle ends with how many
    samples each path has.
    """
    data = frame.copy()
    data["label"] = [f"{label} (n<3)" if few else label for label, few in zip(data["label"], data["few_samples"])]
    summary = (
        data.groupby("label", sort=False)["us"]
        .agg(median_us="median", min_us="min", max_us="max", samples="count")
        .reset_index()
    )
    order = summary.sort_values("median_us")["label"].tolist()
    y = alt.Y(
        "label:N",
        sort=order,
        title=None,
        axis=alt.Axis(labelLimit=OVERHEAD_LABEL_PX, labelFontSize=11, labelPadding=6),
    )
    tooltip = [
        alt.Tooltip("label:N", title="path"),
        alt.Tooltip("median_us:Q", title="median (µs per launch)", format=",.3~r"),
        alt.Tooltip("min_us:Q", title="min (µs)", format=",.3~r"),
        alt.Tooltip("max_us:Q", title="max (µs)", format=",.3~r"),
        alt.Tooltip("samples:Q", title="samples"),
    ]
    from ui.charts.common import log_axis

    axis = log_axis(list(data["us"]))
    x = alt.X("median_us:Q", scale=alt.Scale(type="log"), title="µs per launch (host time, log scale)", axis=axis)
    # a dot, not a bar: a bar needs a zero baseline, which a log axis does not have
    bars = (
        alt.Chart(summary)
        .mark_point(color="#b8860b", filled=True, size=140, opacity=1)
        .encode(x=x, y=y, tooltip=tooltip)
    )
    spread = (
        alt.Chart(summary)
        .mark_rule(color="#444")
        .encode(x=alt.X("min_us:Q", axis=axis), x2="max_us:Q", y=y, tooltip=tooltip)
    )
    ticks = (
        alt.Chart(data)
        .mark_tick(color="#444", opacity=0.5, size=OVERHEAD_ROW_PX * 0.6)
        .encode(
            x=alt.X("us:Q", scale=alt.Scale(type="log"), axis=axis),
            y=y,
            tooltip=[alt.Tooltip("us:Q", title="sample (µs)", format=",.3~r")],
        )
    )
    counts = sorted(set(summary["samples"]))
    per_path = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    measured = f"{len(order)} launch path{'s' if len(order) != 1 else ''}, {per_path} samples each"
    return alt.LayerChart(layer=[bars, spread, ticks]).properties(
        title=alt.TitleParams(
            "Host time to launch one kernel, by path (median; line = min–max; ticks = samples)",
            subtitle=f"{subtitle} · {measured}" if subtitle else measured,
            anchor="start",
        ),
        height=alt.Step(OVERHEAD_ROW_PX),
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
    )
