"""The one way to time GPU work: ``time_on_device``.

A new experiment's author calls only this. Given a kernel, the device arrays it runs on
(allocated by the caller, once, before any sample) and its launch geometry — or, for a
library, a callable that queues the library's work on its stream — it returns a
``KernelTiming``: the samples, the hold and retry of each sample, whether the L2 was
flushed (and why not), whether the working set fits in the L2, the n<3 mark and the
GPU's telemetry. Every rule of the README's "How it measures" that concerns one GPU
series lives here:

- **allocation**: only device arrays are accepted (a NumPy array would be copied to
  the device inside every sample), so no sample can include allocation;
- **one prepared launch**: ``gpu.core.launch_path.configured_launch`` is set up once,
  outside the samples (on a GPU: the arguments packed once, one ``cuLaunchKernel`` per call);
- **L2 flushed, then synchronised**: per sample, a scratch buffer twice the L2 is
  written on the stream and the stream is synchronised before anything timed is queued,
  so neither the flush nor its tail is in a sample (``flush_l2=False`` keeps the L2 warm,
  and the result says so); when the L2 size is unknown the result says it was not flushed;
- **verified hold**: the stream is held (``gpu.core.hold``), the start event, the work and
  the end event are queued behind it, and only then is the hold queried: a hold that had
  already finished means the sample may include the host's launch latency, so it is
  discarded and retried with a hold twice as long. Each kept sample records whether it
  was held and how many tries it was discarded; ``hold=False`` times without a hold (for
  library calls that wait on the GPU from the host, which no hold can hide), and every
  sample then says it includes the launch;
- **marks**: ``few_samples`` (fewer than 3 samples) and ``l2_resident`` (the working set
  fits in the L2, so even a flushed sample may be served partly from cache on a re-run);
- **telemetry**: SM/memory clocks, temperature, power and slowdown reasons before and
  after, from the NVML device with this CUDA device's PCI bus id.

The device is reached only through ``gpu.core.hold.DeviceOps``, so tests drive all of it
with fake events, holds and clocks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gpu.core.shape import Shaped, shaped
from gpu.core.timing import Clock, RepeatPolicy, Stats, collect

# What a sample's ``held`` value means, for captions and tables.
HELD_MEANING = "held: the sample was taken behind a verified stream hold, so it excludes the host's launch latency"


class HoldExpired(RuntimeError):
    """The stream hold kept expiring before the work was queued, even when lengthened."""


def _timing_to_file(timing: KernelTiming, data: dict) -> dict:
    """The file flattens the samples' Stats into the timing (one object per figure)."""
    return {**data.pop("stats"), **data}


def _timing_from_file(data: dict) -> dict:
    stats = {k: data.pop(k) for k in list(data) if k in _STATS_KEYS}
    return {"stats": stats, **data}


# a Stats as written (its fields and what it derives for the reader)
_STATS_KEYS = (
    "samples_s", "retries", "held", "median_s", "min_s", "max_s", "mean_s", "noise", "samples", "few_samples"
)


@shaped(derived={"l2_resident": lambda t: t.l2_resident}, to_file=_timing_to_file, from_file=_timing_from_file)
@dataclass(frozen=True)
class KernelTiming(Shaped):
    """What ``time_on_device`` measured: samples in seconds and everything needed to judge them.

    ``stats`` carries the total retries and whether every sample was held.
    ``sample_held[i]`` / ``sample_retries[i]`` belong to ``stats.samples_s[i]``.
    ``l2_note`` is None when every sample was taken with the L2 flushed, else why not.
    """

    stats: Stats
    sample_held: tuple[bool, ...]
    sample_retries: tuple[int, ...]
    l2_flushed: bool
    l2_note: str | None
    l2_bytes: int | None
    working_set_bytes: int | None
    launch: str  # how the work was launched, in words
    telemetry: dict | None = None

    @property
    def median_s(self) -> float:
        return self.stats.median_s

    @property
    def held(self) -> bool:
        return all(self.sample_held)

    @property
    def retries(self) -> int:
        return sum(self.sample_retries)

    @property
    def few_samples(self) -> bool:
        return self.stats.few_samples

    @property
    def l2_resident(self) -> bool:
        """The working set fits in the L2: a figure that may be served from cache (marked °)."""
        from gpu.core.l2 import fits_in_l2

        return self.working_set_bytes is not None and fits_in_l2(self.working_set_bytes, self.l2_bytes)

    @property
    def marks(self) -> str:
        """``*`` fewer than 3 samples, ``°`` working set fits in the L2 — the table marks."""
        return ("*" if self.few_samples else "") + ("°" if self.l2_resident else "")

    def caveats(self) -> list[str]:
        """Plain-language caveats for this figure (empty when it follows every rule)."""
        out = []
        if self.few_samples:
            out.append(f"only {self.stats.n_samples} sample{'s' if self.stats.n_samples != 1 else ''}: spread unknown")
        if not self.held:
            out.append("includes the host's launch latency (no stream hold)")
        if self.retries:
            out.append(f"{self.retries} sample{'s' if self.retries != 1 else ''} retried after an expired hold")
        if self.l2_note:
            out.append(self.l2_note)
        if self.l2_resident:
            out.append("working set fits in the L2")
        if self.telemetry and self.telemetry.get("flagged"):
            out.append("GPU clocks dropped during the run: " + "; ".join(self.telemetry.get("flags", [])))
        return out


def flush_and_settle(ops, stream, flush: bool) -> None:
    """Queue the L2 flush on ``stream`` (when ``flush``) and wait for it: whatever is timed
    next starts on an idle stream, so no sample or wall clock includes the flush."""
    if flush:
        ops.flush_l2(stream)
    ops.synchronize(stream)


def l2_status(ops, flush_l2: bool, l2_bytes: int | None) -> tuple[bool, str | None]:
    """(flushed, why not) for a timing on ``ops`` with an L2 of ``l2_bytes`` (None: unknown)."""
    if ops.simulated:
        return False, "simulator: there is no L2 to flush"
    if not flush_l2:
        return False, "L2 kept warm (not flushed), on request"
    if not l2_bytes:
        return False, "L2 not flushed: this device does not report its L2 size"
    return True, None


def _require_device_arrays(args: Sequence[Any]) -> None:
    for i, arg in enumerate(args):
        if isinstance(arg, np.ndarray):
            raise TypeError(
                f"argument {i} is a NumPy array: Numba would copy it to the device inside every sample. "
                "Pass device arrays (cuda.to_device / cuda.device_array), allocated once before timing."
            )


def time_on_device(
    kernel=None,
    args: Sequence[Any] = (),
    grid: Any = None,
    block: Any = None,
    *,
    policy: RepeatPolicy,
    stream=None,
    queue: Callable[[], None] | None = None,
    launch_label: str | None = None,
    hold: bool = True,
    working_set_bytes: int | None = None,
    flush_l2: bool = True,
    l2_bytes: int | None = None,
    telemetry: bool = True,
    ops=None,
    clock: Clock = time.perf_counter,
    reset: Callable[[], None] | None = None,
) -> KernelTiming:
    """Time ``kernel[grid, block, stream](*args)`` alone on device arrays ``args``, per ``policy``.

    Or, for work that is not one Numba kernel (a CuPy or PyTorch call), pass ``queue`` — a
    zero-argument callable queuing the work on ``stream`` — instead of kernel/args/grid/block.

    - ``args``: device arrays (and scalars), allocated once by the caller before this call.
    - ``stream``: the stream to time on (a new one when None; required with ``queue``).
    - ``hold``: False for work whose call waits on the GPU from the host (no hold can hide
      its launch); every sample is then marked as including the launch.
    - ``working_set_bytes``: bytes the work touches, for the L2-resident mark.
    - ``flush_l2``: False keeps the L2 warm (to show the difference); the result says so.
    - ``l2_bytes``: the L2 size; read from the device when None.
    - ``telemetry``: read NVML before and after (False when the caller monitors a longer run).
    - ``ops`` / ``clock``: the device seam and the clock (tests pass fakes).
    - ``reset``: queues the outputs' reset on ``stream`` before every attempt, outside the
      events. A retried attempt has already run the kernel once: a kernel that adds into its
      output (a histogram, a dot product) would otherwise be checked on a doubled result.

    Raises HoldExpired when a sample's hold expires ``MAX_HOLD_RETRIES + 1`` times in a row,
    TypeError when an argument is a host array, ValueError for a kernel and ``queue`` together.
    """
    from gpu.core.hold import HOLD_STREAM_NS, MAX_HOLD_RETRIES, default_ops

    if (kernel is None) == (queue is None):
        raise ValueError("time_on_device needs either a kernel (with args, grid and block) or queue=, not both")
    ops = ops or default_ops(clock)
    if queue is None:
        if grid is None or block is None:
            raise ValueError("time_on_device needs the launch geometry: grid= and block=")
        _require_device_arrays(args)
        from gpu.core import launch_path
        from gpu.core.backend import cuda

        stream = stream if stream is not None else cuda.stream()
        configured = launch_path.configured_launch(kernel, grid, block, stream, *args)  # once, outside every sample
        queue = lambda: configured(*args)  # noqa: E731
        launch_label = launch_label or launch_path.launch_label(configured)
    if l2_bytes is None and not ops.simulated:
        from gpu.core.l2 import l2_cache_bytes

        l2_bytes = l2_cache_bytes()
    flushed, l2_note = l2_status(ops, flush_l2, l2_bytes)
    start, end = ops.event(), ops.event()  # created once, reused by every sample
    hold_ns = HOLD_STREAM_NS
    held: list[bool] = []
    retries: list[int] = []

    def once() -> dict[str, float]:
        nonlocal hold_ns
        for attempt in range(MAX_HOLD_RETRIES + 1):
            if reset is not None:
                reset()  # before the flush and the synchronise: never inside the timed events
            flush_and_settle(ops, stream, flush_l2)  # a no-op where there is no L2 to flush
            handle = ops.hold(stream, hold_ns) if hold else None
            start.record(stream)
            queue()
            end.record(stream)
            # asked after the end event is queued: the work and both events must all be
            # behind the hold, or a quick kernel could finish before "end" is recorded
            expired = handle is not None and handle.query()
            end.synchronize()
            if not expired:
                held.append(handle is not None)
                retries.append(attempt)
                return {"kernel": ops.elapsed_s(start, end)}
            hold_ns *= 2
        raise HoldExpired(
            f"the stream hold finished before the work was queued {MAX_HOLD_RETRIES + 1} times in a row "
            f"(longest hold {hold_ns // 2 / 1e6:g} ms): the host is too busy to time this alone"
        )

    monitor = _monitor() if telemetry else None
    try:
        stats = collect(once, policy, clock=clock)["kernel"]
    finally:
        summary = monitor.stop() if monitor is not None else None
    kept = stats.n_samples  # warm-up samples come first in held/retries: keep the timed ones
    held_kept, retries_kept = tuple(held[-kept:]), tuple(retries[-kept:])
    stats = replace(stats, retries=sum(retries_kept), held=all(held_kept))
    return KernelTiming(
        stats, held_kept, retries_kept, flushed, l2_note, l2_bytes, working_set_bytes,
        launch_label or "queued by the caller", summary,
    )


def _monitor():
    from gpu.core.telemetry import TelemetryMonitor

    return TelemetryMonitor().start(background=False)  # the current CUDA device, by PCI bus id


__all__ = ["HELD_MEANING", "HoldExpired", "KernelTiming", "flush_and_settle", "l2_status", "time_on_device"]
