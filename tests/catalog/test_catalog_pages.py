"""The Kernels and Roofline pages in AppTest: a run shows agreement, charts of its steps and
their sources; the roofline shows recorded runs and this session's points; bad input is refused."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import gpu

ROOT = Path(__file__).resolve().parents[2]


def _run_table(at):
    """The run's table (the recorded GPU's steps come first on the page, in a table of their own)."""
    return next(d.value for d in at.dataframe if "implementation" in d.value.columns)


def chart_specs(at: AppTest) -> str:
    return json.dumps([json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")], ensure_ascii=False)


@pytest.fixture(scope="module")
def kernels_run():
    """The Kernels page after one small transpose run (shared: the simulator is slow)."""
    at = AppTest.from_file(str(ROOT / "pages/7_Kernels.py"), default_timeout=180).run()
    at.selectbox(key="kernels.kernel").set_value("transpose").run()
    at.text_input(key="transpose.n").input("16")
    at.text_input(key="transpose.repeats").input("1")
    at.multiselect(key="transpose.cpu").set_value(["numpy", "python"])
    at.button[0].click().run()
    return at


def test_kernels_page_runs_every_step_and_shows_agreement_charts_and_sources(kernels_run):
    at = kernels_run
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("bit for bit" in s.value for s in at.success)
    specs = chart_specs(at)
    if gpu.BACKEND.simulated:  # your CPU charted; the simulated steps tabled and ranked against nothing
        assert "NumPy a.T copy" in specs and "your CPU, measured now" in specs
        assert "1 · naive" not in specs and "H2D copy" not in specs
        assert any("The simulated GPU steps are not charted" in c.value for c in at.caption)
        labels = set(_run_table(at)["implementation"])
        assert {"1 · naive", "2 · shared-memory tile", "3 · padded tile"} <= labels, labels
    else:
        for label in (
            "1 · naive",
            "2 · shared-memory tile",
            "3 · padded tile",
            "NumPy a.T copy",
            "device copy of the same bytes",
            "H2D copy",
        ):
            assert label in specs
    assert "Device allocation" not in specs  # allocated before any sample: in no phase
    # in the simulator the headline is what is real there; a simulated time is never a metric (issue: honest pages)
    metrics = {m.label: m.value for m in at.metric}
    from gpu.experiments.transpose.experiment import SPEC

    steps = len(SPEC.steps)  # every step, and the two CPU implementations chosen above
    assert metrics["Results agree"] == f"{steps + 2} of {steps + 2}", metrics
    assert metrics["GPU steps run here"] == f"{steps} of {steps}", metrics
    assert metrics["Minimum traffic"] == "2 KiB" and metrics["Arithmetic intensity (FLOP/byte)"] == "0", metrics
    assert not any(
        word in label for label in metrics for word in ("Best GPU step", "kernel time", "Bandwidth", "library's time")
    ), metrics
    assert "Throughput of the GPU implementations" not in specs
    shown = _run_table(at)
    assert (shown[shown["kind"] == "GPU step (Numba)"]["bandwidth"] == "—").all() and (
        shown[shown["kind"] == "CPU"]["bandwidth"] != "—"
    ).all()
    assert "% of peak" not in shown.columns and all(
        t.endswith("(simulated)") for t in shown[shown["kind"] == "GPU step (Numba)"]["time (median)"]
    )
    assert any("fewer than 3 samples" in c.value for c in at.caption)  # the page's default 2 repeats are marked
    assert any("PADDED_TILE" in c.value and c.language == "diff" for c in at.code)  # the padded step's change, marked
    assert any("3 · padded tile" in e.label for e in at.expander)


def test_kernels_page_refuses_bad_input_without_running(kernels_run):
    at = AppTest.from_file(str(ROOT / "pages/7_Kernels.py"), default_timeout=60).run()
    at.selectbox(key="kernels.kernel").set_value("reduction").run()
    at.text_input(key="reduction.threads_per_block").input("100")
    at.button[0].click().run()
    assert not at.exception and any("power of two" in e.value for e in at.error)
    assert not at.get("vega_lite_chart")


def test_roofline_page_shows_recorded_runs_and_this_sessions_points(kernels_run):
    at = AppTest.from_file(str(ROOT / "pages/8_Roofline.py"), default_timeout=60).run()
    assert not at.exception
    assert any("not from hardware counters" in m.value for m in at.markdown)
    chosen = at.selectbox(key="roofline.set")
    assert chosen.format_func(chosen.value).startswith("recorded: ")  # nothing run in this session yet
    assert "memory roof (clock × bus width)" in chart_specs(at)  # the recorded H200's roof
    assert "Vector add" in set(at.dataframe[0].value["kernel"])
    at = AppTest.from_file(str(ROOT / "pages/8_Roofline.py"), default_timeout=60)
    at.session_state["kernels.runs"] = kernels_run.session_state["kernels.runs"]
    at.run()
    assert not at.exception
    assert "this session" in at.selectbox(key="roofline.set").format_func(at.selectbox(key="roofline.set").value)
    assert any("Not on a FLOP/s roofline" in m.value for m in at.markdown)  # the transpose has no FLOPs
    off = at.dataframe[-1].value  # the simulator's rates say so; no column of blanks (no roofs in the simulator)
    assert "fraction" not in off.columns and any("(simulated)" in str(c.proto) for c in at.dataframe), off.columns
