"""The Transfers page under AppTest: it runs both experiments, says who wins, draws the
bandwidth, breakdown and timeline charts, and rejects bad input with a message."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import gpu

PAGE = str(Path(__file__).resolve().parents[3] / "pages" / "4_Transfers.py")


def live_charts(at) -> list:
    """Charts of this session's runs (the "On a real GPU" panel's are subtitled "recorded: ...")."""
    return [chart for chart in at.get("vega_lite_chart") if "recorded: " not in chart.proto.spec]


def chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in live_charts(at)]


def page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def strategies(at: AppTest, n="300", chunks=3, streams=2, iterations=2, repeats=1) -> AppTest:
    at.text_input(key="transfers.n").input(n)
    at.text_input(key="transfers.chunks").input(str(chunks))
    at.text_input(key="transfers.streams").input(str(streams))
    at.text_input(key="transfers.iterations").input(str(iterations))
    at.text_input(key="transfers.repeats").input(str(repeats))
    return button(at, "Compare strategies").click().run()


def test_page_renders_and_says_what_the_simulator_does_not_simulate():
    at = page()
    warnings = [w.value for w in at.warning]
    if gpu.BACKEND.simulated:  # one banner: the simulator warning and what it does not simulate, merged
        merged = [w for w in warnings if "Pinning, streams and overlap are not simulated" in w]
        assert len(merged) == 1 and "CUDA simulator — timings are not GPU performance" in merged[0]
    assert {b.label for b in at.button} >= {"Measure bandwidth", "Compare strategies"}
    assert not live_charts(at)


def test_bandwidth_run_states_plateaus_and_draws_the_curves():
    at = page()
    at.selectbox(key="transfers-bandwidth.smallest").set_value(4096)
    at.selectbox(key="transfers-bandwidth.largest").set_value(65536)
    at.text_input(key="transfers-bandwidth.repeats").input("2")
    at = button(at, "Measure bandwidth").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = " ".join(m.value for m in at.markdown)
    if gpu.BACKEND.simulated:  # NumPy copies: tabled, never charted, compared or called plateaus
        assert "SIMULATED" in text and "plateau" in text and "levels off" not in text
        assert "pageable H2D's best bandwidth" not in text  # pinning is not simulated: no ratio headline
        assert not chart_specs(at)
        table = json.dumps(at.dataframe[0].value.to_dict())
        assert "H2D" in table and "D2D" in table and "simulated" in table
        return
    assert "H2D pinned" in text and "D2D" in text and "GB/s" in text
    specs = json.dumps(chart_specs(at))
    for measure in ("H2D copy", "D2H copy", "D2D copy", "pageable", "pinned"):
        assert measure in specs
    assert "log" in specs  # sizes span decades


def test_strategies_run_agrees_names_a_winner_and_draws_breakdown_and_timeline():
    at = strategies(page())
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("bit-identical to NumPy" in s.value for s in at.success)
    # the simulator names no winner and shows no speedup or overlap: it leads with what is real (honest pages)
    assert not any("wins" in i.value for i in at.info)
    shown = {m.label: m.value for m in at.metric}
    assert shown == {
        "Strategies agree": "7 of 7",
        "Strategies run here": "7 of 7",
        "Copied per vector add": "3.52 KiB",
        "Chunks on streams": "3 on 2",
    }, shown
    assert any("cannot be known here" in c.value for c in at.caption)
    table = at.dataframe[-1].value
    assert (
        "end to end (simulated)" in table.columns and table["end to end (simulated)"].str.contains(" ms| s| µs").all()
    )
    specs = chart_specs(at)
    if gpu.BACKEND.simulated:  # simulated strategies: tabled in the page's order, never charted or ranked
        assert not specs and any("not charted or ranked" in c.value for c in at.caption)
        assert [s.split(" (")[0] for s in table["strategy"]][:2] == ["As in the article", "Careful"]
        assert at.session_state["transfers.strategies"].n == 300
        return
    assert len(specs) == 2
    breakdown, timeline = (json.dumps(s, ensure_ascii=False) for s in specs)
    for label in (
        "As in the article",
        "Careful",
        "Pinned host memory",
        "Data kept on the device",
        "Chunked streams",
        "Mapped zero-copy",
    ):
        assert label in breakdown
    assert "3 chunks on 2 streams · stream 1" in timeline and "1 chunk on 1 stream · stream 0" in timeline
    at.radio(key="timeline_lanes").set_value("engine").run()
    assert not at.exception
    assert "H2D copy engine" in json.dumps(chart_specs(at)[1])
    assert at.session_state["transfers.strategies"].n == 300


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"n": "5", "chunks": 8, "streams": 1}, "chunks must be between 1 and N (5)"),
        ({"chunks": 0}, "chunks must be between 1 and N"),
        ({"chunks": 3, "streams": 4}, "streams must be between 1 and 3"),
        ({"iterations": 0}, "iterations must be between 1"),
        ({"n": "1e12"}, "too large"),
        ({"n": "lots"}, "whole number"),
    ],
)
def test_bad_strategy_input_shows_an_error_and_runs_nothing(kwargs, message):
    at = strategies(page(), **kwargs)
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert not live_charts(at)
    assert "transfers.strategies" not in at.session_state


# --- chart builders, on to_dict() ------------------------------------------------------------

from gpu.core.device import device_info  # noqa: E402
from gpu.core.timeline import Interval  # noqa: E402
from gpu.core.timing import RepeatPolicy, Stats  # noqa: E402
from gpu.experiments.transfers import charts as transfers_charts  # noqa: E402
from gpu.experiments.transfers.bandwidth import BandwidthCurves, BandwidthPoint  # noqa: E402
from gpu.experiments.transfers.experiment import run_strategies  # noqa: E402


def synthetic_curves() -> BandwidthCurves:
    sizes = [4096 * 4**i for i in range(6)]
    gbps = {"pinned": [1, 4, 15, 40, 50, 51], "pageable": [0.5, 2, 6, 10, 12, 12.2]}
    points = []
    for memory, values in gbps.items():
        for size, g in zip(sizes, values):
            points.append(BandwidthPoint("h2d", memory, size, Stats((size / (g * 1e9),) * 3), True))
    return BandwidthCurves(tuple(sizes), tuple(points), RepeatPolicy.count(3), "cuda", device_info())


def layers(spec: dict) -> list[dict]:
    return spec.get("layer", [spec])


def test_bandwidth_chart_is_log_log_dashes_pageable_and_draws_plateaus():
    curves = synthetic_curves()
    spec = transfers_charts.bandwidth_chart(
        curves.to_frame(), [p.to_dict() for p in curves.plateaus()], "subtitle"
    ).to_dict()
    line = next(layer for layer in layers(spec) if layer["mark"]["type"] == "line")
    assert line["encoding"]["x"]["scale"]["type"] == "log" and line["encoding"]["y"]["scale"]["type"] == "log"
    assert line["encoding"]["strokeDash"]["field"] == "memory"
    assert {t["title"] for t in line["encoding"]["tooltip"]} >= {"GB/s (median)", "size", "samples"}
    rules = [layer for layer in layers(spec) if layer["mark"].get("strokeDash") == [2, 3]]
    assert len(rules) == 1, "both curves levelled off: one rules layer holding the two plateaus"
    points = transfers_charts.bandwidth_points(curves.to_frame())
    assert points.loc[(points.memory == "pinned") & (points.nbytes == 4096 * 4**5), "gbps"].item() == pytest.approx(51)
    assert spec["title"]["subtitle"] == "subtitle"


def test_breakdown_chart_stacks_phases_on_a_linear_axis_fastest_first():
    result = run_strategies(64, 32, chunks=2, streams=2, iterations=2, policy=RepeatPolicy.count(1, warmup=0))
    order = [s.key for s in result.ranking]
    spec = transfers_charts.strategy_breakdown_chart(result.to_frame(), order, "sub").to_dict()
    bars = layers(spec)[0]
    assert bars["mark"]["type"] == "bar" and bars["encoding"]["x"]["stack"] == "zero"
    assert "scale" not in bars["encoding"]["x"] or bars["encoding"]["x"]["scale"].get("type") != "log"
    assert bars["encoding"]["y"]["sort"] == [s.label for s in result.ranking]
    phases, totals = transfers_charts.breakdown_data(result.to_frame(), order)
    resident = totals[totals.strategy == "resident"]["median_ms"].item()
    assert resident == pytest.approx(result.strategies["resident"].cost_s * 1e3)  # per iteration, not per sequence
    assert set(phases["measure"]) >= {"H2D copy", "Kernel", "D2H copy", "Copies + kernels (event span)"}


def test_timeline_chart_draws_one_bar_per_interval_in_its_lane():
    intervals = [
        Interval("2 chunks on 2 streams", c, c, p, t0, t0 + 1.0)
        for c in range(2)
        for p, t0 in (("h2d", c), ("kernel", c + 1), ("d2h", c + 2))
    ]
    import pandas as pd

    from gpu.core.timeline import build_timeline

    frame = pd.DataFrame(
        [
            (b.run, b.lane, b.chunk, b.stream, b.phase, b.start_s * 1e3, b.end_s * 1e3, (b.end_s - b.start_s) * 1e3)
            for b in build_timeline(intervals)
        ],
        columns=["run", "lane", "chunk", "stream", "phase", "start_ms", "end_ms", "duration_ms"],
    )
    spec = transfers_charts.timeline_chart(frame, "sub").to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["x"]["field"] == "start_ms" and spec["encoding"]["x2"]["field"] == "end_ms"
    assert spec["encoding"]["y"]["sort"] == ["2 chunks on 2 streams · stream 0", "2 chunks on 2 streams · stream 1"]
    assert spec["encoding"]["color"]["scale"]["domain"] == ["H2D copy", "Kernel", "D2H copy"]
