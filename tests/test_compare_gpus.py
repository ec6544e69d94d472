"""History's Compare GPUs compares devices: one recorded run per device and method (older ones folded), the
first H200 run (its "kernel" held Python's launch) not a peer, one colour per source in both charts, and a
notebook's self-reported run beside them under its own label."""

from __future__ import annotations

import json

from gpu.report.compare_gpus import NOT_A_PEER, recorded_peers
from gpu.service.references import load_references
from ui.charts.history import article_entry, gpus_bandwidth_chart, gpus_time_chart, vector_add_entry


def test_one_recorded_run_per_device_and_method_the_rest_folded_and_the_first_run_not_a_peer():
    split = recorded_peers(load_references().runs)
    assert [r.key for r in split.peers] == ["h200-2026-12-04", "h200-final"]  # today's rules; the older method
    assert {(old.key, new.key) for old, new in split.folded} == {("h200-rerun", "h200-final"), ("h200", "h200-final")}
    assert [(r.key, why) for r, why in split.excluded] == [("h200-first", NOT_A_PEER)]


def _scale(spec: dict) -> dict:
    """The colour scale of a chart's spec (a layer's, where layered)."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            color = node.get("color")
            if isinstance(color, dict) and color.get("field") == "source" and "scale" in color:
                found.append(color["scale"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return found[0]


def test_each_source_keeps_its_colour_in_both_charts():
    import pandas as pd

    refs = load_references()
    rows = article_entry("T4 — article", refs.article.n, refs.article.cpu_time_s, refs.article.gpu_time_s)
    for ref in recorded_peers(refs.runs).peers:
        rows += vector_add_entry(ref.key, "recorded reference", ref.sections["breakdown"]["run"])
    frame = pd.DataFrame(rows)
    time_scale = _scale(gpus_time_chart(frame).to_dict())
    bandwidth_scale = _scale(gpus_bandwidth_chart(frame).to_dict())
    colour = dict(zip(time_scale["domain"], time_scale["range"]))
    assert "T4 — article" in colour  # the article has no kernel bandwidth, yet shifts no colour
    assert dict(zip(bandwidth_scale["domain"], bandwidth_scale["range"])) == colour
    json.dumps(time_scale)
