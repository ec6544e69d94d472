"""The stream hold and the device operations every GPU timing goes through.

A kernel's own time is measured as nvbench does: an L2 flush, then a kernel that holds
the stream (nvbench's "blocking kernel"), then, while the stream is held, the start
event, the kernel under test and the end event are queued. When the hold ends the
three run back to back, so the events bracket the kernel alone, without the host's
launch latency.

``DeviceOps`` is the seam: the timing logic in ``gpu.core.timing`` only calls
``event()``, ``elapsed_s()``, ``hold()``, ``flush_l2()`` and ``synchronize()``. ``CudaOps`` does them on a
real GPU, ``SimulatedOps`` in Numba's simulator (wall clock, no hold, no cache), and
tests pass fakes with scripted event times and hold outcomes, so the hold check, the
retry and the flush schedule run in CI without a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import lru_cache
from typing import Protocol, cast

from gpu.core.backend import BACKEND, cuda
from gpu.core.launch_spec import Launch

Clock = Callable[[], float]

# How long hold_stream keeps a stream busy at first: longer than the host needs to
# record an event, launch a kernel from Python and record another (hundreds of µs
# were measured on an H200). It is not trusted: every sample checks the hold was still
# running after the end event was queued, and doubles it when it was not.
HOLD_STREAM_NS = 2_000_000
# A sample whose hold expired is retried this many times, the hold doubling each time
# (2 ms -> 64 ms); a host that cannot queue three calls in 64 ms is too busy to measure.
MAX_HOLD_RETRIES = 5


@cuda.jit
def hold_stream(total_ns):
    """Sleep one thread for about ``total_ns`` ns so the host can queue work behind it."""
    for _ in range(total_ns // 1000):
        cuda.nanosleep(1000)


@lru_cache(maxsize=1)
def stream_hold_problem() -> str | None:
    """None when ``hold_stream`` works here, else why not (tried once per process).

    ``nanosleep`` needs compute capability 7.0 or newer; on older GPUs kernel timings
    fall back to including the host's launch latency, and results say so.
    """
    if BACKEND.simulated:
        return "the simulator runs kernels synchronously: there is no launch latency to separate"
    try:
        hold_stream[1, 1](0)
        cuda.synchronize()
    except Exception as exc:  # compile or launch failure: fall back, never break a run
        return (f"the stream-holding kernel is unavailable on this GPU ({type(exc).__name__}); kernel times include "
                "the host's launch latency")
    return None


class Event(Protocol):
    def record(self, stream) -> None: ...
    def synchronize(self) -> None: ...


class HoldHandle(Protocol):
    def query(self) -> bool:
        """True once the hold kernel has finished."""


class DeviceOps(Protocol):
    """What GPU timing needs from the device (see the module docstring)."""

    @property
    def simulated(self) -> bool: ...

    @property
    def can_hold(self) -> bool:
        """False: kernel samples include the launch (simulator, no nanosleep)."""

    def event(self) -> Event: ...

    def elapsed_s(self, start: Event, end: Event) -> float: ...

    def hold(self, stream, hold_ns: int) -> HoldHandle | None:
        """Queue a hold of ``hold_ns`` on ``stream``; None when no hold is possible here."""

    def flush_l2(self, stream) -> bool:
        """Queue an L2 flush on ``stream``; False when there was nothing to flush (size unknown)."""

    def synchronize(self, stream) -> None:
        """Wait until everything queued on ``stream`` has run."""


class _WallEvent:
    """A simulator "event": waits for the stream, then reads the wall clock."""

    def __init__(self, clock: Clock):
        self._clock = clock
        self.t = float("nan")

    def record(self, stream) -> None:
        stream.synchronize()
        self.t = self._clock()

    def synchronize(self) -> None:
        pass


class SimulatedOps:
    """Numba's simulator: events read the wall clock; there is no hold and no L2."""

    simulated = True
    can_hold = False

    def __init__(self, clock: Clock = time.perf_counter):
        self._clock = clock

    def event(self) -> _WallEvent:
        return _WallEvent(self._clock)

    def elapsed_s(self, start: Event, end: Event) -> float:
        # events from ``event()`` (or a test's stand-ins): each carries the wall-clock time ``t`` it was recorded
        return cast(_WallEvent, end).t - cast(_WallEvent, start).t

    def hold(self, stream, hold_ns: int) -> None:
        return None  # kernels run synchronously: nothing to hide the launch behind

    def flush_l2(self, stream) -> bool:
        return False  # the simulator has no cache to flush

    def synchronize(self, stream) -> None:
        stream.synchronize()


class CudaOps:
    """A real GPU: CUDA events, the hold kernel, and an L2 flush (``gpu.core.l2``)."""

    simulated = False

    @property
    def can_hold(self) -> bool:
        return stream_hold_problem() is None

    def event(self):
        return cuda.event()

    def elapsed_s(self, start, end) -> float:
        return start.elapsed_time(end) / 1e3  # ms -> s

    def hold(self, stream, hold_ns: int):
        if stream_hold_problem() is not None:
            return None
        hold_stream[1, 1, stream](hold_ns)
        done = cuda.event(timing=False)  # only queried: a timing event costs more
        done.record(stream)
        return done

    def flush_l2(self, stream) -> bool:
        from gpu.core.l2 import flush_l2

        return flush_l2(stream)

    def synchronize(self, stream) -> None:
        stream.synchronize()


@lru_cache(maxsize=1)
def _cuda_ops() -> CudaOps:
    return CudaOps()


def default_ops(clock: Clock = time.perf_counter) -> DeviceOps:
    """The ops for this backend (the simulator's read ``clock``)."""
    return SimulatedOps(clock) if BACKEND.simulated else _cuda_ops()


# What the timers launch (gpu/core/launch_spec.py; the compile gate compiles it for every target): one thread.
LAUNCHES = {"hold_stream": Launch(("void(int64)",), threads_per_block=1)}


__all__ = [
    "CudaOps", "DeviceOps", "HOLD_STREAM_NS", "MAX_HOLD_RETRIES", "SimulatedOps", "default_ops", "hold_stream",
    "stream_hold_problem",
]
