"""Copy primitives and their timing: host<->device over the link, device<->device, and
host memory. The building blocks for peaks (Scaling) and bandwidth curves (Transfers).

Byte-counting convention (as CUDA's bandwidthTest): a host<->device copy moves its
size once over the link; a copy within one memory (device->device, host->host) reads
and writes it, so it counts twice. Vector add likewise counts 12 bytes per element.
"""

from __future__ import annotations

import numpy as np

from gpu.core.backend import BACKEND, cuda
from gpu.core.launch_spec import Launch
from gpu.core.timing import (
    PhaseTimer,
    RepeatPolicy,
    Stats,
    collect,
    measure,
    time_kernel,
)

DIRECTIONS = ("h2d", "d2h", "d2d")
COPY_THREADS = 256  # threads per block of the copy kernel: any multiple of 32 saturates memory here


@cuda.jit(cache=not BACKEND.simulated)
def copy_kernel(src, dst):
    """dst[i] = src[i] for 4-byte words, one thread per word (the device copy as a kernel)."""
    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if i < src.size:
        dst[i] = src[i]


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


def time_copy(direction: str, nbytes: int, policy: RepeatPolicy, pinned: bool = True, ops=None) -> tuple[Stats, bool]:
    """Time one copy of ``nbytes`` in ``direction`` with events on one stream.

    Buffers are allocated once, outside the timed region; the L2 is flushed before every
    sample (a device copy that fits in L2 would otherwise read cache). Returns (Stats in
    seconds, pinned_ok) where pinned_ok says whether the host buffer really was pinned.
    """
    from gpu.core.hold import default_ops

    ops = ops or default_ops()
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    stream = cuda.stream()
    timer = PhaseTimer(stream, ("copy",), ops=ops)
    pinned_ok = False
    device = cuda.device_array(nbytes, dtype=np.uint8, stream=stream)
    if direction == "d2d":
        other = cuda.device_array(nbytes, dtype=np.uint8, stream=stream)

        def once() -> dict[str, float]:
            ops.flush_l2(stream)
            timer.start()
            other.copy_to_device(device, stream=stream)
            timer.end("copy")
            return timer.durations_s()

    else:
        host, pinned_ok = host_buffer(nbytes, pinned)
        host.fill(1)  # touch every page so first-touch faults stay out of the timing

        def once() -> dict[str, float]:
            ops.flush_l2(stream)
            timer.start()
            if direction == "h2d":
                device.copy_to_device(host, stream=stream)
            else:
                device.copy_to_host(host, stream=stream)
            timer.end("copy")
            return timer.durations_s()

    stats = collect(once, policy)["copy"]
    return stats, pinned_ok


def time_copy_kernel(nbytes: int, policy: RepeatPolicy, ops=None) -> Stats:
    """Time ``copy_kernel`` over ``nbytes`` (rounded down to 4-byte words) alone, as every
    kernel is timed (``time_kernel``: L2 flushed, verified hold). Seconds per copy.

    Why a kernel too (issue 10, item 8): the driver's device-to-device memcpy measured
    2.4–2.8 TB/s on an H200, slower than the vector-add kernel, so it is no ceiling; a
    plain copy kernel is the fair "how fast can a kernel move these bytes" reference.
    """
    words = max(1, nbytes // 4)
    stream = cuda.stream()
    src = cuda.device_array(words, dtype=np.uint32, stream=stream)
    dst = cuda.device_array(words, dtype=np.uint32, stream=stream)
    blocks = (words + COPY_THREADS - 1) // COPY_THREADS
    launch = copy_kernel[blocks, COPY_THREADS, stream]
    return time_kernel(lambda: launch(src, dst), stream, policy, ops=ops)


def time_host_copy(nbytes: int, policy: RepeatPolicy) -> Stats:
    """Time a NumPy copy of ``nbytes`` within host memory (wall clock): the host's ceiling."""
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    return measure(lambda: np.copyto(dst, src), policy)


def bandwidth_gbps(direction: str, nbytes: int, seconds: float) -> float:
    """Effective GB/s (1e9 bytes per second) of a copy of ``nbytes`` in ``seconds``."""
    return bytes_counted(direction, nbytes) / seconds / 1e9 if seconds > 0 else float("nan")


# What the copy benchmark launches (gpu/core/launch_spec.py; the compile gate compiles it for every target).
LAUNCHES = {"copy_kernel": Launch(("void(uint32[::1], uint32[::1])",), threads_per_block=COPY_THREADS)}
