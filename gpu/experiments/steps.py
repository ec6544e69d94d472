"""The kernel-steps engine: one way to run every step of any catalog kernel.

A catalog kernel is a ``KernelSpec``: how to make its inputs, its one output, its GPU
steps (Numba kernels from naive to near the hardware), its library references (CuPy,
PyTorch, a device copy), its CPU implementations, its reference for agreement, and the
bytes and FLOPs the algorithm must move and do at least. ``run_kernel`` runs all of it
the same way for every kernel:

1. inputs made once (seeded), the reference computed once;
2. each GPU step: per sample, device allocation, H2D copies, the launch, D2H, each
   timed with events on one stream (``PhaseTimer``), then the kernel alone behind the
   stream-holding kernel (``time_kernel``); the last sample's output is checked;
3. each library on device-resident inputs, timed by ``time_kernel`` on the same stream;
4. each CPU implementation, wall clock; the slow ones only when a probe's estimate
   fits the budget, else estimated and labelled;

and returns one frozen ``KernelRun`` (gpu/experiments/step_result.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from gpu.core.agreement import BoundedReference, ExactReference
from gpu.core.backend import BACKEND, cuda
from gpu.core.device import device_info
from gpu.core.hold import stream_hold_problem
from gpu.core.limits import InputError
from gpu.core.reference import unavailable_reason
from gpu.core.roofline import device_roofs
from gpu.core.timing import (
    PhaseTimer,
    RepeatPolicy,
    Stats,
    collect,
    format_seconds,
    time_kernel,
)
from gpu.experiments.base import Params, Progress
from gpu.experiments.step_result import ImplResult, KernelRun

Arrays = Mapping[str, Any]
GPU_PHASES = ("alloc", "h2d", "launch", "kernel", "d2h")  # add up to at most "total"
DEFAULT_CPU_BUDGET_S = 10.0  # a slow CPU implementation runs fully only if its estimate fits this


@dataclass(frozen=True)
class Output:
    """The one array a kernel produces. ``zeroed``: atomics add into it, so it starts at zero."""

    shape: Callable[[Params], tuple[int, ...]]
    dtype: Any
    zeroed: bool = False


@dataclass(frozen=True)
class Step:
    """One GPU step: ``kernel[grid(p), block(p), stream](*inputs, output)``.

    ``depth(p)`` is the summation depth k the float32 bound assumes (bounded checks only).
    ``needs`` names a feature the CUDA simulator lacks; the step is then skipped there.
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

    def geometry(self, params: Params) -> str:
        grid, block = self.grid(params), self.block(params)
        fmt = lambda v: " × ".join(f"{x:,}" for x in v) if isinstance(v, tuple) else f"{v:,}"  # noqa: E731
        return f"{fmt(grid)} blocks of {fmt(block)} threads"

    def launch(self, params: Params, inputs: Sequence[Any], out: Any, stream) -> None:
        self.kernel[self.grid(params), self.block(params), stream](*inputs, out)


@dataclass(frozen=True)
class Library:
    """A reference on the GPU. ``fn(xp, inputs, out)`` queues the work with library ``module``
    ("cupy", "torch"), or with Numba (``module`` None: ``fn(stream, inputs, out)``).
    ``same_work`` False: a yardstick (a copy of the same bytes), not the same computation."""

    key: str
    label: str
    module: str | None
    fn: Callable[..., None]
    depth: Callable[[Params], int] | None = None
    same_work: bool = True


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

    def cpu_impl(self, key: str) -> CpuImpl:
        for impl in self.cpu:
            if impl.key == key:
                return impl
        raise InputError(f"{self.title}: unknown CPU implementation {key!r}; choose from {', '.join(i.key for i in self.cpu)}")


# --- GPU steps ---------------------------------------------------------------------


def _zeros_or_empty(spec: KernelSpec, params: Params) -> np.ndarray:
    return np.zeros(spec.output.shape(params), dtype=spec.output.dtype)


def time_step(spec: KernelSpec, step: Step, params: Params, inputs: Mapping[str, np.ndarray], policy: RepeatPolicy,
              clock=time.perf_counter) -> tuple[dict[str, Stats], np.ndarray, float]:
    """Time one GPU step per ``policy``; returns (phase Stats in seconds, last output, first-launch seconds).

    Each sample: allocate every device array ("alloc"), copy the inputs in and, when the
    output accumulates, zeros ("h2d"), launch ("launch" + "kernel"), copy the output out
    ("d2h"); then, on hardware, the kernel alone behind the stream-holding kernel, which
    splits the launch from Python off the kernel. "total" is wall clock end to end.
    """
    stream = cuda.stream()
    host_out = _zeros_or_empty(spec, params)
    names = list(inputs)
    timer = PhaseTimer(stream, ("alloc", "h2d", "launch_and_kernel", "d2h"), clock=clock)
    holds = stream_hold_problem() is None
    alone_policy = RepeatPolicy.count(1, warmup=0)

    def once() -> dict[str, float]:
        started = clock()
        timer.start()
        d_in = [cuda.device_array(inputs[k].shape, inputs[k].dtype, stream=stream) for k in names]
        d_out = cuda.device_array(host_out.shape, host_out.dtype, stream=stream)
        timer.end("alloc")
        for d, k in zip(d_in, names):
            d.copy_to_device(inputs[k], stream=stream)
        if spec.output.zeroed:
            d_out.copy_to_device(np.zeros_like(host_out), stream=stream)
        timer.end("h2d")
        step.launch(params, d_in, d_out, stream)
        timer.end("launch_and_kernel")
        d_out.copy_to_host(host_out, stream=stream)
        timer.end("d2h")
        phases = timer.durations_s()  # waits for the stream
        total = clock() - started
        with_launch = phases.pop("launch_and_kernel")
        if holds:  # the result is already copied out: re-running into d_out changes nothing we check
            alone = time_kernel(lambda: step.launch(params, d_in, d_out, stream), stream, alone_policy, clock).median_s
            phases["kernel"] = min(alone, with_launch)
            phases["launch"] = with_launch - phases["kernel"]
        else:
            phases["kernel"] = with_launch
        phases["total"] = total
        return {p: phases[p] for p in (*GPU_PHASES, "total") if p in phases}

    first_s = 0.0
    if not BACKEND.simulated:  # the first launch compiles (or loads from Numba's cache): timed apart
        start = clock()
        once()
        first_s = clock() - start
    stats = collect(once, policy, noise_key="total", clock=clock)
    return stats, host_out, first_s


# --- library references ------------------------------------------------------------


def _stream_pointer(stream) -> int:
    handle = stream.handle
    return int(getattr(handle, "value", handle) or 0)


def _library_launcher(lib: Library, d_in: list, d_out, stream) -> Callable[[], None]:
    """A zero-argument launch that queues ``lib``'s work on ``stream`` (Numba's), so that
    ``time_kernel`` times it exactly as it times the Numba steps."""
    if lib.module is None:
        return lambda: lib.fn(stream, d_in, d_out)
    if lib.module == "cupy":
        import cupy as cp

        outer = cp.cuda.ExternalStream(_stream_pointer(stream))
        ins, out = [cp.asarray(d) for d in d_in], cp.asarray(d_out)

        def launch() -> None:
            with outer:
                lib.fn(cp, ins, out)

        return launch
    import torch

    outer = torch.cuda.ExternalStream(_stream_pointer(stream))
    # PyTorch has few uint32 kernels; counts below 2^31 have the same bits as int32
    as_torch = lambda d: torch.as_tensor(d.view(np.int32) if d.dtype == np.uint32 else d, device="cuda")  # noqa: E731
    ins, out = [as_torch(d) for d in d_in], as_torch(d_out)

    def launch() -> None:
        with torch.cuda.stream(outer):
            lib.fn(torch, ins, out)

    return launch


def time_library(spec: KernelSpec, lib: Library, params: Params, inputs: Mapping[str, np.ndarray],
                 policy: RepeatPolicy) -> tuple[Stats, np.ndarray]:
    """Time ``lib`` on device-resident inputs (copied in once, outside the timing); returns (Stats, output)."""
    stream = cuda.stream()
    d_in = [cuda.to_device(a, stream=stream) for a in inputs.values()]
    host_out = _zeros_or_empty(spec, params)
    d_out = cuda.to_device(host_out, stream=stream)
    stream.synchronize()
    stats = time_kernel(_library_launcher(lib, d_in, d_out, stream), stream, policy)
    d_out.copy_to_host(host_out, stream=stream)
    stream.synchronize()
    return stats, host_out


def library_problem(lib: Library) -> str | None:
    """None when ``lib`` can run here, else why not."""
    if lib.module is None:
        return None
    if BACKEND.simulated:
        return f"{lib.label} needs a real GPU; kernels run in the CUDA simulator here"
    return unavailable_reason(lib.module)


# --- CPU implementations -----------------------------------------------------------


def time_cpu(spec: KernelSpec, impl: CpuImpl, params: Params, inputs: Mapping[str, np.ndarray], policy: RepeatPolicy,
             budget_s: float) -> tuple[ImplResult, np.ndarray | None]:
    """Time one CPU implementation. Returns (its result, its output or None when it was only estimated).

    A budgeted implementation first runs once on the probe problem; the estimate is that
    time scaled by ``spec.cost``. Over the budget it is not run and the result says so.
    """
    args = list(inputs.values())
    compile_s, estimate = 0.0, None
    if impl.jit or impl.budgeted:
        probe = spec.probe(params)
        probe_inputs = list(spec.make_inputs(probe, 1).values())
        probe_out = _zeros_or_empty(spec, probe)
        if impl.jit:  # the first call compiles: timed apart, never in a sample
            start = time.perf_counter()
            impl.fn(*probe_inputs, probe_out)
            compile_s = time.perf_counter() - start
        if impl.budgeted:
            start = time.perf_counter()
            impl.fn(*probe_inputs, _zeros_or_empty(spec, probe))
            estimate = (time.perf_counter() - start) * spec.cost(params) / max(spec.cost(probe), 1)
            if estimate > budget_s:
                why = f"estimated {format_seconds(estimate)} per run, over the {budget_s:g} s budget"
                return ImplResult(impl.key, impl.label, "cpu", skipped=why, estimate_s=estimate, compile_s=compile_s), None
            # As many samples as the budget allows; no warm-up (the probe already ran it once).
            policy = RepeatPolicy(n_repeat=max(1, min(policy.n_repeat, int(budget_s // max(estimate, 1e-9)))), warmup=0)
    out = _zeros_or_empty(spec, params)

    def once() -> dict[str, float]:
        if spec.output.zeroed:
            out[...] = 0
        start = time.perf_counter()
        impl.fn(*args, out)
        return {"cpu": time.perf_counter() - start}

    stats = collect(once, policy, noise_key="cpu")
    return ImplResult(impl.key, impl.label, "cpu", phases=stats, compile_s=compile_s, estimate_s=estimate), out


# --- the run -----------------------------------------------------------------------


def simulator_skip(needs: str) -> str:
    return f"not run: the CUDA simulator has no {needs}; this step runs on a GPU only"


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
    say = on_progress or (lambda _m: None)
    impls = [spec.cpu_impl(key) for key in dict.fromkeys(cpu_keys)]
    warnings: list[str] = []
    if not BACKEND.simulated and stream_hold_problem() is not None:
        warnings.append(stream_hold_problem())

    say("preparing the inputs and the reference")
    inputs = spec.make_inputs(params, seed)
    reference = spec.reference(inputs, params)

    def check(name: str, out: np.ndarray, depth: Callable[[Params], int] | None):
        return reference.check(name, out, depth(params) if depth is not None else None)

    results: list[ImplResult] = []
    for step in spec.steps:
        if step.needs and BACKEND.simulated:
            results.append(ImplResult(step.key, step.label, "step", skipped=simulator_skip(step.needs), launch=step.geometry(params)))
            continue
        say(f"timing step {step.label}")
        stats, out, first_s = time_step(spec, step, params, inputs, policy)
        results.append(ImplResult(step.key, step.label, "step", phases=stats, compile_s=first_s,
                                  agreement=check(step.key, out, step.depth), launch=step.geometry(params)))
    for lib in spec.libraries:
        problem = library_problem(lib)
        if problem is not None:
            results.append(ImplResult(lib.key, lib.label, "library", skipped=problem, same_work=lib.same_work))
            continue
        say(f"timing {lib.label}")
        try:
            stats, out = time_library(spec, lib, params, inputs, policy)
        except Exception as exc:  # a library failing must not lose the run: record why
            results.append(ImplResult(lib.key, lib.label, "library", skipped=f"failed: {type(exc).__name__}: {exc}", same_work=lib.same_work))
            continue
        agreement = check(lib.key, out, lib.depth) if lib.same_work else None  # a yardstick computes something else
        results.append(ImplResult(lib.key, lib.label, "library", phases={"kernel": stats}, agreement=agreement, same_work=lib.same_work))
    for impl in impls:
        say(f"timing the CPU: {impl.label}")
        result, out = time_cpu(spec, impl, params, inputs, policy, cpu_budget_s)
        if out is not None:
            result = ImplResult(**{**result.__dict__, "agreement": check(impl.key, out, impl.depth)})
        results.append(result)

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
        warnings=tuple(warnings),
        seed=seed,
    )


__all__ = ["CpuImpl", "DEFAULT_CPU_BUDGET_S", "GPU_PHASES", "KernelSpec", "Library", "Output", "Step", "run_kernel", "time_step"]
