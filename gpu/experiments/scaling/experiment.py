"""Scaling: the vector add at every size of a range, for every implementation.

``run_sweep`` measures every size × implementation of a ``SweepConfig`` (validated by
``make_config``, gpu/experiments/scaling/result.py), checking ``should_stop`` between
steps so a sweep can be cancelled and keep what it measured; a failure at one point
(out of memory, say) is recorded there and the sweep goes on. In the simulator the CPU
runs at every size and the simulated kernels only up to their cap. The declaration at
the bottom gives the CLI (``scaling``, alias ``sweep``), the page form and admission.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from gpu.catalog.base import CheckSection, Experiment, PageLink, Param, Part, PerBackend, Progress, Recorded
from gpu.catalog.registry import register
from gpu.core import cpu, reference
from gpu.core.agreement import identical
from gpu.core.arrays import tiled_vector_inputs
from gpu.core.backend import BACKEND
from gpu.core.device import device_info
from gpu.core.l2 import l2_cache_bytes
from gpu.core.limits import (
    InputError,
    check_cpu_n,
    check_cpu_work,
    check_repeats,
    check_sweep_points,
    check_threads,
    kernel_cap,
    load_config,
    max_cpu_vector_n,
    max_vector_n,
    parse_flag,
    parse_positive,
    parse_seconds,
    parse_size,
    release_device_memory,
)
from gpu.core.peaks import Peaks, measure_peaks
from gpu.core.telemetry import TelemetryMonitor
from gpu.core.timing import Clock
from gpu.experiments.scaling.config import (
    DEFAULT_MIN_N,
    IMPL_LABELS,
    IMPLS,
    ON_DEVICE,
    PYTHON_BUDGET_PER_POINT_S,
    SPACING_LABELS,
    SPACINGS,
    SweepConfig,
    make_config,
    repeat_policy,
    sweep_sizes,
)
from gpu.experiments.scaling.result import SweepPoint, SweepRun
from gpu.kernels.geometry import blocks_for
from gpu.kernels.vector_add import (
    ELEMENTS_PER_THREAD,
    compile_vector_add,
    vector_add_ilp_kernel,
    vector_add_kernel,
)
from gpu.kernels.vector_add_timing import (
    time_cpu,
    time_gpu_phases,
    time_kernel_on_resident,
    time_resident_kernel,
)

INPUT_BLOCK = 2**20  # distinct random values per input vector (see _host_buffers)


# --- configuration -----------------------------------------------------------------


# --- points and crossovers -----------------------------------------------------------


# --- the result ----------------------------------------------------------------------


# --- running -------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepProgress:
    """Where a sweep is: about to run ``step`` (1-based) of ``steps``; ``partial`` holds
    what it measured so far (a SweepRun a caller may keep if the run is interrupted)."""

    step: int
    steps: int
    n: int
    impl: str
    partial: SweepRun

    @property
    def fraction(self) -> float:
        return (self.step - 1) / self.steps if self.steps else 1.0

    @property
    def message(self) -> str:
        return f"N = {self.n:,} ({self.step} of {self.steps}): {IMPL_LABELS[self.impl]}"


def _host_buffers(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Inputs a, b, the NumPy reference and one output buffer, of ``n`` float32 each.

    Generated once at the largest size; every size uses the leading slices (views), so
    the sweep does not regenerate inputs per size. The values are a block of
    ``INPUT_BLOCK`` uniform [0, 1) floats repeated: as good a test of the addition as
    fresh ones, at a fraction of the random generator's cost at 2^30 elements.
    """
    a, b = tiled_vector_inputs(n, seed, INPUT_BLOCK)
    return a, b, np.empty(n, dtype=np.float32), np.empty(n, dtype=np.float32)


def _describe_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError) or "OUT_OF_MEMORY" in text.upper():
        return "out of memory — " + text
    return text


def run_sweep(
    config: SweepConfig,
    *,
    peaks: Peaks | None = None,
    on_progress: Callable[[SweepProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    clock: Clock = time.perf_counter,
    end_to_end_max_n: int | None = None,
) -> SweepRun:
    """Measure every size × implementation of ``config`` (validated by make_config).

    ``end_to_end_max_n``: above it the article's kernel is timed alone on the size's device-resident
    inputs (its end-to-end series, whose copies of several GiB dominate a large size's time, stops
    there); None: end to end at every size.

    ``should_stop()`` is asked before every step; when it returns True the sweep ends
    and the result keeps every point measured so far (``stopped`` says why), as it does
    when ``config.max_wall_s`` runs out. ``on_progress`` is called before each step.
    A failure at one point is recorded in that point and the sweep goes on.
    """
    # which implementations cannot run here at all (references without their library);
    # asked before the clock starts: importing PyTorch or CuPy is a one-off cost of the
    # process, not of the sweep
    skipped = tuple(
        (impl, why) for impl in config.impls if impl in reference.REFERENCES
        for why in [reference.unavailable_reason(impl)] if why is not None
    )
    stop = should_stop or (lambda: False)
    sizes = config.sizes
    points: list[SweepPoint] = []
    measuring = 0.0
    device = device_info()
    runnable = [impl for impl in config.impls if impl not in dict(skipped)]
    steps = sum(config.runs_at(impl, n) for n in sizes for impl in runnable)
    l2_bytes = l2_cache_bytes()
    # clocks, temperature, power and throttling before, during (background) and after
    telemetry = TelemetryMonitor().start()

    def snapshot(stopped: str | None, done: int, final: bool = False) -> SweepRun:
        return SweepRun(
            config=config, points=tuple(points), backend=BACKEND.kind, device=device,
            compile_s=compile_s, peaks=peaks, skipped=skipped, stopped=stopped,
            steps_done=done, steps_planned=steps, wall_s=clock() - started - preparing, measuring_s=measuring,
            l2_bytes=l2_bytes, telemetry=telemetry.stop() if final else telemetry.summary(),
        )

    compile_s = compile_vector_add() if "gpu" in runnable else 0.0
    buffers = None
    try:
        buffers = _host_buffers(max(sizes), config.seed)
        np.add(buffers[0], buffers[1], out=buffers[2])  # every size's reference is a prefix of this
    except MemoryError:
        buffers = None  # allocate per size instead; sizes that do not fit are recorded as failures
    # the wall clock starts here: compile and input generation are not the sweep's time
    # (the page says "compile and input generation excluded"); per-size generation, when
    # the inputs had to be made per size, is subtracted too (``preparing``)
    started = clock()
    preparing = 0.0

    step = 0
    stopped = None
    for n in sizes:
        here = [impl for impl in runnable if config.runs_at(impl, n)]  # no simulated kernel past its cap
        made = clock()
        try:
            if buffers is not None:
                a, b, expected, out = (x[:n] for x in buffers)
            else:
                a, b, expected, out = _host_buffers(n, config.seed)
                np.add(a, b, out=expected)
        except MemoryError as exc:
            preparing += clock() - made
            for impl in here:
                points.append(SweepPoint(n, "gpu-total" if impl == "gpu" else impl, error=_describe_error(exc)))
            step += len(here)
            continue
        preparing += clock() - made
        resident = None  # a, b and a + b on the device, uploaded once for every series that reads them there
        kernel_only = end_to_end_max_n is not None and n > end_to_end_max_n
        for impl in here:
            if (impl in RESIDENT_SERIES or impl == "gpu" and kernel_only) and resident is None:
                resident = _resident(a, b, expected)
            if stop():
                stopped = "cancelled"
                break
            if config.max_wall_s is not None and clock() - started - preparing > config.max_wall_s:
                stopped = f"time limit of {config.max_wall_s:g} s reached"
                break
            step += 1
            if on_progress is not None:
                on_progress(SweepProgress(step, steps, n, impl, snapshot(None, step - 1)))
            t0 = clock()
            try:
                points.extend(_measure(impl, a, b, expected, out, config, resident or None, kernel_only))
            except Exception as exc:  # out of memory or a driver error: record, go on
                series = (
                    ("gpu-total", "gpu-kernel", "gpu-launch-kernel", "gpu-h2d", "gpu-d2h") if impl == "gpu" else (impl,)
                )
                points.extend(SweepPoint(n, s, error=_describe_error(exc)) for s in series)
            finally:
                measuring += clock() - t0
        del resident
        # once per size, not per implementation: gc.collect() costs tens of ms with
        # PyTorch and CuPy loaded, and the next size is the one that needs the room
        if any(impl in ON_DEVICE for impl in runnable):
            release_device_memory(collect=any(p.n == n and not p.ok for p in points))
        if stopped:
            break
    del buffers
    if any(impl in ON_DEVICE for impl in runnable):
        release_device_memory(collect=False)
    return snapshot(stopped, step, final=True)


# Series that read their inputs from the device: they share one upload per size (gpu.core.resident).
RESIDENT_SERIES = ("gpu-ilp", *reference.REFERENCES)


def _resident(a: np.ndarray, b: np.ndarray, expected: np.ndarray):
    """``ResidentInputs`` for this size, or False when they do not fit (each series then uploads its own)."""
    from gpu.core.resident import ResidentInputs

    try:
        return ResidentInputs.upload(a, b, expected)
    except Exception:  # out of device memory: the old way, per series, may still fit
        release_device_memory(collect=True)
        return False


def _measure(impl: str, a: np.ndarray, b: np.ndarray, expected: np.ndarray, out: np.ndarray,
             config: SweepConfig, resident=None, kernel_only: bool = False) -> list[SweepPoint]:
    """Time one implementation at one size; return its points. ``resident``: the size's inputs on the device
    (``gpu.core.resident.ResidentInputs``), read by the 4-per-thread kernel and the libraries, which are then
    checked on the device. ``kernel_only`` (with ``resident``): the article's kernel alone, no end to end."""
    n = a.size
    flush = not config.warm_l2
    if impl == "gpu" and kernel_only and resident is not None:
        stats, agree = time_kernel_on_resident(vector_add_kernel, blocks_for(n, config.threads_per_block),
                                               config.threads_per_block, resident, config.policy, flush_l2=flush)
        return [SweepPoint(n, "gpu-kernel", stats, agree=agree)]
    if impl == "gpu":
        out.fill(np.nan)  # a kernel that wrote nothing must not pass the check
        phases = time_gpu_phases(a, b, out, config.threads_per_block, config.policy, flush_l2=flush)
        agree = identical(out, expected)
        return [
            SweepPoint(n, "gpu-total", phases["total"], agree=agree),
            SweepPoint(n, "gpu-kernel", phases["kernel"], agree=agree),
            SweepPoint(n, "gpu-launch-kernel", phases["with_launch"], agree=agree),
            SweepPoint(n, "gpu-h2d", phases["h2d"]),
            SweepPoint(n, "gpu-d2h", phases["d2h"]),
        ]
    if impl == "gpu-ilp":
        tpb = config.threads_per_block
        blocks = blocks_for(n, tpb * ELEMENTS_PER_THREAD)
        if resident is not None:
            stats, agree = time_kernel_on_resident(vector_add_ilp_kernel, blocks, tpb, resident, config.policy,
                                                   flush_l2=flush)
            return [SweepPoint(n, "gpu-ilp", stats, agree=agree)]
        out.fill(np.nan)
        stats = time_resident_kernel(vector_add_ilp_kernel, blocks, tpb, a, b, out, config.policy, flush_l2=flush)
        return [SweepPoint(n, "gpu-ilp", stats, agree=identical(out, expected))]
    if impl in reference.REFERENCES:
        library = reference.time_reference(impl, a, b, config.policy, expected, flush_l2=flush, resident=resident)
        return [SweepPoint(n, impl, library.stats, agree=library.agree)]
    out.fill(np.nan)
    timing = time_cpu(impl, a, b, out, config.policy, config.python_budget_s)
    if timing.stats is None:
        return [SweepPoint(n, impl, estimate_s=timing.estimate_s)]
    return [SweepPoint(n, impl, timing.stats, agree=identical(out, expected))]


# --- the declaration ---------------------------------------------------------------

# The simulator's default range: numba-cuda's 2^10..2^12 (a few seconds, not a minute); the lab's
# 2^10..2^24, past the article's N, so the range spans where the recorded GPU overtakes your CPU
# (the simulated kernels run only up to the simulator's cap, 2^20).
SIMULATOR_DEFAULT_MAX_N = (1 << 24) if BACKEND.lab_simulator else 4096


def default_max_n(repeats: int = 3) -> int:
    """The largest size that fits memory and this server's work budget for a default sweep."""
    limit = max_vector_n()
    if BACKEND.simulated:  # the CPU runs at every size; the simulated kernels only up to their cap
        limit = min(max_cpu_vector_n(), SIMULATOR_DEFAULT_MAX_N)
    budget = load_config().max_work
    cap = kernel_cap()  # in the simulator only the sizes up to the kernel's cap cost simulated work
    n = limit
    while n > DEFAULT_MIN_N and sum(s for s in sweep_sizes(DEFAULT_MIN_N, n) if cap is None or s <= cap) * (
        repeats + 1
    ) > budget:
        n //= 2
    return max(n, 1)


def default_impls() -> tuple[str, ...]:
    """Every implementation; references only where their library can run."""
    return tuple(
        impl for impl in IMPLS if impl not in reference.REFERENCES or reference.unavailable_reason(impl) is None
    )


def _names(value) -> tuple[str, ...]:
    names = [part.strip() for part in value.split(",")] if isinstance(value, str) else [str(v) for v in value]
    return tuple(name for name in dict.fromkeys(names) if name)


def _noise(value) -> float:
    noise = parse_positive(value, "the noise target", example="0.05")
    if not noise < 1:
        raise InputError(f"the noise target must be between 0 and 1 (e.g. 0.05 for 5%), got {value!r}")
    return noise


def _config(params) -> SweepConfig:
    policy = repeat_policy("count" if params["budget_s"] is None else "until_stable", params["repeats"],
                          max_noise=params["noise"], budget_s=params["budget_s"])
    return make_config(params["min_n"], params["max_n"], params["impls"], spacing=params["spacing"],
                       threads_per_block=params["threads_per_block"], policy=policy,
                       python_budget_s=params["python_budget_s"], max_wall_s=params["time_limit_s"],
                       warm_l2=params["warm_l2"])


# Seconds per element-pass, for the estimate the form states before a run: a simulated kernel thread
# (the lab's simulator about 0.3-0.7 µs for vector add; numba-cuda's about 0.15 ms), a compiled CPU pass
# (NumPy, Numba: about 2 ns on a laptop), and a GPU element at most a few ns end to end with copies.
SIM_S_PER_THREAD = 5e-7 if BACKEND.lab_simulator else 1.5e-4
CPU_S_PER_ELEMENT = 2e-9
GPU_S_PER_ELEMENT = 5e-9
PYTHON_PROBE_N = 20_000


def _estimate(params, simulated: bool) -> float:
    """About how long the sweep takes here: per size, each implementation's passes (the Python loop within its
    budget), plus the startup; an estimate for the form, never a figure."""
    sizes = sweep_sizes(params["min_n"], params["max_n"], params["spacing"])
    passes = params["repeats"] + 1
    cap = kernel_cap()
    # one probe of the Python loop per estimate, scaled to each size (the form asks on every rerun)
    probe_s = cpu.estimate_python_loop_s(PYTHON_PROBE_N) if "python" in params["impls"] else 0.0
    python_s_per_element = probe_s / PYTHON_PROBE_N
    total = 1.0
    for n in sizes:
        for impl in params["impls"]:
            if impl == "python":  # run only while its estimate fits the budget; above, only estimated
                loop_s = python_s_per_element * n * passes
                total += loop_s if loop_s <= params["python_budget_s"] else 0.0
            elif impl in cpu.IMPLEMENTATIONS:
                total += 0.01 + n * CPU_S_PER_ELEMENT * passes
            elif impl in ("gpu", "gpu-ilp") and (cap is None or n <= cap):
                per = SIM_S_PER_THREAD if simulated else GPU_S_PER_ELEMENT
                total += n * per * passes * (2 if impl == "gpu" else 1)
    return total


def _work(params) -> int:
    """Element-passes of the whole sweep's GPU part, for ``admit``; also refuses a sweep with too many sizes.

    In the simulator only the sizes up to the kernel's cap count (above it no simulated
    kernel runs); the CPU side is counted apart, N x passes for each compiled CPU
    implementation, and refused here when over ``KERNEL_LAB_MAX_CPU_WORK``.
    """
    lo, hi = params["min_n"], params["max_n"]
    if lo > hi:
        raise InputError(f"the range is inverted: min N = {lo:,} is above max N = {hi:,}; min N must be at most max N")
    sizes = sweep_sizes(lo, hi, params["spacing"])
    if not sizes:
        raise InputError(f"the range {params['min_n']:,} to {params['max_n']:,} holds no sizes")
    check_sweep_points(len(sizes))
    passes = params["repeats"] + 1
    compiled = sum(impl in cpu.IMPLEMENTATIONS and impl != "python" for impl in params["impls"])
    check_cpu_work(sum(sizes) * passes * compiled, "Scaling")
    cap = kernel_cap()
    return sum(n for n in sizes if cap is None or n <= cap) * passes


def _run(params, progress: Progress) -> SweepRun:
    config = _config(params)
    peaks = measure_peaks(quick=params["quick_peaks"], on_progress=progress) if params["peaks"] else None

    def on_step(p: SweepProgress) -> None:
        progress.step(p.fraction, p.partial)
        progress(p.message)

    return run_sweep(config, peaks=peaks, on_progress=on_step, should_stop=progress.should_stop)


def _measures(run: SweepRun) -> dict[str, float]:
    """The largest size's median per series, and the best kernel bandwidth."""
    out: dict[str, float] = {}
    if run.sizes:
        top = run.sizes[-1]
        out.update({f"{p.series}_s_at_max_n": p.median_s for p in run.points if p.n == top and p.ok})
    kernel = [p.stats for p in run.points if p.series == "gpu-kernel" and p.stats is not None]
    if kernel:
        out["max_n"] = float(run.sizes[-1])
    return out


def read_recorded(ref) -> tuple:
    """Every result this experiment's "On a real GPU" panel draws from a committed run
    (``Recorded.read``): raises if one cannot be rebuilt."""
    return (SweepRun.recorded(ref),)


EXPERIMENT = register(
    Experiment(
        key="scaling",
        title="Scaling",
        summary="time the vector add over a range of sizes; crossovers and bandwidth",
        params=(
            Param(
                "min_n",
                "Smallest N",
                lambda v: parse_size(v, "min N"),
                DEFAULT_MIN_N,
                "A whole number such as 1024, 1e3 or 2^10.",
            ),
            Param(
                "max_n",
                "Largest N",
                lambda v: check_cpu_n(v, name="max N"),
                default_max_n,
                "The largest size that fits memory and this server's work budget by default. Without a GPU the CPU "
                "runs at every size and simulated kernels only up to the simulator's cap.",
            ),
            Param(
                "spacing",
                "Sizes",
                lambda v: v if v in SPACINGS else _bad_spacing(v),
                "pow2",
                "Every power of two (or of ten) between the ends, plus both ends.",
                widget="select",
                options=SPACINGS,
                option_label=lambda v: SPACING_LABELS.get(v, str(v)),
            ),
            Param(
                "threads_per_block",
                "Threads per block",
                lambda v: check_threads(v, device_info().max_threads_per_block),
                256,
                "1 to the device's limit (1024); multiples of 32 keep every warp full.",
            ),
            Param(
                "repeats",
                "Repeats per point",
                check_repeats,
                PerBackend(5, 3),
                "Timed runs per point after one warm-up (with a budget: at most this many).",
            ),
            Param(
                "noise",
                "Noise target (stdev/mean)",
                _noise,
                0.05,
                "Points noisier than this are flagged; with a budget, sampling stops once it is reached (0.05 = 5%).",
            ),
            Param(
                "budget_s",
                "Budget per point (s)",
                lambda v: parse_seconds(v, "the budget per point"),
                None,
                "Empty: a fixed number of repeats. A number: sample each point until its noise is below the target "
                "or this many seconds are spent (the nvbench way).",
                flag="--budget",
            ),
            Param(
                "python_budget_s",
                "Python-loop budget per point (s)",
                lambda v: parse_seconds(v, "the Python-loop budget"),
                PYTHON_BUDGET_PER_POINT_S,
                "The Python loop runs only while its estimate fits; above, its estimate is shown, dashed.",
                flag="--python-budget",
            ),
            Param(
                "time_limit_s",
                "Time limit (s)",
                lambda v: parse_seconds(v, "the time limit"),
                None,
                "Stop after this many seconds, keeping the points measured.",
                flag="--time-limit",
                page=False,
            ),
            Param(
                "impls",
                "Implementations",
                _names,
                default_impls,
                f"Comma-separated, from {','.join(IMPLS)}; CuPy and PyTorch run only where installed and a GPU is "
                "present. The kernel that adds 4 elements per thread is not the article's: it shows what the last "
                "part of the bandwidth takes, more loads in flight per thread than one element each provides.",
                widget="multiselect",
                options=IMPLS,
                option_label=lambda impl: IMPL_LABELS[impl],
                flag="--impl",
            ),
            Param(
                "peaks",
                "Measure the physical limits",
                parse_flag,
                True,
                "Device-to-device, pinned host↔device and NumPy host copies: the ceilings on the bandwidth chart.",
                widget="checkbox",
            ),
            Param(
                "warm_l2",
                "Warm L2 cache (do not flush before each GPU sample)",
                parse_flag,
                False,
                "By default the L2 cache is flushed before every timed GPU sample, as nvbench does; warm shows how "
                "much "
                "a cache-resident working set flatters small sizes.",
                widget="checkbox",
            ),
            Param(
                "quick_peaks",
                "Quick limits",
                parse_flag,
                PerBackend(False, True),
                "Measure the limits with 16 MiB buffers (fast, less exact).",
                widget="checkbox",
                page=False,
            ),
        ),
        run=_run,
        work=_work,
        estimate=_estimate,
        measures=_measures,
        result_type=SweepRun,
        page=PageLink(
            "Scaling",
            ":material/trending_up:",
            20,
            "every size of a range: where the GPU starts to win, bandwidth against the limits",
            "pages/2_Scaling.py",
        ),
        order=20,
        history_columns=("threads_per_block", "repeats"),
        check=(
            CheckSection("scaling", parts=(Part(("run",), SweepRun),)),  # run by check.py: scaling_section
        ),
        recorded=Recorded("scaling", read=read_recorded),  # drawn by ui/views/experiments/scaling.py: recorded
        csv=True,
        mark_stopped=lambda run, why: replace(run, stopped=why),
    ),
    aliases=("sweep",),
)


def _bad_spacing(value) -> str:
    raise InputError(f"spacing must be 'pow2' (powers of two) or 'decade' (powers of ten), got {value!r}")



# --- the GPU check's section -------------------------------------------------------------
