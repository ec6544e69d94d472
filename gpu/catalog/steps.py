"""The kernel-steps engine: one way to run every step of any catalog kernel.

A catalog kernel is a ``KernelSpec``: how to make its inputs, its one output, its GPU
steps (Numba kernels from naive to near the hardware), its library references (CuPy,
PyTorch, a device copy), its CPU implementations, its reference for agreement, and the
bytes and FLOPs the algorithm must move and do at least. ``run_kernel`` runs all of it
the same way for every kernel:

1. inputs made once (seeded), the reference computed once;
2. each GPU step: device arrays (and any scratch arrays it declares) allocated and the
   launch configured once, before any sample (a step of several passes: each pass, queued
   in order as one launch, so every pass is inside every timed region); per end-to-end
   sample the L2 is flushed and the stream synchronised, then H2D copies,
   the launch and D2H are timed with events on one stream (``PhaseTimer``)
   and the wall clock; then the kernel alone is its own series, timed by
   ``gpu.core.kernel_timing.time_on_device`` (verified hold, per-sample held flag and
   retries kept), and launch = with launch − median kernel alone; the last end-to-end
   sample's output is checked;
3. each library on device-resident inputs (gpu/catalog/libraries.py), timed by ``time_on_device`` on the same
   stream (without the hold, and labelled, for a call that waits on the GPU from the host);
4. each CPU implementation, wall clock, after a warm-up run; the slow ones only when a
   probe's estimate fits the budget, else estimated and labelled;

a step or library that raises (an expired hold included) is recorded in its own row with
its error, and the others keep their results. Telemetry covers the whole run. Returns
one frozen ``KernelRun`` (gpu/catalog/step_result.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gpu.catalog.base import Params, Progress
from gpu.catalog.libraries import Library, library_problem, time_library
from gpu.catalog.step_result import ImplResult, KernelRun
from gpu.core.agreement import BoundedReference, ExactReference
from gpu.core.backend import BACKEND, cuda
from gpu.core.device import device_info
from gpu.core.hold import default_ops, stream_hold_problem
from gpu.core.kernel_timing import KernelTiming, flush_and_settle, time_on_device
from gpu.core.l2 import flush_problem, l2_cache_bytes
from gpu.core.launch_path import configured_launch
from gpu.core.limits import InputError
from gpu.core.roofline import device_roofs
from gpu.core.telemetry import TelemetryMonitor
from gpu.core.timing import (
    PhaseTimer,
    RepeatPolicy,
    Stats,
    collect,
    format_seconds,
)

Arrays = Mapping[str, Any]
GPU_PHASES = ("h2d", "launch", "kernel", "d2h")  # add up to at most "total" (allocation is in no phase)
DEFAULT_CPU_BUDGET_S = 10.0  # a slow CPU implementation runs fully only if its estimate fits this


@dataclass(frozen=True)
class Output:
    """The one array a kernel produces. ``zeroed``: atomics add into it, so it starts at zero."""

    shape: Callable[[Params], tuple[int, ...]]
    dtype: Any
    zeroed: bool = False

    def zeros(self, params: Params) -> np.ndarray:
        """A host array for it at ``params``, zeroed (an accumulating output starts there; any other is overwritten)."""
        return np.zeros(self.shape(params), dtype=self.dtype)


@dataclass(frozen=True)
class Scalar:
    """A scalar argument of a step: ``value(params)``, passed as a NumPy ``dtype`` scalar so that
    Numba types it as declared (a Python float would be float64) and LAUNCHES can name it."""

    name: str
    dtype: Any
    value: Callable[[Params], Any]

    def of(self, params: Params) -> Any:
        return np.dtype(self.dtype).type(self.value(params))


@dataclass(frozen=True)
class Scratch:
    """A device array a step allocates once, before any sample, for one pass to hand to the next."""

    name: str
    shape: Callable[[Params], tuple[int, ...]]
    dtype: Any


@dataclass(frozen=True)
class Pass:
    """A further launch of a step, queued after the step's own kernel on the same stream:
    ``kernel[grid(p), block(p), stream](*args)``, ``args`` naming the spec's inputs, the step's
    scratch arrays and scalars, and ``"out"``."""

    kernel: Any
    grid: Callable[[Params], Any]
    block: Callable[[Params], Any]
    args: tuple[str, ...]


@dataclass(frozen=True)
class Step:
    """One GPU step: ``kernel[grid(p), block(p), stream](*inputs, output)``.

    ``depth(p)`` is the summation depth k the float32 bound assumes (bounded checks only).
    ``needs`` names a feature the CUDA simulator lacks; the step is then skipped there.

    A step may also pass scalars and launch in several passes: ``args`` names the kernel's
    arguments in order (the spec's inputs, ``scratch`` arrays, ``scalars`` and ``"out"``;
    default: the inputs, then ``"out"``), and ``then`` lists the launches queued after it
    (``Pass``). Every pass is inside the step's timed region (``launches``).
    """

    key: str
    label: str
    kernel: Any
    grid: Callable[[Params], Any]
    block: Callable[[Params], Any]
    changed: str  # one line: what this step changes from the previous one
    depth: Callable[[Params], int] | None = None
    needs: str | None = None
    helpers: tuple[Any, ...] = ()  # device functions the kernel calls (shown with its source)
    args: tuple[str, ...] = ()  # the kernel's arguments by name; () is the inputs, then "out"
    scalars: tuple[Scalar, ...] = ()
    scratch: tuple[Scratch, ...] = ()
    then: tuple[Pass, ...] = ()  # launches after this one, in order

    def geometry(self, params: Params) -> str:
        fmt = lambda v: " × ".join(f"{x:,}" for x in v) if isinstance(v, tuple) else f"{v:,}"  # noqa: E731
        blocks = lambda g: f"{fmt(g)} block" + ("" if g == 1 else "s")  # noqa: E731
        return ", then ".join(f"{blocks(p.grid(params))} of {fmt(p.block(params))} threads" for p in self.passes(()))

    def passes(self, inputs: Sequence[str]) -> tuple[Pass, ...]:
        """Every launch of the step, in order: its own kernel (arguments named), then ``then``."""
        first = Pass(self.kernel, self.grid, self.block, self.args or (*inputs, "out"))
        return (first, *self.then)

    def launches(
        self, params: Params, inputs: Mapping[str, Any], out: Any, alloc: Callable[..., Any] | None = None
    ) -> list[tuple[Any, Any, Any, tuple]]:
        """``[(kernel, grid, block, args)]`` for every pass, the arguments resolved by name from
        ``inputs``, the scratch arrays (made by ``alloc(shape, dtype)``, once per call), the
        scalars and ``out``: what the engine, the simulator tests and a trace launch."""
        alloc = alloc or (lambda shape, dtype: cuda.device_array(shape, dtype))
        named = {**inputs, "out": out, **{s.name: s.of(params) for s in self.scalars}}
        named.update({s.name: alloc(s.shape(params), s.dtype) for s in self.scratch})
        return [
            (p.kernel, p.grid(params), p.block(params), tuple(named[a] for a in p.args))
            for p in self.passes(list(inputs))
        ]

    def configured(
        self, params: Params, inputs: Sequence[Any], out: Any, stream, names: Sequence[str] | None = None
    ) -> Callable[..., None]:
        """``launch(*inputs, out)``, configured once (``gpu.core.launch_path``) for these device arrays.

        A step with scalars, scratch arrays or further passes (give the inputs' ``names``) is
        configured for these arrays: the scratch is allocated here, once, and ``launch``
        queues every pass in order on ``stream`` (its arguments are ignored).
        """
        if not (self.args or self.scalars or self.scratch or self.then):
            return configured_launch(self.kernel, self.grid(params), self.block(params), stream, *inputs, out)
        by_name = dict(zip(names if names is not None else [f"input{i}" for i in range(len(inputs))], inputs))
        alloc = lambda shape, dtype: cuda.device_array(shape, dtype, stream=stream)  # noqa: E731
        resolved = self.launches(params, by_name, out, alloc)
        queued = [(configured_launch(kernel, grid, block, stream, *args), args)
                  for kernel, grid, block, args in resolved]

        def launch(*_ignored) -> None:
            for configured, args in queued:
                configured(*args)

        return launch


@dataclass(frozen=True)
class CpuImpl:
    """A CPU implementation writing into ``out``: ``fn(*inputs, out)``.

    ``budgeted``: run fully only when a probe-size run, scaled by ``KernelSpec.cost``,
    says it fits the budget. ``jit``: a Numba function, compiled (timed apart) first.
    """

    key: str
    label: str
    fn: Callable[..., None]
    budgeted: bool = False
    jit: bool = False
    depth: Callable[[Params], int] | None = None


@dataclass(frozen=True)
class KernelSpec:
    """Everything the engine needs about one catalog kernel (see the module docstring)."""

    key: str
    title: str
    make_inputs: Callable[[Params, int], dict[str, np.ndarray]]
    output: Output
    steps: tuple[Step, ...]
    libraries: tuple[Library, ...]
    cpu: tuple[CpuImpl, ...]
    reference: Callable[[Mapping[str, np.ndarray], Params], ExactReference | BoundedReference]
    bytes_moved: Callable[[Params], int]  # the algorithm's minimum: each input read once, the output written once
    flops: Callable[[Params], int]
    size_label: Callable[[Params], str]
    cost: Callable[[Params], float]  # CPU work units (elements, or multiply-adds) for estimates
    probe: Callable[[Params], Params]  # a small problem of the same kind, for estimates
    notes: tuple[str, ...] = ()  # shown with the results (e.g. "TF32 disabled")
    agreement_why: str = ""  # one clause: why this kernel's check is exact (or bounded), shown beside the verdict

    def cpu_impl(self, key: str) -> CpuImpl:
        for impl in self.cpu:
            if impl.key == key:
                return impl
        raise InputError(
            f"{self.title}: unknown CPU implementation {key!r}; choose from {', '.join(i.key for i in self.cpu)}"
        )


# --- GPU steps ---------------------------------------------------------------------


def time_step(
    spec: KernelSpec,
    step: Step,
    params: Params,
    inputs: Mapping[str, np.ndarray],
    policy: RepeatPolicy,
    clock=time.perf_counter,
    *,
    l2_bytes: int | None = None,
    ops=None,
) -> tuple[dict[str, Stats], np.ndarray, float, KernelTiming | None]:
    """Time one GPU step per ``policy``.

    Returns (phase Stats in seconds, the last end-to-end output, seconds to configure the
    launch and run it once — the compile, or the load from Numba's cache — and the kernel
    alone's ``KernelTiming``, None where no hold is possible).

    Device arrays are allocated and the launch configured once, before any sample. Each
    end-to-end sample: L2 flushed and the stream synchronised, then the wall clock and
    the events: inputs (and, when the output accumulates, zeros) copied in ("h2d"), the
    kernel with its launch ("with_launch"), the output copied out ("d2h"); "total" is the
    wall clock. With a hold, "kernel" is its own series (``time_on_device``) and
    "launch" = with_launch − median kernel per sample, floored at 0; without one,
    "kernel" is with_launch and says so (held False).
    """
    ops = ops or default_ops(clock)
    stream = cuda.stream()
    host_out = spec.output.zeros(params)
    zeros = np.zeros_like(host_out) if spec.output.zeroed else None
    names = list(inputs)
    timer = PhaseTimer(stream, ("h2d", "with_launch", "d2h"), clock=clock, ops=ops)
    # allocated once, before any start event: allocation is in no figure
    d_in = [cuda.device_array(inputs[k].shape, inputs[k].dtype, stream=stream) for k in names]
    d_out = cuda.device_array(host_out.shape, host_out.dtype, stream=stream)
    stream.synchronize()

    def once() -> dict[str, float]:
        flush_and_settle(ops, stream, True)  # flushed and finished before the clock starts
        started = clock()
        timer.start()
        for d, k in zip(d_in, names):
            d.copy_to_device(inputs[k], stream=stream)
        if zeros is not None:
            d_out.copy_to_device(zeros, stream=stream)
        timer.end("h2d")
        launch(*d_in, d_out)
        timer.end("with_launch")
        d_out.copy_to_host(host_out, stream=stream)
        timer.end("d2h")
        phases = timer.durations_s()  # waits for the stream
        phases["total"] = clock() - started
        return phases

    start = clock()
    launch = step.configured(params, d_in, d_out, stream, names)  # specialising compiles on a GPU
    first_s = 0.0
    if not BACKEND.simulated:  # the first run compiles (or loads from Numba's cache): timed apart
        once()
        first_s = clock() - start
    stats = collect(once, policy, clock=clock)
    timing = None
    if ops.can_hold:  # the result is already copied out: re-running into d_out changes nothing we check
        timing = time_on_device(
            queue=lambda: launch(*d_in, d_out),
            stream=stream,
            policy=policy,
            clock=clock,
            launch_label="configured once (specialised dispatcher)",
            ops=ops,
            working_set_bytes=int(spec.bytes_moved(params)),
            l2_bytes=l2_bytes,
            telemetry=False,
        )
        stats["kernel"] = timing.stats
        stats["launch"] = Stats(tuple(max(0.0, s - timing.median_s) for s in stats["with_launch"].samples_s))
    else:  # simulator, or no nanosleep: the kernel's samples include the launch
        stats["kernel"] = replace(stats["with_launch"], held=False)
    return {p: stats[p] for p in (*GPU_PHASES, "total") if p in stats}, host_out, first_s, timing


# --- library references ------------------------------------------------------------


# --- CPU implementations -----------------------------------------------------------


def time_cpu(
    spec: KernelSpec,
    impl: CpuImpl,
    params: Params,
    inputs: Mapping[str, np.ndarray],
    policy: RepeatPolicy,
    budget_s: float,
) -> tuple[ImplResult, np.ndarray | None]:
    """Time one CPU implementation. Returns (its result, its output or None when it was only estimated).

    A budgeted implementation first runs once on the probe problem; the estimate is that
    time scaled by ``spec.cost``. Over the budget it is not run and the result says so.
    """
    args = list(inputs.values())
    compile_s, estimate = 0.0, None
    if impl.jit or impl.budgeted:
        probe = spec.probe(params)
        probe_inputs = list(spec.make_inputs(probe, 1).values())
        probe_out = spec.output.zeros(probe)
        if impl.jit:  # the first call compiles: timed apart, never in a sample
            start = time.perf_counter()
            impl.fn(*probe_inputs, probe_out)
            compile_s = time.perf_counter() - start
        if impl.budgeted:
            start = time.perf_counter()
            impl.fn(*probe_inputs, spec.output.zeros(probe))
            estimate = (time.perf_counter() - start) * spec.cost(params) / max(spec.cost(probe), 1)
            if estimate > budget_s:
                why = f"estimated {format_seconds(estimate)} per run, over the {budget_s:g} s budget"
                return ImplResult(
                    impl.key, impl.label, "cpu", skipped=why, estimate_s=estimate, compile_s=compile_s
                ), None
            # As many samples as the budget allows; no warm-up (the probe already ran it once).
            policy = RepeatPolicy(n_repeat=max(1, min(policy.n_repeat, int(budget_s // max(estimate, 1e-9)))), warmup=0)
    else:
        # the simulator's policy skips warm-up (no GPU to warm), but the CPU has caches,
        # page faults and lazy imports to warm as on any machine: one warm-up run always.
        # The CPU budget bounds every CPU implementation, not only the budgeted ones: the
        # repeats, or as many as fit the budget (at least the policy's minimum). On the H200
        # NumPy's a.T copy of 16,384² took 6.1 s a run, and ten of them held the check a minute.
        policy = replace(policy, warmup=max(policy.warmup, 1), max_noise=1e-12,
                         budget_s=min(policy.budget_s or budget_s, budget_s))
    out = spec.output.zeros(params)

    def once() -> dict[str, float]:
        if spec.output.zeroed:
            out[...] = 0
        start = time.perf_counter()
        impl.fn(*args, out)
        return {"cpu": time.perf_counter() - start}

    stats = collect(once, policy)
    return ImplResult(impl.key, impl.label, "cpu", phases=stats, compile_s=compile_s, estimate_s=estimate), out


# --- the run -----------------------------------------------------------------------


def simulator_skip(needs: str) -> str:
    return f"not run: Numba's CUDA simulator has no {needs}; this step runs on a GPU or in Kernel Lab's simulator"


def run_kernel(
    spec: KernelSpec,
    params: Params,
    policy: RepeatPolicy,
    cpu_keys: Sequence[str] = (),
    *,
    cpu_budget_s: float = DEFAULT_CPU_BUDGET_S,
    seed: int = 0,
    on_progress: Progress | None = None,
) -> KernelRun:
    """Run every step, library and chosen CPU implementation of ``spec`` on one problem.

    ``params`` are parsed (the declaration's parsers validated them). Returns a KernelRun.
    """
    progress = Progress.of(on_progress)  # each part begins by id: the declaration's plan (gpu/catalog/estimate.py)
    impls = [spec.cpu_impl(key) for key in dict.fromkeys(cpu_keys)]
    warnings: list[str] = []
    if not BACKEND.simulated and (hold_problem := stream_hold_problem()) is not None:
        warnings.append(hold_problem)
    if (flush_note := flush_problem()) is not None:
        warnings.append(flush_note)

    progress.begin("prepare", "preparing the inputs and the reference")
    inputs = spec.make_inputs(params, seed)
    reference = spec.reference(inputs, params)

    def check(name: str, out: np.ndarray, depth: Callable[[Params], int] | None):
        return reference.check(name, out, depth(params) if depth is not None else None)

    l2_bytes = l2_cache_bytes()
    monitor = TelemetryMonitor().start()  # clocks and throttling over the whole run
    results: list[ImplResult] = []
    try:
        for step in spec.steps:
            if step.needs and BACKEND.simulated and not BACKEND.lab_simulator:
                results.append(
                    ImplResult(
                        step.key, step.label, "step", skipped=simulator_skip(step.needs), launch=step.geometry(params)
                    )
                )
                continue
            progress.begin(f"step:{step.key}", f"timing step {step.label}")
            try:
                stats, out, first_s, timing = time_step(spec, step, params, inputs, policy, l2_bytes=l2_bytes)
            except Exception as exc:  # an expired hold, a launch failure: this row only, the others stay
                results.append(
                    ImplResult(
                        step.key, step.label, "step", error=f"{type(exc).__name__}: {exc}", launch=step.geometry(params)
                    )
                )
                continue
            results.append(
                ImplResult(
                    step.key,
                    step.label,
                    "step",
                    phases=stats,
                    compile_s=first_s,
                    timing=timing,
                    agreement=check(step.key, out, step.depth),
                    launch=step.geometry(params),
                )
            )
        for lib in spec.libraries:
            problem = library_problem(lib)
            if problem is not None:
                results.append(
                    ImplResult(lib.key, lib.label, "library", skipped=problem, same_work=lib.same_work, note=lib.note)
                )
                continue
            progress.begin(f"library:{lib.key}", f"timing {lib.label}")
            try:
                timing, out = time_library(lib, inputs, spec.output.zeros(params), policy, zeroed=spec.output.zeroed,
                                           working_set_bytes=int(spec.bytes_moved(params)), l2_bytes=l2_bytes)
            except Exception as exc:  # a library failing must not lose the run: its row says why
                results.append(
                    ImplResult(
                        lib.key,
                        lib.label,
                        "library",
                        error=f"{type(exc).__name__}: {exc}",
                        same_work=lib.same_work,
                        note=lib.note,
                    )
                )
                continue
            agreement = check(lib.key, out, lib.depth) if lib.same_work else None  # a yardstick computes something else
            results.append(
                ImplResult(
                    lib.key,
                    lib.label,
                    "library",
                    phases={"kernel": timing.stats},
                    timing=timing,
                    agreement=agreement,
                    same_work=lib.same_work,
                    note=lib.note,
                )
            )
        for impl in impls:
            progress.begin(f"cpu:{impl.key}", f"timing the CPU: {impl.label}")
            try:
                result, cpu_out = time_cpu(spec, impl, params, inputs, policy, cpu_budget_s)
            except Exception as exc:  # a CPU implementation failing keeps the GPU results
                results.append(ImplResult(impl.key, impl.label, "cpu", error=f"{type(exc).__name__}: {exc}"))
                continue
            if cpu_out is not None:
                result = replace(result, agreement=check(impl.key, cpu_out, impl.depth))
            results.append(result)
    finally:
        telemetry = monitor.stop()

    device = device_info()
    return KernelRun(
        kernel=spec.key,
        title=spec.title,
        params=dict(params),
        size=spec.size_label(params),
        backend=BACKEND.kind,
        device=device,
        roofs=device_roofs(device),
        policy=policy,
        bytes_moved=int(spec.bytes_moved(params)),
        flops=int(spec.flops(params)),
        results=tuple(results),
        agreement_mode=reference.mode,
        notes=spec.notes,
        agreement_why=spec.agreement_why,
        warnings=tuple(warnings),
        seed=seed,
        l2_bytes=l2_bytes,
        telemetry=telemetry,
    )


__all__ = [
    "CpuImpl",
    "DEFAULT_CPU_BUDGET_S",
    "GPU_PHASES",
    "KernelSpec",
    "Library",
    "Output",
    "Pass",
    "Scalar",
    "Scratch",
    "Step",
    "run_kernel",
    "time_step",
]
