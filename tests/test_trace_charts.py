"""The trace's chart builders and tables, on hand-made reports (no simulator, no Streamlit server)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui.charts.trace import access_map_spec, sectors_chart


def _picture() -> pd.DataFrame:
    rows = []
    for t in range(64):  # thread t reads a[t] and writes out[t // 32, t % 32]
        rows.append({"array": "a (global)", "row": t // 32, "col": t % 32, "index": f"[{t}]", "global_thread": t,
                     "thread": f"({t}, 0, 0)", "block": "(0, 0, 0)", "kind": "read"})
        rows.append({"array": "out (global)", "row": t // 32, "col": t % 32, "index": f"[{t // 32}, {t % 32}]",
                     "global_thread": t, "thread": f"({t}, 0, 0)", "block": "(0, 0, 0)", "kind": "write"})
    return pd.DataFrame(rows)


def _layers(spec: dict) -> list[dict]:
    return [layer for panel in spec["hconcat"] for layer in panel["layer"]]


def test_the_access_map_colours_only_the_chosen_threads_cells():
    spec = access_map_spec(_picture(), range(32), "warp 0")
    alt.HConcatChart.from_dict(spec, validate=True)  # a valid Vega-Lite spec (the page does not check it: once here)
    assert [p["title"] for p in spec["hconcat"]] == ["a (global)", "out (global)"]
    datasets = spec["datasets"]
    base, highlight = _layers(spec)[0], _layers(spec)[1]
    assert len(datasets[base["data"]["name"]]) == 64  # every touched cell, grey
    chosen = datasets[highlight["data"]["name"]]
    assert (
        len(chosen) == 32
        and {r["global_thread"] for r in chosen} == set(range(32))
        and {r["row"] for r in chosen} == {0}
    )
    colour = highlight["encoding"]["color"]["scale"]
    assert colour["domain"] == ["read", "write", "atomic"]  # one domain in every panel: hconcat shares the scale
    # a cell per touched element: drawn on a canvas (vega-embed reads usermeta.embedOptions), not as an SVG node each
    assert spec["usermeta"] == {"embedOptions": {"renderer": "canvas"}}


def test_the_access_map_shrinks_cells_so_panels_fit_side_by_side():
    wide = access_map_spec(_picture(), [0], "thread 0")
    assert sum(p["width"] for p in wide["hconcat"]) <= 860


def test_the_sectors_chart_draws_touched_bars_and_ideal_ticks_in_step_order():
    rows = pd.DataFrame(
        [
            {
                "step": "1 · naive",
                "access": "line 33 write out[col, row]",
                "sectors_per_request": 32.0,
                "ideal_sectors_per_request": 4.0,
            },
            {
                "step": "2 · tiled",
                "access": "line 57 write out[...]",
                "sectors_per_request": 4.0,
                "ideal_sectors_per_request": 4.0,
            },
        ]
    )
    spec = sectors_chart(rows, "sectors").to_dict()
    bars, ticks = spec["layer"]
    assert bars["mark"]["type"] == "bar" and ticks["mark"]["type"] == "tick"
    assert bars["encoding"]["y"]["sort"] == [
        "1 · naive — line 33 write out[col, row]",
        "2 · tiled — line 57 write out[...]",
    ]
    assert max(bars["encoding"]["x"]["axis"]["values"]) >= 32


def test_the_access_maps_spec_is_built_without_altairs_data_transformer():
    """Streamlit swaps Altair's data transformer (a global) while it converts another session's chart: the access
    map, built by the page itself, must not go through it (its rows would land in that session's datasets)."""
    import altair as alt

    def elsewhere(data, **kwargs):
        raise AssertionError("the access map went through the data transformer")

    alt.data_transformers.register("elsewhere", elsewhere)
    try:
        with alt.data_transformers.enable("elsewhere"):
            spec = access_map_spec(_picture(), range(32), "warp 0")
    finally:
        alt.data_transformers.enable("default")
    assert sorted(spec["datasets"]) == ["chosen-0", "chosen-1", "touched-0", "touched-1"]


def test_a_pages_access_map_is_built_once_per_report_and_choice(monkeypatch):
    from dataclasses import replace

    import streamlit as st

    from gpu.trace.report import TraceReport
    from ui.views import trace as view

    built = []

    def counting(picture, threads, title, subtitle=""):
        built.append((tuple(threads), title))
        return access_map_spec(picture, threads, title, subtitle)

    monkeypatch.setattr(st, "session_state", {})
    monkeypatch.setattr(view.charts, "access_map_spec", counting)
    frame = _picture()
    report = TraceReport("k", "k, N = 64", (1, 1, 1), (64, 1, 1), 1, 1, 128, 0, (), (), 0, (), 1, (), (),
                         tuple(frame.to_dict("records")))
    first = view.map_spec("map", report, frame, range(32), "warp 0")
    assert view.map_spec("map", report, frame, range(32), "warp 0") is first  # the next run of the page
    assert view.map_spec("map", replace(report), frame, range(32), "warp 0") is first  # an equal report (a copy)
    view.map_spec("map", report, frame, range(32, 64), "warp 1")  # another warp
    other = replace(report, picture=report.picture[:64])
    view.map_spec("map", other, frame, range(32, 64), "warp 1")  # another submission's trace
    assert built == [(tuple(range(32)), "warp 0"), (tuple(range(32, 64)), "warp 1"), (tuple(range(32, 64)), "warp 1")]
