"""The trace's chart builders and tables, on hand-made reports (no simulator, no Streamlit server)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pandas as pd

from ui.charts.trace import (
    FIT_WIDTH_PX,
    KIND_COLORS,
    LABEL_GAP_PX,
    MAX_CELLS_PER_ARRAY,
    TOUCHED_FILL,
    access_map_svg,
    sectors_chart,
)


def _picture() -> pd.DataFrame:
    rows = []
    for t in range(64):  # thread t reads a[t] and writes out[t // 32, t % 32]
        rows.append({"array": "a (global)", "row": t // 32, "col": t % 32, "index": f"[{t}]", "global_thread": t,
                     "thread": f"({t}, 0, 0)", "block": "(0, 0, 0)", "kind": "read"})
        rows.append({"array": "out (global)", "row": t // 32, "col": t % 32, "index": f"[{t // 32}, {t % 32}]",
                     "global_thread": t, "thread": f"({t}, 0, 0)", "block": "(0, 0, 0)", "kind": "write"})
    return pd.DataFrame(rows)


NS = "{http://www.w3.org/2000/svg}"


def _svg(picture: pd.DataFrame, threads, title: str = "warp 0", subtitle: str = "") -> ET.Element:
    return ET.fromstring(access_map_svg(picture, threads, title, subtitle))  # well-formed XML, or this raises


def _cells(svg: ET.Element) -> list[tuple[str, str]]:
    """The chosen threads' cells: (colour, tooltip), in drawing order (the legend's swatches have no tooltip)."""
    return [(r.get("fill"), tip.text) for r in svg.iter(f"{NS}rect") if (tip := r.find(f"{NS}title")) is not None]


def _access(array: str, row: int, col: int, thread: int = 0, kind: str = "read") -> dict:
    return {"array": array, "row": row, "col": col, "index": f"[{row * 32 + col}]", "global_thread": thread,
            "thread": f"({thread}, 0, 0)", "block": "(0, 0, 0)", "kind": kind}


def _texts(svg: ET.Element) -> list[str]:
    return [t.text for t in svg.iter(f"{NS}text")]


def test_the_access_map_colours_only_the_chosen_threads_cells():
    svg = _svg(_picture(), range(32))
    assert svg.find(f"{NS}title").text == "warp 0" and svg.get("role") == "img"
    assert "a (global)" in _texts(svg) and "out (global)" in _texts(svg)  # a panel per array
    cells = _cells(svg)
    assert len(cells) == 64  # warp 0's 32 reads of a and 32 writes of out: nothing of threads 32-63
    assert [c for c, _ in cells] == [KIND_COLORS["read"]] * 32 + [KIND_COLORS["write"]] * 32
    assert cells[3][1] == "[3] of a (global): read by thread (3, 0, 0) of block (0, 0, 0) (global 3)"
    greys = [p for p in svg.iter(f"{NS}path") if p.get("fill") == TOUCHED_FILL]
    assert [p.get("d").count("M") for p in greys] == [64, 64]  # every touched cell, grey: one path per array
    assert {"read", "write", "atomic", "other threads"} <= set(_texts(svg))  # the legend names every colour


def test_the_access_map_has_a_colour_for_every_kind_the_trace_records():
    from gpu.trace.record import KIND_NAMES

    assert tuple(KIND_COLORS) == KIND_NAMES  # a kind without a colour would leave its cells undrawable


def test_a_cell_read_and_written_shows_the_write_and_names_both_and_its_threads():
    rows = [_access("out (global)", 0, 0, t, kind) for t in range(6) for kind in ("read", "write")]
    (colour, tip), = _cells(_svg(pd.DataFrame(rows), range(32)))
    assert colour == KIND_COLORS["write"]
    assert tip.startswith("[0] of out (global): read, write by thread (0, 0, 0) of block (0, 0, 0) (global 0); ")
    assert tip.endswith("; and 2 more")  # six threads: four named, the rest counted


def test_the_access_map_shrinks_cells_so_panels_fit_side_by_side_and_spaces_its_labels():
    svg = _svg(_picture(), [0], "thread 0")
    assert int(svg.get("width")) <= FIT_WIDTH_PX
    assert svg.get("viewBox") == f"0 0 {svg.get('width')} {svg.get('height')}"  # it scales down in a narrow column
    tall = pd.DataFrame([_access(array, r, c) for array in ("a", "b", "out") for r in range(8) for c in range(32)])
    rows = [t for t in _svg(tall, [0]).iter(f"{NS}text") if t.get("text-anchor") == "end"]
    ys = sorted({float(t.get("y")) for t in rows})
    assert len(ys) >= 2 and min(b - a for a, b in zip(ys, ys[1:])) >= LABEL_GAP_PX  # 7-px rows: every other label


def test_an_array_too_large_to_draw_is_left_out_and_the_map_says_when_none_is_left():
    big = pd.DataFrame([_access("big (global)", r, 0) for r in (0, MAX_CELLS_PER_ARRAY)])
    svg = _svg(big, [0])
    assert "big (global)" not in _texts(svg) and "No array small enough to draw." in _texts(svg)
    assert _cells(svg) == []


def test_the_access_map_escapes_every_text_it_draws():
    """Array names and the title reach the page as SVG inside Markdown that allows HTML: each one is escaped."""
    hostile = '<img src=x onerror="alert(1)"></title><script>alert(2)</script>'
    rows = [{"array": hostile, "row": 0, "col": 0, "index": hostile, "global_thread": 0, "thread": hostile,
             "block": "(0, 0, 0)", "kind": "read"}]
    text = access_map_svg(pd.DataFrame(rows), [0], hostile, hostile)
    assert "<img" not in text and "<script" not in text
    svg = ET.fromstring(text)
    assert {e.tag for e in svg.iter()} <= {f"{NS}{t}" for t in ("svg", "title", "text", "path", "rect")}
    assert svg.find(f"{NS}title").text == hostile and hostile in _texts(svg)  # drawn as text, whole


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


def test_a_pages_access_map_is_built_once_per_report_and_choice(monkeypatch):
    from dataclasses import replace

    import streamlit as st

    from gpu.trace.report import TraceReport
    from ui.views import trace as view

    built = []

    def counting(picture, threads, title, subtitle=""):
        built.append((tuple(threads), title))
        return access_map_svg(picture, threads, title, subtitle)

    monkeypatch.setattr(st, "session_state", {})
    monkeypatch.setattr(view.charts, "access_map_svg", counting)
    frame = _picture()
    report = TraceReport("k", "k, N = 64", (1, 1, 1), (64, 1, 1), 1, 1, 128, 0, (), (), 0, (), 1, (), (),
                         tuple(frame.to_dict("records")))
    first = view.map_svg("map", report, frame, range(32), "warp 0")
    assert view.map_svg("map", report, frame, range(32), "warp 0") is first  # the next run of the page
    assert view.map_svg("map", replace(report), frame, range(32), "warp 0") is first  # an equal report (a copy)
    view.map_svg("map", report, frame, range(32, 64), "warp 1")  # another warp
    other = replace(report, picture=report.picture[:64])
    view.map_svg("map", other, frame, range(32, 64), "warp 1")  # another submission's trace
    assert built == [(tuple(range(32)), "warp 0"), (tuple(range(32, 64)), "warp 1"), (tuple(range(32, 64)), "warp 1")]
