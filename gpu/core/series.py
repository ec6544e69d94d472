"""Every measured series, by a stable id: its label and its colour, in one table.

The engine names what it measured by id ("h2d", "kernel", "numpy"...); charts, tables
and downloads show ``label(id)`` and colour it ``color(id)``, so one series looks the
same on every page and a label is written once. Colours are plain hex strings (no UI
import here); ui/charts builds its scales from this table. The table holds the series
several experiments share; an experiment's own series come from its declaration
(``Experiment.series``), added here when it registers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Series:
    id: str
    label: str
    color: str


_TABLE = (
    Series("alloc", "Device allocation", "#9d9d9d"),
    Series("h2d", "H2D copy", "#4c78a8"),
    Series("launch", "Kernel launch (host)", "#eeca3b"),
    Series("kernel", "Kernel", "#f58518"),
    Series("kernel-with-launch", "Kernel with launch", "#e6a15c"),
    Series("kernel-grid-stride", "Kernel, grid-stride", "#9467bd"),
    Series("kernel-ilp", "Kernel, 4 per thread", "#c49c94"),
    Series("d2h", "D2H copy", "#54a24b"),
    Series("d2d", "D2D copy", "#17becf"),
    Series("total", "GPU end to end", "#e45756"),
    Series("span", "Copies + kernels (event span)", "#6b4c9a"),
    Series("python", "Python loop", "#9d755d"),
    Series("numpy", "NumPy", "#72b7b2"),
    Series("numba", "Numba @njit", "#b279a2"),
    Series("numba-parallel", "Numba parallel", "#ff9da6"),
    Series("cupy", "CuPy a + b", "#bab0ac"),
    Series("torch", "PyTorch a + b", "#79706e"),
)
SERIES: dict[str, Series] = {s.id: s for s in _TABLE}


def add(series: Series) -> None:
    """Make ``series`` known (an experiment's own); ValueError if its id already means something else."""
    known = SERIES.get(series.id)
    if known is not None and known != series:
        raise ValueError(
            f"series {series.id!r} is already {known.label!r} ({known.color}); choose another id than for "
            f"{series.label!r}"
        )
    SERIES[series.id] = series


def remove(series_id: str) -> None:
    """Forget an experiment's own series (never one of the shared table)."""
    if series_id not in {s.id for s in _TABLE}:
        SERIES.pop(series_id, None)


def label(series_id: str) -> str:
    """The label every page shows for ``series_id``."""
    return SERIES[series_id].label


def color(series_id: str) -> str:
    return SERIES[series_id].color


def labels(*series_ids: str) -> dict[str, str]:
    """{id: label} for the given ids, in order."""
    return {sid: label(sid) for sid in series_ids}
