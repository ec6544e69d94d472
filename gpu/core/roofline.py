"""The roofline: a device's two ceilings and where a kernel sits under them.

Attainable GFLOP/s at arithmetic intensity I (FLOPs per byte) is
min(FP32 peak, I × memory bandwidth). Here I is computed from the bytes the algorithm
must move at least (each input read once, each output written once), never from
hardware counters: a kernel that re-reads memory sits lower than its point suggests.

- Memory roof: 2 × memory clock × bus width (``DeviceInfo.peak_bandwidth_gbps``), with a
  measured device-to-device copy beside it as what the memory really delivers.
- FP32 roof: SMs × FP32 lanes per SM × 2 (a fused multiply-add is two FLOPs) × SM clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from gpu.core.backend import BACKEND
from gpu.core.device import DeviceInfo
from gpu.core.shape import Shaped, shaped

# FP32 results per clock cycle per multiprocessor (32-bit floating-point add, multiply,
# multiply-add), by compute capability. Source: NVIDIA, CUDA C++ Programming Guide,
# "Arithmetic Instructions" throughput table (section "Maximize Instruction Throughput").
# Keys are "major.minor"; a missing minor falls back to its major (see ``fp32_lanes_per_sm``).
FP32_LANES_PER_SM: dict[str, int] = {
    "5.0": 128, "5.2": 128, "5.3": 128,
    "6.0": 64, "6.1": 128, "6.2": 128,
    "7.0": 64, "7.2": 64, "7.5": 64,
    "8.0": 64, "8.6": 128, "8.7": 128, "8.9": 128,
    "9.0": 128,
    "10.0": 128, "10.3": 128, "12.0": 128, "12.1": 128,
}
FLOPS_PER_FMA = 2  # a fused multiply-add counts as a multiply and an add
VECTOR_ADD_INTENSITY = 1 / 12  # one add per element; 12 bytes moved (read a, b; write c)
COPY_ROOF = "measured device copy"
DRIVER_MEMCPY_ROOF = "driver memcpy, device to device (not a ceiling)"

# Published maximum (boost) SM clocks, MHz, by the device name the driver reports: the FP32 roof
# of a recorded run that did not record its clock (the recorded H200 checks did not). Source:
# NVIDIA's data sheets (H200 SXM and H100 SXM: 1,980 MHz, FP32 67 TFLOPS; A100 SXM: 1,410 MHz,
# 19.5 TFLOPS; T4: 1,590 MHz, 8.1 TFLOPS); SMs × lanes × 2 × clock reproduces each sheet's FP32 figure.
PUBLISHED_SM_CLOCK_MHZ: dict[str, int] = {
    "NVIDIA H200": 1980,
    "NVIDIA H100 80GB HBM3": 1980,
    "NVIDIA A100-SXM4-80GB": 1410,
    "NVIDIA A100-SXM4-40GB": 1410,
    "Tesla T4": 1590,
}


def fp32_lanes_per_sm(compute_capability: str | None) -> int | None:
    """FP32 lanes per SM for ``compute_capability`` ("9.0"), or None when the table has no entry."""
    if not compute_capability:
        return None
    if compute_capability in FP32_LANES_PER_SM:
        return FP32_LANES_PER_SM[compute_capability]
    major = compute_capability.split(".")[0]
    same_major = [lanes for cc, lanes in FP32_LANES_PER_SM.items() if cc.split(".")[0] == major]
    return same_major[-1] if same_major else None


@cache
def sm_clock_khz(index: int = 0) -> int | None:
    """The SM's maximum (boost) clock in kHz from the driver; None in the simulator or when unknown."""
    if BACKEND.simulated:
        return None
    try:
        from gpu.core.backend import cuda

        with cuda.list_devices()[index]:
            return int(cuda.get_current_device().CLOCK_RATE)
    except Exception:  # attribute missing on this driver: ask NVML, else the FP32 roof is unknown
        pass
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return (
                int(pynvml.nvmlDeviceGetMaxClockInfo(pynvml.nvmlDeviceGetHandleByIndex(index), pynvml.NVML_CLOCK_SM))
                * 1000
            )
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None


# the copy line's label is decided where a recorded run is drawn (gpu/report/roofline_points.py), not kept
@shaped(derived={"ridge_flop_per_byte": lambda r: r.ridge}, omit=("copy_label",))
@dataclass(frozen=True)
class Roofs(Shaped):
    """A device's ceilings. GB/s and GFLOP/s (1e9); None where unknown (e.g. the simulator)."""

    memory_gbps: float | None  # 2 × memory clock × bus width
    fp32_gflops: float | None  # SMs × lanes × 2 × clock
    copy_gbps: float | None = None  # a measured device-to-device copy, when one was measured
    how: str = ""
    # What the copy line is: a copy kernel's (or the best of it and memcpy) is what memory delivers to a
    # kernel, ``COPY_ROOF``; a driver memcpy alone (older recorded runs) ran slower than plain
    # kernels on the H200, so it is drawn as ``DRIVER_MEMCPY_ROOF``, a reference and not a ceiling.
    copy_label: str = COPY_ROOF

    @property
    def ridge(self) -> float | None:
        """The intensity (FLOP/byte) where the memory roof meets the FP32 roof."""
        if not self.memory_gbps or not self.fp32_gflops:
            return None
        return self.fp32_gflops / self.memory_gbps

    def attainable_gflops(self, intensity: float) -> float | None:
        """min(FP32 peak, intensity × memory peak), or whichever is known."""
        candidates = [r for r in (self.fp32_gflops, intensity * self.memory_gbps if self.memory_gbps else None) if r]
        return min(candidates) if candidates else None

    def bound_by(self, intensity: float) -> str | None:
        """"memory" or "compute": which roof caps a kernel of this intensity (None when unknown)."""
        ridge = self.ridge
        if ridge is None:
            return "memory" if self.memory_gbps else ("compute" if self.fp32_gflops else None)
        return "memory" if intensity < ridge else "compute"

    def fraction(self, gflops: float, intensity: float) -> float | None:
        """Achieved GFLOP/s as a share of the roof that bounds this intensity."""
        roof = self.attainable_gflops(intensity)
        return gflops / roof if roof else None


def fp32_peak_gflops(device: DeviceInfo, clock_khz: int | None) -> float | None:
    """SMs × FP32 lanes per SM × 2 × clock, GFLOP/s; None when a factor is unknown."""
    lanes = fp32_lanes_per_sm(device.compute_capability)
    if not (lanes and device.multiprocessors and clock_khz):
        return None
    return device.multiprocessors * lanes * FLOPS_PER_FMA * clock_khz * 1e3 / 1e9


def published_fp32_gflops(name: str | None, compute_capability: str | None,
                          multiprocessors: int | None) -> tuple[float | None, str]:
    """FP32 peak from ``PUBLISHED_SM_CLOCK_MHZ`` for a device whose clock was not recorded, and how."""
    mhz = PUBLISHED_SM_CLOCK_MHZ.get(name or "")
    lanes = fp32_lanes_per_sm(compute_capability)
    if not (mhz and lanes and multiprocessors):
        return None, ""
    gflops = multiprocessors * lanes * FLOPS_PER_FMA * mhz * 1e6 / 1e9
    how = f"FP32: {multiprocessors} SMs × {lanes} lanes × 2 × {mhz:,} MHz (published boost clock of the {name})"
    return gflops, how


def device_roofs(device: DeviceInfo, clock_khz: int | None = None, copy_gbps: float | None = None) -> Roofs:
    """The roofs of ``device`` (``clock_khz`` read from the driver when not given)."""
    if clock_khz is None and device.backend == "cuda":
        clock_khz = sm_clock_khz(device.index)
    fp32 = fp32_peak_gflops(device, clock_khz)
    lanes = fp32_lanes_per_sm(device.compute_capability)
    parts = []
    if device.peak_bandwidth_gbps and device.memory_clock_khz:
        parts.append(f"memory: 2 × {device.memory_clock_khz / 1e3:,.0f} MHz × {device.memory_bus_width_bits} bits")
    if fp32 and clock_khz:
        parts.append(f"FP32: {device.multiprocessors} SMs × {lanes} lanes × 2 × {clock_khz / 1e3:,.0f} MHz")
    return Roofs(device.peak_bandwidth_gbps, fp32, copy_gbps, "; ".join(parts) or "no device facts (simulator)")


__all__ = [
    "FP32_LANES_PER_SM",
    "Roofs",
    "VECTOR_ADD_INTENSITY",
    "COPY_ROOF",
    "DRIVER_MEMCPY_ROOF",
    "PUBLISHED_SM_CLOCK_MHZ",
    "device_roofs",
    "published_fp32_gflops",
    "fp32_lanes_per_sm",
    "fp32_peak_gflops",
    "sm_clock_khz",
]
