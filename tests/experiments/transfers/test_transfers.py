"""Transfers lab engine: chunking, plateaus, the timeline builder (pure, synthetic data),
and every strategy bit-identical to NumPy in the simulator (or on a GPU)."""

import json

import numpy as np
import pytest

import gpu
from gpu.catalog.render import to_json
from gpu.core.limits import InputError
from gpu.core.timeline import Interval, build_timeline, concurrent_s, overlap_fraction
from gpu.core.timing import RepeatPolicy, Stats
from gpu.core.words import format_bytes
from gpu.experiments.transfers import bandwidth, strategy_timing
from gpu.experiments.transfers import experiment as transfers
from gpu.experiments.transfers import report as transfers_report
from gpu.experiments.transfers.bandwidth import (
    check_copy_sizes,
    find_plateau,
    run_bandwidth_curves,
)
from gpu.experiments.transfers.check import check_transfers
from gpu.experiments.transfers.experiment import (
    check_chunks,
    check_streams,
    chunk_bounds,
    run_strategies,
)

ONE = RepeatPolicy.count(1, warmup=0)

# --- chunking -------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 31, 32, 33, 255, 1000, 1_000_003])
@pytest.mark.parametrize("chunks", [1, 2, 3, 7, 8, 64, 256])
def test_chunks_cover_every_element_exactly_once(n, chunks):
    if chunks > n:
        with pytest.raises(InputError):
            chunk_bounds(n, chunks)
        return
    bounds = chunk_bounds(n, chunks)
    assert len(bounds) == chunks
    hits = np.zeros(n, dtype=np.int64)
    for start, stop in bounds:
        assert stop > start, "every chunk holds at least one element"
        hits[start:stop] += 1
    assert (hits == 1).all()
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(prev[1] == nxt[0] for prev, nxt in zip(bounds, bounds[1:])), "chunks are contiguous, in order"
    sizes = [stop - start for start, stop in bounds]
    assert max(sizes) - min(sizes) <= 1, "chunk sizes differ by at most one element"


def test_chunk_count_equal_to_n_gives_one_element_each():
    assert chunk_bounds(5, 5) == ((0, 1), (1, 2), (2, 3), (3, 4), (4, 5))


@pytest.mark.parametrize(
    "n,chunks,message",
    [
        (10, 0, "between 1 and N"),
        (10, -3, "between 1 and N"),
        (10, 11, "between 1 and N (10)"),
        (10, "x", "whole number"),
    ],
)
def test_bad_chunk_counts_are_rejected_with_what_is_allowed(n, chunks, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        chunk_bounds(n, chunks)


def test_chunk_and_stream_limits():
    assert check_chunks(8, 1000) == 8
    with pytest.raises(InputError, match="between 1 and 256"):
        check_chunks(257, 10_000)
    with pytest.raises(InputError, match="between 1 and N"):
        check_chunks(300, 299)
    assert check_streams(4, 8) == 4
    with pytest.raises(InputError, match="between 1 and 8"):
        check_streams(9, 8)
    with pytest.raises(InputError, match="between 1"):
        check_streams(0, 8)


# --- plateaus -------------------------------------------------------------------------

SIZES = [4096 * 4**i for i in range(9)]


def test_plateau_found_where_the_curve_levels_off():
    gbps = [0.5, 2.0, 7.0, 20.0, 40.0, 50.0, 52.0, 53.0, 52.5]
    plateau = find_plateau(SIZES, gbps, "h2d", "pinned")
    assert plateau.reached
    assert plateau.from_nbytes == SIZES[5]  # 50 is within 10% of 53; 40 is not
    assert plateau.plateau_gbps == pytest.approx(52.25)
    assert plateau.half_nbytes == SIZES[4]  # the first size with >= 26.1 GB/s
    assert "levels off at 52.2 GB/s from 4 MiB up" in plateau.sentence
    assert "H2D pinned" in plateau.sentence


def test_a_curve_still_rising_has_no_plateau_and_says_so():
    gbps = [0.5, 1, 2, 4, 8, 16, 32, 45, 60]
    plateau = find_plateau(SIZES, gbps, "d2h", "pageable")
    assert not plateau.reached and plateau.plateau_gbps is None
    assert plateau.peak_gbps == 60
    assert "still rising" in plateau.sentence and "60 GB/s" in plateau.sentence


def test_plateau_ignores_input_order_and_rejects_mismatched_lengths():
    gbps = [1, 10, 20, 20.5]
    sizes = [1, 2, 3, 4]
    assert find_plateau(sizes[::-1], gbps[::-1]).from_nbytes == 3
    with pytest.raises(ValueError):
        find_plateau([1, 2], [1.0])


def test_format_bytes_uses_binary_units():
    assert format_bytes(4096) == "4 KiB"
    assert format_bytes(256 * 2**20) == "256 MiB"
    assert format_bytes(2**30) == "1 GiB"
    assert format_bytes(100) == "100 B"


def test_copy_sizes_are_validated():
    assert check_copy_sizes([4096, 1024, 4096], limit=10_000) == (1024, 4096)
    with pytest.raises(InputError, match="too large"):
        check_copy_sizes([4096, 20_000], limit=10_000)
    with pytest.raises(InputError, match="at least 1 byte"):
        check_copy_sizes([0], limit=10_000)
    with pytest.raises(InputError, match="at least one"):
        check_copy_sizes([], limit=10_000)


# --- timeline -------------------------------------------------------------------------


def iv(chunk, stream, phase, start, end, run="r"):
    return Interval(run, chunk, stream, phase, start, end)


SYNTHETIC = [
    # two chunks on two streams; chunk 1's h2d was queued behind chunk 0's on the engine
    iv(0, 0, "h2d", 1.0, 3.0),
    iv(0, 0, "kernel", 3.0, 4.0),
    iv(0, 0, "d2h", 4.0, 5.0),
    iv(1, 1, "h2d", 1.0, 5.0),
    iv(1, 1, "kernel", 5.0, 6.0),
    iv(1, 1, "d2h", 6.0, 7.0),
]


def test_timeline_by_stream_starts_each_run_at_zero_with_one_lane_per_stream():
    bars = build_timeline(SYNTHETIC + [iv(0, 0, "h2d", 10.0, 12.0, run="other")], by="stream")
    mine = [b for b in bars if b.run == "r"]
    assert {b.lane for b in mine} == {"stream 0", "stream 1"}
    assert min(b.start_s for b in mine) == 0.0 and max(b.end_s for b in mine) == 6.0
    other = [b for b in bars if b.run == "other"]
    assert [(b.start_s, b.end_s) for b in other] == [(0.0, 2.0)]


def test_timeline_by_engine_serialises_each_copy_engine():
    bars = build_timeline(SYNTHETIC, by="engine")
    h2d = sorted((b for b in bars if b.lane == "H2D copy engine"), key=lambda b: b.start_s)
    # chunk 1's copy was recorded from 1 s but could only start when chunk 0's ended (2 s after origin)
    assert [(b.chunk, b.start_s, b.end_s) for b in h2d] == [(0, 0.0, 2.0), (1, 2.0, 4.0)]
    assert {b.lane for b in bars} == {"H2D copy engine", "compute (kernels)", "D2H copy engine"}


def test_concurrency_and_overlap_on_synthetic_intervals():
    bars = build_timeline(SYNTHETIC, by="engine")
    # engines busy: H2D 0-4, kernel 2-3 and 4-5, D2H 3-4 and 5-6 -> two at once during 2-3 and 3-4
    assert concurrent_s(bars) == pytest.approx(2.0)
    assert overlap_fraction(SYNTHETIC, "r") == pytest.approx(2.0 / 6.0)
    serial = [iv(0, 0, "h2d", 0, 1), iv(0, 0, "kernel", 1, 2), iv(0, 0, "d2h", 2, 3)]
    assert overlap_fraction(serial, "r") == 0.0  # touching intervals do not overlap


def test_timeline_rejects_backwards_intervals_and_unknown_lanes():
    with pytest.raises(ValueError, match="ends before it starts"):
        build_timeline([iv(0, 0, "h2d", 2.0, 1.0)])
    with pytest.raises(ValueError, match="stream' or 'engine"):
        build_timeline(SYNTHETIC, by="chunk")


# --- strategies (simulator: small N) -----------------------------------------------------


@pytest.fixture(scope="module")
def comparison():
    # 777: not a multiple of the block size, the chunk count or the stream count
    return run_strategies(777, 128, chunks=5, streams=3, iterations=2, policy=ONE)


def test_every_strategy_is_bit_identical_to_numpy(comparison):
    assert set(comparison.strategies) | set(comparison.skipped) == set(transfers.STRATEGIES)
    for key, run in comparison.strategies.items():
        assert run.agreement.passed, (key, run.agreement)
        assert run.agreement.identical == 777
    assert comparison.agree
    if gpu.BACKEND.simulated:
        assert not comparison.skipped  # mapped memory is simulated as an ordinary array


def test_comparison_reports_phases_a_winner_and_a_timeline(comparison):
    assert set(comparison.strategies["article"].phases) >= {"h2d", "kernel", "d2h"}
    assert set(comparison.strategies["chunked"].phases) == {"span"}
    assert comparison.strategies["resident"].iterations == 2
    assert comparison.winner.key in comparison.strategies
    assert comparison.winner.cost_s == min(s.cost_s for s in comparison.strategies.values())
    verdict = transfers_report.verdict(comparison)
    assert "wins" in verdict and "N = 777" in verdict and "chunks" in verdict
    runs = {iv.run for iv in comparison.intervals}
    assert runs == {"5 chunks on 3 streams", "1 chunk on 1 stream"}
    chunked = [i for i in comparison.intervals if i.run == "5 chunks on 3 streams"]
    assert sorted({(i.chunk, i.stream) for i in chunked}) == [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1)]
    assert all(i.end_s >= i.start_s >= 0 for i in comparison.intervals)


def test_comparison_serialises_and_frames(comparison):
    data = json.loads(json.dumps(to_json(comparison)))
    assert data["experiment"] == "transfers-strategies" and data["n"] == 777
    assert data["backend"] == gpu.BACKEND.kind and "name" in data["device"]
    assert data["agree"] is True and data["winner"] in data["strategies"]
    frame = comparison.to_frame()
    assert {"strategy", "phase", "seconds", "per_result_s"} <= set(frame.columns)
    resident = frame[(frame.strategy == "resident") & (frame.phase == "total")]
    assert (resident.per_result_s * 2 == resident.seconds).all()  # amortised over 2 iterations
    timeline = comparison.timeline_frame("engine")
    assert (timeline.end_ms >= timeline.start_ms).all() and len(timeline) == 3 * (5 + 1)
    assert "wins" in transfers_report.summary(comparison) and "wins" in data["verdict"]


def test_a_missed_chunk_fails_the_check(monkeypatch):
    real = strategy_timing.chunk_bounds
    monkeypatch.setattr(strategy_timing, "chunk_bounds", lambda n, c: real(n, c)[:-1] if c > 1 else real(n, c))
    result = run_strategies(300, 128, chunks=3, streams=2, policy=ONE, strategies=["chunked"])
    assert result.strategies["one-chunk"].agreement.passed
    chunked = result.strategies["chunked"].agreement
    assert not chunked.passed and chunked.mismatches == 100  # the last chunk stayed NaN
    assert not result.agree


def test_pinned_failure_falls_back_to_pageable_with_a_note(monkeypatch):
    monkeypatch.setattr(
        strategy_timing, "host_buffer", lambda nbytes, pinned: (np.empty(nbytes, dtype=np.uint8), False)
    )
    result = run_strategies(200, 128, chunks=2, streams=2, policy=ONE, strategies=["pinned", "chunked"])
    assert result.agree
    assert result.strategies["pinned"].host_memory == "pageable (pinning failed)"
    assert any("could not be allocated" in note for note in result.notes)


def test_unsupported_mapping_is_skipped_with_the_reason(monkeypatch):
    monkeypatch.setattr(transfers, "mapped_supported", lambda: (False, "this device cannot map host memory"))
    result = run_strategies(100, 128, chunks=1, streams=1, policy=ONE, strategies=["mapped", "careful"])
    assert "mapped" not in result.strategies
    assert result.skipped == {"mapped": "this device cannot map host memory"}
    assert "skipped: this device cannot map host memory" in transfers_report.summary(result)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"n": 0}, "at least 1"),
        ({"n": 10, "chunks": 11}, "between 1 and N"),
        ({"n": 10, "chunks": 0}, "between 1 and N"),
        ({"n": 10, "chunks": 2, "streams": 3}, "streams must be between 1 and 2"),
        ({"n": 10, "iterations": 0}, "iterations"),
        ({"n": 10, "strategies": ["teleport"]}, "unknown strategy"),
        ({"n": 10**12}, "too large"),
    ],
)
def test_bad_strategy_inputs_are_rejected_before_any_work(kwargs, message, monkeypatch):
    monkeypatch.setattr(transfers, "vector_inputs", lambda *a, **k: pytest.fail("work started before validation"))
    with pytest.raises(InputError, match=message):
        run_strategies(**kwargs)


# --- bandwidth curves (simulator: NumPy copies) ---------------------------------------------


def test_bandwidth_curves_cover_every_series_and_size():
    curves = run_bandwidth_curves([4096, 65536], policy=RepeatPolicy.count(2, warmup=0))
    assert len(curves.points) == 5 * 2
    assert [p.label for p in curves.plateaus()] == ["H2D pinned", "H2D pageable", "D2H pinned", "D2H pageable", "D2D"]
    frame = curves.to_frame()
    assert len(frame) == 5 * 2 * 2 and (frame.gbps > 0).all()
    d2d = frame[frame.direction == "d2d"]
    assert (d2d.bytes_counted == 2 * d2d.nbytes).all()  # a copy within device memory reads and writes
    data = json.loads(json.dumps(curves.to_dict()))
    assert data["experiment"] == "transfers-bandwidth" and len(data["plateaus"]) == 5
    assert "GB/s" in curves.summary()
    if gpu.BACKEND.simulated:
        assert any("not simulated" in n for n in curves.notes)


def test_bandwidth_pinned_fallback_is_noted(monkeypatch):
    monkeypatch.setattr(bandwidth, "time_copy", lambda d, nbytes, policy, pinned=True: (Stats((1e-5, 1e-5)), False))
    curves = run_bandwidth_curves([4096], series=[("h2d", "pinned")], policy=ONE)
    assert curves.pinned_fell_back
    assert any("could not be allocated for 4 KiB" in n for n in curves.notes)


def test_bandwidth_rejects_unknown_series_and_oversized_copies():
    with pytest.raises(InputError, match="unknown copy series"):
        run_bandwidth_curves([4096], series=[("h2h", "pinned")])
    with pytest.raises(InputError, match="too large"):
        run_bandwidth_curves([2**50])


# --- on a real GPU only ------------------------------------------------------------------


@pytest.mark.gpu
def test_pinned_copies_beat_pageable_and_plateau_on_the_gpu():
    curves = run_bandwidth_curves(
        [2**20, 2**24, 2**26, 2**28], series=[("h2d", "pinned"), ("h2d", "pageable")], policy=RepeatPolicy.count(5)
    )
    pinned, pageable = curves.plateau("h2d", "pinned"), curves.plateau("h2d", "pageable")
    assert pinned.peak_gbps > 10, curves.summary()  # any PCIe 3 x16 link or better
    assert pinned.peak_gbps > pageable.peak_gbps, curves.summary()


@pytest.mark.gpu
def test_chunked_streams_beat_one_chunk_and_overlap_on_the_gpu():
    result = run_strategies(
        1 << 26, 256, chunks=8, streams=4, policy=RepeatPolicy.count(5), strategies=["chunked", "mapped"]
    )
    assert result.agree
    assert result.chunked_speedup > 1.05, transfers_report.verdict(result)
    assert result.overlap > 0.2, transfers_report.verdict(result)


# --- command line and check section ----------------------------------------------------------


def test_cli_transfers_prints_one_json_object(capsys):
    from gpu.__main__ import main

    rc = main(
        [
            "transfers",
            "--n",
            "200",
            "--chunks",
            "3",
            "--streams",
            "2",
            "--iterations",
            "2",
            "--repeats",
            "1",
            "--no-bandwidth",
            "--json",
        ]
    )
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["experiment"] == "transfers" and data["bandwidth"] is None
    assert data["strategies"]["n"] == 200 and data["strategies"]["agree"] is True
    assert "wins" in data["strategies"]["verdict"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--chunks", "0"], "chunks must be between 1 and N"),
        (["--streams", "9"], "streams must be between 1 and 8"),
        (["--n=-5"], "at least 1"),
    ],
)
def test_cli_transfers_rejects_bad_input_in_one_line(args, message, capsys):
    from gpu.__main__ import main

    assert main(["transfers", "--n", "100", "--no-bandwidth", *args]) == 2  # the last --n wins
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_check_section_quick_passes_and_reports_targets():
    passed, data, markdown = check_transfers(True, 1024, lambda _m: None)
    assert passed
    assert set(data) >= {"bandwidth", "library_copies", "strategies", "targets"}
    assert data["strategies"]["small"]["agree"] is True
    assert "Targets (reported, not enforced)" in markdown and "| strategy |" in markdown
    if gpu.BACKEND.simulated:
        assert set(data["library_copies"]["skipped"]) == {"cupy", "torch"}  # skipped with a reason, not failed


def test_plateau_skips_unusable_timings():
    plateau = find_plateau([1, 2, 3, 4], [float("nan"), 10.0, 10.2, float("inf")])
    assert plateau.reached and plateau.plateau_gbps == pytest.approx(10.1) and plateau.from_nbytes == 2
    assert not find_plateau([1], [float("nan")]).reached


def test_strategies_from_fewer_than_three_samples_are_marked_and_telemetry_is_recorded(comparison):
    strategies = comparison
    assert all(s.few_samples for s in strategies.strategies.values())  # one sample each (ONE)
    text = transfers_report.summary(strategies)
    assert "* fewer than 3 samples" in text and "telemetry" in text
    data = to_json(strategies)
    assert all(v["few_samples"] for v in data["strategies"].values()) and "telemetry" in data
    frame = strategies.to_frame()
    assert frame["few_samples"].all()


def test_no_strategy_stacks_the_kernel_twice(comparison):
    # time_gpu_phases also returns "with_launch" (= launch + kernel): stacked beside its parts it doubled the bar
    assert all("with_launch" not in s.phases for s in comparison.strategies.values())
    for s in comparison.strategies.values():
        parts = sum(s.phases[p].median_s for p in ("h2d", "launch", "kernel", "d2h") if p in s.phases)
        assert parts <= s.total.median_s * 1.05 or s.key in ("resident", "chunked", "one-chunk"), s.key
