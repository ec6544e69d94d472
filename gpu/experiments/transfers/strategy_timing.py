"""How each transfer strategy is timed: one function per strategy, each returning phase
``Stats`` (seconds) and writing its result into ``out``.

As in the article (c copied in too, no hold: the labelled exception to the allocation
rule), resident (copy once, K kernels), chunked streams (with a per-chunk event
timeline), mapped zero-copy memory; plus the chunking arithmetic they share. The careful
and pinned strategies reuse ``gpu.experiments.vector_add.experiment.time_gpu_phases``. In the
simulator copies are NumPy copies and streams run one after another.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from gpu.core import numba_internals
from gpu.core.backend import BACKEND, cuda
from gpu.core.copies import host_buffer
from gpu.core.kernel_timing import time_on_device
from gpu.core.launch_path import configured_launch
from gpu.core.limits import (
    InputError,
    parse_int,
)
from gpu.core.timeline import Interval
from gpu.core.timing import Clock, PhaseTimer, RepeatPolicy, Stats, collect
from gpu.kernels.geometry import blocks_for
from gpu.kernels.vector_add import vector_add_kernel

# --- sizes -------------------------------------------------------------------------


# --- bandwidth curves ----------------------------------------------------------------


# --- chunking and the timeline ---------------------------------------------------------


MAX_CHUNKS = 256  # past this, per-chunk launch and copy overheads swamp any overlap
MAX_STREAMS = 32  # more streams than this add nothing: a GPU has a few copy engines


MAX_ITERATIONS = 10_000


def chunk_bounds(n: int, chunks: int) -> tuple[tuple[int, int], ...]:
    """Split ``n`` elements into ``chunks`` contiguous [start, stop) ranges (pure).

    Sizes differ by at most one (the first ``n % chunks`` chunks hold one more), and
    the ranges cover every element exactly once. InputError when ``chunks`` is not
    between 1 and ``n``.
    """
    n = parse_int(n, "N")
    chunks = parse_int(chunks, "chunks")
    if n < 1:
        raise InputError(f"N must be at least 1, got {n}")
    if not 1 <= chunks <= n:
        raise InputError(
            f"chunks must be between 1 and N ({n:,}), got {chunks}: every chunk needs at least one element"
        )
    base, extra = divmod(n, chunks)
    bounds, start = [], 0
    for i in range(chunks):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return tuple(bounds)


def _device_attribute(name: str) -> int | None:
    if BACKEND.simulated:
        return None
    try:
        return int(getattr(cuda.get_current_device(), name))
    except Exception:  # attribute unknown to this driver or binding
        return None


def device_capabilities() -> dict[str, int | None]:
    """Device attributes that decide mapping and overlap (None in the simulator)."""
    return {
        name.lower(): _device_attribute(name)
        for name in ("CAN_MAP_HOST_MEMORY", "UNIFIED_ADDRESSING", "ASYNC_ENGINE_COUNT", "CONCURRENT_KERNELS")
    }


def _poison_device(d_array, stream=0) -> None:
    """Fill a float32 device array with NaN bits (0xFFFFFFFF) so unwritten elements show."""
    if BACKEND.simulated:
        d_array[:] = np.nan
    else:
        numba_internals.device_memset(d_array, 0xFF, d_array.alloc_size, stream)


class _HoldLog:
    """Each sample's hold outcome from ``_split_launch``, put back on the kernel Stats
    afterwards (the held flag and the retries were thrown away)."""

    def __init__(self) -> None:
        self.held: list[bool] = []
        self.retries: list[int] = []

    def apply(self, stats: dict[str, Stats]) -> dict[str, Stats]:
        kernel = stats.get("kernel")
        if kernel is not None and self.held:
            kept = kernel.n_samples  # warm-up samples came first
            stats["kernel"] = replace(kernel, retries=sum(self.retries[-kept:]), held=all(self.held[-kept:]))
        return stats


def _split_launch(phases: dict[str, float], launch: Callable[[], None], stream, clock: Clock, log: _HoldLog) -> None:
    """On hardware, split the "kernel" interval into launch latency and the kernel alone
    (as gpu.experiments.vector_add.experiment.time_gpu_phases does): re-run the kernel behind a
    verified stream hold (L2 flushed). No min(alone, with launch): that hid samples whose
    hold had expired; the hold is checked instead, and the launch
    share is floored at 0 only against the kernel's own sample-to-sample noise."""
    if BACKEND.simulated:
        return
    with_launch = phases["kernel"]
    alone = time_on_device(queue=launch, stream=stream, policy=RepeatPolicy.count(1, warmup=0), clock=clock,
                           launch_label="the article's launch", telemetry=False)
    log.held.append(alone.held)
    log.retries.append(alone.retries)
    phases["kernel"] = alone.median_s
    phases["launch"] = max(0.0, with_launch - alone.median_s)


def _ordered(phases: Mapping[str, float]) -> dict[str, float]:
    return {p: phases[p] for p in (*BREAKDOWN_PHASES, "total") if p in phases}


def time_article(
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    threads_per_block: int,
    policy: RepeatPolicy,
    clock: Clock = time.perf_counter,
) -> dict[str, Stats]:
    """The article's gpu_add: c = zeros on the host, a, b AND c copied in, kernel, c out.

    Phases with events on one stream; "total" is wall clock including the zeros. The
    one exception to "allocation before the start event", on purpose: this reproduces
    the article, whose ``cuda.to_device`` allocates while it copies, so its H2D
    includes allocating three arrays (the captions say so).
    """
    n = a.size
    blocks = blocks_for(n, threads_per_block)
    stream = cuda.stream()
    timer = PhaseTimer(stream, ("h2d", "kernel", "d2h"), clock=clock)
    log = _HoldLog()

    def once() -> dict[str, float]:
        started = clock()
        c = np.zeros_like(a)
        timer.start()
        d_a = cuda.to_device(a, stream=stream)
        d_b = cuda.to_device(b, stream=stream)
        d_c = cuda.to_device(c, stream=stream)
        timer.end("h2d")
        vector_add_kernel[blocks, threads_per_block, stream](d_a, d_b, d_c)
        timer.end("kernel")
        d_c.copy_to_host(out, stream=stream)
        timer.end("d2h")
        phases = timer.durations_s()
        total = clock() - started
        _split_launch(
            phases, lambda: vector_add_kernel[blocks, threads_per_block, stream](d_a, d_b, d_c), stream, clock, log
        )
        phases["total"] = total
        return _ordered(phases)

    return log.apply(collect(once, policy, noise_key="total", clock=clock))


def time_resident(
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    threads_per_block: int,
    iterations: int,
    policy: RepeatPolicy,
    clock: Clock = time.perf_counter,
) -> dict[str, Stats]:
    """Copy a and b in once, run the kernel ``iterations`` times, copy c out once.

    "h2d" and "d2h" are per sequence, "kernel" is per iteration (K back-to-back
    launches between two events, divided by K: launch gaps included), "total" is the
    wall clock of the whole sequence.
    """
    n = a.size
    blocks = blocks_for(n, threads_per_block)
    stream = cuda.stream()
    timer = PhaseTimer(stream, ("h2d", "kernel", "d2h"), clock=clock)
    # one rule everywhere: device buffers are allocated before the start event
    d_a = cuda.device_array(n, dtype=np.float32, stream=stream)
    d_b = cuda.device_array(n, dtype=np.float32, stream=stream)
    d_c = cuda.device_array(n, dtype=np.float32, stream=stream)
    # the engine's launch, prepared once for these arrays: the K launches' gaps are the driver's, not Numba's
    launch = configured_launch(vector_add_kernel, blocks, threads_per_block, stream, d_a, d_b, d_c)

    def once() -> dict[str, float]:
        started = clock()
        timer.start()
        d_a.copy_to_device(a, stream=stream)
        d_b.copy_to_device(b, stream=stream)
        timer.end("h2d")
        for _ in range(iterations):
            launch(d_a, d_b, d_c)
        timer.end("kernel")
        d_c.copy_to_host(out, stream=stream)
        timer.end("d2h")
        phases = timer.durations_s()
        phases["kernel"] /= iterations
        phases["total"] = clock() - started
        return phases

    return collect(once, policy, noise_key="total", clock=clock)


class _Marks:
    """Timestamps on several streams: CUDA events on hardware (created once), the wall
    clock after each operation in the simulator (where every stream is synchronous)."""

    def __init__(self, count: int, clock: Clock):
        self._simulated = BACKEND.simulated
        self._clock = clock
        self._events = [] if self._simulated else [cuda.event() for _ in range(count)]
        self._times: list[float] = []
        self._used = 0

    def reset(self) -> None:
        self._times, self._used = [], 0

    def mark(self, stream) -> int:
        index = self._used
        self._used += 1
        if self._simulated:
            stream.synchronize()
            self._times.append(self._clock())
        else:
            self._events[index].record(stream)
        return index

    def seconds(self) -> list[float]:
        """Every mark in seconds after mark 0 (call after the streams have finished)."""
        if self._simulated:
            return [t - self._times[0] for t in self._times]
        first = self._events[0]
        return [first.elapsed_time(ev) / 1e3 for ev in self._events[: self._used]]


def time_chunked(
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    threads_per_block: int,
    chunks: int,
    streams: int,
    policy: RepeatPolicy,
    clock: Clock = time.perf_counter,
) -> tuple[dict[str, Stats], tuple[Interval, ...]]:
    """c = a + b in ``chunks`` pieces over ``streams`` streams (chunk i on stream i mod S).

    Per chunk, on its stream: copy its a and b in, run the kernel on it, copy its c
    out, with an event before and after each phase, all timed from one start event.
    Device buffers are allocated once, outside the timing. Host arrays should be pinned
    for copies to overlap. Returns ({"span": start to last event, "total": wall
    clock}, the last sample's intervals).
    """
    n = a.size
    bounds = chunk_bounds(n, chunks)
    run = chunk_run_label(chunks, streams)
    pool = [cuda.stream() for _ in range(streams)]
    d_a = cuda.device_array(n, dtype=np.float32)
    d_b = cuda.device_array(n, dtype=np.float32)
    d_c = cuda.device_array(n, dtype=np.float32)
    _poison_device(d_c)  # a chunk the pipeline misses stays NaN and fails the check
    # prepare every chunk's views and launch configuration outside the timed region
    plan = []
    for i, (lo, hi) in enumerate(bounds):
        s = pool[i % streams]
        launch = vector_add_kernel[blocks_for(hi - lo, threads_per_block), threads_per_block, s]
        plan.append((i, i % streams, s, a[lo:hi], b[lo:hi], out[lo:hi], d_a[lo:hi], d_b[lo:hi], d_c[lo:hi], launch))
    marks = _Marks(1 + 4 * len(plan), clock)
    last: list[tuple[Interval, ...]] = [()]

    def once() -> dict[str, float]:
        started = clock()
        marks.reset()
        marks.mark(pool[0])  # the start event every interval is timed from
        index = []
        for i, lane, s, ha, hb, hc, da, db, dc, launch in plan:
            m0 = marks.mark(s)
            da.copy_to_device(ha, stream=s)
            db.copy_to_device(hb, stream=s)
            m1 = marks.mark(s)
            launch(da, db, dc)
            m2 = marks.mark(s)
            dc.copy_to_host(hc, stream=s)
            m3 = marks.mark(s)
            index.append((i, lane, m0, m1, m2, m3))
        for s in pool:
            s.synchronize()
        total = clock() - started
        t = marks.seconds()
        intervals = []
        for i, lane, m0, m1, m2, m3 in index:
            intervals += [
                Interval(run, i, lane, "h2d", t[m0], t[m1]),
                Interval(run, i, lane, "kernel", t[m1], t[m2]),
                Interval(run, i, lane, "d2h", t[m2], t[m3]),
            ]
        last[0] = tuple(intervals)
        return {"span": max(iv.end_s for iv in intervals), "total": total}

    stats = collect(once, policy, noise_key="total", clock=clock)
    return stats, last[0]


def mapped_supported() -> tuple[bool, str]:
    """Whether this device can map host memory, and why not when it cannot."""
    if BACKEND.simulated:
        return True, "simulated as an ordinary array: there is no host link to cross"
    can_map = _device_attribute("CAN_MAP_HOST_MEMORY")
    if not can_map:
        return False, "this device cannot map host memory (CAN_MAP_HOST_MEMORY is 0)"
    return True, "the device maps host memory" + (
        " with unified addressing" if _device_attribute("UNIFIED_ADDRESSING") else ""
    )


def time_mapped(
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    threads_per_block: int,
    policy: RepeatPolicy,
    clock: Clock = time.perf_counter,
) -> dict[str, Stats]:
    """The kernel on mapped (zero-copy) host arrays: it reads a and b and writes c
    across the link itself; no copies. Raises when mapped memory cannot be allocated."""
    n = a.size
    blocks = blocks_for(n, threads_per_block)
    m_a = cuda.mapped_array(n, dtype=np.float32)
    m_b = cuda.mapped_array(n, dtype=np.float32)
    m_c = cuda.mapped_array(n, dtype=np.float32)
    m_a[:] = a  # the data lives in mapped memory from the start: filling it is not timed
    m_b[:] = b
    m_c[:] = np.nan  # unwritten elements would fail the check
    stream = cuda.stream()
    timer = PhaseTimer(stream, ("kernel",), clock=clock)
    launch = vector_add_kernel[blocks, threads_per_block, stream]

    def once() -> dict[str, float]:
        started = clock()
        timer.start()
        launch(m_a, m_b, m_c)
        timer.end("kernel")
        phases = timer.durations_s()  # waits: c is then complete in host memory
        total = clock() - started
        # no launch split here: the kernel reads host memory, so re-running it is a
        # second full transfer and its time dwarfs the launch latency
        phases["total"] = total
        return phases

    stats = collect(once, policy, noise_key="total", clock=clock)
    if BACKEND.simulated:
        m_c.copy_to_host(out)
    else:
        np.copyto(out, np.asarray(m_c))  # a plain host read: the memory is host memory
    return stats


def pinned_float32(n: int) -> tuple[np.ndarray, bool]:
    """A float32 host array of n elements, pinned if possible (else pageable)."""
    buffer, ok = host_buffer(n * 4, pinned=True)
    return buffer.view(np.float32), ok


BREAKDOWN_PHASES = ("h2d", "launch", "kernel", "d2h", "span")


def chunk_run_label(chunks: int, streams: int) -> str:
    return f"{chunks} chunk{'s' if chunks != 1 else ''} on {streams} stream{'s' if streams != 1 else ''}"
