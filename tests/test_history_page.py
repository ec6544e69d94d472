"""The History page in AppTest: list, filter, compare, export; damaged databases; no delete."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from gpu.service.store import open_store

PAGE = "../pages/5_History.py"


def _result(experiment: str, n: int, backend: str, device: str, samples: list[float]) -> dict:
    return {
        "experiment": experiment,
        "created_at": f"2026-01-0{n % 9 + 1}T00:00:00+00:00",
        "n": n,
        "threads_per_block": 256,
        "backend": backend,
        "device": {"name": device, "index": 0, "backend": backend},
        "gpu": {"phases": {"kernel": {"samples_s": samples}, "h2d": {"samples_s": [s * 3 for s in samples]}}},
        "cpu": {"numpy": {"samples_s": [s * 5 for s in samples]}},
    }


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv("KERNEL_LAB_DB", str(path))
    return path


SESSION = "0123456789abcdef0123456789abcdef"  # this test's browser session (``ui.run_record.browser_session_id``)


def _seed(path, session: str | None = SESSION) -> list[str]:
    store = open_store(path)
    versions = {"numba": "test"}
    return [
        store.save(_result("vector-add", 64, "simulator", "CUDA simulator (no GPU)", [1e-3, 2e-3]), versions=versions,
                   session_id=session),
        store.save(_result("vector-add", 128, "simulator", "CUDA simulator (no GPU)", [2e-3, 3e-3]), versions=versions,
                   session_id=session),
        store.save(_result("scaling", 1_000_000, "cuda", "NVIDIA H200", [1e-5, 2e-5, 3e-5]), versions=versions,
                   session_id=session),
    ]


def _page(session: str = SESSION) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["history.session_id"] = session
    at.run()
    assert not at.exception, at.exception
    return at


def test_empty_history_says_how_to_fill_it(db):
    at = _page()
    assert any("No runs saved yet" in i.value for i in at.info)


def test_lists_runs_newest_first_with_simulated_runs_labelled(db):
    ids = _seed(db)
    at = _page()
    table = at.dataframe[0].value
    assert list(table["run"]) == [i[:8] for i in reversed(ids)]
    assert table.loc[table["experiment"] == "vector-add", "backend"].eq("CUDA simulator (simulated timings)").all()
    assert table.loc[table["experiment"] == "scaling", "backend"].eq("CUDA").all()
    assert any("2 ran in the CUDA simulator" in c.value for c in at.caption)


def test_runs_table_headers_are_declared_labels_and_whole_numbers_read_as_integers(db):
    _seed(db)
    imported = {**_result("vector-add", 512, "cuda", "Tesla T4", [1e-3]), "n": 512.0, "imported": True}
    open_store(db).save(imported, versions={}, session_id=SESSION)
    at = _page()
    table = at.dataframe[0].value
    raw = {"threads_per_block", "n", "repeats", "created_at"}
    assert not raw & set(table.columns), list(table.columns)
    assert {"N", "Threads per block"} <= set(table.columns)
    cells = table.astype(str).to_numpy().ravel()
    assert "512" in set(cells) and not any(c.endswith(".0") for c in cells)
    assert "1,000,000" in set(table["N"])


def test_filters_by_experiment_device_and_backend(db):
    _seed(db)
    at = _page()
    at.multiselect(key="history.experiment").set_value(["vector-add"]).run()
    assert len(at.dataframe[0].value) == 2
    at.multiselect(key="history.experiment").set_value([])
    at.multiselect(key="history.device").set_value(["NVIDIA H200"]).run()
    assert list(at.dataframe[0].value["experiment"]) == ["scaling"]
    at.multiselect(key="history.device").set_value([])
    at.multiselect(key="history.backend").set_value(["simulator"]).run()
    assert set(at.dataframe[0].value["experiment"]) == {"vector-add"}
    assert not at.exception


def test_compares_selected_runs_in_one_chart(db):
    ids = _seed(db)
    at = _page()
    # default: the newest run's experiment (scaling) only has one run
    assert at.multiselect(key="history.compare").value == [ids[2]]
    at.multiselect(key="history.compare").set_value([ids[0], ids[1]]).run()
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    assert "simulator timings are not GPU performance" in json.dumps(spec["title"])
    assert "2 saved runs" in json.dumps(spec["title"])
    assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    assert spec["layer"][0]["encoding"]["y"]["field"] == "measure"  # measure names read horizontally, not rotated
    summary = at.dataframe[1].value  # medians per run and measure, under the chart
    assert set(summary["run"]) == {f"{ids[0][:8]} vector-add (sim)", f"{ids[1][:8]} vector-add (sim)"}
    assert set(summary["measure"]) == {"Kernel", "H2D copy", "NumPy"}
    kernel = summary[(summary["measure"] == "Kernel") & summary["run"].str.startswith(ids[0][:8])]
    assert kernel["median"].iloc[0] == "1.5 ms (simulated, at N = 64)"  # in units, not a bare 1.5000; with its N
    assert summary["max"].str.match(r"^[0-9.]+ (s|ms|µs|ns)$").all()


def test_compare_chart_builder_puts_each_sample_and_median_per_run():
    from gpu.service.store import RunRecord
    from ui.charts.history import compare_chart, samples_frame

    records = [
        RunRecord(
            f"{i:032x}",
            "vector-add",
            "t",
            "t",
            "cuda",
            False,
            "GPU",
            0,
            {},
            {},
            _result("vector-add", 64, "cuda", "GPU", [1e-3 * (i + 1), 2e-3]),
        )
        for i in range(2)
    ]
    samples = samples_frame(records)
    assert len(samples) == 2 * 3 * 2  # runs x measures x samples
    spec = compare_chart(samples).to_dict()
    dots, ticks = spec["layer"]
    assert dots["mark"]["type"] == "circle" and ticks["mark"]["type"] == "tick"
    assert dots["encoding"]["color"]["field"] == "run" and dots["encoding"]["yOffset"]["field"] == "run"
    assert {t.get("title") for t in dots["encoding"]["tooltip"]} >= {"time (ms)", "sample #"}
    medians = spec["datasets"][ticks["data"]["name"]]
    assert {round(m["median_ms"], 6) for m in medians if m["measure"] == "Kernel"} == {1.5, 2.0}
    assert dots["encoding"]["x"]["axis"]["values"] == [1.0, 10.0]  # one tick and grid line per decade, no minor grid


def test_exports_csv_and_json_and_offers_no_delete(db):
    _seed(db)
    at = _page()
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Runs (CSV)", "Samples (CSV)", "Runs with all samples (JSON)"] * 2  # your runs, everyone's
    assert not [b for b in at.button if "delete" in b.label.lower()]


def test_a_corrupt_database_is_moved_aside_and_the_page_still_works(db):
    db.write_bytes(b"definitely not sqlite" * 100)
    at = _page()
    assert any("moved to" in w.value for w in at.warning)
    assert any("No runs saved yet" in i.value for i in at.info)
    assert list(db.parent.glob("history.sqlite3.corrupt-*"))


def test_unavailable_history_is_a_warning_not_a_crash(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("KERNEL_LAB_DB", str(blocker / "history.sqlite3"))
    at = _page()
    assert any("History is unavailable" in w.value for w in at.warning)


def test_default_comparison_skips_runs_without_samples(db):
    ids = _seed(db)
    open_store(db).save(
        {"experiment": "vector-add/article-run", "backend": "simulator", "cpu_time_s": 1.0}, versions={},
        session_id=SESSION,
    )
    at = _page()
    assert at.multiselect(key="history.compare").value == [ids[2]]
    assert at.get("vega_lite_chart")


def test_compare_gpus_leaves_simulated_figures_out_and_tags_recorded_runs_before_the_rules():
    import pandas as pd

    from gpu.service.references import load_references
    from ui.charts.history import gpus_bandwidth_chart, gpus_time_chart, vector_add_entry

    ref = load_references().get("h200-final")
    recorded = vector_add_entry("H200 recorded", "recorded reference", ref.sections["breakdown"]["run"])
    simulated_run = {**ref.sections["breakdown"]["run"], "backend": "simulator", "methodology_version": 2}
    simulated = vector_add_entry("simulator", "your run", simulated_run)
    assert all("recorded before L2 flushing" in r["caveat"] for r in recorded)
    assert all(r["caveat"].startswith("simulated: not GPU performance") for r in simulated)
    frame = pd.DataFrame(recorded + simulated)
    time_spec = json.dumps(gpus_time_chart(frame).to_dict(), ensure_ascii=False)
    assert "recorded before L2 flushing" in time_spec
    # a simulated figure is never plotted beside a GPU's ("3e-05 GB/s beside 3,084 GB/s"): left out, and said so
    for spec in (gpus_time_chart(frame).to_dict(), gpus_bandwidth_chart(frame).to_dict()):
        rows = [row for data in spec["datasets"].values() for row in data]
        assert rows and not [row for row in rows if row["backend"] == "simulator"]
        assert "simulated runs are left out" in json.dumps(spec["title"])
