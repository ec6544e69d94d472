"""Facts about the device, the host and the software stack, for reports and the UI."""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from importlib import metadata

from gpu.core.backend import BACKEND, cuda
from gpu.core.limits import MAX_THREADS_PER_BLOCK, WARP_SIZE, host_available_bytes
from gpu.core.shape import Shaped, shaped

LIBRARIES = ("numba", "numba-cuda", "numpy", "llvmlite", "cuda-bindings", "pandas", "streamlit", "altair")


def _known_device_keys(data: dict) -> dict:
    """A newer file's device facts this version does not know are dropped, not refused."""
    known = {f.name for f in fields(DeviceInfo)} | {"peak_bandwidth_gbps"}
    return {k: v for k, v in data.items() if k in known}


@shaped(derived={"peak_bandwidth_gbps": lambda d: d.peak_bandwidth_gbps}, from_file=_known_device_keys)
@dataclass(frozen=True)
class DeviceInfo(Shaped):
    """One GPU (or the simulator) as the engine sees it. Sizes in bytes, clocks in kHz."""

    backend: str  # "cuda" or "simulator"
    name: str
    index: int = 0
    compute_capability: str | None = None
    multiprocessors: int | None = None
    total_memory_bytes: int | None = None
    memory_clock_khz: int | None = None
    memory_bus_width_bits: int | None = None
    max_threads_per_block: int = MAX_THREADS_PER_BLOCK
    warp_size: int = WARP_SIZE
    driver_version: str | None = None
    runtime_version: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def peak_bandwidth_gbps(self) -> float | None:
        """Theoretical device-memory bandwidth, GB/s: 2 transfers per clock (DDR) x bus width."""
        if not self.memory_clock_khz or not self.memory_bus_width_bits:
            return None
        return 2 * self.memory_clock_khz * 1e3 * self.memory_bus_width_bits / 8 / 1e9


@dataclass(frozen=True)
class HostInfo:
    """The CPU side: model, logical cores, memory in bytes, Python and OS."""

    cpu: str
    logical_cores: int
    memory_total_bytes: int | None
    memory_available_bytes: int
    python: str
    platform: str

    def to_dict(self) -> dict:
        return asdict(self)


def _attribute(device, name: str) -> int | None:
    try:
        return int(getattr(device, name))
    except Exception:  # attribute removed from this driver/toolkit, or not exposed
        return None


def _nvml_memory_facts(index: int) -> tuple[int | None, int | None]:
    """(max memory clock kHz, bus width bits) from NVML, when nvidia-ml-py is installed."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            clock_mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)
            bus_bits = pynvml.nvmlDeviceGetMemoryBusWidth(handle)
            return int(clock_mhz) * 1000, int(bus_bits)
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None, None


def _format_cuda_version(version) -> str | None:
    if version is None:
        return None
    if isinstance(version, tuple):
        return ".".join(str(x) for x in version)
    return str(version)


def current_device_index() -> int:
    """The device this thread's CUDA work goes to (``with cuda.gpus[i]:`` selects it)."""
    return 0 if BACKEND.simulated else int(cuda.get_current_device().id)


def device_info(index: int | None = None) -> DeviceInfo:
    """Describe device ``index``, by default the current one (facts are cached)."""
    return _device_info(current_device_index() if index is None else index)


@cache
def _device_info(index: int) -> DeviceInfo:
    if BACKEND.simulated:
        return DeviceInfo(
            backend="simulator",
            name="CUDA simulator (no GPU)",
            index=index,
            notes=(
                (
                    "Kernels run in Kernel Lab's CUDA simulator (docs/simulator.md): each block's threads in turn "
                    "on the CPU, about 3 million simulated threads/s without barriers. Timings are not GPU "
                    "performance."
                )
                if BACKEND.lab_simulator
                else "Kernels run in Numba's CUDA simulator: Python threads on the CPU, about "
                "0.1 ms per GPU thread. Timings are not GPU performance.",
            ),
        )
    device = cuda.list_devices()[index]
    with device:
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        total = cuda.current_context().get_memory_info()[1]
        clock_khz = _attribute(dev, "MEMORY_CLOCK_RATE")
        bus_bits = _attribute(dev, "GLOBAL_MEMORY_BUS_WIDTH")
        notes: list[str] = []
        if not clock_khz or not bus_bits:
            clock_khz, bus_bits = _nvml_memory_facts(index)
            if clock_khz:
                notes.append("memory clock and bus width read from NVML")
        try:
            from gpu.core.numba_internals import driver_version

            driver = _format_cuda_version(driver_version())
        except Exception:
            driver = None
        try:
            runtime = _format_cuda_version(cuda.runtime.get_version())
        except Exception:
            runtime = None
        major, minor = dev.compute_capability
        return DeviceInfo(
            backend="cuda",
            name=name,
            index=index,
            compute_capability=f"{major}.{minor}",
            multiprocessors=_attribute(dev, "MULTIPROCESSOR_COUNT"),
            total_memory_bytes=int(total),
            memory_clock_khz=clock_khz,
            memory_bus_width_bits=bus_bits,
            max_threads_per_block=_attribute(dev, "MAX_THREADS_PER_BLOCK") or MAX_THREADS_PER_BLOCK,
            warp_size=_attribute(dev, "WARP_SIZE") or WARP_SIZE,
            driver_version=driver,
            runtime_version=runtime,
            notes=tuple(notes),
        )


def device_count() -> int:
    """Number of devices runs can use (the simulator counts as one)."""
    return 1 if BACKEND.simulated else len(cuda.list_devices())


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_total() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def host_info() -> HostInfo:
    return HostInfo(
        cpu=_cpu_model(),
        logical_cores=os.cpu_count() or 1,
        memory_total_bytes=_memory_total(),
        memory_available_bytes=host_available_bytes(),
        python=platform.python_version(),
        platform=platform.platform(),
    )


def library_versions() -> dict[str, str | None]:
    """Installed versions of the libraries that shape the results (None: not installed)."""
    versions: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions
