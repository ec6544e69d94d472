"""The size sweep: sizes, crossover detection on synthetic timings (pure), the result's
derived figures, validation, cancellation and failures in the simulator, the CLI shape."""

import io
import json

import pandas as pd
import pytest

from gpu.__main__ import main
from gpu.core.crossover import find_crossover
from gpu.core.device import device_info
from gpu.core.limits import InputError
from gpu.core.peaks import Limit, Peaks
from gpu.core.timing import RepeatPolicy, Stats
from gpu.experiments.scaling import experiment as sweep_mod
from gpu.experiments.scaling.check import check_sweep, performance_targets
from gpu.experiments.scaling.config import (
    SweepConfig,
    make_config,
    repeat_policy,
    sweep_sizes,
)
from gpu.experiments.scaling.experiment import run_sweep
from gpu.experiments.scaling.report import crossover_sentences, summary
from gpu.experiments.scaling.result import SweepPoint, SweepRun


def test_sizes_are_powers_of_two_plus_both_ends():
    assert sweep_sizes(1024, 8192) == (1024, 2048, 4096, 8192)
    assert sweep_sizes(1000, 5000) == (1000, 1024, 2048, 4096, 5000)
    assert sweep_sizes(7, 7) == (7,)


def test_decade_spacing_and_inverted_range_is_empty():
    assert sweep_sizes(10, 100_000, "decade") == (10, 100, 1000, 10_000, 100_000)
    assert sweep_sizes(500, 20_000, "decade") == (500, 1000, 10_000, 20_000)
    assert sweep_sizes(10, 5) == ()


# --- crossovers on synthetic series ---------------------------------------------------


def test_crossover_is_exact_when_the_ratio_is_a_power_law():
    # CPU time grows as N, GPU time is flat at 1 ms: they meet at N = 1e6 exactly,
    # and log(gpu/cpu) is linear in log N, so log-space interpolation is exact.
    ns = [2**k for k in range(10, 25)]
    kind, n = find_crossover(ns, [1e-3] * len(ns), [1e-9 * x for x in ns])
    assert kind == "from"
    assert n == pytest.approx(1e6, rel=1e-9)


def test_crossover_lies_between_the_bracketing_sizes_for_a_fixed_overhead_model():
    # GPU: 1 ms launch + copies overhead plus 1 ns per element; CPU: 10 ns per element.
    ns = [2**k for k in range(10, 25)]
    kind, n = find_crossover(ns, [1e-3 + 1e-9 * x for x in ns], [1e-8 * x for x in ns])
    true_n = 1e-3 / 9e-9
    assert kind == "from"
    assert 2**16 < n < 2**17 and 2**16 < true_n < 2**17
    assert n == pytest.approx(true_n, rel=0.15)


def test_gpu_must_stay_faster_not_just_be_faster_once():
    ns = [1, 2, 4, 8, 16]
    gpu = [1.0, 0.5, 2.0, 0.5, 0.5]  # ahead at 2, behind at 4, ahead from 8 on
    cpu = [0.9, 1.0, 1.0, 1.0, 1.0]
    kind, n = find_crossover(ns, gpu, cpu)
    assert kind == "from" and 4 < n < 8


def test_always_never_and_unknown():
    ns = [10, 100, 1000]
    assert find_crossover(ns, [1, 1, 1], [2, 2, 2]) == ("always", 10.0)
    assert find_crossover(ns, [3, 3, 3], [2, 2, 2]) == ("never", None)
    assert find_crossover(ns, [1, 1, 3], [2, 2, 2]) == ("never", None)  # ahead, then behind at the end
    assert find_crossover([], [], []) == ("unknown", None)
    assert find_crossover(ns, [float("nan")] * 3, [1, 1, 1]) == ("unknown", None)


def test_failed_points_are_dropped_before_interpolating():
    ns = [10, 100, 1000, 10_000]
    kind, n = find_crossover(ns, [1e-3, float("nan"), 1e-3, 1e-3], [1e-5, 1e-4, 1e-3 * 10, 1e-2])
    assert kind == "from" and 10 < n < 1000


# --- the result object on synthetic points ----------------------------------------------


def synthetic_run(medians: dict[str, dict[int, float]], peaks: Peaks | None = None, noise: float = 0.01,
                  policy: RepeatPolicy | None = None) -> SweepRun:
    ns = sorted({n for series in medians.values() for n in series})
    points = tuple(
        SweepPoint(
            n, s, Stats((m * (1 - noise), m, m * (1 + noise))), agree=True if s in ("gpu-total", "numpy") else None
        )
        for s, series in medians.items()
        for n, m in series.items()
    )
    config = SweepConfig(ns[0], ns[-1], "pow2", ("gpu", "numpy"), policy=policy or RepeatPolicy.count(3))
    return SweepRun(
        config, points, "simulator", device_info(), peaks=peaks, steps_done=2 * len(ns), steps_planned=2 * len(ns)
    )


def fake_peaks(d2d=1000.0, device_peak=2000.0, link=50.0, host=20.0) -> Peaks:
    return Peaks(
        (
            Limit("device_peak", device_peak, "2 × clock × bus"),
            Limit("d2d", d2d, "measured"),
            Limit("h2d_pinned", link, "measured"),
            Limit("d2h_pinned", link, "measured"),
            Limit("host_copy", host, "measured"),
        ),
        "simulator",
        RepeatPolicy.count(3),
    )


NS = [2**k for k in range(10, 21)]


def crossing_run(**kw) -> SweepRun:
    return synthetic_run(
        {
            "gpu-total": {n: 1e-3 + 2e-9 * n for n in NS},
            "gpu-kernel": {n: 1e-5 + 1e-11 * n for n in NS},
            "gpu-h2d": {n: 8e-4 + 1e-9 * n for n in NS},
            "gpu-d2h": {n: 2e-4 + 5e-10 * n for n in NS},
            "numpy": {n: 1e-9 * n for n in NS},
        },
        **kw,
    )


def test_crossovers_are_stated_in_words():
    run = crossing_run()
    by = {(c.gpu, c.baseline): c for c in run.crossovers()}
    kernel, total = by[("gpu-kernel", "numpy")], by[("gpu-total", "numpy")]
    assert kernel.kind == "from" and 2**13 < kernel.n < 2**14  # 1e-5 + 1e-11 n = 1e-9 n at n ≈ 10,101
    assert total.kind == "never" and not total.ahead_somewhere
    (sentence,) = crossover_sentences(run)
    assert sentence.startswith("The kernel alone beats NumPy from N ≈ 10,")
    assert "end to end, with copies, the GPU never beats NumPy in this range (up to N = 1,048,576)" in sentence


def test_frame_has_bandwidth_percent_of_limits_and_phase_shares():
    run = crossing_run(peaks=fake_peaks())
    frame = run.to_frame()
    n = NS[-1]
    row = frame[(frame["n"] == n) & (frame["series"] == "gpu-kernel")].iloc[0]
    assert row["bandwidth_gbps"] == pytest.approx(12 * n / (1e-5 + 1e-11 * n) / 1e9)
    assert row["pct_of_ceiling"] == pytest.approx(100 * row["bandwidth_gbps"] / 1000.0)
    assert row["pct_of_device_peak"] == pytest.approx(100 * row["bandwidth_gbps"] / 2000.0)
    assert (
        row["ceiling"] == "device copy, best of memcpy and copy kernel (measured reference)" and row["ceiling_is_limit"]
    )
    h2d = frame[(frame["n"] == n) & (frame["series"] == "gpu-h2d")].iloc[0]
    assert h2d["bandwidth_gbps"] == pytest.approx(8 * n / (8e-4 + 1e-9 * n) / 1e9)  # a and b in: 8 bytes per element
    assert frame[frame["series"] == "numpy"]["ceiling"].unique().tolist() == ["host memory, NumPy copy (measured)"]
    shares = frame[frame["series"].isin(["gpu-h2d", "gpu-kernel", "gpu-d2h"])].groupby("n")["share"].sum()
    assert shares.to_numpy() == pytest.approx([1.0] * len(NS))
    assert frame[frame["series"] == "numpy"]["share"].isna().all()


def test_a_measured_ceiling_that_a_series_beats_is_a_reference_and_no_target_passes_against_it():
    run = crossing_run(peaks=fake_peaks(d2d=300.0))  # the kernel reaches ~614 GB/s at the largest N
    row = run.to_frame().query("series == 'gpu-kernel'").iloc[-1]
    assert row["bandwidth_gbps"] > 300.0 and not row["ceiling_is_limit"]
    assert row["ceiling"].endswith("a reference, beaten here, not a limit")
    target = performance_targets(run)["kernel_vs_d2d"]
    assert target["ceiling_beaten"] and target["met"] is None
    assert performance_targets(crossing_run(peaks=fake_peaks()))["kernel_vs_d2d"]["met"] is False  # 614 < 90% of 1,000


def test_noisy_points_are_flagged_against_the_policy_target():
    quiet = crossing_run(noise=0.01, policy=RepeatPolicy(n_repeat=3, max_noise=0.05))
    loud = crossing_run(noise=0.2, policy=RepeatPolicy(n_repeat=3, max_noise=0.05))
    assert not quiet.to_frame()["noisy"].any()
    assert loud.to_frame()["noisy"].all()


def test_to_dict_and_csv_carry_the_configuration():
    run = crossing_run(peaks=fake_peaks())
    data = json.loads(json.dumps(run.to_dict(), default=str))
    for key in (
        "experiment",
        "created_at",
        "backend",
        "device",
        "config",
        "points",
        "crossovers",
        "peaks",
        "min_n",
        "max_n",
        "impls",
    ):
        assert key in data, key
    assert data["experiment"] == "scaling"
    assert data["config"]["sizes"] == NS and data["config"]["policy"]["n_repeat"] == 3
    text = run.to_csv()
    assert text.startswith("# kernel-lab sweep")
    header = json.loads(text.splitlines()[1][2:])
    assert header["config"]["min_n"] == NS[0] and header["config"]["max_n"] == NS[-1]
    frame = pd.read_csv(io.StringIO(text), comment="#")
    assert len(frame) == len(run.points) and {"n", "series", "median_s", "bandwidth_gbps", "noisy"} <= set(
        frame.columns
    )


# --- validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"min_n": 4096, "max_n": 1024}, "inverted"),
        ({"min_n": 0, "max_n": 1024}, "at least 1"),
        ({"min_n": "", "max_n": 1024}, "whole number"),
        ({"max_n": 10**6, "limit": 16_384}, "too large"),
        ({"impls": []}, "at least one implementation"),
        ({"impls": ["gpu", "fortran"]}, "unknown implementation 'fortran'"),
        ({"python_budget_s": 0}, "more than 0 seconds"),
        ({"max_wall_s": -1}, "more than 0 seconds"),
        ({"threads_per_block": 2048}, "between 1 and"),
    ],
)
def test_bad_configurations_are_refused_with_a_message(kwargs, message):
    args = {"min_n": 64, "max_n": 1024, "impls": ["gpu"], **kwargs}
    with pytest.raises(InputError, match=message):
        make_config(args.pop("min_n"), args.pop("max_n"), args.pop("impls"), **args)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "until_stable", "budget_s": 0}, "more than 0 seconds"),
        ({"mode": "until_stable", "budget_s": None}, "more than 0 seconds"),
        ({"mode": "count", "max_noise": 0}, "noise target"),
        ({"mode": "count", "repeats": 0}, "between 1 and"),
        ({"mode": "forever"}, "repeat mode"),
    ],
)
def test_bad_repeat_policies_are_refused(kwargs, message):
    with pytest.raises(InputError, match=message):
        repeat_policy(**kwargs)


def test_until_stable_policy_keeps_its_target_and_budget():
    policy = repeat_policy("until_stable", 40, max_noise=0.03, budget_s=0.5)
    assert (policy.n_repeat, policy.max_noise, policy.budget_s) == (40, 0.03, 0.5)


# --- running in the simulator ------------------------------------------------------------


def small_config(**kw) -> SweepConfig:
    base = {"policy": RepeatPolicy.count(1), "python_budget_s": 1.0}
    return make_config(
        kw.pop("min_n", 32), kw.pop("max_n", 128), kw.pop("impls", ["gpu", "numpy", "python"]), **{**base, **kw}
    )


def test_sweep_measures_every_point_and_reports_progress():
    seen = []
    run = run_sweep(
        small_config(), on_progress=lambda p: seen.append((p.step, p.steps, p.n, p.impl, len(p.partial.points)))
    )
    assert run.complete and run.stopped is None and run.agree
    assert run.sizes == [32, 64, 128]
    assert [s[0] for s in seen] == list(range(1, 10)) and all(s[1] == 9 for s in seen)
    assert seen[0][4] == 0 and seen[-1][4] > seen[1][4]  # partial results grow
    for n in run.sizes:
        for series in ("gpu-total", "gpu-kernel", "gpu-h2d", "gpu-d2h", "numpy", "python"):
            point = run.point(n, series)
            assert point is not None and point.ok and point.stats.n_samples == 1, (n, series)
    assert 0 < run.measuring_s <= run.wall_s


def test_a_stop_between_steps_keeps_the_partial_result():
    asked = []

    def should_stop():
        asked.append(1)
        return len(asked) > 4

    run = run_sweep(small_config(), should_stop=should_stop)
    assert run.stopped == "cancelled" and not run.complete
    assert run.steps_done == 4 and run.steps_planned == 9
    assert run.sizes == [32, 64]  # steps: 32 x3, then 64 gpu
    assert {p.series for p in run.points if p.n == 64} == {
        "gpu-total",
        "gpu-kernel",
        "gpu-launch-kernel",
        "gpu-h2d",
        "gpu-d2h",
    }


def test_a_time_limit_stops_the_sweep_with_what_it_has():
    ticks = iter(range(1000))
    run = run_sweep(small_config(max_wall_s=2.5), clock=lambda: float(next(ticks)))
    assert run.stopped.startswith("time limit") and 0 < run.steps_done < 9


def test_a_failure_at_one_point_is_recorded_and_the_sweep_goes_on(monkeypatch):
    real = sweep_mod.time_cpu

    def flaky(name, a, *args, **kwargs):
        if name == "numpy" and a.size == 64:
            raise MemoryError("cannot allocate 3 GiB")
        return real(name, a, *args, **kwargs)

    monkeypatch.setattr(sweep_mod, "time_cpu", flaky)
    run = run_sweep(small_config())
    failed = run.point(64, "numpy")
    assert not failed.ok and failed.error.startswith("out of memory")
    assert run.point(128, "numpy").ok and run.point(128, "gpu-kernel").ok
    assert run.complete and [p.n for p in run.failures] == [64]
    assert "failed" in summary(run)


def test_python_loop_over_its_budget_is_an_estimate_flagged_as_such():
    run = run_sweep(small_config(impls=["python"], python_budget_s=1e-9))
    point = run.point(128, "python")
    assert point.estimated and point.stats is None and point.estimate_s > 0
    assert run.to_frame().query("series == 'python'")["estimated"].all()


def test_unavailable_references_are_skipped_not_failed():
    run = run_sweep(small_config(impls=["gpu", "cupy", "torch"], max_n=32))
    assert dict(run.skipped).keys() == {"cupy", "torch"}
    assert run.complete and not run.failures
    assert run.steps_planned == 1


def test_check_section_passes_quickly_in_the_simulator():
    passed, data, markdown = check_sweep(True, 16_384, lambda _m: None)
    assert passed, markdown
    assert data["reached_n"] == data["planned_max_n"] == 1024
    assert "Crossovers" in markdown and "Physical limits" in markdown
    assert json.dumps(data, default=str)


# --- the command line ------------------------------------------------------------------


def test_cli_json_has_config_points_and_crossovers(capsys):
    code = main(
        [
            "sweep",
            "--min-n",
            "32",
            "--max-n",
            "64",
            "--impl",
            "gpu,numpy",
            "--repeats",
            "1",
            "--no-peaks",
            "--quiet",
            "--json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["experiment"] == "scaling" and data["config"]["sizes"] == [32, 64]
    assert {p["series"] for p in data["points"]} == {
        "gpu-total",
        "gpu-kernel",
        "gpu-launch-kernel",
        "gpu-h2d",
        "gpu-d2h",
        "numpy",
    }
    assert all("median_s" in p["stats"] and "samples" in p["stats"] for p in data["points"])
    assert len(data["crossovers"]) == 3 and all("text" in c for c in data["crossovers"])


def test_cli_csv_is_a_table_headed_by_the_configuration(capsys):
    code = main(
        [
            "sweep",
            "--min-n",
            "32",
            "--max-n",
            "32",
            "--impl",
            "numpy",
            "--repeats",
            "2",
            "--no-peaks",
            "--quiet",
            "--csv",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    frame = pd.read_csv(io.StringIO(text), comment="#")
    assert frame["series"].tolist() == ["numpy"] and frame["samples"].tolist() == [2]
    assert json.loads(text.splitlines()[1][2:])["config"]["impls"] == ["numpy"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--min-n", "1024", "--max-n", "64"], "inverted"),
        (["--impl", ","], "at least one implementation"),
        (["--max-n", "1e12"], "too large"),
        (["--budget", "0", "--max-n", "64", "--min-n", "32"], "more than 0 seconds"),
        (["--json", "--csv"], "not allowed"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(argv, message, capsys):
    assert main(["sweep", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_descending_sweeps_measure_the_largest_size_first():
    seen = []
    run = run_sweep(small_config(impls=["numpy"], descending=True), on_progress=lambda p: seen.append(p.n),
                    should_stop=lambda: len(seen) >= 1)
    assert seen == [128] and run.sizes == [128] and run.stopped == "cancelled"
    assert run.config.to_dict()["descending"] is True


def test_four_per_thread_kernel_is_swept_checked_and_counted_as_device_work():
    run = run_sweep(small_config(impls=["gpu-ilp"], min_n=33, max_n=129))
    points = [p for p in run.points if p.series == "gpu-ilp"]
    assert [p.n for p in points] == list(run.sizes) and all(p.agree for p in points)
    frame = run.to_frame()
    rows = frame[frame["series"] == "gpu-ilp"]
    assert set(rows["label"]) == {"Kernel, 4 per thread"} and rows["bandwidth_gbps"].gt(0).all()


def test_the_wall_time_excludes_kernel_compile_and_input_generation(monkeypatch):
    now = [0.0]
    real_buffers = sweep_mod._host_buffers

    def slow_compile():
        now[0] += 100.0  # a 100 s compile: must not be in the sweep's wall time
        return 100.0

    def slow_buffers(n, seed):
        now[0] += 50.0  # 50 s of input generation: not in it either
        return real_buffers(n, seed)

    monkeypatch.setattr(sweep_mod, "compile_vector_add", slow_compile)
    monkeypatch.setattr(sweep_mod, "_host_buffers", slow_buffers)

    def clock():
        now[0] += 0.001
        return now[0]

    run = run_sweep(small_config(), clock=clock)
    assert run.compile_s == 100.0 and run.wall_s < 50.0
