"""Recorded H200 runs on the roofline : the FP32 roof from the published clock, and
the recorded "device copy" — the driver's memcpy, slower than the kernels — drawn as what it is."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from gpu.core.roofline import COPY_ROOF, DRIVER_MEMCPY_ROOF, Roofs, published_fp32_gflops
from gpu.report.roofline_points import recorded_points, recorded_runs
from ui.charts.roofline import roof_lines, roofline_chart

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def final():
    points = recorded_points(BENCHMARKS / "h200-final" / "check.json")
    assert points is not None
    return points


def test_recorded_h200_has_a_compute_roof_from_its_published_clock(final):
    assert final.roofs.fp32_gflops == pytest.approx(132 * 128 * 2 * 1.98e9 / 1e9)  # 66.9 TFLOPS, NVIDIA's 67
    assert "published boost clock" in final.roofs.how
    assert any("published boost clock" in n for n in final.notes)
    lines = roof_lines(final.roofs, 1 / 32, 64)
    assert "FP32 roof" in set(lines["roof"])
    assert published_fp32_gflops("Some GPU", "9.0", 132) == (None, "")  # unknown device: no roof invented


def test_the_recorded_driver_memcpy_is_not_a_ceiling_and_the_chart_says_so(final):
    # the vector-add points (12 bytes per element at N = 2^30) sit above the recorded d2d line, below the memory roof
    points = pd.DataFrame(final.points)
    assert (points["gbps"] > final.roofs.copy_gbps).any() and (points["gbps"] < final.roofs.memory_gbps).all()
    assert final.roofs.copy_label == DRIVER_MEMCPY_ROOF
    assert any("not a ceiling" in n and "1,073,741,824" in n for n in final.notes)
    spec = roofline_chart(points, final.roofs, "recorded").to_dict()
    text = json.dumps(spec, ensure_ascii=False)
    assert DRIVER_MEMCPY_ROOF in text and COPY_ROOF + '"' not in text.replace(DRIVER_MEMCPY_ROOF, "")
    subtitle = spec["title"]["subtitle"]
    assert any("no ceiling" in line for line in subtitle)
    assert any("points from 1 kernel" in line and "median" in line for line in subtitle)  # what was measured


def test_a_copy_roof_from_a_copy_kernel_stays_the_measured_device_copy():
    roofs = Roofs(4800.0, 60_000.0, 4400.0, "")
    assert roofs.copy_label == COPY_ROOF
    assert set(roof_lines(roofs, 0.01, 100)["roof"]) == {"memory roof (clock × bus width)", COPY_ROOF, "FP32 roof"}


def test_every_recorded_run_with_points_has_both_roofs():
    for points in recorded_runs(BENCHMARKS):
        assert points.roofs.memory_gbps and points.roofs.fp32_gflops, points.source
