"""Every chart builder's axes, read from ``to_dict()``: a log axis draws one tick and one grid
line per decade (explicit ``values``, never Vega's minor ticks), and no axis, label or tooltip
format can print e-notation (``4.5e+3``). History's charts are checked on their own page."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from gpu.catalog.steps import run_kernel
from gpu.core.roofline import device_roofs
from gpu.core.timing import RepeatPolicy
from gpu.experiments.launch import charts as launch
from gpu.experiments.launch.experiment import run_launch_sweep
from gpu.experiments.launch.overhead import run_launch_overhead
from gpu.experiments.matmul import experiment as matmul
from gpu.experiments.scaling import charts as scaling
from gpu.experiments.transfers import charts as transfers
from gpu.experiments.transfers.experiment import run_strategies
from gpu.report.roofline_points import add_vector_add, session_points
from tests.catalog.test_catalog_charts import H200, H200_ROOFS
from tests.experiments.scaling.test_sweep import crossing_run, fake_peaks
from tests.experiments.transfers.test_transfers_page import synthetic_curves
from tests.test_charts import synthetic_frame
from ui.charts import common, kernels, roofline

ONE = RepeatPolicy.count(1, warmup=0)
# d3 formats that can print exponent notation: type e, type g (past its precision) and no type with a
# precision (",.3" acts like g); "," alone prints integers in full, "r", "f", "s", "%" and "d" never use e
E_NOTATION = re.compile(r"[eg]$|\.\d+~?$")


def _encodings(view: dict) -> list[dict]:
    """The encodings of one view and its layers (layers share their axes)."""
    found = [view["encoding"]] if isinstance(view.get("encoding"), dict) else []
    for layer in view.get("layer", []):
        found += _encodings(layer)
    return found


def _views(spec: dict) -> list[dict]:
    """Every view with its own axes: the top, and each part of a concatenation."""
    parts = [part for key in ("hconcat", "vconcat", "concat") for part in spec.get(key, [])]
    return [spec] if not parts else [v for part in parts for v in _views(part)]


def log_axis_problems(spec: dict, where: str) -> list[str]:
    """A log scale whose axis (shared by the layers) has no explicit tick values: Vega then draws
    a tick and a grid line at every 2, 3, ... 9 of every decade."""
    problems = []
    for view in _views(spec):
        by_channel: dict[str, list[dict]] = {}
        for encoding in _encodings(view):
            for channel, definition in encoding.items():
                if isinstance(definition, dict):
                    by_channel.setdefault(channel, []).append(definition)
        for channel, definitions in by_channel.items():
            if not any((d.get("scale") or {}).get("type") == "log" for d in definitions):
                continue
            axes = [d["axis"] for d in definitions if "axis" in d]
            if axes and all(a is None for a in axes):
                continue  # no axis drawn
            if not any(isinstance(a, dict) and a.get("values") for a in axes):
                problems.append(f"{where}: log {channel} axis without one tick per decade (values)")
    return problems


def format_problems(spec, where: str) -> list[str]:
    """Every number format, in encodings or expressions, that can print e-notation."""
    problems = []
    if isinstance(spec, dict):
        fmt = spec.get("format")
        if (
            isinstance(fmt, str)
            and spec.get("formatType") != "time"
            and fmt not in ("", "%")
            and E_NOTATION.search(fmt)
        ):
            problems.append(f"{where}: format {fmt!r} on {spec.get('field')!r} can print e-notation")
        for text in (v for k, v in spec.items() if k in ("calculate", "labelExpr", "expr") and isinstance(v, str)):
            problems += [
                f"{where}: {f!r} in an expression can print e-notation"
                for f in re.findall(r"format\([^,]+,\s*'([^']*)'\)", text)
                if E_NOTATION.search(f)
            ]
        for key, value in spec.items():
            if key not in ("data", "datasets"):
                problems += format_problems(value, f"{where}.{key}")
    elif isinstance(spec, list):
        for i, value in enumerate(spec):
            problems += format_problems(value, f"{where}[{i}]")
    return problems


def axis_problems(spec: dict, where: str = "chart") -> list[str]:
    return log_axis_problems(spec, where) + format_problems(spec, where)


def test_the_checker_catches_a_bare_log_axis_and_e_notation():
    import altair as alt

    frame = pd.DataFrame({"x": [1e-3, 1e4], "y": ["a", "b"]})
    bare = alt.Chart(frame).mark_point().encode(x=alt.X("x:Q", scale=alt.Scale(type="log")), y="y:N")
    assert axis_problems(bare.to_dict()) and axis_problems({"format": ",.2~g"}) and axis_problems({"format": ".3e"})
    good = (
        alt.Chart(frame)
        .mark_point()
        .encode(x=alt.X("x:Q", scale=alt.Scale(type="log"), axis=common.log_axis(frame["x"])), y="y:N")
    )
    assert axis_problems(good.to_dict()) == [] and common.decades(frame["x"]) == [
        1e-3,
        1e-2,
        1e-1,
        1,
        10,
        100,
        1e3,
        1e4,
    ]
    assert axis_problems({"format": ",.4~r"}) == [] and axis_problems({"format": "~s"}) == []


@pytest.fixture(scope="module")
def charts() -> dict:
    """One chart from every builder outside History, on small real or synthetic data."""
    out = {}
    frame = synthetic_frame(python_estimated=True)
    out["vector add times"] = common.time_comparison_chart(frame, "s")
    out["vector add phases"] = common.gpu_breakdown_chart(frame, "s")
    run = run_kernel(matmul.SPEC, {"n": 8}, ONE, ("numpy",))
    summary = run.summary_frame()
    out["kernels times"] = kernels.steps_time_chart(summary, "s")
    out["kernels throughput"] = kernels.throughput_chart(summary, "s", "gflops", 100.0)
    out["kernels phases"] = kernels.phases_chart(run.to_frame(), "s")
    points = session_points([run.to_dict()], H200_ROOFS, H200.name, "cuda")
    add_vector_add(points, 1 << 20, 1e-3)
    out["roofline"] = roofline.roofline_chart(pd.DataFrame(points.points), device_roofs(H200, clock_khz=1_980_000), "s")
    sweep = run_launch_sweep(64, (32, 64), grid_stride_multiples=(1,), policy=RepeatPolicy.count(3)).to_frame()
    out["launch sweep times"] = launch.sweep_time_chart(sweep, "s")
    out["launch sweep bandwidth"] = launch.sweep_bandwidth_chart(sweep, "s", 4800.0)
    overhead = run_launch_overhead(
        RepeatPolicy.count(3, warmup=0), paths=("numba-article", "numba-configured"), launches_per_sample=2
    )
    out["launch overhead"] = launch.launch_overhead_chart(overhead.to_frame(), "s")
    sweep_run = crossing_run(peaks=fake_peaks())
    out["scaling times"] = scaling.time_chart(sweep_run.to_frame(), [c.to_dict() for c in sweep_run.crossovers()], "s")
    out["scaling bandwidth"] = scaling.bandwidth_chart(sweep_run.to_frame(), None, "s")
    out["scaling shares"] = scaling.share_chart(sweep_run.to_frame(), "s")
    curves = synthetic_curves()
    out["transfers bandwidth"] = transfers.bandwidth_chart(
        curves.to_frame(), [p.to_dict() for p in curves.plateaus()], "s"
    )
    strategies = run_strategies(300, chunks=3, streams=2, iterations=2, policy=ONE)
    out["transfers breakdown"] = transfers.strategy_breakdown_chart(
        strategies.to_frame(), [s.key for s in strategies.ranking], "s"
    )
    out["transfers timeline"] = transfers.timeline_chart(strategies.timeline_frame("stream"), "s")
    out.update(cpu_vs_recorded_charts())
    return out


def cpu_vs_recorded_charts() -> dict:
    """Your CPU beside the recorded GPU, at one N and over a sweep (a small simulator cap keeps it fast)."""
    from gpu.experiments.scaling import config as scaling_config
    from gpu.experiments.scaling import experiment as scaling_run
    from gpu.experiments.vector_add.experiment import run_vector_add
    from gpu.report.cpu_vs_recorded import sweep_vs_recorded, vector_add_vs_recorded
    from ui.charts import cpu_vs_recorded

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KERNEL_LAB_MAX_N", "256")
        one = vector_add_vs_recorded(run_vector_add(4096, 256, ONE, ("numpy",)))
        sweep = sweep_vs_recorded(
            scaling_run.run_sweep(scaling_config.make_config(256, 2048, ["gpu", "numpy"], policy=ONE))
        )
    return {"CPU vs recorded, one N": cpu_vs_recorded.one_size_chart(one.to_frame(), "s"),
            "CPU vs recorded, sweep": cpu_vs_recorded.sweep_chart(sweep.to_frame(), "s")}


def test_every_log_axis_has_one_tick_per_decade_and_no_label_prints_e_notation(charts):
    problems = [p for name, chart in charts.items() for p in axis_problems(chart.to_dict(), name)]
    assert problems == [], "\n".join(problems)
