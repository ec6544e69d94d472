"""The launch-configuration engine in the simulator: the indexing probe against NumPy's
index arithmetic, grid-stride coverage, the launch summary, the sweep and the CLI."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import numpy as np
import pytest

from gpu.catalog.render import to_json
from gpu.core.backend import cuda
from gpu.core.device import DeviceInfo
from gpu.core.limits import InputError
from gpu.core.occupancy import Occupancy, SmLimits, calculated_occupancy
from gpu.core.timing import RepeatPolicy, Stats
from gpu.experiments.launch import experiment as launch
from gpu.experiments.launch import indexing
from gpu.experiments.launch.experiment import (
    KIND_GRID_STRIDE,
    KIND_ONE_PER_ELEMENT,
    LaunchConfigResult,
    LaunchSweepRun,
    run_launch_sweep,
)
from gpu.experiments.launch.indexing import LaunchSummary, run_indexing
from gpu.experiments.launch.report import explanation
from gpu.kernels.vector_add import PROBE_FIELDS

AWKWARD_N = (1, 31, 33, 257)
BLOCK_SIZES = (32, 100, 256)


def numpy_index_table(n: int, tpb: int, blocks: int) -> dict[str, np.ndarray]:
    """The article's arithmetic, done independently here: one entry per launched thread."""
    bx = np.repeat(np.arange(blocks), tpb)
    tx = np.tile(np.arange(tpb), blocks)
    position = tx + bx * tpb
    return {
        "tx": tx,
        "bx": bx,
        "bw": np.full(blocks * tpb, tpb),
        "position": position,
        "warp": tx // 32,
        "masked": position >= n,
    }


@pytest.mark.parametrize("tpb", BLOCK_SIZES)
@pytest.mark.parametrize("n", AWKWARD_N)
def test_probe_records_every_thread_as_numpy_index_arithmetic(n, tpb):
    run = run_indexing(n, tpb)
    blocks = -(-n // tpb)
    expected = numpy_index_table(n, tpb, blocks)
    frame = run.to_frame()
    assert run.probed and run.records_match and run.sums_match
    assert len(frame) == blocks * tpb, "one record per launched thread"
    for column in ("tx", "bx", "bw", "position", "warp"):
        np.testing.assert_array_equal(frame[column].to_numpy(), expected[column], err_msg=column)
    np.testing.assert_array_equal(frame["masked"].to_numpy(), expected["masked"])
    assert int(frame["masked"].sum()) == blocks * tpb - n == run.summary.idle_threads
    last = frame.iloc[-1]
    assert last["formula"] == f"position = tx + bx * bw = {last.tx} + {last.bx} * {tpb} = {last.position}"


@pytest.mark.parametrize("n,tpb,blocks", [(1000, 64, 3), (100, 32, 8), (257, 33, 2), (1, 32, 1)])
def test_grid_stride_probe_handles_every_element_exactly_once(n, tpb, blocks):
    run = run_indexing(n, tpb, grid_stride_blocks=blocks)
    stride = tpb * blocks
    assert run.probed and run.records_match and run.sums_match and run.coverage_ok
    np.testing.assert_array_equal(run.handled_by, np.arange(n) % stride)
    frame = run.to_frame()
    assert frame["elements"].sum() == n, "the per-thread counts add up to N"
    assert (frame["masked"] == (frame["elements"] == 0)).all(), "idle exactly when a thread got nothing"
    assert run.elements_of(0) == list(range(0, n, stride))
    assert frame.loc[0, "handled"].startswith("0")
    assert run.summary.idle_threads == max(0, stride - n)


def test_probe_detects_a_wrong_record(monkeypatch):
    """The record check must be able to fail: a probe that numbers warps wrongly."""

    @cuda.jit
    def bad_probe(a, b, c, record):
        tx = cuda.threadIdx.x
        bx = cuda.blockIdx.x
        bw = cuda.blockDim.x
        position = tx + bx * bw
        for col, value in enumerate((tx, bx, bw, position, tx // 16)):  # wrong warp size
            record[position, col] = value
        record[position, 5] = 0 if position < a.size else 1
        record[position, 6] = 1 if position < a.size else 0
        if position < a.size:
            c[position] = a[position] + b[position]

    monkeypatch.setattr(indexing, "indexing_probe_kernel", bad_probe)
    run = run_indexing(40, 32)
    assert run.probed and run.records_match is False and not run.passed


def _brute_force_warps(summary: LaunchSummary) -> tuple[int, int]:
    idle = partial = 0
    for block in range(summary.blocks):
        for warp in range(summary.warps_per_block):
            lanes = [
                block * summary.threads_per_block + warp * 32 + lane
                for lane in range(32)
                if warp * 32 + lane < summary.threads_per_block
            ]
            working = sum(1 for t in lanes if t < summary.n)
            if working == 0:
                idle += 1
            elif working < 32:
                partial += 1
    return idle, partial


@pytest.mark.parametrize("n", [1, 31, 32, 33, 64, 100, 257, 1000])
@pytest.mark.parametrize("tpb", [1, 20, 32, 48, 100, 256])
@pytest.mark.parametrize("grid_blocks", [None, 1, 7])
def test_launch_summary_matches_counting_warp_by_warp(n, tpb, grid_blocks):
    blocks = grid_blocks if grid_blocks is not None else -(-n // tpb)
    summary = LaunchSummary(n, tpb, blocks, grid_blocks is not None)
    assert (summary.idle_warps, summary.partial_warps) == _brute_force_warps(summary)
    assert summary.idle_threads == max(0, blocks * tpb - n)
    last_block_threads = range((blocks - 1) * tpb, blocks * tpb)
    assert summary.last_block_idle_threads == sum(1 for t in last_block_threads if t >= n)
    assert summary.last_block_wasted_fraction == pytest.approx(summary.last_block_idle_threads / tpb)


def test_summary_of_the_guard_case():
    s = LaunchSummary(1000, 256, 4)
    assert (s.threads_launched, s.idle_threads, s.idle_warps, s.partial_warps) == (1024, 24, 0, 1)
    assert s.last_block_wasted_fraction == pytest.approx(24 / 256)
    s = LaunchSummary(33, 256, 1)
    assert (s.idle_threads, s.idle_warps, s.partial_warps) == (223, 6, 1)


def test_large_launch_gets_the_summary_only_with_a_clear_message():
    run = run_indexing(10**9, 256)
    assert not run.probed and not run.drawable and run.records is None
    assert run.summary.blocks == 3_906_250 and run.summary.idle_threads == 0
    assert "summary" in run.note and f"{indexing.probe_limit():,}" in run.note
    assert run.to_frame().empty
    assert json.loads(json.dumps(run.to_dict()))["probed"] is False


def test_probe_runs_but_is_not_drawn_past_the_draw_limit():
    run = run_indexing(300, 32, draw_limit=128)
    assert run.probed and run.records_match and not run.drawable
    assert "more than the 128 the chart draws" in run.note
    assert "records" not in run.to_dict()


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(n=0, threads_per_block=32), "at least 1"),
        (dict(n="ten", threads_per_block=32), "whole number"),
        (dict(n=100, threads_per_block=0), "between 1 and 1024"),
        (dict(n=100, threads_per_block=2048), "between 1 and 1024"),
        (dict(n=100, threads_per_block=32, grid_stride_blocks=0), "blocks must be between 1"),
        (dict(n=2**31, threads_per_block=32), "too large"),
    ],
)
def test_bad_explorer_input_says_what_is_allowed(kwargs, message):
    with pytest.raises(InputError, match=message):
        run_indexing(**kwargs)


def test_non_multiple_of_32_warns_and_counts_partial_warps():
    run = run_indexing(100, 48)
    assert any("not a multiple of the warp size" in w for w in run.warnings)
    assert run.summary.empty_lanes_per_block == 16
    assert run.to_dict()["summary"]["partial_warps"] == run.summary.partial_warps > 0


def test_indexing_to_dict_is_json_and_has_the_history_keys():
    data = json.loads(json.dumps(run_indexing(40, 32).to_dict()))
    for key in ("experiment", "created_at", "backend", "device", "n", "threads_per_block", "summary"):
        assert key in data
    assert data["experiment"] == "indexing"
    assert data["params"] == {"n": 40, "threads_per_block": 32, "grid_stride_blocks": None}
    assert data["records"]["columns"] == list(PROBE_FIELDS)
    assert len(data["records"]["rows"]) == 64


# --- the sweep ------------------------------------------------------------------------


def test_sweep_times_every_configuration_and_agrees():
    run = run_launch_sweep(
        64, (32, 64), extra_block_size=48, grid_stride_multiples=(1, 2), policy=RepeatPolicy.count(2)
    )
    labels = [c.label for c in run.configs]
    assert labels == [
        "32 threads/block",
        "64 threads/block",
        "48 threads/block",
        "grid-stride 1×SMs × 256",
        "grid-stride 2×SMs × 256",
    ]
    assert [c.blocks for c in run.configs] == [2, 1, 2, 1, 2]
    assert run.agree and all(c.kernel.n_samples == 2 for c in run.configs)
    assert any("48 threads per block is not a multiple" in w for w in run.warnings)
    assert run.best.kernel.median_s == min(c.kernel.median_s for c in run.configs)
    frame = run.to_frame()
    assert len(frame) == 10 and frame["best"].sum() == 2
    assert set(frame["kind"]) == {KIND_ONE_PER_ELEMENT, KIND_GRID_STRIDE}
    np.testing.assert_allclose(frame["bandwidth_gbps"], 12 * 64 / frame["seconds"] / 1e9)
    data = json.loads(json.dumps(to_json(run)))  # the result with its report's prose
    assert data["experiment"] == "launch-sweep" and data["n"] == 64 and data["best"] == run.best.label
    assert data["params"] == {"n": 64, "block_sizes": [32, 64, 48], "grid_stride_multiples": [1, 2], "repeats": 2}
    assert "simulator" in data["explanation"]


def test_sweep_agreement_can_fail(monkeypatch):
    @cuda.jit
    def off_by_one(a, b, c):
        position = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
        if position < a.size - 1:  # misses the last element
            c[position] = a[position] + b[position]

    monkeypatch.setattr(launch, "vector_add_kernel", off_by_one)
    run = run_launch_sweep(40, (32,), grid_stride_multiples=(), policy=RepeatPolicy.count(1))
    assert not run.agree and not run.configs[0].agree


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(n=0),
        dict(n=64, block_sizes=(0,)),
        dict(n=64, block_sizes=(), grid_stride_multiples=()),
        dict(n=64, extra_block_size=4096),
        dict(n=64, grid_stride_multiples=(0,)),
        dict(n=10**7),
    ],
)
def test_bad_sweep_input_is_rejected_before_any_work(kwargs):
    with pytest.raises(InputError):
        run_launch_sweep(**kwargs)


H200_LIMITS = SmLimits(
    max_threads_per_sm=2048, max_blocks_per_sm=32, registers_per_sm=65536, shared_memory_per_sm=233472
)


@pytest.mark.parametrize(
    "tpb,regs,blocks,fraction,limiter",
    [
        (32, 16, 32, 0.5, "blocks per SM"),
        (64, 16, 32, 1.0, "threads per SM"),
        (256, 16, 8, 1.0, "threads per SM"),
        (1024, 16, 2, 1.0, "threads per SM"),
        (256, 128, 2, 0.25, "registers"),
        (96, 16, 21, 63 / 64, "threads per SM"),
    ],
)
def test_calculated_occupancy_follows_the_per_sm_limits(tpb, regs, blocks, fraction, limiter):
    occ = calculated_occupancy(tpb, regs, 0, H200_LIMITS)
    assert (occ.blocks_per_sm, occ.limiter, occ.source) == (blocks, limiter, "calculated")
    assert occ.fraction == pytest.approx(fraction)


class _FakeCompiled:
    """Stands in for numba-cuda's compiled kernel: registers, shared memory, driver occupancy."""

    regs_per_thread = 16
    shared_mem_per_block = 0

    def __init__(self, active_per_sm: int | None):
        self.active_per_sm = active_per_sm

    def max_cooperative_grid_blocks(self, blockdim: int) -> int:
        if self.active_per_sm is None:
            raise RuntimeError("no occupancy API")
        return self.active_per_sm * 132


def test_kernel_occupancy_prefers_the_driver_and_falls_back_to_the_calculation():
    from gpu.core.occupancy import kernel_occupancy

    driver = kernel_occupancy(_FakeCompiled(32), 32, H200_LIMITS, 132)
    assert (driver.source, driver.blocks_per_sm, driver.fraction, driver.limiter) == (
        "driver",
        32,
        0.5,
        "blocks per SM",
    )
    calc = kernel_occupancy(_FakeCompiled(None), 32, H200_LIMITS, 132)
    assert (calc.source, calc.blocks_per_sm, calc.fraction) == ("calculated", 32, 0.5)
    assert (
        kernel_occupancy(None, 32, H200_LIMITS, 132) is None
        and kernel_occupancy(_FakeCompiled(8), 256, None, 132) is None
    )


def _fake_run(times_ms: dict[int, float], occupancy: dict[int, float]) -> LaunchSweepRun:
    configs = []
    for tpb, ms in times_ms.items():
        blocks_per_sm = int(occupancy[tpb] * 64 * 32 / tpb)
        occ = Occupancy(
            tpb, blocks_per_sm, blocks_per_sm * tpb // 32, 64, "driver", "blocks per SM" if occupancy[tpb] < 1 else None
        )
        configs.append(
            LaunchConfigResult(
                KIND_ONE_PER_ELEMENT, tpb, -(-(2**26) // tpb), Stats((ms / 1e3, ms * 1.02 / 1e3)), True, None, occ
            )
        )
    device = DeviceInfo(
        backend="cuda", name="NVIDIA H200", multiprocessors=132, memory_clock_khz=2_619_000, memory_bus_width_bits=6144
    )
    return LaunchSweepRun(2**26, "cuda", device, RepeatPolicy.count(2), tuple(configs), 0.1, 132, H200_LIMITS)


def test_explanation_says_why_small_blocks_lose_and_why_the_curve_is_flat():
    run = _fake_run(
        {32: 0.40, 64: 0.21, 128: 0.200, 256: 0.198, 512: 0.199, 1024: 0.205},
        {32: 0.5, 64: 1, 128: 1, 256: 1, 512: 1, 1024: 1},
    )
    text = explanation(run)
    assert "Small blocks lose" in text and "50% occupancy" in text and "32 blocks" in text
    assert "memory bound" in text and "within 4%" in text
    assert "Best here: 256 threads/block" in text
    assert "GB/s" in text and "theoretical peak" in text


def test_explanation_admits_a_curve_that_is_not_flat():
    run = _fake_run({32: 0.040, 128: 0.020, 1024: 0.030}, {32: 0.5, 128: 1, 1024: 1})
    assert "still differ by 50%" in explanation(run)


# --- the command line -----------------------------------------------------------------


def _cli(*argv: str) -> tuple[int, str]:
    from gpu.__main__ import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def test_cli_indexing_json_reports_the_idle_threads():
    code, out = _cli("indexing", "--n", "33", "--threads-per-block", "32", "--json")
    data = json.loads(out)
    assert code == 0 and data["summary"]["idle_threads"] == 31 and data["records_match"] is True


def test_cli_indexing_grid_stride_text():
    code, out = _cli("indexing", "--n", "100", "--threads-per-block", "32", "--grid-stride-blocks", "2")
    assert code == 0 and "grid-stride over 2 blocks" in out and "exactly once: yes" in out


@pytest.mark.parametrize(
    "argv",
    [
        ("indexing", "--n", "0", "--threads-per-block", "32"),
        ("indexing", "--n", "10", "--threads-per-block", "2000"),
        ("indexing", "--n", "10", "--threads-per-block", "x"),
        ("launch-sweep", "--n", "-5"),
        ("launch-sweep", "--n", "64", "--extra-block-size", "0"),
        ("launch-sweep", "--n", "64", "--block-sizes", "32,abc"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(argv, capsys):
    from gpu.__main__ import main

    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err


def test_cli_launch_sweep_json():
    code, out = _cli(
        "launch-sweep",
        "--n",
        "64",
        "--repeats",
        "1",
        "--block-sizes",
        "32,64",
        "--grid-stride-multiples",
        "1",
        "--json",
    )
    data = json.loads(out)
    assert (
        code == 0
        and data["agree"]
        and [c["label"] for c in data["configs"]] == ["32 threads/block", "64 threads/block", "grid-stride 1×SMs × 256"]
    )


# --- on a real GPU --------------------------------------------------------------------


@pytest.mark.gpu
def test_hardware_sweep_reports_occupancy_and_agrees():
    run = run_launch_sweep(
        2**22, (32, 256, 1024), extra_block_size=100, grid_stride_multiples=(1, 8), policy=RepeatPolicy.count(5)
    )
    assert run.agree
    assert all(c.occupancy is not None and 0 < c.occupancy.fraction <= 1 for c in run.configs)
    assert run.config("256 threads/block").occupancy.fraction == pytest.approx(1.0)
    assert run.limits is not None and run.limits.max_threads_per_sm >= 1024
    assert "GB/s" in explanation(run)


@pytest.mark.gpu
@pytest.mark.parametrize("n,tpb,blocks", [(1, 32, None), (257, 100, None), (100_003, 256, None), (100_003, 128, 132)])
def test_hardware_probe_matches_the_arithmetic(n, tpb, blocks):
    run = run_indexing(n, tpb, blocks)
    assert run.probed and run.records_match and run.sums_match and run.coverage_ok is not False


def test_a_breakdown_step_that_came_out_negative_is_not_printed_as_a_cost():
    from gpu.experiments.launch.overhead import format_step

    assert format_step(2.12e-6) == "2.12 µs"
    assert format_step(-5.64e-6) == "none measured (without it the launch was 5.64 µs slower, not faster)"
