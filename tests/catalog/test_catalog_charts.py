"""Chart builders for the Kernels and Roofline pages (on chart.to_dict(), ensure_ascii=False), the roofline's
arithmetic, and the points read from recorded GPU runs under benchmarks/."""

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from gpu.catalog.steps import run_kernel
from gpu.core.device import DeviceInfo
from gpu.core.roofline import device_roofs, fp32_lanes_per_sm, fp32_peak_gflops
from gpu.core.timing import RepeatPolicy
from gpu.experiments.matmul import experiment as matmul
from gpu.report.roofline_points import add_vector_add, recorded_runs, session_points
from ui.charts.kernels import phases_chart, steps_time_chart, throughput_chart
from ui.charts.roofline import roof_lines, roofline_chart

ROOT = Path(__file__).resolve().parents[2]
H200 = DeviceInfo(
    "cuda",
    "NVIDIA H200",
    compute_capability="9.0",
    multiprocessors=132,
    memory_clock_khz=3_201_000,
    memory_bus_width_bits=6016,
)
H200_ROOFS = device_roofs(H200, clock_khz=1_980_000)


@pytest.fixture(scope="module")
def run():
    """A tiny matmul run, given an H200's roofs so % of peak has something to divide by."""
    return replace(
        run_kernel(matmul.SPEC, {"n": 8}, RepeatPolicy.count(1, warmup=0), ("numpy", "python")), roofs=H200_ROOFS
    )


def test_fp32_roof_is_sms_times_lanes_times_two_times_clock():
    assert fp32_lanes_per_sm("9.0") == 128 and fp32_lanes_per_sm("8.0") == 64 and fp32_lanes_per_sm("8.6") == 128
    assert fp32_lanes_per_sm("9.9") == 128 and fp32_lanes_per_sm(None) is None  # same major; unknown
    assert fp32_peak_gflops(H200, 1_980_000) == pytest.approx(132 * 128 * 2 * 1.98)
    assert H200_ROOFS.ridge == pytest.approx(H200_ROOFS.fp32_gflops / H200.peak_bandwidth_gbps)
    assert H200_ROOFS.bound_by(1 / 12) == "memory" and H200_ROOFS.bound_by(1000) == "compute"
    assert H200_ROOFS.attainable_gflops(1 / 12) == pytest.approx(H200.peak_bandwidth_gbps / 12)


def test_fraction_of_peak_uses_the_roof_that_bounds_the_kernel(run):
    naive = run.get("naive")
    expected = run.gflops(naive) / H200_ROOFS.attainable_gflops(run.intensity)
    assert run.fraction_of_peak(naive) == pytest.approx(expected)
    assert run.fraction_of_peak(run.get("numpy")) is None  # CPU figures are not compared with the GPU's roofs


def test_steps_time_chart_shows_every_timed_implementation_and_marks_estimates(run):
    spec = json.dumps(steps_time_chart(run.summary_frame(), "subtitle").to_dict(), ensure_ascii=False)
    for label in (
        "1 · naive",
        "2 · shared-memory tiles",
        "3 · register tiling (8 × 8 per thread)",
        "NumPy @ (BLAS)",
        "Python loop",
    ):
        assert label in spec
    assert "estimate (not run)" in spec and '"type": "log"' in spec
    assert "cuBLAS" not in spec  # skipped libraries are not drawn


def test_throughput_chart_draws_gpu_rows_the_peak_and_the_share_of_it(run):
    summary = run.summary_frame()
    spec = json.dumps(throughput_chart(summary, "sub", "gflops", H200_ROOFS.fp32_gflops).to_dict(), ensure_ascii=False)
    assert "GFLOP/s" in spec and "of peak" in spec and "peak " in spec and "NumPy" not in spec


def test_phases_chart_stacks_copies_and_kernel_and_never_allocation(run):
    spec = json.dumps(phases_chart(run.to_frame(), "sub").to_dict(), ensure_ascii=False)
    for phase in ("H2D copy", "Kernel", "D2H copy"):
        assert phase in spec
    assert "Device allocation" not in spec  # buffers are allocated before any sample


def test_roof_lines_rise_to_the_ridge_then_stay_flat():
    lines = roof_lines(H200_ROOFS, 0.01, 1000)
    memory = lines[lines["roof"] == "memory roof (clock × bus width)"]
    assert memory["gflops"].max() == pytest.approx(H200_ROOFS.fp32_gflops)
    assert memory["gflops"].iloc[0] == pytest.approx(0.01 * H200_ROOFS.memory_gbps)
    assert set(lines["roof"]) == {"memory roof (clock × bus width)", "FP32 roof"}


def test_roofline_chart_places_session_points_with_hover_details(run):
    points = session_points([run.to_dict()], H200_ROOFS, "NVIDIA H200", "cuda")
    add_vector_add(points, 1 << 20, 1e-3)
    frame = pd.DataFrame(points.points)
    vector_add = frame[frame["kernel"] == "Vector add"].iloc[0]
    assert vector_add["intensity"] == pytest.approx(1 / 12) and vector_add["bound"] == "memory"
    spec = json.dumps(roofline_chart(frame, H200_ROOFS, "sub").to_dict(), ensure_ascii=False)
    for text in (
        "Matrix multiply",
        "Vector add",
        "share of the bounding roof",
        "FP32 roof",
        "memory roof",
        "kernel",
        "step",
        "size",
    ):
        assert text in spec
    assert "of the memory roof" in spec  # % of the bounding roof, in the hover data


def test_zero_flop_kernels_are_kept_off_the_flop_roofline():
    run_dict = {
        "title": "Matrix transpose",
        "size": "4 × 4",
        "flops": 0,
        "bytes_moved": 128,
        "backend": "cuda",
        "implementations": {"naive": {"kind": "step", "label": "1 · naive", "phases": {"kernel": {}}, "seconds": 1e-6}},
    }
    points = session_points([run_dict], H200_ROOFS, "H200", "cuda")
    assert not points.points and points.off_roofline[0]["gbps"] == pytest.approx(0.128)


def test_recorded_h200_runs_give_vector_add_points_under_the_memory_roof():
    sets = recorded_runs(ROOT / "benchmarks")
    assert sets, "the repository holds recorded H200 check runs"
    for s in sets:
        assert s.source.startswith("recorded: ") and s.roofs.memory_gbps
        va = [p for p in s.points if p["kernel"] == "Vector add"]
        assert va and all(p["intensity"] == pytest.approx(1 / 12) for p in va)
        assert all(0 < p["fraction"] < 1.05 for p in va)  # a kernel never beats the computed memory peak
