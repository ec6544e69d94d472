"""Copy primitives and their timing: host<->device over the link, device<->device, and
host memory. The building blocks for peaks (Scaling) and bandwidth curves (Transfers).

Byte-counting convention (as CUDA's bandwidthTest): a host<->device copy moves its
size once over the link; a copy within one memory (device->device, host->host) reads
and writes it, so it counts twice. Vector add likewise counts 12 bytes per element.
"""

from __future__ import annotations

import numpy as np

from gpu.core.backend import cuda
from gpu.core.timing import PhaseTimer, RepeatPolicy, Stats, collect, measure

DIRECTIONS = ("h2d", "d2h", "d2d")


def host_buffer(nbytes: int, pinned: bool) -> tuple[np.ndarray, bool]:
    """A host byte buffer, page-locked if asked and possible.

    Returns (buffer, pinned_ok): pinning can fail on a busy machine, and then the
    buffer is pageable and pinned_ok is False so callers can say so.
    """
    if pinned:
        try:
            return cuda.pinned_array(nbytes, dtype=np.uint8), True
        except Exception:  # CUDA_ERROR_OUT_OF_MEMORY or a locked-memory limit
            pass
    return np.empty(nbytes, dtype=np.uint8), False


def bytes_counted(direction: str, nbytes: int) -> int:
    """Bytes a copy of ``nbytes`` counts for bandwidth (see the module docstring)."""
    return 2 * nbytes if direction in ("d2d", "h2h") else nbytes


def time_copy(direction: str, nbytes: int, policy: RepeatPolicy, pinned: bool = True) -> tuple[Stats, bool]:
    """Time one copy of ``nbytes`` in ``direction`` with events on one stream.

    Buffers are allocated once, outside the timed region. Returns (Stats in seconds,
    pinned_ok) where pinned_ok says whether the host buffer really was pinned.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    stream = cuda.stream()
    timer = PhaseTimer(stream, ("copy",))
    pinned_ok = False
    device = cuda.device_array(nbytes, dtype=np.uint8, stream=stream)
    if direction == "d2d":
        other = cuda.device_array(nbytes, dtype=np.uint8, stream=stream)

        def once() -> dict[str, float]:
            timer.start()
            other.copy_to_device(device, stream=stream)
            timer.end("copy")
            return timer.durations_s()

    else:
        host, pinned_ok = host_buffer(nbytes, pinned)
        host.fill(1)  # touch every page so first-touch faults stay out of the timing

        def once() -> dict[str, float]:
            timer.start()
            if direction == "h2d":
                device.copy_to_device(host, stream=stream)
            else:
                device.copy_to_host(host, stream=stream)
            timer.end("copy")
            return timer.durations_s()

    stats = collect(once, policy, noise_key="copy")["copy"]
    return stats, pinned_ok


def time_host_copy(nbytes: int, policy: RepeatPolicy) -> Stats:
    """Time a NumPy copy of ``nbytes`` within host memory (wall clock): the host's ceiling."""
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    return measure(lambda: np.copyto(dst, src), policy)


def bandwidth_gbps(direction: str, nbytes: int, seconds: float) -> float:
    """Effective GB/s (1e9 bytes per second) of a copy of ``nbytes`` in ``seconds``."""
    return bytes_counted(direction, nbytes) / seconds / 1e9 if seconds > 0 else float("nan")
