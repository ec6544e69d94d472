"""The result protocol's samples: a declaration says where a saved run keeps them.

``Experiment.samples(saved) -> {series label: [seconds]}`` is what History's compare chart,
its samples CSV and its table's sample count read; rows saved before (or by experiments
that declare no hook) are read as before, by every ``samples_s`` list in the saved dict.
"""

from __future__ import annotations

import pytest

from gpu.catalog import registry
from gpu.catalog.base import Experiment
from gpu.service.store import open_store
from ui.charts.history import compare_chart, has_samples, run_samples, runs_frame, samples_frame

KEY = "toy-microseconds"


def _experiment(samples) -> Experiment:
    return Experiment(
        key=KEY,
        title="Toy µs",
        summary="keeps its samples in microseconds",
        params=(),
        run=lambda params, progress: None,
        work=lambda params: 1,
        measures=lambda result: {},
        samples=samples,
    )


@pytest.fixture
def store(tmp_path):
    return open_store(tmp_path / "history.sqlite3")


@pytest.fixture
def declared():
    experiment = registry.register(_experiment(lambda saved: {"Kernel": [us / 1e6 for us in saved["kernel_us"]]}))
    yield experiment
    registry.unregister(KEY)


def _saved(store, result: dict):
    store.save({"experiment": KEY, "backend": "simulator", **result}, versions={})
    return store.runs(limit=1)[0]


def test_history_compare_reads_samples_where_the_declaration_says(declared, store):
    record = _saved(store, {"kernel_us": [12.0, 10.0, 11.0]})
    assert run_samples(record) == [("Kernel", [12e-6, 10e-6, 11e-6])] and has_samples(record)
    frame = samples_frame([record])
    assert list(frame["measure"]) == ["Kernel"] * 3 and frame["seconds"].tolist() == pytest.approx(
        [12e-6, 10e-6, 11e-6]
    )
    assert runs_frame([record]).loc[0, "samples"] == 3
    assert compare_chart(frame).to_dict()  # the chart builds from them


def test_an_older_row_of_the_same_experiment_is_read_as_before(declared, store):
    record = _saved(store, {"kernel": {"samples_s": [1e-3, 2e-3]}})  # saved before the hook: no kernel_us
    assert run_samples(record) == [("kernel", [1e-3, 2e-3])]


def test_a_row_of_an_experiment_no_longer_declared_is_read_as_before(store):
    record = _saved(store, {"gpu": {"phases": {"kernel": {"samples_s": [3e-3]}}}})
    assert [seconds for _name, seconds in run_samples(record)] == [[3e-3]]


def test_a_hook_that_returns_no_seconds_is_refused_naming_the_experiment(store):
    registry.register(_experiment(lambda saved: {"Kernel": ["fast"]}))
    try:
        record = _saved(store, {"kernel_us": [1.0]})
        with pytest.raises(
            TypeError,
            match=r"experiment 'toy-microseconds': samples\(saved\)\['Kernel'\] must be a list of finite seconds",
        ):
            run_samples(record)
    finally:
        registry.unregister(KEY)
