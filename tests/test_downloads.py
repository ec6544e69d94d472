"""One download helper (ui/downloads.py) for every page: what it writes, and that no page goes around it."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from gpu.core.provenance import METHODOLOGY_KEY, METHODOLOGY_VERSION
from ui.downloads import prepared

ROOT = Path(__file__).resolve().parent.parent
HELPER = ROOT / "ui" / "downloads.py"


def download_button_calls(source: str) -> list[int]:
    """The lines of ``source`` that call a ``download_button`` (``st.download_button``, ``column.download_button``)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "download_button")
            or (isinstance(node.func, ast.Name) and node.func.id == "download_button")
        )
    ]


def test_the_finder_sees_every_spelling_of_a_download_button():
    source = "import streamlit as st\nst.download_button('a', 'b')\nleft.download_button('a', 'b')\n" \
             "from streamlit import download_button\ndownload_button('a', 'b')\nst.button('x')\n"
    assert download_button_calls(source) == [2, 3, 5]


def test_no_download_button_outside_the_helper():
    found = []
    for path in sorted([ROOT / "app.py", *(ROOT / "pages").rglob("*.py"), *(ROOT / "ui").rglob("*.py"),
                        *(ROOT / "gpu").rglob("*.py"), *(ROOT / "scripts").rglob("*.py")]):
        if path == HELPER:
            continue
        found += [f"{path.relative_to(ROOT)}:{line}" for line in download_button_calls(path.read_text())]
    assert found == [], f"call ui.downloads.download instead of st.download_button: {found}"


def test_a_measurement_as_json_carries_the_methodology_version():
    item = prepared("Run (JSON)", {"n": 4}, "run.json", "application/json", key="k", stamp=True)
    assert json.loads(item.data) == {METHODOLOGY_KEY: METHODOLOGY_VERSION, "n": 4}
    assert json.loads(prepared("x", {"n": 4}, "x.json", "application/json", key="k").data) == {"n": 4}


def test_a_measurement_as_csv_carries_it_as_a_column():
    frame = pd.DataFrame({"series": ["a", "b"], "seconds": [1.0, 2.0]})
    item = prepared("Samples (CSV)", frame, "s.csv", "text/csv", key="k", stamp=True)
    read = pd.read_csv(io.StringIO(item.data))
    assert list(read.columns) == ["series", "seconds", METHODOLOGY_KEY]
    assert set(read[METHODOLOGY_KEY]) == {METHODOLOGY_VERSION}
    assert list(frame.columns) == ["series", "seconds"], "the caller's frame is left as it was"


def test_text_cannot_be_stamped_and_says_so():
    with pytest.raises(TypeError, match=r"'run\.json'.*str"):
        prepared("x", '{"n": 4}', "run.json", "application/json", key="k", stamp=True)


def test_text_bytes_and_callables_go_as_they_are():
    def build() -> str:
        return "built"

    assert prepared("x", "text", "a.py", "text/x-python", key="k").data == "text"
    assert prepared("x", b"\x00", "a.bin", "application/octet-stream", key="k").data == b"\x00"
    assert prepared("x", build, "a.ipynb", "application/x-ipynb+json", key="k").data is build


def test_a_list_is_written_as_json():
    assert json.loads(prepared("x", [{"a": 1}], "r.json", "application/json", key="k").data) == [{"a": 1}]


# The views whose every download is a measurement made now: each carries its methodology version.
VIEWS = ROOT / "ui" / "views"
MEASUREMENT_VIEWS = sorted([*(VIEWS / "experiments").glob("[!_]*.py"), VIEWS / "kernels.py"])


def unstamped_downloads(source: str) -> list[int]:
    """The lines of ``source`` calling ``download(...)`` without ``stamp=True``."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "download"
        and not any(k.arg == "stamp" and isinstance(k.value, ast.Constant) and k.value.value is True
                    for k in node.keywords)
    ]


def test_the_unstamped_finder_sees_a_missing_stamp():
    assert unstamped_downloads("download('a', {}, 'a.json', 'application/json', key='k')\n"
                               "download('a', {}, 'a.json', 'application/json', key='k', stamp=True)\n") == [1]


def test_every_download_of_a_measurement_view_is_stamped():
    assert len(MEASUREMENT_VIEWS) >= 5, "the four experiment views and the catalog's"
    found = [f"{path.relative_to(ROOT)}:{line}" for path in MEASUREMENT_VIEWS
             for line in unstamped_downloads(path.read_text())]
    assert found == [], f"a measurement's download carries its methodology version (stamp=True): {found}"


def test_historys_samples_export_carries_each_runs_own_methodology_version(tmp_path):
    """History's exports are not stamped anew: each row says the rules its own run was measured under."""
    from dataclasses import replace

    from gpu.service.store import open_store
    from ui.charts.history import samples_frame

    store = open_store(tmp_path / "history.sqlite3")
    store.save({"experiment": "old-toy", "backend": "simulator", "kernel": {"samples_s": [1e-6, 2e-6]}}, versions={})
    now = store.runs(limit=1)[0]
    before_rules = replace(now, run_id="older", result={k: v for k, v in now.result.items() if k != METHODOLOGY_KEY})
    frame = samples_frame([now, before_rules])
    assert frame.groupby("run_id")[METHODOLOGY_KEY].unique().map(list).to_dict() == {
        now.run_id: [METHODOLOGY_VERSION], "older": [1]
    }
