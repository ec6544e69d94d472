"""How the vector add is timed, for every experiment that times it: the end-to-end phases
with CUDA events (``time_gpu_phases``), the kernel alone on device-resident data
(``time_resident_kernel``), a CPU implementation within its budget (``time_cpu``), and
the bytes a vector add moves. Vector add, Scaling, Transfers and the check all use these.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from gpu.core import cpu
from gpu.core.backend import cuda
from gpu.core.shape import Shaped, shaped
from gpu.core.timing import (
    Clock,
    PhaseTimer,
    RepeatPolicy,
    Stats,
    collect,
    format_seconds,
)
from gpu.kernels.geometry import blocks_for
from gpu.kernels.vector_add import vector_add_kernel

BYTES_PER_ELEMENT = 12  # float32 vector add reads a and b and writes c: 3 x 4 bytes


# The GPU phases that add up to (at most) the end-to-end time; "launch" exists on hardware only.
GPU_PHASES = ("h2d", "launch", "kernel", "d2h")


# The rules every GPU figure follows, stated with the data (captions quote them).
TIMING_RULES = (
    "device buffers are allocated before any start event: no figure includes allocation",
    "the L2 is flushed before every GPU sample",
    "the kernel alone is timed behind a verified stream hold; an expired hold is retried with a longer one",
    "launch = (interval from inputs copied to kernel done) − median kernel alone",
    "at least 3 samples per series before any time budget stops it; fewer are flagged",
)


DEFAULT_PYTHON_BUDGET_S = cpu.PYTHON_LOOP_BUDGET_S


def effective_bandwidth_gbps(n: int, seconds: float) -> float:
    """GB/s of a vector add of ``n`` float32 elements taking ``seconds`` (12 bytes each)."""
    return BYTES_PER_ELEMENT * n / seconds / 1e9 if seconds > 0 else float("nan")


def _cpu_to_file(timing: CpuTiming, data: dict) -> dict:
    """A measured implementation is its Stats plus compile_s; a skipped one, why and the estimate.
    Its name is the key it is filed under (``VectorAddRun.cpu``)."""
    if data["stats"] is None:
        return {"skipped": data["skipped"], "estimate_s": data["estimate_s"]}
    return {**data["stats"], "compile_s": data["compile_s"]}


def _cpu_from_file(data: dict) -> dict:
    name = data.pop("name", "")
    if "skipped" in data:
        return {"name": name, "stats": None, **data}
    compile_s = data.pop("compile_s", 0.0)
    return {"name": name, "stats": data, "compile_s": compile_s}


@shaped(to_file=_cpu_to_file, from_file=_cpu_from_file)
@dataclass(frozen=True)
class CpuTiming(Shaped):
    """One CPU implementation: measured ``stats``, or skipped with an estimate."""

    name: str
    stats: Stats | None
    compile_s: float = 0.0
    skipped: str | None = None
    estimate_s: float | None = None

    @property
    def median_s(self) -> float:
        """Measured median, or the estimate when skipped (see ``estimated``)."""
        return self.stats.median_s if self.stats is not None else float(self.estimate_s or "nan")

    @property
    def estimated(self) -> bool:
        return self.stats is None


def gpu_vector_add(a: np.ndarray, b: np.ndarray, threads_per_block: int = 256) -> np.ndarray:
    """c = a + b on the device, untimed: copy in, launch, copy out."""
    stream = cuda.stream()
    d_a = cuda.to_device(a, stream=stream)
    d_b = cuda.to_device(b, stream=stream)
    d_c = cuda.device_array(a.size, dtype=np.float32, stream=stream)
    vector_add_kernel[blocks_for(a.size, threads_per_block), threads_per_block, stream](d_a, d_b, d_c)
    out = d_c.copy_to_host(stream=stream)
    stream.synchronize()
    return out


def time_gpu_phases(
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    threads_per_block: int,
    policy: RepeatPolicy,
    clock: Clock = time.perf_counter,
    *,
    flush_l2: bool = True,
    ops=None,
) -> dict[str, Stats]:
    """Time H2D / launch / kernel / D2H with events on one stream, plus wall-clock end to end.

    The rules (README, "How it measures"):

    - allocation: the three device arrays are allocated once, before any start event,
      so no phase includes allocation (H2D once included allocating
      d_c, while some Transfers strategies allocated outside the timing);
    - end to end: each sample runs the program as a user would (copy a and b in,
      launch, copy c out) with an event between phases; the L2 is flushed first and
      the stream synchronised before the wall clock starts, so no figure includes the
      flush (it inflated small-N end-to-end times);
      "with_launch" is the interval from "inputs copied" to "kernel done", which holds
      the host's launch latency too; "total" is the wall clock of the sample;
    - kernel alone: its own series, with its own stopping rule, on the same device
      arrays behind a verified stream hold with the L2 flushed
      (``gpu.core.kernel_timing.time_on_device``);
    - launch: per end-to-end sample, with_launch minus the median kernel alone, floored
      at 0 (at large N the kernel's own sample-to-sample noise is larger than the
      launch latency, and a negative share would not draw).

    The kernel is launched through ``gpu.core.launch_path.configured_launch`` (prepared
    once for these device arrays). Writes the last end-to-end sample's result into ``out``. Without a
    stream hold (simulator, old GPU) the kernel series is with_launch and there is no
    "launch". Returns Stats (seconds) for "h2d", "launch" (with a hold), "kernel",
    "d2h", "total" and "with_launch"; h2d + with_launch + d2h <= total per sample.
    """
    from gpu.core.hold import default_ops
    from gpu.core.kernel_timing import flush_and_settle, time_on_device
    from gpu.core.launch_path import configured_launch, launch_label

    n = a.size
    blocks = blocks_for(n, threads_per_block)
    stream = cuda.stream()
    ops = ops or default_ops(clock)
    timer = PhaseTimer(stream, ("h2d", "with_launch", "d2h"), clock=clock, ops=ops)
    # allocated once, before any start event: allocation is in no figure
    d_a = cuda.device_array(n, dtype=np.float32, stream=stream)
    d_b = cuda.device_array(n, dtype=np.float32, stream=stream)
    d_c = cuda.device_array(n, dtype=np.float32, stream=stream)
    stream.synchronize()
    launch = configured_launch(vector_add_kernel, blocks, threads_per_block, stream, d_a, d_b, d_c)

    def once() -> dict[str, float]:
        flush_and_settle(ops, stream, flush_l2)  # flushed and finished before the clock starts
        started = clock()
        timer.start()
        d_a.copy_to_device(a, stream=stream)
        d_b.copy_to_device(b, stream=stream)
        timer.end("h2d")
        launch(d_a, d_b, d_c)
        timer.end("with_launch")
        d_c.copy_to_host(out, stream=stream)
        timer.end("d2h")
        phases = timer.durations_s()  # waits for the stream
        phases["total"] = clock() - started
        return phases

    stats = collect(once, policy, clock=clock)
    if not ops.can_hold:  # simulator, or a GPU without nanosleep: the launch cannot be separated
        stats["kernel"] = stats["with_launch"]
        return {p: stats[p] for p in ("h2d", "kernel", "d2h", "total", "with_launch")}
    kernel = time_on_device(queue=lambda: launch(d_a, d_b, d_c), stream=stream, policy=policy, clock=clock,
                            launch_label=launch_label(launch), flush_l2=flush_l2,
                            telemetry=False, ops=ops).stats
    stats["kernel"] = kernel
    stats["launch"] = Stats(tuple(max(0.0, s - kernel.median_s) for s in stats["with_launch"].samples_s))
    return {p: stats[p] for p in (*GPU_PHASES, "total", "with_launch")}


def time_resident_kernel(
    kernel,
    blocks: int,
    threads_per_block: int,
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    policy: RepeatPolicy,
    *,
    flush_l2: bool = True,
    ops=None,
) -> Stats:
    """Time ``kernel[blocks, threads_per_block](a, b, c)`` alone on device-resident data.

    Inputs are copied in once and the output allocated once, outside the timing; each
    sample is the kernel alone (``gpu.core.kernel_timing.time_on_device``: launch
    configured once, verified hold, L2 flushed unless ``flush_l2`` is False). The
    result is copied into ``out`` afterwards so it can be checked. Returns Stats in seconds.
    """
    from gpu.core.kernel_timing import time_on_device

    stream = cuda.stream()
    d_a = cuda.to_device(a, stream=stream)
    d_b = cuda.to_device(b, stream=stream)
    d_c = cuda.device_array(a.size, dtype=np.float32, stream=stream)
    stream.synchronize()
    stats = time_on_device(
        kernel,
        (d_a, d_b, d_c),
        blocks,
        threads_per_block,
        policy=policy,
        stream=stream,
        working_set_bytes=BYTES_PER_ELEMENT * a.size,
        flush_l2=flush_l2,
        telemetry=False,
        ops=ops,
    ).stats
    d_c.copy_to_host(out, stream=stream)
    stream.synchronize()
    return stats


def time_kernel_on_resident(
    kernel, blocks: int, threads_per_block: int, resident, policy: RepeatPolicy, *, flush_l2: bool = True, ops=None
) -> tuple[Stats, bool]:
    """``time_resident_kernel`` on inputs already on the device (``gpu.core.resident.ResidentInputs``):
    only the output is allocated, and the result is checked against NumPy's a + b on the device.
    Returns (Stats in seconds, bit-identical)."""
    from gpu.core.kernel_timing import time_on_device

    d_c = cuda.device_array(resident.a.size, dtype=np.float32, stream=resident.stream)
    stats = time_on_device(
        kernel, (resident.a, resident.b, d_c), blocks, threads_per_block, policy=policy, stream=resident.stream,
        working_set_bytes=BYTES_PER_ELEMENT * resident.a.size, flush_l2=flush_l2, telemetry=False, ops=ops,
    ).stats
    return stats, resident.identical(d_c)


def time_cpu(
    name: str,
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    policy: RepeatPolicy,
    python_budget_s: float = DEFAULT_PYTHON_BUDGET_S,
) -> CpuTiming:
    """Time one CPU implementation into ``out``; the Python loop only if it fits the budget."""
    fn = cpu.IMPLEMENTATIONS[name]
    compile_s = cpu.compile_cpu(name)

    def once() -> dict[str, float]:
        start = time.perf_counter()
        fn(a, b, out)
        return {"cpu": time.perf_counter() - start}

    if name == "python":
        estimate = cpu.estimate_python_loop_s(a.size)
        if estimate > python_budget_s:
            out[:] = np.nan  # nothing computed: agreement is not checked
            return CpuTiming(
                name,
                None,
                skipped=f"estimated {format_seconds(estimate)}, over the {python_budget_s:g} s budget",
                estimate_s=estimate,
            )
        # As many samples as the budget allows, no warm-up (nothing to warm up).
        repeats = max(1, min(policy.n_repeat, int(python_budget_s // max(estimate, 1e-9))))
        policy = RepeatPolicy(n_repeat=repeats, warmup=0)
    stats = collect(once, policy)["cpu"]
    return CpuTiming(name, stats, compile_s=compile_s)
