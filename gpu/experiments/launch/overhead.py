"""Launch overhead: what one kernel launch from Python costs on the host, path by path.

Why (issue 10, item 6): "launch from Python" measured 197–588 µs per vector add on an
H200, where Numba's launch is usually quoted at tens of µs and CuPy's at a few. Each
path below launches an empty kernel (one thread, no work), so a sample is the host's
cost to queue it; the differences between Numba's paths say where the time goes:

- ``numba-article``    ``kernel[grid, block, stream]()`` per launch, as the article writes
                       it: configuration lookup + type dispatch + marshalling + driver;
- ``numba-configured`` the launcher configured once (``launch = kernel[...]``): minus the
                       configuration lookup;
- ``numba-specialized`` a dispatcher specialised for its argument types and configured
                       once: minus the per-call type dispatch;
- ``numba-direct``     the compiled kernel's own ``launch`` (an internal numba-cuda API,
                       shown as a floor, not used by the engine);
- ``article-vector-add`` the vector add launched as the article does, three device arrays;
- ``engine``           the engine's vector-add launch (``gpu.core.launch_path``) with
                       three device arrays at N = 1: what "launch" in every figure costs;
- ``cupy-rawkernel``, ``torch-op``, ``cuda-core``: other libraries, where installed;
- ``cupy-rawkernel-args``, ``torch-add-args``: CuPy and PyTorch launching with three
  one-element arrays, as the engine does.

The engine is judged against the fastest path that launches with the same three array
arguments (``SAME_ARGUMENTS``), not against zero-argument kernels, whose launches skip
marshalling arguments by design (issue 18); the check fails when it is over
``ENGINE_TARGET`` on a GPU, or when it could not be compared there.

A sample is the wall time of ``launches_per_sample`` back-to-back launches divided by
that count (the stream is synchronised before, outside the timing), in seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from gpu.catalog.base import Experiment, Param
from gpu.catalog.registry import register
from gpu.core import estimates
from gpu.core.backend import BACKEND, cuda
from gpu.core.device import DeviceInfo, device_info
from gpu.core.launch_spec import Launch
from gpu.core.limits import check_repeats
from gpu.core.timing import (
    Clock,
    RepeatPolicy,
    Stats,
    collect,
    format_factor,
    format_seconds,
    utc_timestamp,
)
from gpu.experiments.launch.experiment import LAUNCH_PAGE

PATHS = {
    "numba-article": "Numba: kernel[grid, block, stream]() per launch (as the article)",
    "numba-configured": "Numba: configured once, launch()",
    "numba-specialized": "Numba: specialised + configured once",
    "numba-direct": "Numba: compiled kernel's launch() (internal API)",
    "article-vector-add": "Numba: vector add as the article launches it, 3 device arrays",
    "engine": "Engine: vector add launch, 3 device arrays",
    "cupy-rawkernel": "CuPy RawKernel",
    "torch-op": "PyTorch x.add_(1), 1 element",
    "cuda-core": "cuda.core launch()",
    "cupy-rawkernel-args": "CuPy RawKernel, 3 one-element arrays",
    "torch-add-args": "PyTorch torch.add(a, b, out=c), 1 element",
}
# Public paths launching with three array arguments, as the engine does: what it is compared with.
SAME_ARGUMENTS = ("article-vector-add", "cupy-rawkernel-args", "torch-add-args")
PUBLIC_PATHS = tuple(p for p in PATHS if p not in ("numba-direct", "engine"))  # what a user could write
ENGINE_TARGET = 2.0  # the engine's launch within 2x of the fastest Python launch path (issue 10, item 6)
LAUNCHES_PER_SAMPLE = 200  # enough that the clock's resolution is noise; far below the driver's queue depth
SIMULATED_LAUNCHES_PER_SAMPLE = 5


@cuda.jit
def empty_kernel():
    """Nothing: launching it costs only the launch."""
    pass


def _numba_paths(stream) -> dict[str, Callable[[], Callable[[], None]]]:
    """Factories: each prepares (outside the timing) and returns a launch callable."""
    from gpu.core.launch_path import configured_launch
    from gpu.kernels.vector_add import vector_add_kernel

    def article():
        return lambda: empty_kernel[1, 1, stream]()

    def configured():
        launch = empty_kernel[1, 1, stream]
        return lambda: launch()

    def specialized():
        if BACKEND.simulated:
            raise RuntimeError("the simulator has no specialised dispatchers")
        launch = empty_kernel.specialize()[1, 1, stream]
        return lambda: launch()

    def direct():
        if BACKEND.simulated:
            raise RuntimeError("the simulator has no compiled kernels")
        from numba.cuda.cudadrv import driver

        empty_kernel[1, 1, stream]()  # compile
        compiled = next(iter(empty_kernel.overloads.values()))
        core_stream = driver._to_core_stream(stream)
        return lambda: compiled.launch((), (1, 1, 1), (1, 1, 1), core_stream, 0)

    def article_vector_add():
        d = [cuda.device_array(1, dtype=np.float32, stream=stream) for _ in range(3)]
        return lambda: vector_add_kernel[1, 32, stream](*d)

    def engine():
        d = [cuda.device_array(1, dtype=np.float32, stream=stream) for _ in range(3)]
        launch = configured_launch(vector_add_kernel, 1, 32, stream, *d)
        return lambda: launch(*d)

    return {"numba-article": article, "numba-configured": configured, "numba-specialized": specialized,
            "numba-direct": direct, "article-vector-add": article_vector_add, "engine": engine}


def _library_path(name: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """(launch, synchronize) for a library path; raises when it cannot run here."""
    if BACKEND.simulated:
        raise RuntimeError("needs a real GPU")
    if name == "cupy-rawkernel":
        import cupy as cp

        kernel = cp.RawKernel(r'extern "C" __global__ void empty() {}', "empty")
        stream = cp.cuda.Stream(non_blocking=True)
        kernel((1,), (1,), (), stream=stream)
        return (lambda: kernel((1,), (1,), (), stream=stream)), stream.synchronize
    if name == "torch-op":
        import torch

        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            x = torch.zeros(1, device="cuda")

        def launch():
            with torch.cuda.stream(stream):
                x.add_(1)

        return launch, stream.synchronize
    if name == "cuda-core":
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions
        from cuda.core import launch as core_launch  # not the torch branch's launch() above

        dev = Device()
        dev.set_current()
        arch = "".join(str(x) for x in dev.compute_capability)
        program = Program(
            r'extern "C" __global__ void empty() {}', code_type="c++", options=ProgramOptions(arch=f"sm_{arch}")
        )
        kernel = program.compile("cubin").get_kernel("empty")
        stream = dev.create_stream()
        config = LaunchConfig(grid=1, block=1)
        return (lambda: core_launch(stream, config, kernel)), stream.sync
    if name == "cupy-rawkernel-args":
        import cupy as cp

        kernel = cp.RawKernel(r'extern "C" __global__ void add3(const float* a, const float* b, float* c) {}', "add3")
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            a, b, c = (cp.zeros(1, dtype=cp.float32) for _ in range(3))
        kernel((1,), (32,), (a, b, c), stream=stream)
        return (lambda: kernel((1,), (32,), (a, b, c), stream=stream)), stream.synchronize
    if name == "torch-add-args":
        import torch

        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            a, b, c = (torch.zeros(1, device="cuda") for _ in range(3))

        def launch_add():
            with torch.cuda.stream(stream):
                torch.add(a, b, out=c)

        return launch_add, stream.synchronize
    raise ValueError(f"unknown launch path {name!r}; choose from {', '.join(PATHS)}")


@dataclass(frozen=True)
class LaunchOverheadRun:
    """Host time per launch (seconds) for every path that could run; why the others could not."""

    paths: dict[str, Stats]
    skipped: dict[str, str]
    launches_per_sample: int
    backend: str
    device: DeviceInfo
    policy: RepeatPolicy
    created_at: str = field(default_factory=utc_timestamp)

    @property
    def fastest(self) -> str | None:
        """The fastest path a user could write (the internal-API floor excluded)."""
        public = {k: v for k, v in self.paths.items() if k in PUBLIC_PATHS}
        return min(public, key=lambda k: public[k].median_s) if public else None

    @property
    def engine_baseline(self) -> str | None:
        """The fastest public path launching with the engine's three array arguments."""
        like = {k: v for k, v in self.paths.items() if k in SAME_ARGUMENTS}
        return min(like, key=lambda k: like[k].median_s) if like else None

    @property
    def engine_ratio(self) -> float | None:
        """Engine launch ÷ the fastest path with the same arguments (target ≤ ENGINE_TARGET)."""
        if "engine" not in self.paths or self.engine_baseline is None:
            return None
        return self.paths["engine"].median_s / self.paths[self.engine_baseline].median_s

    @property
    def passed(self) -> bool:
        """On a GPU: the engine was compared and is within ENGINE_TARGET. The simulator's
        launches time the simulator, so there it is not judged."""
        if self.backend == "simulator":
            return True
        return self.engine_ratio is not None and self.engine_ratio <= ENGINE_TARGET

    def breakdown(self) -> list[tuple[str, float]]:
        """Where the article's launch goes: (what, seconds) from differences of medians."""
        m = {k: v.median_s for k, v in self.paths.items()}
        steps = []
        for a, b, what in (
            ("numba-article", "numba-configured", "looking up the launch configuration per call"),
            ("numba-configured", "numba-specialized", "typing the arguments per call (dispatch)"),
            ("numba-specialized", "numba-direct", "the dispatcher's own call path"),
        ):
            if a in m and b in m:
                steps.append((what, m[a] - m[b]))
        if "numba-direct" in m:
            steps.append(("marshalling and the driver's launch (numba-cuda's floor)", m["numba-direct"]))
        return steps

    def to_dict(self) -> dict:
        return {
            "experiment": "launch-overhead",
            "created_at": self.created_at,
            "backend": self.backend,
            "device": self.device.to_dict(),
            "policy": self.policy.to_dict(),
            "launches_per_sample": self.launches_per_sample,
            "paths": {k: {"label": PATHS[k], **v.to_dict()} for k, v in self.paths.items()},
            "skipped": dict(self.skipped),
            "fastest": self.fastest,
            "engine_baseline": self.engine_baseline,
            "engine_ratio": self.engine_ratio,
            "passed": self.passed,
            "engine_target": ENGINE_TARGET,
            "breakdown": [{"what": w, "seconds": s} for w, s in self.breakdown()],
        }

    @property
    def agree(self) -> bool:
        """Always True: empty kernels compute nothing, so there is no result to disagree."""
        return True

    def to_frame(self):
        """One row per path × sample: path, label, sample, seconds, us, few_samples, backend."""
        import pandas as pd

        rows = [
            (k, PATHS[k], i, s, s * 1e6, v.few_samples)
            for k, v in self.paths.items()
            for i, s in enumerate(v.samples_s)
        ]
        frame = pd.DataFrame(rows, columns=["path", "label", "sample", "seconds", "us", "few_samples"])
        frame["backend"] = self.backend
        return frame

    def __str__(self) -> str:
        lines = [f"launch overhead: host time per launch, {self.launches_per_sample} launches per sample, "
                 f"{self.policy.describe()}; {self.device.name} ({self.backend})"]
        for k, v in self.paths.items():
            lines.append(f"  {PATHS[k]:<58} {v}")
        for k, why in self.skipped.items():
            lines.append(f"  {PATHS[k]:<58} skipped: {why}")
        if self.engine_ratio is not None and self.engine_baseline is not None:
            lines.append(
                f"engine launch / fastest with the same 3 array arguments ({PATHS[self.engine_baseline]}): "
                f"{format_factor(self.engine_ratio)} (target ≤ {ENGINE_TARGET:g}x) — "
                f"{'met' if self.passed else 'NOT met'}"
            )
        elif self.backend != "simulator":
            lines.append(
                "engine launch: NOT compared (the engine or every same-argument path failed) — the check fails"
            )
        for what, seconds in self.breakdown():
            lines.append(f"  {what}: {format_step(seconds)}")
        return "\n".join(lines)


def format_step(seconds: float) -> str:
    """One step of the breakdown, a difference of two medians. A negative one is not a cost
    (on the H200 the launcher configured once was 5.6 µs slower than the article's launch):
    it is said as such, never printed as "-5.64 µs"."""
    if seconds >= 0:
        return format_seconds(seconds)
    return f"none measured (without it the launch was {format_seconds(-seconds)} slower, not faster)"


def run_launch_overhead(
    policy: RepeatPolicy | None = None,
    paths=tuple(PATHS),
    *,
    launches_per_sample: int | None = None,
    on_progress: Callable[[str], None] | None = None,
    clock: Clock = time.perf_counter,
) -> LaunchOverheadRun:
    """Measure the host cost of one launch for each of ``paths`` (default: all)."""
    say = on_progress or (lambda _m: None)
    policy = policy or RepeatPolicy.count(20, warmup=2)
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        raise ValueError(f"unknown launch path {unknown[0]!r}; choose from {', '.join(PATHS)}")
    count = launches_per_sample or (SIMULATED_LAUNCHES_PER_SAMPLE if BACKEND.simulated else LAUNCHES_PER_SAMPLE)
    stream = cuda.stream()
    numba = _numba_paths(stream)
    results: dict[str, Stats] = {}
    skipped: dict[str, str] = {}
    for name in paths:
        say(f"launch overhead: {PATHS[name]}")
        try:
            if name in numba:
                launch, sync = numba[name](), stream.synchronize
            else:
                launch, sync = _library_path(name)
            launch()  # compile / load outside the timing
            sync()
        except Exception as exc:  # not installed, no GPU, an API this version lacks
            skipped[name] = f"{type(exc).__name__}: {exc}"
            continue

        def once(launch=launch, sync=sync) -> dict[str, float]:
            sync()  # an empty queue before the clock starts
            start = clock()
            for _ in range(count):
                launch()
            seconds = (clock() - start) / count
            sync()
            return {"launch": seconds}

        results[name] = collect(once, policy, clock=clock)["launch"]
    return LaunchOverheadRun(results, skipped, count, BACKEND.kind, device_info(), policy)


# --- the declaration ---------------------------------------------------------------

EXPERIMENT = register(Experiment(
    key="launch-overhead",
    title="Launch overhead",
    summary="host time per kernel launch from Python, path by path (an empty kernel)",
    params=(
        Param("samples", "Samples per path", lambda v: check_repeats(v), 20,
              "Each sample launches an empty kernel many times back to back and divides by the count."),
    ),
    run=lambda p, progress: run_launch_overhead(RepeatPolicy.count(p["samples"], warmup=2), on_progress=progress),
    # each sample is a few empty launches of one thread: negligible next to any vector add
    work=lambda p: p["samples"],
    # every path's samples (2 warm-ups) of back-to-back empty launches: about 10 µs each from Python on a GPU,
    # a simulated launch's set-up in the simulator; plus each path's first launch (a compile on a GPU)
    estimate=lambda p, simulated: len(PATHS) * (
        (p["samples"] + 2) * (SIMULATED_LAUNCHES_PER_SAMPLE * estimates.SIM_LAUNCH_S if simulated
                              else LAUNCHES_PER_SAMPLE * 1e-5)
        + (0.0 if simulated else estimates.GPU_COMPILE_S)),
    measures=lambda run: {f"{name}_s": stats.median_s for name, stats in run.paths.items()},
    passed=lambda run: run.passed,
    result_type=LaunchOverheadRun,
    page=LAUNCH_PAGE,
    order=50,
    uses_cpu=True,  # host time is what is measured: other CPU benchmarks would disturb it
))

# What the launch-overhead experiment launches (gpu/core/launch_spec.py; the compile gate compiles it for every target).
LAUNCHES = {"empty_kernel": Launch(("void()",), threads_per_block=1)}


__all__ = [
    "ENGINE_TARGET",
    "EXPERIMENT",
    "PATHS",
    "SAME_ARGUMENTS",
    "LaunchOverheadRun",
    "empty_kernel",
    "run_launch_overhead",
]
