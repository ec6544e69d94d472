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
)

DIRECTIONS = ("h2d", "d2h", "d2d")
COPY_THREADS = 256  # threads per block of the copy kernel: any multiple of 32 saturates memory here
# Why 4 x 8-byte words per thread: a one-word-per-thread copy kept too few
# loads in flight, so the 4-per-thread vector add and PyTorch beat this "ceiling" by
# design and the >= 90% target was never evaluated. Four independent 8-byte loads per
# thread, one grid width apart (coalesced), reach the memory system as those do.
COPY_WORD_BYTES = 8
COPY_WORDS_PER_THREAD = 4


@cuda.jit(cache=not BACKEND.simulated)
def copy_kernel(src, dst):
    """dst = src for 8-byte words, 4 per thread one grid width apart (loads issued before stores).

    Launch with ``copy_blocks(words)`` blocks of COPY_THREADS.
    """
    n = src.size
    width = cuda.gridDim.x * cuda.blockDim.x
    i0 = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    i1 = i0 + width
    i2 = i1 + width
    i3 = i2 + width
    if i3 < n:  # all four in range: four loads in flight before the first store
        w0 = src[i0]
        w1 = src[i1]
        w2 = src[i2]
        w3 = src[i3]
        dst[i0] = w0
        dst[i1] = w1
        dst[i2] = w2
        dst[i3] = w3
    else:  # the last wave: each word guarded on its own
        if i0 < n:
            dst[i0] = src[i0]
        if i1 < n:
            dst[i1] = src[i1]
        if i2 < n:
            dst[i2] = src[i2]


def copy_blocks(words: int) -> int:
    """Blocks of COPY_THREADS so that each thread copies COPY_WORDS_PER_THREAD words."""
    per_block = COPY_THREADS * COPY_WORDS_PER_THREAD
    return max(1, (words + per_block - 1) // per_block)


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
    """Time ``copy_kernel`` over ``nbytes`` (rounded down to 8-byte words) alone, as every
    kernel is timed (``time_on_device``: L2 flushed, verified hold). Seconds per copy.

    Why a kernel too: the driver's device-to-device memcpy measured
    2.4–2.8 TB/s on an H200, slower than the vector-add kernel, so it is no ceiling; a
    plain copy kernel is the fair "how fast can a kernel move these bytes" reference.
    """
    from gpu.core.kernel_timing import time_on_device

    words = max(1, nbytes // COPY_WORD_BYTES)
    stream = cuda.stream()
    src = cuda.device_array(words, dtype=np.uint64, stream=stream)
    dst = cuda.device_array(words, dtype=np.uint64, stream=stream)
    stream.synchronize()
    return time_on_device(copy_kernel, (src, dst), copy_blocks(words), COPY_THREADS, policy=policy, stream=stream,
                          working_set_bytes=2 * COPY_WORD_BYTES * words, telemetry=False, ops=ops).stats


def time_device_memcpy(nbytes: int, policy: RepeatPolicy, ops=None) -> Stats:
    """Time a driver device-to-device memcpy of ``nbytes`` behind the verified hold, L2
    flushed, as a kernel is timed: the events bracket the copy alone, not the host's
    call into the driver (it was timed with plain events, hold-less)."""
    from gpu.core.kernel_timing import time_on_device

    stream = cuda.stream()
    src = cuda.device_array(nbytes, dtype=np.uint8, stream=stream)
    dst = cuda.device_array(nbytes, dtype=np.uint8, stream=stream)
    stream.synchronize()
    return time_on_device(queue=lambda: dst.copy_to_device(src, stream=stream), stream=stream, policy=policy,
                          launch_label="driver memcpy (device to device)", working_set_bytes=2 * nbytes,
                          telemetry=False, ops=ops).stats


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
