"""The Scaling page: chart builders on to_dict(), and AppTest runs of a small simulated
sweep, a cancelled one, an interrupted one, and bad input."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import gpu
from gpu.experiments.scaling import charts as scaling_charts
from gpu.experiments.scaling.experiment import run_sweep
from tests.experiments.scaling.test_sweep import crossing_run, fake_peaks, small_config
from ui.charts.common import COLORS
from ui.views.experiments import scaling as scaling_view

ROOT = Path(__file__).resolve().parents[3]
PAGE = str(ROOT / "pages/2_Scaling.py")


def layers(spec: dict) -> list[dict]:
    return spec.get("layer", [spec])


# --- chart builders --------------------------------------------------------------------


def test_time_chart_is_log_log_with_band_noise_rings_and_crossover_marker():
    run = crossing_run(peaks=fake_peaks())
    crossovers = [c.to_dict() for c in run.crossovers()]
    spec = scaling_charts.time_chart(run.to_frame(), crossovers, "N = 1,024 to 1,048,576").to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in layers(spec)]
    assert marks[:4] == ["area", "line", "point", "square"] and "rule" in marks and "text" in marks
    line = layers(spec)[1]["encoding"]
    assert line["x"]["scale"]["type"] == "log" and line["y"]["scale"]["type"] == "log"
    assert {"median (ms)", "samples", "noisy"} <= {t["title"] for t in line["tooltip"]}
    assert set(line["color"]["scale"]["domain"]) == {"GPU end to end", "Kernel", "NumPy"}
    assert line["color"]["scale"]["range"] == [COLORS[m] for m in line["color"]["scale"]["domain"]]
    assert spec["title"]["subtitle"] == [
        "N = 1,024 to 1,048,576", "3 series × 11 sizes; each point the median of 3 samples"
    ]
    marker_rows = next(rows for rows in spec["datasets"].values() if rows and "marker" in rows[0])
    assert [r["marker"] for r in marker_rows] == ["kernel ≈ NumPy"]
    assert 2**13 < marker_rows[0]["n"] < 2**14
    point_rows = next(rows for rows in spec["datasets"].values() if rows and "median_ms" in rows[0])
    assert {r["label"] for r in point_rows} == {"GPU end to end", "Kernel", "NumPy"}  # copies live in the share chart


def test_time_chart_without_a_crossover_has_no_marker():
    run = crossing_run()
    frame = run.to_frame()
    frame = frame[frame["series"] != "gpu-kernel"]  # only end to end, which never wins
    spec = scaling_charts.time_chart(frame, [], "s").to_dict()
    assert [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in layers(spec)] == [
        "area",
        "line",
        "point",
        "square",
    ]


def test_bandwidth_chart_has_a_rule_per_limit_and_percent_in_tooltips():
    run = crossing_run(peaks=fake_peaks())
    spec = scaling_charts.bandwidth_chart(run.to_frame(), run.peaks.to_frame(), "s").to_dict()
    lines, rules, *labels = layers(spec)
    assert lines["encoding"]["y"]["scale"]["type"] == "log"
    assert {"% of that limit", "% of device peak", "GB/s"} <= {t["title"] for t in lines["encoding"]["tooltip"]}
    assert rules["mark"]["type"] == "rule"
    limits = spec["datasets"][rules["data"]["name"]]
    assert sorted(row["gbps"] for row in limits) == [20.0, 50.0, 50.0, 1000.0, 2000.0]
    assert any(
        "device copy, best of memcpy and copy kernel (measured reference): 1,000 GB/s" == row["text"] for row in limits
    )
    # neighbouring limits alternate above and below their lines, so close ones never print on top of each other
    # and step right by pairs: each label layer has its own place (above/below, column), and there are two columns
    places = [(label["mark"]["baseline"], label["mark"]["x"]) for label in labels]
    assert (
        len(set(places)) == len(places) == 4
        and {b for b, _ in places} == {"bottom", "top"}
        and len({x for _, x in places}) == 2
    )
    assert spec["title"]["text"].startswith("Effective bandwidth against N, with the physical limits")


def test_n_axes_end_where_the_data_ends():
    run = crossing_run(peaks=fake_peaks())
    frame = run.to_frame()
    for chart in (scaling_charts.time_chart(frame, [], "s"), scaling_charts.bandwidth_chart(frame, None, "s")):
        spec = chart.to_dict()
        x = spec["layer"][0]["encoding"]["x"]["scale"]
        assert x["domain"] == [int(frame["n"].min()), int(frame["n"].max())] and x["nice"] is False
        assert spec["autosize"]["contains"] == "padding"  # titles and legends are never clipped


def test_share_chart_stacks_on_a_linear_axis_with_log_n():
    run = crossing_run()
    spec = scaling_charts.share_chart(run.to_frame(), "s").to_dict()
    enc = spec["encoding"]
    assert spec["mark"]["type"] == "area"
    assert enc["x"]["scale"]["type"] == "log"
    assert enc["y"]["stack"] == "zero" and "type" not in enc["y"].get("scale", {})  # linear
    rows = spec["datasets"][spec["data"]["name"]]
    assert {r["label"] for r in rows} == {"H2D copy", "Kernel", "D2H copy"}


# --- the page ---------------------------------------------------------------------------


def page() -> AppTest:
    return AppTest.from_file(PAGE, default_timeout=120).run()


def fill(at: AppTest, min_n="64", max_n="128", impls=("gpu", "numpy", "python"), repeats=1) -> AppTest:
    at.text_input(key="scaling.min_n").input(min_n)
    at.text_input(key="scaling.max_n").input(max_n)
    at.multiselect(key="scaling.impls").set_value(list(impls))
    at.text_input(key="scaling.repeats").input(str(repeats))
    at.checkbox(key="scaling.peaks").uncheck()
    return at


def run_button(at: AppTest):
    return next(b for b in at.button if b.label == "Run sweep")


def test_page_runs_a_small_simulated_sweep_and_shows_crossovers_charts_and_downloads():
    at = fill(page())
    run_button(at).click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("bit-identical" in s.value for s in at.success)
    if gpu.BACKEND.simulated:  # simulated kernel times are compared with nothing; what is real leads
        headings = [h.value for h in at.subheader]
        assert "Where the GPU starts to win" not in headings, headings
        assert not any("never beats" in m.value for m in at.markdown)
        assert any("Simulated kernel times are not compared with your CPU" in c.value for c in at.caption)
    else:
        assert any("never beats NumPy" in m.value for m in at.markdown)
    beside = [c for c in at.get("vega_lite_chart") if "your CPU, measured now" in c.proto.spec]  # the panel
    if gpu.BACKEND.simulated:
        # the panel beside the recorded GPU, and your CPU's own series against N; no simulated series is charted
        assert len(beside) == 2, len(beside)
        assert not any("(simulated)" in c.proto.spec for c in at.get("vega_lite_chart"))
        assert any("The simulated kernels (up to the simulator's cap) are not charted" in c.value for c in at.caption)
        result = at.session_state[scaling_view.RESULT_KEY]
        assert result.complete and result.sizes == [64, 128] and result.config.impls == ("gpu", "numpy", "python")
        assert len(_result_downloads(at)) == 2
        return
    assert not beside
    specs = [
        json.loads(c.proto.spec)
        for c in at.get("vega_lite_chart")
        if "recorded: " not in c.proto.spec and c not in beside
    ]
    assert len(specs) == 4  # time (the lesson's series), bandwidth, time (the other series, folded), shares
    assert "Time against N" in json.dumps(specs[0]) and "Time against N" in json.dumps(specs[2])
    assert "Effective bandwidth" in json.dumps(specs[1])
    assert any("More series: " in e.label and "Python" in e.label for e in at.expander), [e.label for e in at.expander]
    result = at.session_state[scaling_view.RESULT_KEY]
    assert result.complete and result.sizes == [64, 128] and result.config.impls == ("gpu", "numpy", "python")
    assert len(_result_downloads(at)) == 2


def test_a_cancelled_sweep_keeps_and_shows_its_partial_result(monkeypatch):
    from gpu.catalog import base

    asked = []
    real_progress = base.Progress

    def stop_after_three() -> bool:
        asked.append(1)
        return len(asked) > 3

    # the runner's Progress asks should_stop() between steps: press Stop after three
    monkeypatch.setattr("ui.runner.Progress", lambda **kw: real_progress(**(kw | {"should_stop": stop_after_three})))
    at = fill(page(), max_n="256")
    run_button(at).click().run()
    assert not at.exception, at.exception
    result = at.session_state[scaling_view.RESULT_KEY]
    assert result.stopped == "cancelled" and result.steps_done == 3 and result.steps_planned == 9
    assert result.sizes == [64]
    assert any("Sweep stopped (cancelled) after 3 of 9 steps" in w.value for w in at.warning)
    assert len(at.get("vega_lite_chart")) >= 2  # the partial result is charted


def test_a_sweep_interrupted_by_the_stop_button_is_recovered_on_the_rerun():
    partial = run_sweep(small_config(max_n=64), should_stop=lambda: False)
    at = page()
    at.session_state["scaling.partial"] = partial  # what an interrupted run leaves behind
    at.run()
    assert not at.exception
    result = at.session_state[scaling_view.RESULT_KEY]
    assert result.stopped == "cancelled" and at.session_state["scaling.partial"] is None
    assert any("saved to History" in c.value and "marked stopped" in c.value for c in at.caption)
    assert any("Sweep stopped (cancelled)" in w.value for w in at.warning)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"min_n": "4096", "max_n": "64"}, "inverted"),
        ({"max_n": "1e12"}, "too large"),
        ({"impls": ()}, "at least one implementation"),
        ({"min_n": "zero"}, "whole number"),
    ],
)
def test_bad_input_shows_a_message_and_runs_nothing(change, message):
    at = fill(page(), **change)
    run_button(at).click().run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state[scaling_view.RESULT_KEY] is None if scaling_view.RESULT_KEY in at.session_state else True


def test_zero_budget_until_stable_is_refused():
    at = fill(page())
    at.text_input(key="scaling.budget_s").input("0")
    run_button(at).click().run()
    assert any("more than 0 seconds" in e.value for e in at.error)
    assert scaling_view.RESULT_KEY not in at.session_state


def _result_downloads(at) -> list:
    """The run's downloads (JSON, CSV): the page's notebook for a free GPU is offered before any run."""
    return [b for b in at.get("download_button") if b.proto.label != "Download the notebook"]
