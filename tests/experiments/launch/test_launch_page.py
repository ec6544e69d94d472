"""The Launch config page under AppTest (simulator): explorer, sweep, inspector, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import gpu

ROOT = Path(__file__).resolve().parents[3]
PAGE = str(ROOT / "pages/3_Launch_config.py")


def page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def press(at: AppTest, label: str) -> AppTest:
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception
    return at


def live_charts(at: AppTest) -> list:
    """Charts of this session's runs (the "On a real GPU" panel's are subtitled "recorded: ...")."""
    return [chart for chart in at.get("vega_lite_chart") if "recorded: " not in chart.proto.spec]


def specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in live_charts(at)]


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_page_opens_with_four_tabs_and_prompts():
    at = page()
    assert [t.label for t in at.tabs] == [
        "Thread-indexing explorer",
        "Block-size sweep",
        "Launch overhead",
        "Kernel inspector",
    ]
    assert any("Run probe" in i.value for i in at.info)
    assert not at.error and not live_charts(at)


def test_explorer_default_run_shows_the_guard_at_work():
    at = press(page(), "Run probe")
    assert not at.error, [e.value for e in at.error]
    assert metric(at, "Blocks launched") == "4" and metric(at, "Threads launched") == "1,024"
    assert metric(at, "Idle threads") == "24" and metric(at, "Last block wasted") == "9.4%"
    assert any("match `position = tx + bx * bw`" in s.value for s in at.success)
    spec = json.dumps(specs(at)[0])  # Streamlit ships the data apart; the encoding is here
    assert '"field": "formula"' in spec and "datum.masked" in spec and '"field": "block"' in spec
    assert "1,024 threads in 4 blocks; 24 idle" in spec


def test_explorer_colour_choice_redraws_by_warp_without_rerunning():
    at = press(page(), "Run probe")
    created = at.session_state["launch.indexing"].created_at
    at.radio(key="indexing_color").set_value("warp").run()
    assert '"field": "warp_label"' in json.dumps(specs(at)[0])
    assert at.session_state["launch.indexing"].created_at == created


def test_explorer_grid_stride_shows_coverage_and_the_element_chart():
    at = page()
    at.text_input(key="indexing.n").input("300")
    at.text_input(key="indexing.threads_per_block").input("32")
    at.text_input(key="indexing.grid_stride_blocks").input("3")
    press(at, "Run probe")
    assert any("exactly once" in s.value for s in at.success)
    assert len(specs(at)) == 2
    assert "which thread added each element" in json.dumps(specs(at)[1])


def test_explorer_large_n_gives_the_summary_with_a_message():
    at = page()
    at.text_input(key="indexing.n").input("1e9")
    press(at, "Run probe")
    assert metric(at, "Blocks launched") == "3,906,250"
    assert any("summary" in i.value for i in at.info)
    assert not live_charts(at)


@pytest.mark.parametrize(
    "key,value,message",
    [
        ("indexing.threads_per_block", "0", "between 1 and 1024"),
        ("indexing.threads_per_block", "2048", "between 1 and 1024"),
        ("indexing.threads_per_block", "1e3x", "whole number"),
        ("indexing.n", "0", "at least 1"),
        ("indexing.n", "many", "whole number"),
    ],
)
def test_explorer_bad_input_shows_what_is_allowed(key, value, message):
    at = page()
    at.text_input(key=key).input(value)
    press(at, "Run probe")
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert "launch.indexing" not in at.session_state


def test_sweep_runs_and_charts_time_bandwidth_and_the_explanation():
    at = page()
    at.text_input(key="launch-sweep.n").input("64")
    at.text_input(key="launch-sweep.repeats").input("1")
    at.multiselect(key="launch-sweep.block_sizes").set_value([32, 64])
    at.multiselect(key="launch-sweep.grid_stride_multiples").set_value([1])
    at.text_input(key="launch-sweep.extra_block_size").input("48")
    press(at, "Run sweep")
    assert not at.error, [e.value for e in at.error]
    assert any("bit for bit" in s.value for s in at.success)
    assert any("not a multiple of the warp size" in w.value for w in at.warning)
    titles = json.dumps(specs(at))
    # simulated times are never charted across configurations: no time, no bandwidth from one
    assert "Kernel time per launch configuration" not in titles
    assert "Effective bandwidth per configuration" not in titles
    assert any("Simulated times are not charted across configurations" in c.value for c in at.caption)
    # the simulator's headline is what is real: agreement and the launches' shapes, never a time (honest pages)
    shown = {m.label: m.value for m in at.metric}
    assert shown == {
        "Configurations agree": "4 of 4",
        "Blocks launched": "1 to 2",
        "Most idle threads": "192",
        "Block sizes tried": "3",
    }, shown
    table = at.dataframe[-1].value
    assert "median (simulated)" in table.columns and list(table["idle threads"])[:3] == [0, 0, 32]
    assert (
        table["median (simulated)"].str.contains(" s| ms| µs").all() and "occupancy" not in table.columns
    )  # the simulator has none
    assert (
        "best" not in " ".join(table["marks"]) and '"marker": "best"' not in titles
    )  # nothing is best on simulated times
    labels = " ".join(table.iloc[:, 0].astype(str))
    assert "48 threads/block" in labels and "grid-stride 1×SMs × 256" in labels  # the table's order
    assert any("memory bound" in i.value for i in at.info)
    run = at.session_state["launch.sweep"]
    assert [c.label for c in run.configs][:3] == ["32 threads/block", "64 threads/block", "48 threads/block"]


@pytest.mark.parametrize("n,message", [("0", "at least 1"), ("1e9", "too large")])
def test_sweep_bad_n_is_rejected(n, message):
    at = page()
    at.text_input(key="launch-sweep.n").input(n)
    press(at, "Run sweep")
    assert any(message in e.value for e in at.error), [e.value for e in at.error]


def test_sweep_with_nothing_chosen_is_rejected():
    at = page()
    at.multiselect(key="launch-sweep.block_sizes").set_value([])
    at.multiselect(key="launch-sweep.grid_stride_multiples").set_value([])
    press(at, "Run sweep")
    assert any("choose at least one" in e.value for e in at.error)


@pytest.mark.skipif(not gpu.BACKEND.simulated, reason="the simulator's message")
def test_inspector_in_the_simulator_says_no_machine_code_exists():
    at = page()
    assert any("no PTX" in i.value for i in at.info)
    assert any("position = tx + bx * bw" in c.value for c in at.code)
    at.radio(key="inspect_kernel").set_value("grid_stride").run()
    assert any("cuda.gridDim.x" in c.value for c in at.code)


# --- chart builders on to_dict() --------------------------------------------------------

from gpu.core.timing import RepeatPolicy  # noqa: E402
from gpu.experiments.launch import charts as launch_charts  # noqa: E402
from gpu.experiments.launch.experiment import run_launch_sweep  # noqa: E402
from gpu.experiments.launch.indexing import run_indexing  # noqa: E402


def rows_with(spec: dict, key: str) -> list[dict]:
    """The inline dataset whose rows have ``key`` (Altair may hoist shared data to the top)."""
    return next(rows for rows in spec["datasets"].values() if rows and key in rows[0])


def test_thread_grid_has_one_cell_per_thread_grouped_by_block_with_idle_ones_grey():
    run = run_indexing(70, 32)  # 3 blocks, the last with 26 idle threads
    chart = launch_charts.thread_grid_chart(run.to_frame(), 70, "block", subtitle="probe")
    spec = chart.to_dict()
    working, idle, labels = spec["layer"]
    assert working["transform"] == [{"filter": "!datum.masked"}] and idle["transform"] == [{"filter": "datum.masked"}]
    assert idle["mark"]["fill"] == launch_charts.IDLE_FILL and idle["mark"]["strokeDash"] == [2, 2]
    assert working["encoding"]["color"]["field"] == "block"
    titles = {t["title"] for t in working["encoding"]["tooltip"]}
    assert {"index", "guard", "threadIdx.x (tx)", "blockIdx.x (bx)", "blockDim.x (bw)"} <= titles
    cells = rows_with(spec, "formula")
    assert len(cells) == 96 and sum(r["masked"] for r in cells) == 26
    last = max(cells, key=lambda r: r["thread"])
    assert (
        last["formula"] == "position = tx + bx * bw = 31 + 2 * 32 = 95"
        and last["guard"] == "95 ≥ N = 70: masked off, idle"
    )
    assert len({(r["x"], r["y"]) for r in cells}) == 96, "no two threads share a cell"
    occupied = {(r["x"], r["y"]): r["bx"] for r in cells}
    for (x, y), block in occupied.items():  # a neighbouring cell is always the same block: tiles have gaps
        for neighbour in ((x + 1, y), (x, y + 1)):
            assert occupied.get(neighbour, block) == block
    label_rows = rows_with(spec, "text")
    assert [r["text"] for r in label_rows] == ["block 0", "block 1", "block 2"]
    assert "26 idle" in spec["title"]["text"]


def test_thread_grid_colours_by_warp_and_handles_block_sizes_not_multiple_of_32():
    frame = run_indexing(100, 48).to_frame()
    spec = launch_charts.thread_grid_chart(frame, 100, "warp").to_dict()
    assert spec["layer"][0]["encoding"]["color"]["field"] == "warp_label"
    cells = rows_with(spec, "warp_label")
    assert max(r["x"] for r in cells if r["bx"] == 0) == 31, "a warp is 32 lanes wide"
    assert sorted({r["warp_label"] for r in cells}) == ["warp 0", "warp 1"]
    with pytest.raises(ValueError, match="color_by"):
        launch_charts.thread_grid_chart(frame, 100, "lane")


def test_grid_stride_element_chart_maps_each_element_to_its_thread():
    run = run_indexing(200, 32, grid_stride_blocks=2)
    spec = launch_charts.element_owner_chart(run.handled_by, 32, "sub").to_dict()
    rows = rows_with(spec, "element")
    assert len(rows) == 200
    assert all(r["thread"] == r["element"] % 64 and r["step"] == r["element"] // 64 for r in rows)
    assert {r["bx"] for r in rows} == {0, 1}


@pytest.fixture(scope="module")
def sweep_frame():
    return run_launch_sweep(64, (32, 64), grid_stride_multiples=(1,), policy=RepeatPolicy.count(3)).to_frame()


def test_sweep_time_chart_has_spread_best_and_units(sweep_frame):
    spec = launch_charts.sweep_time_chart(sweep_frame, "what was measured").to_dict()
    whiskers, points, best, few, label = spec["layer"]
    assert few["transform"] == [{"filter": "datum.few_samples"}] and few["mark"]["type"] == "square"  # n<3: grey square
    assert (
        whiskers["mark"]["type"] == "rule"
        and whiskers["encoding"]["y"]["field"] == "min_us"
        and whiskers["encoding"]["y2"]["field"] == "max_us"
    )
    assert best["transform"] == [{"filter": "datum.best"}]
    assert spec["title"]["subtitle"] == "what was measured"
    tooltip = {t["title"] for t in points["encoding"]["tooltip"]}
    assert {"median kernel time (µs)", "min (µs)", "max (µs)", "samples", "bandwidth at median (GB/s)"} <= tooltip
    rows = rows_with(spec, "median_us")
    assert [r["label"] for r in rows] == ["32 threads/block", "64 threads/block", "grid-stride 1×SMs × 256"]
    assert sum(r["best"] for r in rows) == 1 and all(r["samples"] == 3 for r in rows)
    assert all(r["min_us"] <= r["median_us"] <= r["max_us"] for r in rows)
    assert not any(r["few_samples"] for r in rows) and all("*" not in r["marks"] for r in rows)


def test_a_sweep_from_fewer_than_three_samples_is_marked_and_best_is_never_a_star():
    from gpu.experiments.launch.report import summary

    run = run_launch_sweep(64, (32, 64), grid_stride_multiples=(), policy=RepeatPolicy.count(2, warmup=0))
    rows = launch_charts.sweep_summary(run.to_frame())
    assert rows["few_samples"].all() and all("n<3" in m for m in rows["marks"])
    text = summary(run)
    assert "(best)" in text and "* fewer than 3 samples" in text
    best_line = next(line for line in text.splitlines() if "(best)" in line)
    assert (
        best_line.split("(best)")[0].strip().endswith("threads/block")
    )  # "(best)" right after the label, no "*" for it


def test_sweep_bandwidth_chart_with_peak_line(sweep_frame):
    spec = launch_charts.sweep_bandwidth_chart(sweep_frame, "sub", peak_gbps=4800).to_dict()
    assert len(spec["layer"]) == 5 and spec["layer"][0]["encoding"]["y"]["title"] == "effective bandwidth (GB/s)"
    assert "theoretical peak 4,800 GB/s" in json.dumps(spec)
    rows = rows_with(launch_charts.sweep_bandwidth_chart(sweep_frame, "sub").to_dict(), "bandwidth_gbps")
    for r in rows:
        assert r["bandwidth_low_gbps"] <= r["bandwidth_gbps"] <= r["bandwidth_high_gbps"]
        assert r["bandwidth_gbps"] == pytest.approx(12 * 64 / r["median_s"] / 1e9)


def test_occupancy_chart_needs_figures(sweep_frame):
    with pytest.raises(ValueError, match="no occupancy"):
        launch_charts.occupancy_chart(sweep_frame, "sub")
    frame = sweep_frame.copy()
    frame["occupancy"] = frame["threads_per_block"].map({32: 0.5, 64: 1.0, 256: 1.0})
    frame["occupancy_source"] = "driver"
    spec = launch_charts.occupancy_chart(frame, "sub").to_dict()
    rows = rows_with(spec, "occupancy_pct")
    assert [r["occupancy_pct"] for r in rows] == [50.0, 100.0, 100.0]
    assert spec["encoding"]["y"]["scale"]["domain"] == [0, 100]


def test_launch_overhead_tab_measures_paths_with_a_chart_and_says_what_it_skipped():
    at = page()
    at.text_input(key="launch-overhead.samples").input("2")
    press(at, "Measure launch overhead")
    charts = json.dumps(specs(at))
    table = at.dataframe[-1].value
    assert (table["flag"] == "fewer than 3 samples").all()  # two samples per path: flagged beside the figure
    ladder = at.dataframe[-2].value  # the vector add's launch rung by rung, article to CuPy
    from gpu.experiments.launch.overhead import LADDER, PATHS

    assert list(ladder["rung"]) == [PATHS[key] for key in LADDER]
    assert ("÷ CuPy RawKernel" in ladder.columns) != gpu.BACKEND.simulated  # ranked on a GPU only
    assert any("CuPy RawKernel: skipped" in c.value for c in at.caption)
    if gpu.BACKEND.simulated:  # simulated launches: tabled, never charted or judged against the target
        assert "Host time to launch one kernel" not in charts and "median (µs, simulated)" in table.columns
        assert not any("target" in m.value for m in at.markdown)
        return
    assert "Host time to launch one kernel" in charts and "Numba: configured once, launch()" in charts
    assert "(n<3)" in charts  # two samples per path: flagged on the chart
