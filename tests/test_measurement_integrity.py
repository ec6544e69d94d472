"""Every figure measured the same careful way — checked without a GPU.

Fake device ops stand in for CUDA events and the stream hold; fake libraries stand in
for CuPy and PyTorch; a fake NVML stands in for the driver.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

import gpu.core.hold as hold_mod
from gpu.core import reference
from gpu.core.crossover import crossover_band
from gpu.core.hold import SimulatedOps
from gpu.core.telemetry import (
    TelemetryMonitor,
    TelemetrySample,
    decode_reasons,
    describe,
    read_now,
    summarize,
)
from gpu.core.timing import RepeatPolicy, Stats
from gpu.experiments.scaling.config import make_config
from gpu.experiments.scaling.experiment import run_sweep
from gpu.experiments.scaling.report import summary as scaling_summary
from gpu.experiments.scaling.result import Crossover


class _Holding:
    def query(self):
        return False  # still running when asked: every sample verified


class RecordingOps(SimulatedOps):
    """The simulator's wall-clock events, but pretending a stream hold works, and logging."""

    can_hold = True

    def __init__(self, clock=time.perf_counter):
        super().__init__(clock)
        self.log: list[tuple[str, object]] = []

    def hold(self, stream, hold_ns):
        self.log.append(("hold", stream))
        return _Holding()

    def flush_l2(self, stream):
        self.log.append(("flush", stream))


class FakeStream:
    def __init__(self, ptr):
        self.ptr = ptr

    def synchronize(self):
        pass


class FakeLibrary:
    """CuPy / PyTorch stand-in: host arrays, ``add`` on its 'stream'."""

    stream_ptr = 0xC0FFEE

    def __init__(self):
        self.adds = 0

    def upload(self, x):
        return x.copy()

    def wrap(self, device_array):
        return device_array.copy_to_host()

    def empty_like(self, x):
        return np.empty_like(x)

    def add(self, x, y, out):
        self.adds += 1
        np.add(x, y, out=out)

    def synchronize(self):
        pass

    def download(self, x):
        return x

    def free(self):
        pass


@pytest.fixture
def ops(monkeypatch):
    ops = RecordingOps()
    monkeypatch.setattr(hold_mod, "default_ops", lambda clock=time.perf_counter: ops)
    monkeypatch.setattr(reference, "unavailable_reason", lambda name: None)
    monkeypatch.setattr(reference, "LIBRARIES", {name: FakeLibrary for name in reference.REFERENCES})
    monkeypatch.setattr(reference, "external_stream", FakeStream)
    return ops


def test_every_gpu_implementation_is_timed_behind_a_verified_hold_with_l2_flushed(ops):
    config = make_config(32, 32, ("gpu", "gpu-ilp", *reference.REFERENCES), policy=RepeatPolicy.count(2), limit=64)
    run = run_sweep(config)
    kernels = {p.series: p for p in run.points if p.series in ("gpu-kernel", "gpu-ilp", *reference.REFERENCES)}
    assert set(kernels) == {"gpu-kernel", "gpu-ilp", *reference.REFERENCES}
    for series, point in kernels.items():
        assert point.stats.held is True, f"{series} was not timed behind a verified hold"
        assert point.agree, series
    # the references were held on their own library's stream, wrapped for Numba
    held_streams = [s for what, s in ops.log if what == "hold"]
    assert (
        sum(isinstance(s, FakeStream) and s.ptr == FakeLibrary.stream_ptr for s in held_streams) == 2 * 3
    )  # 2 refs x (warm-up + 2)
    # the L2 flush precedes every hold
    kinds = [what for what, _ in ops.log]
    assert all(kinds[i - 1] == "flush" for i, k in enumerate(kinds) if k == "hold")


def test_the_warm_cache_option_never_flushes(ops):
    config = make_config(32, 32, ("gpu", "torch"), policy=RepeatPolicy.count(2), limit=64, warm_l2=True)
    run = run_sweep(config)
    assert not any(what == "flush" for what, _ in ops.log) and run.to_dict()["config"]["l2"] == "warm"


def test_vector_add_phases_add_up_and_allocation_is_outside_every_phase(ops, monkeypatch):
    from gpu.core.arrays import vector_inputs
    from gpu.core.backend import cuda
    from gpu.kernels.vector_add_timing import time_gpu_phases

    events: list[str] = []
    real_alloc = cuda.device_array
    monkeypatch.setattr(cuda, "device_array", lambda *a, **k: events.append("alloc") or real_alloc(*a, **k))
    real_event = ops.event
    ops.event = lambda: _LoggedEvent(real_event(), events)
    a, b = vector_inputs(64)
    out = np.empty(64, dtype=np.float32)
    stats = time_gpu_phases(a, b, out, 32, RepeatPolicy.count(3))
    np.testing.assert_array_equal(out, a + b)
    assert events.index("record") > max(i for i, e in enumerate(events) if e == "alloc")  # every allocation first
    assert set(stats) == {"h2d", "launch", "kernel", "d2h", "total", "with_launch"}
    for i in range(3):
        parts = stats["h2d"].samples_s[i] + stats["with_launch"].samples_s[i] + stats["d2h"].samples_s[i]
        assert parts <= stats["total"].samples_s[i]
        assert stats["launch"].samples_s[i] == pytest.approx(
            max(0.0, stats["with_launch"].samples_s[i] - stats["kernel"].median_s)
        )
    assert stats["kernel"].held is True


class _LoggedEvent:
    def __init__(self, event, log):
        self._event, self._log = event, log
        self.t = None

    def record(self, stream):
        self._log.append("record")
        self._event.record(stream)
        self.t = self._event.t

    def synchronize(self):
        self._event.synchronize()


# --- crossovers with spread ---------------------------------------------------------------


def test_overlapping_noise_bands_make_a_crossover_a_range():
    ns = [1000, 2000, 4000, 8000, 16000]
    cpu = [(1e-9 * n * 0.8, 1e-9 * n, 1e-9 * n * 1.2) for n in ns]  # ±20%
    gpu = [(5e-6 * 0.8, 5e-6, 5e-6 * 1.2)] * len(ns)  # flat, ±20%: medians cross at N = 5,000
    kind, n, low, high = crossover_band(ns, gpu, cpu)
    assert kind == "from" and n == pytest.approx(5000, rel=0.01)
    assert (
        low < n < high
        and low == pytest.approx(5000 * 0.8 / 1.2, rel=0.05)
        and high == pytest.approx(5000 * 1.2 / 0.8, rel=0.05)
    )
    c = Crossover("gpu-kernel", "numpy", kind, n, ns[0], ns[-1], n_low=low, n_high=high)
    assert c.is_range and "between N ≈ 3,300" in c.text and "and 7,500" in c.text and "5,000" in c.text


def test_tight_bands_give_a_point_to_two_figures():
    ns = [1000, 2000, 4000, 8000, 16000]
    cpu = [(1e-9 * n, 1e-9 * n, 1e-9 * n) for n in ns]
    gpu = [(5e-6, 5e-6, 5e-6)] * len(ns)
    kind, n, low, high = crossover_band(ns, gpu, cpu)
    c = Crossover("gpu-launch-kernel", "numpy", kind, n, ns[0], ns[-1], n_low=low, n_high=high)
    assert not c.is_range and c.text == "the kernel with its launch from Python beats NumPy from N ≈ 5,000 (2^12.3)"


def test_a_crossover_beside_single_sample_points_is_no_exact_point():
    from gpu.core.device import device_info
    from gpu.experiments.scaling.charts import crossover_data
    from gpu.experiments.scaling.result import SweepPoint, SweepRun

    ns = [1000, 2000, 4000, 8000, 16000]
    # one sample each: zero-width bands that would otherwise read as an exact crossing at 5,000
    points = [SweepPoint(n, "numpy", Stats((1e-9 * n,))) for n in ns] + [
        SweepPoint(n, "gpu-kernel", Stats((5e-6,))) for n in ns
    ]
    config = make_config(1000, 16000, ("gpu", "numpy"), policy=RepeatPolicy.count(1), limit=16000)
    run = SweepRun(config=config, points=tuple(points), backend="cuda", device=device_info())
    c = next(c for c in run.crossovers() if c.gpu == "gpu-kernel")
    assert c.kind == "from" and c.few_samples and c.is_range
    assert "no exact point" in c.text and "fewer than 3 samples" in c.text
    marks = crossover_data([c.to_dict()])
    assert marks["few"].all() and marks["marker"].str.endswith("(n<3)").all()
    three = [SweepPoint(p.n, p.series, Stats(p.stats.samples_s * 3)) for p in points]
    assert not next(c for c in replace(run, points=tuple(three)).crossovers() if c.gpu == "gpu-kernel").few_samples


# --- sweep overhead ----------------------------------------------------------------------


def test_sweep_overhead_is_one_minus_timed_samples_over_wall(ops):
    config = make_config(32, 64, ("gpu", "numpy"), policy=RepeatPolicy.count(2), limit=64)
    run = run_sweep(config)
    inside_total = {"gpu-h2d", "gpu-launch-kernel", "gpu-d2h"}
    sampled = sum(sum(p.stats.samples_s) for p in run.points if p.stats and p.series not in inside_total)
    assert run.sampled_s == pytest.approx(sampled)
    assert run.overhead_fraction == pytest.approx(1 - sampled / run.wall_s)
    assert run.to_dict()["overhead_definition"] == "1 - (sum of timed samples / wall time)"


def test_a_point_with_fewer_than_three_samples_is_marked_in_table_frame_and_text(ops):
    config = make_config(32, 32, ("gpu", "numpy"), policy=RepeatPolicy.count(2), limit=64)
    run = run_sweep(config)
    frame = run.to_frame()
    assert frame["few_samples"].all()
    assert all("*" in run.mark(p) for p in run.points if p.stats is not None)
    assert "* fewer than 3 samples" in scaling_summary(run)
    assert all(p["stats"]["few_samples"] for p in run.to_dict()["points"] if "stats" in p)


# --- telemetry -------------------------------------------------------------------------


class FakeNvml:
    """pynvml's surface as used, with scripted SM clocks and reason masks."""

    def __init__(self, sm_clocks, masks):
        self.sm, self.masks = list(sm_clocks), list(masks)

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetHandleByPciBusId(self, bus_id):
        self.opened_bus_id = bus_id
        return bus_id

    def nvmlDeviceGetClockInfo(self, h, kind):
        return self.sm.pop(0) if kind == 1 else 2619

    def nvmlDeviceGetTemperature(self, h, kind):
        return 41

    def nvmlDeviceGetPowerUsage(self, h):
        return 120_000  # mW

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self.masks.pop(0)


def test_telemetry_flags_a_clock_drop_and_a_power_cap():
    monitor = TelemetryMonitor(module=FakeNvml([1980, 1600], [0x0, 0x4]))
    monitor.start(background=False)
    summary = monitor.stop()
    assert summary["available"] and summary["flagged"]
    assert summary["before"]["sm_clock_mhz"] == 1980 and summary["after"]["sm_clock_mhz"] == 1600
    assert any("1,980 to 1,600" in f for f in summary["flags"]) and any("sw_power_cap" in f for f in summary["flags"])
    assert summary["power_w_max"] == 120 and "FLAGGED" in describe(summary)


def test_telemetry_does_not_flag_idle_or_steady_runs():
    # idle at 210 MHz before the run, then busy at 1,980: counting the idle reading as
    # busy would read as a drop from 1,980 to 210 and flag the run
    idle_then_busy = TelemetryMonitor(module=FakeNvml([210, 1980], [0x1, 0x0]))
    idle_then_busy.start(background=False)
    assert not idle_then_busy.stop()["flagged"]
    busy_then_low = TelemetryMonitor(module=FakeNvml([1980, 210], [0x0, 0x0]))  # the same clocks, both busy: flagged
    busy_then_low.start(background=False)
    assert busy_then_low.stop()["flagged"]
    steady = TelemetryMonitor(module=FakeNvml([1980, 1975], [0x0, 0x0]))  # a 5 MHz wobble is no drop
    steady.start(background=False)
    assert not steady.stop()["flagged"]
    assert decode_reasons(0x41) == ("gpu_idle", "hw_thermal_slowdown")


def test_telemetry_opens_the_nvml_device_by_the_cuda_devices_pci_bus_id(monkeypatch):
    from gpu.core import telemetry

    nvml = FakeNvml([1980, 1980], [0x0, 0x0])
    monitor = TelemetryMonitor(index="00000000:19:00.0", module=nvml)  # NVML index 0 may be another board
    monitor.start(background=False)
    assert monitor.stop()["available"] and nvml.opened_bus_id == "00000000:19:00.0"
    monkeypatch.setattr(
        telemetry, "pci_bus_id", lambda cuda_index=None: f"00000000:{0x19 + (cuda_index or 0):02X}:00.0"
    )
    nvml = FakeNvml([1980], [0x0])
    sample, why = telemetry.read_now(1, module=nvml)  # the Device page passes the CUDA ordinal
    assert why is None and nvml.opened_bus_id == "00000000:1A:00.0"


def test_without_nvml_telemetry_says_it_is_unavailable():
    sample, why = read_now()
    assert sample is None and why.startswith("telemetry unavailable")
    assert summarize([], why)["available"] is False and describe(summarize([], why)).startswith("telemetry unavailable")
    assert TelemetrySample(0, None, None, None, None, ()).busy


# --- launch overhead -------------------------------------------------------------------


def test_launch_overhead_measures_each_path_with_spread_and_names_what_it_skipped():
    from gpu.experiments.launch.overhead import PATHS, run_launch_overhead

    run = run_launch_overhead(
        RepeatPolicy.count(3, warmup=0),
        paths=("numba-article", "numba-configured", "cupy-rawkernel"),
        launches_per_sample=2,
    )
    assert set(run.paths) == {"numba-article", "numba-configured"} and set(run.skipped) == {"cupy-rawkernel"}
    assert all(isinstance(s, Stats) and s.n_samples == 3 for s in run.paths.values())
    frame = run.to_frame()
    assert set(frame["path"]) == {"numba-article", "numba-configured"} and (frame["us"] > 0).all()
    assert run.to_dict()["paths"]["numba-article"]["label"] == PATHS["numba-article"]
    with pytest.raises(ValueError, match="choose from"):
        run_launch_overhead(paths=("nope",))


def test_launch_paths_are_sampled_round_robin_with_the_garbage_collector_off(monkeypatch):
    import gc

    from gpu.experiments.launch import overhead

    log: list[tuple[str, bool]] = []

    def factory(name):
        return lambda: (lambda: log.append((name, gc.isenabled())))

    monkeypatch.setattr(overhead, "_numba_paths", lambda stream: {
        "numba-article": factory("article"), "numba-configured": factory("configured")})
    run = overhead.run_launch_overhead(RepeatPolicy.count(3, warmup=0), paths=("numba-article", "numba-configured"),
                                       launches_per_sample=1)
    prepared, timed = log[:2], log[2:]
    assert [name for name, _ in prepared] == ["article", "configured"]  # each launched once, before any sample
    assert [name for name, _ in timed] == ["article", "configured"] * 3  # interleaved, not one path then the next
    assert not any(collecting for _, collecting in timed) and gc.isenabled()
    assert all(stats.n_samples == 3 for stats in run.paths.values())


def test_the_launch_ladder_is_ranked_against_cupy_only_on_a_gpu():
    from dataclasses import replace as _replace

    from gpu.experiments.launch.overhead import LADDER, LaunchOverheadRun

    paths = {"article-vector-add": Stats((30e-6,) * 3), "vector-add-driver": Stats((6e-6,) * 3),
             "cupy-rawkernel-args": Stats((5e-6,) * 3)}
    run = LaunchOverheadRun(paths, {"vector-add-core": "RuntimeError: no"}, 200, "cuda",
                            __import__("gpu").core.device.device_info(), RepeatPolicy.count(3))
    ladder = {rung["path"]: rung for rung in run.ladder()}
    assert [rung["path"] for rung in run.ladder()] == list(LADDER)
    assert ladder["vector-add-driver"]["vs_cupy"] == pytest.approx(1.2)
    assert ladder["vector-add-core"]["median_s"] is None and ladder["vector-add-core"]["skipped"] == "RuntimeError: no"
    simulated = _replace(run, backend="simulator")
    assert all(rung["vs_cupy"] is None for rung in simulated.ladder()) and "not ranked" in str(simulated)


def test_the_engine_launch_is_compared_with_same_argument_paths_and_can_fail():
    from dataclasses import replace as _replace

    from gpu.experiments.launch.overhead import LaunchOverheadRun

    fast_empty, like, engine = Stats((1e-6,) * 3), Stats((8e-6,) * 3), Stats((10e-6,) * 3)
    run = LaunchOverheadRun({"numba-configured": fast_empty, "article-vector-add": like, "engine": engine}, {}, 200,
                            "cuda", __import__("gpu").core.device.device_info(), RepeatPolicy.count(3))
    # the zero-argument launch is the fastest overall, but the engine passes three arrays: compared with like
    assert run.fastest == "numba-configured" and run.engine_baseline == "article-vector-add"
    assert run.engine_ratio == pytest.approx(10 / 8) and run.passed
    slow = _replace(run, paths={**run.paths, "engine": Stats((20e-6,) * 3)})
    assert slow.engine_ratio == pytest.approx(2.5) and not slow.passed and "NOT met" in str(slow)
    uncompared = _replace(run, paths={"numba-configured": fast_empty, "engine": engine})
    assert uncompared.engine_ratio is None and not uncompared.passed  # on a GPU, not comparing is a failure
    assert _replace(uncompared, backend="simulator").passed  # simulated launches are not judged


def test_end_to_end_wall_time_excludes_the_l2_flush():
    from gpu.core.arrays import vector_inputs
    from gpu.kernels.vector_add_timing import time_gpu_phases

    now = [0.0]

    def clock():
        now[0] += 1e-6
        return now[0]

    pending = [0.0]  # device work queued but not yet run: a flush is asynchronous

    def run_queued():
        now[0] += pending[0]
        pending[0] = 0.0

    class QueuedEvent:
        def __init__(self):
            self.t = None

        def record(self, stream):
            run_queued()  # the event runs after whatever was queued before it
            self.t = clock()

        def synchronize(self):
            pass

    class SlowFlushOps(SimulatedOps):
        can_hold = False

        def event(self):
            return QueuedEvent()

        def flush_l2(self, stream):
            pending[0] += 1.0  # a 1 s flush, queued: it must be in no sample and in no wall time
            return True

        def synchronize(self, stream):
            run_queued()

    a, b = vector_inputs(32)
    out = np.empty(32, dtype=np.float32)
    stats = time_gpu_phases(a, b, out, 32, RepeatPolicy.count(3, warmup=0), clock=clock, ops=SlowFlushOps(clock))
    assert stats["total"].max_s < 0.5 and stats["h2d"].max_s < 0.5
