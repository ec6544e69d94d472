"""Rough per-unit costs for the estimates a form states before a run (``Experiment.estimate``).

An estimate is a courtesy shown under the form ("a run takes about 12 s here") when it is
2 s or more, never a figure. These are the units the transfer and launch experiments'
estimates multiply: a simulated thread, a sample's fixed cost on a GPU (the L2 flush, the
stream synchronisations, the Python around them), and copy rates. The GPU numbers were
read off the recorded H200 runs (benchmarks/h200*/check.json) and checked by
``tests/test_run_estimates.py`` there; the simulator's by the same test here.
"""

from __future__ import annotations

from gpu.core.backend import BACKEND

# Seconds per simulated thread of a barrier-free kernel: the lab's simulator about 0.3-0.7 µs
# (benchmarks/simulator_speed.md), numba-cuda's about 0.15 ms (DESIGN.md).
SIM_S_PER_THREAD = 5e-7 if BACKEND.lab_simulator else 1.5e-4
SIM_LAUNCH_S = 1e-5  # a simulated launch's own cost (an empty one-thread kernel: about 10 µs here)
GPU_SAMPLE_S = 2e-3  # one timed GPU sample's fixed cost: an L2 flush, synchronisations, events
GPU_COMPILE_S = 0.3  # a kernel's first launch in the process: compiled, or loaded from Numba's cache
DEVICE_BYTES_PER_S = 2e12  # a kernel or a device-to-device copy (an H200 moves about 4 TB/s)
PAGEABLE_BYTES_PER_S = 8e9  # a pageable host copy: staged through a pinned buffer by the driver
PINNED_BYTES_PER_S = 2e10  # a pinned host copy over PCIe 4/5
HOST_BYTES_PER_S = 4e9  # the simulator's "copies": NumPy copies in host memory
PIN_BYTES_PER_S = 4e9  # pinning (page-locking) host memory, once per buffer


def copy_s(nbytes: float, memory: str, simulated: bool) -> float:
    """Seconds one copy of ``nbytes`` takes: ``memory`` "pageable", "pinned" or "device"."""
    if simulated:
        return nbytes / HOST_BYTES_PER_S
    rate = {"pageable": PAGEABLE_BYTES_PER_S, "pinned": PINNED_BYTES_PER_S}.get(memory, DEVICE_BYTES_PER_S)
    return nbytes / rate


def kernel_s(threads: int, nbytes: float, simulated: bool) -> float:
    """Seconds one launch of a memory-bound kernel takes: simulated threads, or bytes at device rate."""
    if simulated:
        return SIM_LAUNCH_S + threads * SIM_S_PER_THREAD
    return nbytes / DEVICE_BYTES_PER_S
