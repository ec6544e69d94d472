"""History's "Your runs" are this browser session's; "Everyone's runs" all; each figure says its N.

Also the store's session column: saved with each run, migrated into an older file, and the
Compare-GPUs palette (colour-blind safe, no two near-identical blues).
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from streamlit.testing.v1 import AppTest

from gpu.service.store import COLUMNS, LAYOUT_VERSION, open_store

PAGE = "../pages/5_History.py"
MINE = "a" * 32
OTHER = "b" * 32


def _vector_add(n: int, gpu_n: int, backend: str = "simulator", kernel_s: float = 3.67) -> dict:
    """A saved vector add whose kernel ran at ``gpu_n`` (the simulator's cap) and CPU at ``n``."""
    return {
        "experiment": "vector-add",
        "created_at": "2026-01-02T00:00:00+00:00",
        "n": n,
        "gpu_n": gpu_n,
        "cpu_n": n,
        "threads_per_block": 256,
        "backend": backend,
        "device": {"name": "CUDA simulator (no GPU)" if backend == "simulator" else "NVIDIA H200", "backend": backend},
        "gpu": {"phases": {"kernel": {"samples_s": [kernel_s] * 3}, "h2d": {"samples_s": [0.1] * 3}}},
        "cpu": {"numpy": {"samples_s": [0.02] * 3}},
    }


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv("KERNEL_LAB_DB", str(path))
    return path


def _page(session: str = MINE) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["history.session_id"] = session
    at.run()
    assert not at.exception, at.exception
    return at


def _rows(spec: dict) -> list[dict]:
    """Every data row of a Vega-Lite spec (named datasets, inline values, layers)."""
    rows = [row for data in spec.get("datasets", {}).values() for row in data]
    rows += (spec.get("data") or {}).get("values") or []
    for layer in spec.get("layer", []):
        rows += _rows(layer)
    return rows


def test_a_run_saved_by_another_session_is_only_under_everyones_runs(db):
    store = open_store(db)
    mine = store.save(_vector_add(4096, 4096), versions={}, session_id=MINE)
    other = store.save(_vector_add(8192, 8192), versions={}, session_id=OTHER)
    old = store.save(_vector_add(2048, 2048), versions={})  # CLI, or saved before sessions: no session id
    at = _page()
    yours, everyone = at.tabs[0], at.tabs[1]
    assert "Your runs" in yours.label and "Everyone's runs" in everyone.label
    assert list(yours.dataframe[0].value["run"]) == [mine[:8]]
    assert list(everyone.dataframe[0].value["run"]) == [old[:8], other[:8], mine[:8]]
    assert at.multiselect(key="history.compare").value == [mine]
    assert {o[:8] for o in at.multiselect(key="history.all.compare").options} == {mine[:8], other[:8], old[:8]}
    assert {o[:8] for o in at.multiselect(key="history.compare").options} == {mine[:8]}
    # another session sees its own run as its own, and mine only under everyone's
    at = _page(OTHER)
    assert list(at.tabs[0].dataframe[0].value["run"]) == [other[:8]]


def test_a_session_with_no_runs_of_its_own_is_pointed_to_everyones(db):
    open_store(db).save(_vector_add(4096, 4096), versions={}, session_id=OTHER)
    at = _page()
    assert any("No runs of yours saved yet" in i.value for i in at.tabs[0].info)
    assert any("under **Everyone's runs**" in i.value for i in at.tabs[0].info)
    assert len(at.tabs[1].dataframe[0].value) == 1


def test_on_your_own_machine_a_reload_keeps_your_runs(db, monkeypatch):
    """Locally the one user is "you": every session (a reload, a new tab) files runs under the same id."""
    monkeypatch.delenv("KERNEL_LAB_CLASS", raising=False)
    yours = open_store(db).save(_vector_add(4096, 4096), versions={}, session_id="learner:you")
    open_store(db).save(_vector_add(8192, 8192), versions={}, session_id=OTHER)
    for _reload in range(2):
        at = AppTest.from_file(PAGE, default_timeout=60).run()  # no session id given: a fresh browser session
        assert not at.exception, at.exception
        assert list(at.tabs[0].dataframe[0].value["run"]) == [yours[:8]]


def test_saving_from_the_app_records_this_sessions_id(db, monkeypatch):
    """``ui.run_record.save_result`` saves with ``browser_session_id()``, kept in session state."""
    import streamlit as st

    from gpu.catalog.registry import get
    from ui import run_record

    class Result:
        def to_dict(self):
            return _vector_add(512, 512)

    monkeypatch.setattr(run_record, "checked_measures", lambda experiment, result: {})
    monkeypatch.setattr(run_record, "current_store", lambda: open_store(db))
    st.session_state.clear()
    st.session_state["history.session_id"] = MINE
    run_id, problem = run_record.save_result(get("vector-add"), Result(), 0, {"n": 512}, device={"name": "x"})
    assert problem is None
    assert open_store(db).get(run_id).session_id == MINE
    assert [r.run_id for r in open_store(db).runs(session_id=MINE)] == [run_id]
    assert open_store(db).runs(session_id=OTHER) == []


def test_every_figure_shows_the_n_it_was_measured_at(db):
    """"Kernel 3.67 s" of a run at N = 10^7 whose kernel ran at 16,384 says 16,384."""
    run = open_store(db).save(_vector_add(10_000_000, 16_384), versions={}, session_id=MINE)
    at = _page()
    table = at.tabs[0].dataframe[0].value
    assert list(table["N"]) == ["10,000,000"]
    assert list(table["kernel's N (simulator's cap)"]) == ["16,384"]
    summary = at.tabs[0].dataframe[1].value
    kernel = summary[summary["measure"] == "Kernel"].iloc[0]
    assert kernel["median"] == "3.67 s (simulated, at N = 16,384)" and kernel["measured at N"] == "16,384"
    numpy = summary[summary["measure"] == "NumPy"].iloc[0]
    assert numpy["median"] == "20 ms (simulated, at N = 10,000,000)"
    spec = json.loads(at.tabs[0].get("vega_lite_chart")[0].proto.spec)
    assert any(t.get("title") == "measured at N" for t in spec["layer"][0]["encoding"]["tooltip"])
    # the chart's data (Streamlit sends it apart from the spec): each sample with its N
    from ui.charts.history import compare_chart, samples_frame

    samples = samples_frame([open_store(db).get(run)])
    assert {(m, n) for m, n in zip(samples["measure"], samples["n"])} == {
        ("Kernel", 16_384), ("H2D copy", 16_384), ("NumPy", 10_000_000)
    }
    rows = _rows(compare_chart(samples).to_dict())
    assert {(r["measure"], r["n"]) for r in rows if "median_ms" in r} == {
        ("Kernel", 16_384), ("H2D copy", 16_384), ("NumPy", 10_000_000)
    }


def test_compare_gpus_leaves_simulated_runs_out_and_says_so(db):
    open_store(db).save(_vector_add(10_000_000, 16_384), versions={}, session_id=MINE)
    open_store(db).save(_vector_add(2**24, 2**24, backend="cuda", kernel_s=6e-5), versions={}, session_id=MINE)
    at = _page()
    gpus = at.tabs[3]
    assert any("from the CUDA simulator is not shown here" in c.value for c in gpus.caption)
    for chart in gpus.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        sources = (spec.get("encoding") or spec["layer"][0]["encoding"])["color"]["scale"]["domain"]
        assert any("your run" in s and "NVIDIA H200" in s and "N = 16,777,216" in s for s in sources), sources
        assert not [s for s in sources if "simulator" in s], sources


def test_compare_gpus_palette_is_colour_blind_safe_and_distinct():
    import pandas as pd

    from ui.charts.history import SOURCE_PALETTE, gpus_bandwidth_chart, gpus_time_chart, vector_add_entry

    rows = []
    for i in range(4):
        rows += vector_add_entry(f"H200 #{i}", "recorded reference", _vector_add(2**20, 2**20, "cuda", 1e-4 * (i + 1)))
    frame = pd.DataFrame(rows)
    scale = gpus_time_chart(frame).to_dict()["encoding"]["color"]["scale"]
    assert scale["range"] == list(SOURCE_PALETTE[:4]) and len(set(scale["range"])) == 4
    assert "scheme" not in scale  # not tableau10's two blues
    assert SOURCE_PALETTE[:2] == ("#0072B2", "#E69F00")  # Okabe–Ito: blue then orange, never two blues side by side
    bars = gpus_bandwidth_chart(frame).to_dict()["layer"][0]
    assert bars["encoding"]["color"]["scale"]["range"] == scale["range"]  # the same colour per source in both


def test_an_older_file_gains_the_session_column_and_keeps_its_rows(tmp_path):
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE, experiment TEXT NOT NULL,
            created_at TEXT NOT NULL, saved_at TEXT NOT NULL, backend TEXT NOT NULL, simulated INTEGER NOT NULL,
            device_name TEXT, device_index INTEGER, versions TEXT NOT NULL, params TEXT NOT NULL, result TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
    """)
    conn.execute(f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                 ("c" * 32, "vector-add", "2025-01-01", "2025-01-01", "cuda", 0, "T4", 0, "{}", "{}", "{}"))
    conn.commit()
    conn.close()
    store = open_store(path)
    assert store.writable
    (old,) = store.runs()
    assert old.session_id is None and old.run_id == "c" * 32
    assert store.runs(session_id=MINE) == []  # an old row is no session's: only under everyone's
    new = store.save(_vector_add(512, 512), versions={}, session_id=MINE)
    assert [r.run_id for r in store.runs(session_id=MINE)] == [new]
    conn = sqlite3.connect(path)
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    conn.close()
    assert meta == {"schema_version": "1", "layout_version": str(LAYOUT_VERSION)}  # older servers still open it
    assert open_store(path).runs(session_id=MINE)[0].run_id == new  # reopening migrates nothing twice


def test_compare_gpus_shows_a_cut_check_marked_as_such_beside_the_finished_ones(db):
    # benchmarks/h200-2026-12-04 was cut by its time limit: its breakdown (today's rules) is whole and is
    # shown, marked "check cut short", beside the newest run of the older method (its caveat's † beside it).
    at = _page()
    sources = set()
    for chart in at.tabs[3].get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        sources |= set((spec.get("encoding") or spec["layer"][0]["encoding"])["color"]["scale"]["domain"])
    assert any("(h200-2026-12-04, check cut short)" in s for s in sources), sources
    assert any("(h200-final) †" in s for s in sources), sources
