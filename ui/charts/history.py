"""Pure builders for the History page: saved runs in, tidy DataFrames and ``alt.Chart`` out.

A run's samples are where its experiment's declaration says (``Experiment.samples``:
``saved dict -> {series label: [seconds]}``, checked). A run whose experiment declares
none — or is no longer declared, or whose row predates the hook's shape (the hook raises
a KeyError, IndexError, TypeError or AttributeError on it) — is read as every run was
before: every mapping in its saved result that holds ``samples_s`` (a ``Stats.to_dict()``)
is one measure, named by its path, with the shared labels from ``ui.charts.common`` where
the path is a known phase or CPU baseline.

Every figure carries the N it was measured at (``samples_frame``'s "n"): a vector add in
the simulator runs its kernel at the simulator's cap (the saved ``gpu_n``) and its CPU
implementations at the user's N (``cpu_n``), so "Kernel 3.67 s" is at 16,384, not at
the run's 10,000,000.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd

from gpu.catalog.base import Experiment, checked_samples
from gpu.catalog.registry import aliases, experiments, history_columns
from gpu.core.provenance import METHODOLOGY_KEY, methodology_of
from gpu.service.store import RunRecord
from ui.charts.common import COLORS, MEASURE_LABELS, log_axis

SIMULATED_NOTE = "simulated runs: CUDA simulator timings are not GPU performance"
_SKIP_PATH_PARTS = {"phases", "stats", "results", "timings"}


def run_label(record: RunRecord) -> str:
    """Short, unique, readable: id prefix, experiment, and a simulated tag."""
    sim = " (sim)" if record.simulated else ""
    return f"{record.short_id} {record.experiment}{sim}"


def _whole(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value <= 0:
        return None
    return int(value) if float(value).is_integer() else None


def _stats_leaves(
    node: Any, path: tuple[str, ...] = (), n: int | None = None
) -> Iterator[tuple[tuple[str, ...], Sequence[float], int | None]]:
    """(path, samples, N) of every ``samples_s`` list: N is the nearest enclosing "n", except
    under "gpu" where a saved ``gpu_n`` (the kernel's N, the simulator's cap) holds and under
    "cpu" a ``cpu_n``."""
    if isinstance(node, Mapping):
        n = _whole(node.get("n")) or n
        samples = node.get("samples_s")
        if isinstance(samples, list) and samples and all(isinstance(s, (int, float)) for s in samples):
            yield path, samples, n
            return
        for key, value in node.items():
            at = _whole(node.get(f"{key}_n")) if key in ("gpu", "cpu") else None
            yield from _stats_leaves(value, (*path, str(key)), at or n)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            label = value.get("label") or value.get("name") or value.get("n") if isinstance(value, Mapping) else None
            yield from _stats_leaves(value, (*path, str(label if label is not None else i)), n)


def declared_by_name() -> dict[str, Experiment]:
    """Every declared experiment under each name History may hold it by (its key and aliases)."""
    return {name: e for e in experiments() for name in (e.key, *aliases(e.key))}


def run_samples(
    record: RunRecord, declared: Mapping[str, Experiment] | None = None
) -> list[tuple[str, Sequence[float]]]:
    """(measure name, seconds) of every series a saved run holds (see the module's docstring)."""
    experiment = (declared_by_name() if declared is None else declared).get(record.experiment)
    if experiment is not None and experiment.samples is not None:
        try:
            found = experiment.samples(record.result)
        except (LookupError, TypeError, AttributeError):  # a row saved before the hook's shape: read it as before
            found = None
        if found is not None:
            return [(label, values) for label, values in checked_samples(experiment, found).items() if values]
    return [(measure_name(path), samples) for path, samples, _n in _stats_leaves(record.result)]


def run_samples_at(
    record: RunRecord, declared: Mapping[str, Experiment] | None = None
) -> list[tuple[str, Sequence[float], int | None]]:
    """``run_samples`` with the N each series was measured at (None when the run does not say).

    A declared ``samples`` hook names series, not sizes: its series take the run's N
    unless the found leaves (same samples) say otherwise.
    """
    leaves = list(_stats_leaves(record.result))
    at_by_samples = {tuple(samples): n for _path, samples, n in leaves}
    run_n = _whole(record.params.get("n")) or _whole(record.result.get("n"))
    return [
        (name, samples, at_by_samples.get(tuple(samples), run_n)) for name, samples in run_samples(record, declared)
    ]


def at_n_text(n: Any, simulated: bool) -> str:
    """ "(simulated, at N = 16,384)", "(at N = 1,024)", "(simulated)" or "": what a figure says beside it."""
    at = _whole(n)
    parts = (["simulated"] if simulated else []) + ([f"at N = {at:,}"] if at else [])
    return f"({', '.join(parts)})" if parts else ""


def has_samples(record: RunRecord, declared: Mapping[str, Experiment] | None = None) -> bool:
    """True when the run saved at least one list of timing samples (something to chart)."""
    return bool(run_samples(record, declared))


def measure_name(path: tuple[str, ...]) -> str:
    """A readable measure name for a path in a result, using the shared labels when known."""
    parts = tuple(p for p in path if p not in _SKIP_PATH_PARTS)
    if len(parts) == 2:
        first, second = parts
        for key in ((first, second), (second, first)):
            if key in MEASURE_LABELS:
                return MEASURE_LABELS[key]
    return " · ".join(parts) if parts else "result"


def samples_frame(records: Iterable[RunRecord]) -> pd.DataFrame:
    """Tidy samples: one row per run x measure x sample.

    Columns: run_id, run, experiment, device, backend, simulated, created_at, measure, n
    (the N that measure ran at: see the module docstring), sample, seconds, methodology_version (the
    rules that run was measured under: each saved run keeps its own).
    """
    records = list(records)
    labels = [run_label(r) for r in records]
    if len(set(labels)) < len(labels):  # 8-character ids collided: show whole ids
        labels = [f"{r.run_id} {r.experiment}{' (sim)' if r.simulated else ''}" for r in records]
    rows = []
    declared = declared_by_name()
    for r, label in zip(records, labels):
        rules = methodology_of(r.result)
        for name, samples, at in run_samples_at(r, declared):
            for i, s in enumerate(samples):
                rows.append(
                    (
                        r.run_id,
                        label,
                        r.experiment,
                        r.device_name,
                        r.backend,
                        r.simulated,
                        r.created_at,
                        name,
                        at,
                        i,
                        float(s),
                        rules,
                    )
                )
    return pd.DataFrame(
        rows,
        columns=[
            "run_id",
            "run",
            "experiment",
            "device",
            "backend",
            "simulated",
            "created_at",
            "measure",
            "n",
            "sample",
            "seconds",
            METHODOLOGY_KEY,
        ],
    )


def param_labels() -> dict[str, str]:
    """Column header per parameter name, from the declared ``Param.label``.

    One column holds a parameter across experiments, so where declarations word it
    differently ("N (elements per vector)", "N (float32 values)") the shortest wording
    without its parenthesis stands for all ("N").
    """
    found: dict[str, list[str]] = {}
    for e in experiments():
        for p in e.params:
            found.setdefault(p.name, [])
            if p.label not in found[p.name]:
                found[p.name].append(p.label)
    return {
        name: labels[0] if len(labels) == 1 else min((lab.split(" (")[0] for lab in labels), key=len)
        for name, labels in found.items()
    }


def readable_cell(value: Any) -> Any:
    """Whole numbers as integers with thousands separators (an imported 512.0 reads 512)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    return value


def _compact(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return f"{len(value)} values" if len(value) > 4 else ", ".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in value.items() if not isinstance(v, (dict, list)))
    return value


def _imported_status(result: Mapping[str, Any]) -> str:
    """"imported" for a check file; "self-reported on <device>" for a notebook's result (timed there, not here)."""
    imported = result.get("imported")
    if isinstance(imported, Mapping) and imported.get("self_reported"):
        return str(imported.get("label") or "self-reported")
    return "imported"


def runs_frame(records: Iterable[RunRecord], key_params: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per run for the table and the CSV export, newest first as given.

    ``key_params`` get a column each (default: every declaration's ``history_columns``);
    a run's other parameters share the "parameters" column.
    """
    key_params = tuple(history_columns() if key_params is None else key_params)
    rows = []
    declared = declared_by_name()
    for r in records:
        row = {
            "run": r.short_id,
            "run_id": r.run_id,
            "created_at": r.created_at,
            "experiment": r.experiment,
            "device": r.device_name or "unknown",
            "backend": r.backend_label,
            "simulated": r.simulated,
            "status": ("stopped: " + str(r.result["stopped"]))
            if r.result.get("stopped")
            else (_imported_status(r.result) if r.result.get("imported") else "complete"),
        }
        for key in key_params:
            if key in r.params:
                row[key] = _compact(r.params[key])
        kernel_n = _whole(r.result.get("gpu_n"))
        if kernel_n and kernel_n != _whole(r.params.get("n", r.result.get("n"))):
            row["kernel_n"] = kernel_n  # the simulator's cap: the GPU figures are at this N
        row["samples"] = sum(len(s) for _name, s in run_samples(r, declared))
        row["parameters"] = "; ".join(f"{k}={_compact(v)}" for k, v in r.params.items() if k not in key_params)
        rows.append(row)
    columns = [
        "run",
        "created_at",
        "experiment",
        "device",
        "backend",
        "status",
        *key_params,
        "kernel_n",
        "samples",
        "parameters",
        "simulated",
        "run_id",
    ]
    frame = pd.DataFrame(rows)
    return frame.reindex(columns=[c for c in columns if c in frame.columns or c in ("run", "experiment")])


def compare_subtitle(samples: pd.DataFrame) -> str:
    runs = samples["run"].nunique()
    devices = ", ".join(sorted(samples["device"].dropna().unique()))
    note = f" · {SIMULATED_NOTE}" if samples["simulated"].any() else ""
    return (f"{runs} saved run{'s' if runs != 1 else ''} · {len(samples):,} samples (each dot one timed repeat, tick "
            f"the median) · on {devices}{note}")


def compare_chart(samples: pd.DataFrame, subtitle: str | None = None) -> alt.LayerChart:
    """Selected runs side by side: every sample as a dot, the median as a tick, per measure.

    Measures as rows, log x axis (measures span microseconds to seconds); one colour per
    run; tooltips in ms.
    """
    data = samples.assign(ms=samples["seconds"] * 1e3)
    data = data[data["seconds"] > 0]
    if "n" not in data:
        data = data.assign(n=None)
    medians = data.groupby(["run", "measure"], as_index=False, dropna=False).agg(
        median_ms=("ms", "median"),
        samples=("ms", "size"),
        device=("device", "first"),
        backend=("backend", "first"),
        n=("n", "first"),
    )
    order = list(dict.fromkeys(m for m in _measure_order(data["measure"].unique())))
    # Measures down the side, time across: long measure names stay horizontal and whole.
    y = alt.Y("measure:N", sort=order, title=None, axis=alt.Axis(labelLimit=320, labelFontSize=11))
    x_title = "time per repeat (ms, log scale)"
    axis = log_axis(data["ms"])  # one labelled tick and grid line per decade, no minor grid
    color = alt.Color("run:N", title="run", legend=alt.Legend(orient="bottom", columns=2, labelLimit=320))
    dots = (
        alt.Chart(data)
        .mark_circle(size=28, opacity=0.45)
        .encode(
            y=y,
            yOffset=alt.YOffset("run:N"),
            x=alt.X("ms:Q", scale=alt.Scale(type="log"), title=x_title, axis=axis),
            color=color,
            tooltip=[
                alt.Tooltip("run:N"),
                alt.Tooltip("measure:N"),
                alt.Tooltip("ms:Q", title="time (ms)", format=",.4g"),
                alt.Tooltip("sample:Q", title="sample #"),
                alt.Tooltip("n:Q", title="measured at N", format=","),
                alt.Tooltip("device:N"),
                alt.Tooltip("backend:N"),
            ],
        )
    )
    ticks = (
        alt.Chart(medians)
        .mark_tick(thickness=2.5, size=14)
        .encode(
            y=y,
            yOffset=alt.YOffset("run:N"),
            x=alt.X("median_ms:Q", scale=alt.Scale(type="log"), title=x_title, axis=axis),
            color=color,
            tooltip=[
                alt.Tooltip("run:N"),
                alt.Tooltip("measure:N"),
                alt.Tooltip("median_ms:Q", title="median (ms)", format=",.4g"),
                alt.Tooltip("samples:Q", title="samples"),
                alt.Tooltip("n:Q", title="measured at N", format=","),
                alt.Tooltip("device:N"),
                alt.Tooltip("backend:N"),
            ],
        )
    )
    title = alt.TitleParams(
        "Saved runs compared: time per measure", subtitle=subtitle or compare_subtitle(samples), anchor="start"
    )
    return alt.LayerChart(layer=[dots, ticks]).properties(
        title=title, height=alt.Step(16), autosize=alt.AutoSizeParams(type="fit-x", contains="padding")
    )


def _measure_order(measures: Iterable[str]) -> list[str]:
    """Shared labels in their palette order first (H2D, kernel, D2H, ...), then the rest by name."""
    known = [m for m in COLORS if m in set(measures)]
    return known + sorted(m for m in measures if m not in COLORS)


# --- Compare GPUs: one experiment across devices ------------------------------------------------

GPU_COMPARE_MEASURES = (
    "H2D copy",
    "Kernel launch (host)",
    "Kernel",
    "D2H copy",
    "GPU end to end",
    "NumPy",
    "Python loop",
)
SOURCE_KINDS = ("published in the article", "recorded reference", "imported", "your run", "self-reported")
# Okabe & Ito's colour-blind-safe palette, ordered so that neighbours differ most (blue, orange,
# bluish green, reddish purple, vermillion, sky blue, yellow, black): no two near-identical blues.
SOURCE_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000")
GPU_ONLY_NOTE = "simulated runs are left out: CUDA simulator timings are not GPU performance"


def gpu_figures(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The rows a GPU comparison may plot (no simulator rows) and how many simulated ones were left out."""
    simulated = frame["backend"].eq("simulator") if "backend" in frame else pd.Series(False, index=frame.index)
    return frame[~simulated].copy(), int(simulated.sum())


def _source_color(sources: list[str], legend: bool = True) -> alt.Color:
    """One colour per source, the same in both Compare-GPUs charts (``SOURCE_PALETTE`` in order)."""
    palette = [SOURCE_PALETTE[i % len(SOURCE_PALETTE)] for i in range(len(sources))]
    return alt.Color(
        "source:N",
        title="device and source",
        sort=sources,
        scale=alt.Scale(domain=sources, range=palette),
        legend=alt.Legend(orient="bottom", columns=1, labelLimit=600, symbolType="circle") if legend else None,
    )


def vector_add_entry(source: str, kind: str, result: Mapping[str, Any]) -> list[dict]:
    """Rows of the Compare-GPUs frame from one vector-add result dict (a VectorAddRun.to_dict())."""
    device = result.get("device") or {}
    run_n = result.get("n")
    gpu_n = _whole(result.get("gpu_n")) or run_n  # the kernel's N: the simulator caps it
    cpu_n = _whole(result.get("cpu_n")) or run_n
    rows = []
    phases = ((result.get("gpu") or {}).get("phases") or {})
    for phase, stats in phases.items():
        label = MEASURE_LABELS.get(("gpu", phase))
        if label and isinstance(stats, Mapping) and stats.get("samples_s"):
            rows.append((label, stats["samples_s"], gpu_n))
    for impl, stats in (result.get("cpu") or {}).items():
        label = MEASURE_LABELS.get((impl, "cpu"))
        if label and isinstance(stats, Mapping) and stats.get("samples_s"):
            rows.append((label, stats["samples_s"], cpu_n))
    out = []
    for measure, samples, n in rows:
        if measure not in GPU_COMPARE_MEASURES:
            continue
        seconds = sorted(float(s) for s in samples)
        median = (
            seconds[len(seconds) // 2]
            if len(seconds) % 2
            else (seconds[len(seconds) // 2 - 1] + seconds[len(seconds) // 2]) / 2
        )
        backend = result.get("backend") or device.get("backend") or ""
        out.append({
            "source": source, "kind": kind, "device": device.get("name") or "unknown", "backend": backend,
            "n": n, "measure": measure, "median_ms": median * 1e3, "samples": len(seconds),
            "bandwidth_gbps": 12 * n / median / 1e9 if n and median > 0 and measure == "Kernel" else None,
            "peak_gbps": device.get("peak_bandwidth_gbps"),
            "caveat": _caveat(result, backend, len(seconds)),
        })
    return out


def _caveat(result: Mapping[str, Any], backend: str, samples: int) -> str:
    """What a Compare-GPUs figure must say beside it: simulated, recorded before the rules, n<3."""
    from gpu.core.provenance import caveat_for

    parts = ["simulated: not GPU performance"] if backend == "simulator" else []
    before = caveat_for(result)
    if before and backend != "simulator":
        parts.append(before.split(";")[0])  # "recorded before L2 flushing and verified holds"
    if samples < 3:
        parts.append("fewer than 3 samples")
    return "; ".join(parts)


def article_entry(source: str, n: int, cpu_time_s: float, gpu_time_s: float) -> list[dict]:
    """The article's two printed times (mean of 3 runs each) as Compare-GPUs rows."""
    base = {
        "source": source,
        "kind": "published in the article",
        "device": "NVIDIA T4",
        "backend": "cuda",
        "n": n,
        "samples": 3,
        "bandwidth_gbps": None,
        "peak_gbps": None,
        "caveat": "published wall-clock means, not measured here",
    }
    return [
        {**base, "measure": "GPU end to end", "median_ms": gpu_time_s * 1e3},
        {**base, "measure": "Python loop", "median_ms": cpu_time_s * 1e3},
    ]


def gpus_time_chart(frame: pd.DataFrame, subtitle: str = "") -> alt.Chart:
    """Median time per measure, one dot per source (device) on a shared log axis, rows per measure.

    Simulated rows are never plotted beside GPU figures (``gpu_figures``); the subtitle says
    how many were left out. Each figure's tooltip says the N it was measured at.
    """
    data, left_out = gpu_figures(frame[frame["median_ms"] > 0])
    sources = list(dict.fromkeys(data["source"]))
    measures = [m for m in GPU_COMPARE_MEASURES if m in set(data["measure"])]
    data["time"] = [f"{_ms_text(v)}{' *' if k < 3 else ''} {at_n_text(n, False)}".strip()
                    for v, k, n in zip(data["median_ms"], data["samples"], data["n"])]
    if "caveat" not in data:
        data["caveat"] = ""
    y = alt.Y("measure:N", sort=measures, title=None, axis=alt.Axis(labelLimit=220))
    color = _source_color(sources)
    tooltip = [
        alt.Tooltip("source:N", title="source"),
        alt.Tooltip("kind:N", title="kind"),
        alt.Tooltip("measure:N", title="measure"),
        alt.Tooltip("time:N", title="median"),
        alt.Tooltip("samples:Q", title="samples"),
        alt.Tooltip("n:Q", title="N", format=","),
        alt.Tooltip("caveat:N", title="caveat"),
    ]
    dots = (
        alt.Chart(data)
        .mark_point(filled=True, size=110)
        .encode(
            y=y,
            yOffset=alt.YOffset("source:N", sort=sources),
            x=alt.X(
                "median_ms:Q",
                scale=alt.Scale(type="log"),
                title="median time (ms, log scale)",
                axis=log_axis(list(data["median_ms"])),
            ),
            color=color,
            shape=alt.Shape(
                "kind:N",
                title="kind",
                scale=alt.Scale(domain=list(SOURCE_KINDS),
                                range=["diamond", "circle", "square", "triangle-up", "cross"]),
            ),
            tooltip=tooltip,
        )
    )
    return dots.properties(
        title=alt.TitleParams(
            "Vector add across devices: time per phase (medians)",
            subtitle=[subtitle or "each row one measure; one dot per device and source (the median of its samples)"]
            + ([f"{left_out} {GPU_ONLY_NOTE}"] if left_out else []),
            anchor="start",
        ),
        height=alt.Step(14),  # per source within a measure (the yOffset band)
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
    )


def gpus_bandwidth_chart(frame: pd.DataFrame, subtitle: str = "") -> alt.LayerChart:
    """Kernel bandwidth per source (bar) with its device's theoretical peak (tick), GB/s.

    GPUs only: a simulated "3e-05 GB/s" is never drawn beside a GPU's 3,084 GB/s.
    """
    every_source = list(dict.fromkeys(gpu_figures(frame[frame["median_ms"] > 0])[0]["source"]))  # the time chart's
    data, left_out = gpu_figures(frame[(frame["measure"] == "Kernel") & frame["bandwidth_gbps"].notna()])
    sources = list(dict.fromkeys(data["source"]))
    data["bw_text"] = [
        (f"{v:,.0f} GB/s" if v >= 10 else f"{v:.3g} GB/s") + (" *" if k < 3 else "") + f" {at_n_text(n, False)}"
        for v, k, n in zip(data["bandwidth_gbps"], data["samples"], data["n"])
    ]
    if "caveat" not in data:
        data["caveat"] = ""
    data["peak_text"] = [f"{v:,.0f} GB/s" if v == v and v else "unknown" for v in data["peak_gbps"].astype(float)]
    y = alt.Y("source:N", sort=sources, title=None, axis=alt.Axis(labelLimit=420))
    tooltip = [alt.Tooltip("source:N", title="source"), alt.Tooltip("bw_text:N", title="kernel bandwidth"),
               alt.Tooltip("peak_text:N", title="device peak (clock × bus)"), alt.Tooltip("n:Q", title="N", format=","),
               alt.Tooltip("caveat:N", title="caveat")]
    bars = (
        alt.Chart(data)
        .mark_bar(height=18)
        .encode(
            color=_source_color(every_source, legend=False),  # the bars are labelled on the y axis
            y=y,
            x=alt.X(
                "bandwidth_gbps:Q", title="kernel bandwidth (GB/s, 12 bytes per element)", axis=alt.Axis(format=",.0f")
            ),
            tooltip=tooltip,
        )
    )
    text = (
        alt.Chart(data).mark_text(align="left", dx=4, fontSize=11).encode(y=y, x="bandwidth_gbps:Q", text="bw_text:N")
    )
    peaks = (
        alt.Chart(data[data["peak_gbps"].notna()])
        .mark_tick(color="#000000", thickness=3, size=26)
        .encode(y=y, x="peak_gbps:Q", tooltip=tooltip)
    )
    return alt.LayerChart(layer=[bars, peaks, text]).properties(
        title=alt.TitleParams(
            "Kernel bandwidth against each device's peak (black tick)",
            subtitle=[subtitle or "median kernel time, 12 bytes per element; the article printed no kernel time, so "
                      "the T4 has no bar"] + ([f"{left_out} {GPU_ONLY_NOTE}"] if left_out else []),
            anchor="start",
        ),
        height=alt.Step(30),
    )


def _ms_text(ms: float) -> str:
    from gpu.core.timing import format_seconds

    return format_seconds(ms / 1e3)
