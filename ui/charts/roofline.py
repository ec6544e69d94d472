"""Pure chart builder for the Roofline page: points and roofs in, ``alt.Chart`` out.

Log–log axes: arithmetic intensity (FLOPs per byte the algorithm must move) against
achieved GFLOP/s. The memory roof rises with slope 1 until it meets the flat FP32 roof
at the ridge; a measured device copy is drawn as a dashed memory roof beside it.
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from gpu.core.roofline import COPY_ROOF, DRIVER_MEMCPY_ROOF, Roofs
from ui.charts.common import log_axis

ROOF_COLORS = {
    "memory roof (clock × bus width)": "#e45756",
    COPY_ROOF: "#17becf",
    DRIVER_MEMCPY_ROOF: "#17becf",
    "FP32 roof": "#54a24b",
}
DASHED = (COPY_ROOF, DRIVER_MEMCPY_ROOF)


def roof_lines(roofs: Roofs, x_min: float, x_max: float) -> pd.DataFrame:
    """Sampled roof lines between ``x_min`` and ``x_max`` (FLOP/byte): columns roof, intensity, gflops."""
    xs = [x_min * (x_max / x_min) ** (i / 60) for i in range(61)]
    rows = []
    for name, bandwidth in (
        ("memory roof (clock × bus width)", roofs.memory_gbps),
        (roofs.copy_label, roofs.copy_gbps),
    ):
        if bandwidth:
            rows += [(name, x, min(x * bandwidth, roofs.fp32_gflops or math.inf)) for x in xs]
    if roofs.fp32_gflops:
        start = roofs.ridge or x_min
        rows += [("FP32 roof", x, roofs.fp32_gflops) for x in xs if x >= start]
    return pd.DataFrame(rows, columns=["roof", "intensity", "gflops"])


def roofline_chart(points: pd.DataFrame, roofs: Roofs, subtitle: str) -> alt.Chart:
    """Measured points under the roofs. ``points`` has the columns of
    ``gpu.report.roofline_points.COLUMNS``; hover shows kernel, step, size and % of the bounding roof."""
    pts = points[points["gflops"].notna() & (points["intensity"] > 0)].copy()
    pts["percent"] = [f"{f:.1%} of the {b} roof" if pd.notna(f) else "unknown: no roof known for this device"
                      for f, b in zip(pts["fraction"], pts["bound"])]
    lo = min([*pts["intensity"], 1 / 16]) / 2
    hi = max([*pts["intensity"], (roofs.ridge or 1) * 4, 16]) * 2
    lines = roof_lines(roofs, lo, hi)
    x = alt.X(
        "intensity:Q",
        scale=alt.Scale(type="log", domain=[lo, hi]),
        title="arithmetic intensity (FLOPs per byte the algorithm must move, log)",
        axis=log_axis([lo, hi], inside=(lo, hi)),
    )
    y_title = "achieved GFLOP/s (log)"
    y_axis = log_axis([*pts["gflops"], *lines["gflops"]])  # one tick and grid line per decade
    layers = []
    if not lines.empty:
        domain = [r for r in ROOF_COLORS if r in set(lines["roof"])]
        layers.append(
            alt.Chart(lines)
            .mark_line(strokeWidth=2)
            .encode(
                x=x,
                y=alt.Y("gflops:Q", scale=alt.Scale(type="log"), title=y_title, axis=y_axis),
                color=alt.Color(
                    "roof:N",
                    scale=alt.Scale(domain=domain, range=[ROOF_COLORS[r] for r in domain]),
                    title="roof",
                    legend=alt.Legend(labelLimit=280),
                ),
                strokeDash=alt.condition(
                    " || ".join(f"datum.roof == '{r}'" for r in DASHED), alt.value([6, 3]), alt.value([1, 0])
                ),
                detail="roof:N",
                tooltip=[
                    alt.Tooltip("roof:N"),
                    alt.Tooltip("intensity:Q", format=".3~r", title="FLOP/byte"),
                    alt.Tooltip("gflops:Q", format=",.4~r", title="GFLOP/s"),
                ],
            )
        )
    tooltip = [
        alt.Tooltip("kernel:N"),
        alt.Tooltip("step:N"),
        alt.Tooltip("size:N"),
        alt.Tooltip("intensity:Q", title="FLOP/byte", format=".3~r"),
        alt.Tooltip("gflops:Q", title="GFLOP/s", format=",.4~r"),
        alt.Tooltip("gbps:Q", title="GB/s", format=",.4~r"),
        alt.Tooltip("percent:N", title="share of the bounding roof"),
        alt.Tooltip("source:N"),
    ]
    layers.append(alt.Chart(pts).mark_point(size=120, filled=True, opacity=0.85).encode(
        x=x, y=alt.Y("gflops:Q", scale=alt.Scale(type="log"), title=y_title, axis=y_axis),
        color=alt.Color("kernel:N", title="kernel", scale=alt.Scale(scheme="tableau10")),
        shape=alt.Shape("source:N", title="measured in"),
        tooltip=tooltip))
    pts["tag"] = [step.split(" · ")[0] if " · " in step else "" for step in pts["step"]]  # "1", "2"...: the step number
    layers.append(alt.Chart(pts).mark_text(align="left", dx=8, dy=-6, fontSize=11, color="#333").encode(
        x=x, y=alt.Y("gflops:Q", scale=alt.Scale(type="log"), axis=y_axis), text="tag:N"))
    subtitles = [subtitle, _measured_line(pts)]
    if roofs.copy_gbps and roofs.copy_label == DRIVER_MEMCPY_ROOF and (pts["gbps"] > roofs.copy_gbps).any():
        subtitles.append(f"points above the dashed driver memcpy ({roofs.copy_gbps:,.0f} GB/s) are right: a kernel "
                         "moves memory faster than the driver's memcpy did, so that line is no ceiling")
    return (
        alt.layer(*layers)
        .resolve_scale(color="independent")
        .properties(
            title=alt.TitleParams("Roofline: every measured kernel step under the device's roofs", subtitle=subtitles),
            height=460,
        )
    )


def _measured_line(pts: pd.DataFrame) -> str:
    """What the points are: how many, of how many kernels, and that each is a median."""
    kernels = pts["kernel"].nunique()
    return (f"{len(pts)} point{'s' if len(pts) != 1 else ''} from {kernels} kernel{'s' if kernels != 1 else ''}; "
            "each the median kernel time of its run (hover for size and samples' source)")


__all__ = ["ROOF_COLORS", "roof_lines", "roofline_chart"]
