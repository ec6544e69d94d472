"""A vector-add run hands its page partial results while it runs: the GPU part and the compiled CPU
first, the Python loop and the article's method filling in after; no partial result holds a figure
not yet measured, and the completed run is the run a caller without partials gets."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from gpu.catalog.base import Progress
from gpu.experiments.vector_add.experiment import EXPERIMENT
from gpu.experiments.vector_add.partial import ARTICLE, PartialRun, run_order
from gpu.experiments.vector_add.result import VectorAddRun

PARAMS = {"n": "20000", "repeats": "2", "cpu": "python,numpy,numba,numba-parallel", "article": "true"}


def run_recording(raw: dict[str, str] = PARAMS) -> tuple[VectorAddRun, list[tuple[str, object]]]:
    """The completed run, and every event in order: ("begin", step id) and ("partial", PartialRun)."""
    events: list[tuple[str, object]] = []
    progress = Progress(
        started=lambda step_id: events.append(("begin", step_id)),
        partial=lambda partial: events.append(("partial", partial)),
    )
    run = EXPERIMENT.execute(EXPERIMENT.parse(raw, simulated=True), progress)
    return run, events


@pytest.fixture(scope="module")
def recorded() -> tuple[VectorAddRun, list[tuple[str, object]]]:
    return run_recording()


def partials(events: list[tuple[str, object]]) -> list[PartialRun]:
    return [p for kind, p in events if kind == "partial" and isinstance(p, PartialRun)]


def test_the_first_partial_result_arrives_before_the_python_loop_begins(recorded):
    _run, events = recorded
    first = next(i for i, (kind, _) in enumerate(events) if kind == "partial")
    assert first < events.index(("begin", "cpu:python")), events
    shown = partials(events)[0]
    assert "gpu" in shown.run.agreement and "python" not in shown.run.cpu
    assert shown.running[-2:] == ("python", ARTICLE)  # the slow rows run last, each named as still running


def test_the_python_loop_runs_after_the_compiled_cpu_and_before_the_article(recorded):
    _run, events = recorded
    begun = [step for kind, step in events if kind == "begin"]
    assert begun == ["compile", "gpu", "cpu:numpy", "cpu:numba", "cpu:numba-parallel", "cpu:python", "article"]
    assert run_order(("python", "numpy")) == ("numpy", "python")


def test_no_partial_result_holds_a_figure_not_yet_measured(recorded):
    run, events = recorded
    shown = partials(events)
    assert [p.running for p in shown] == [
        ("numpy", "numba", "numba-parallel", "python", ARTICLE),
        ("numba", "numba-parallel", "python", ARTICLE),
        ("numba-parallel", "python", ARTICLE),
        ("python", ARTICLE),
        (ARTICLE,),
    ]
    for i, partial in (pair for pair in enumerate(events) if pair[1][0] == "partial"):
        assert isinstance(partial[1], PartialRun)
        p = partial[1]
        finished = {step.removeprefix("cpu:") for kind, step in events[:i] if kind == "begin"} - set(p.running)
        assert set(p.run.cpu) <= finished and set(p.run.cpu).isdisjoint(p.running)
        assert p.run.article is None  # the article's figures exist only in the completed run
        frame = p.run.to_frame()
        assert set(frame["implementation"]).isdisjoint(p.running)
        # every figure shown is the very measurement the completed run holds
        assert p.run.gpu == run.gpu and p.run.agreement.items() <= run.agreement.items()
        assert all(run.cpu[name] == timing for name, timing in p.run.cpu.items())


def test_a_partial_result_refuses_a_row_both_measured_and_running(recorded):
    run, _events = recorded
    with pytest.raises(ValueError, match="python as both measured and still running"):
        PartialRun(run, ("python", ARTICLE))


def shape(value: object) -> object:
    """The structure of a ``to_dict()``: keys in order and the types of the leaves, not their values."""
    if isinstance(value, dict):
        return [(key, shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


def test_the_completed_run_has_the_shape_of_a_run_without_partials(recorded):
    run, _events = recorded
    plain = EXPERIMENT.execute(EXPERIMENT.parse(PARAMS, simulated=True), Progress())
    assert shape(run.to_dict()) == shape(plain.to_dict())
    assert list(run.cpu) == ["python", "numpy", "numba", "numba-parallel"]  # the chosen order, as before
    assert run.article is not None
    assert VectorAddRun.from_dict(run.to_dict()) == run


def test_a_run_with_nothing_after_the_gpu_hands_no_partial_result():
    run, events = run_recording({"n": "2000", "repeats": "1", "cpu": "", "article": "false"})
    assert not partials(events) and not run.cpu


def _draw_partial() -> None:
    from gpu.catalog.base import Progress
    from gpu.experiments.vector_add.experiment import EXPERIMENT
    from ui.views.experiments.vector_add import show_partial

    shown = []
    params = EXPERIMENT.parse({"n": "3000", "repeats": "2", "cpu": "numpy,python", "article": "true"}, simulated=True)
    EXPERIMENT.execute(params, Progress(partial=shown.append))
    show_partial(shown[1])  # NumPy measured; the Python loop and the article's method still running


def test_the_partial_view_names_the_rows_still_running_without_a_number():
    at = AppTest.from_function(_draw_partial, default_timeout=120).run()
    assert not at.exception, at.exception
    assert any(i.value.startswith("Still running: Python loop (article), the article's method.") for i in at.info)
    table: pd.DataFrame = at.dataframe[-1].value
    running = table[table["kind"] == "still running"]
    assert list(running["measure"]) == ["Python loop (article)", "the article's method"]
    numbers = running.drop(columns=["measure", "kind"])
    assert set(numbers["median"]) == {"still running"}
    assert (numbers.drop(columns="median").astype(str) == "").all().all()
    assert any("NumPy" in str(row) for row in table["measure"])
    assert len(at.get("vega_lite_chart")) == 1  # NumPy, charted as soon as it is measured
