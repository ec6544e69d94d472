"""GPU telemetry through NVML (``pynvml`` from the ``nvidia-ml-py`` package), optional.

Why: a figure measured while the GPU slowed its clocks — power
cap, heat — is not the GPU's figure, and nothing said so. Each GPU run samples the SM
and memory clocks, temperature, power and the active clock-event ("throttle") reasons
before, during (a background thread) and after; ``TelemetryMonitor.summary()`` is
stored with the run, and a run during which clocks dropped or a slowdown reason fired
is flagged beside its figures.

``pynvml`` is imported only here and only when asked for; without it (or without an
NVIDIA driver, or in the simulator) every function says "telemetry unavailable" and
why, and runs go on. ``make`` installs ``nvidia-ml-py`` only where a driver exists.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

# NVML's clock-event reason bits (nvml.h, nvmlClocksEventReason*; stable since the
# "throttle reasons" of older drivers). Idle and application/display clock settings are
# not slowdowns: they are recorded but never flag a run.
REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
NOT_SLOWDOWNS = {"gpu_idle", "applications_clocks_setting", "display_clock_setting", "sync_boost"}
CLOCK_DROP = 0.10  # SM clock more than 10% under the run's highest busy clock: flagged
BACKGROUND_INTERVAL_S = 0.5  # during long runs; NVML's own clocks update about this often

_NVML_CLOCK_SM, _NVML_CLOCK_MEM, _NVML_TEMPERATURE_GPU = 1, 2, 0  # nvml.h enums


@dataclass(frozen=True)
class TelemetrySample:
    """One reading. Clocks in MHz, temperature in °C, power in W; reasons active then."""

    t_s: float  # seconds since the monitor started
    sm_clock_mhz: float | None
    mem_clock_mhz: float | None
    temperature_c: float | None
    power_w: float | None
    reasons: tuple[str, ...]

    @property
    def busy(self) -> bool:
        return "gpu_idle" not in self.reasons

    @property
    def slowdowns(self) -> tuple[str, ...]:
        return tuple(r for r in self.reasons if r not in NOT_SLOWDOWNS)

    def to_dict(self) -> dict:
        return {**asdict(self), "reasons": list(self.reasons)}


def _import_nvml():
    import pynvml  # nvidia-ml-py

    return pynvml


def decode_reasons(mask: int) -> tuple[str, ...]:
    """The names of the bits set in an NVML clock-event reason mask."""
    return tuple(name for bit, name in REASON_BITS.items() if mask & bit)


def pci_bus_id(cuda_index: int | None = None) -> str | None:
    """The PCI bus id ("00000000:19:00.0") of CUDA device ``cuda_index`` (the current one
    when None); None in the simulator or when the driver does not say.

    Why: NVML numbers devices in PCI order, CUDA (by default) fastest first, so NVML
    device 0 need not be the GPU a run used; the bus id names the same board in both.
    """
    from gpu.core.backend import BACKEND, cuda

    if BACKEND.simulated:
        return None
    try:
        dev = cuda.get_current_device() if cuda_index is None else cuda.list_devices()[cuda_index]
        return f"{int(dev.PCI_DOMAIN_ID):08X}:{int(dev.PCI_BUS_ID):02X}:{int(dev.PCI_DEVICE_ID):02X}.0"
    except Exception:  # an attribute this driver or binding lacks
        return None


def nvml_index_of_current_device() -> str | int:
    """What to open NVML with for the current CUDA device: its bus id, else its CUDA ordinal."""
    from gpu.core.device import current_device_index

    return pci_bus_id() or current_device_index()


class Nvml:
    """A thin, failure-tolerant wrapper over one device's NVML handle.

    ``device``: a PCI bus id (str, preferred: ``pci_bus_id``) or an NVML index (int).
    """

    def __init__(self, device: int | str = 0, module=None):
        self.nvml = module if module is not None else _import_nvml()
        self.nvml.nvmlInit()
        if isinstance(device, str):
            self.handle = self.nvml.nvmlDeviceGetHandleByPciBusId(device)
        else:
            self.handle = self.nvml.nvmlDeviceGetHandleByIndex(device)

    def _try(self, fn: Callable[[], float]) -> float | None:
        try:
            return fn()
        except Exception:  # not supported on this GPU or driver: leave that field empty
            return None

    def read(self, t_s: float) -> TelemetrySample:
        n, h = self.nvml, self.handle
        reasons_fn = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            n, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        mask = self._try(lambda: reasons_fn(h)) if reasons_fn else None
        power_mw = self._try(lambda: n.nvmlDeviceGetPowerUsage(h))
        return TelemetrySample(
            t_s=t_s,
            sm_clock_mhz=self._try(lambda: n.nvmlDeviceGetClockInfo(h, _NVML_CLOCK_SM)),
            mem_clock_mhz=self._try(lambda: n.nvmlDeviceGetClockInfo(h, _NVML_CLOCK_MEM)),
            temperature_c=self._try(lambda: n.nvmlDeviceGetTemperature(h, _NVML_TEMPERATURE_GPU)),
            power_w=power_mw / 1e3 if power_mw is not None else None,
            reasons=decode_reasons(int(mask)) if mask is not None else (),
        )


def open_nvml(index: int | str = 0, module=None) -> tuple[Nvml | None, str | None]:
    """(an Nvml for a PCI bus id or NVML index, None) or (None, why telemetry is unavailable here)."""
    from gpu.core.backend import BACKEND

    if module is None and BACKEND.simulated:
        return None, "telemetry unavailable: no GPU (kernels run in the CUDA simulator)"
    try:
        return Nvml(index, module), None
    except ImportError:
        return (
            None,
            "telemetry unavailable: nvidia-ml-py (pynvml) is not installed — `make` installs it where an NVIDIA driver "
            "exists",
        )
    except Exception as exc:  # no driver, no permission, an NVML error
        return None, f"telemetry unavailable: NVML failed ({type(exc).__name__}: {exc})"


def read_now(cuda_index: int | None = None, module=None) -> tuple[TelemetrySample | None, str | None]:
    """One reading now of CUDA device ``cuda_index`` (the current one when None), found in
    NVML by its PCI bus id (for the Device page): (sample, None) or (None, why not)."""
    nvml, why = open_nvml(pci_bus_id(cuda_index) or (cuda_index or 0), module)
    return (nvml.read(0.0), None) if nvml is not None else (None, why)


def summarize(samples: list[TelemetrySample], unavailable: str | None = None) -> dict:
    """What a run stores: before/after readings, extremes, reasons seen, and flags."""
    if unavailable is not None or not samples:
        return {"available": False, "reason": unavailable or "no readings", "flagged": False, "flags": []}
    before, after = samples[0], samples[-1]
    busy_clocks = [s.sm_clock_mhz for s in samples if s.busy and s.sm_clock_mhz]
    flags = []
    if busy_clocks:
        top = max(busy_clocks)
        low = min(busy_clocks)
        if low < (1 - CLOCK_DROP) * top:
            flags.append(f"SM clock dropped from {top:,.0f} to {low:,.0f} MHz while busy")
    slow = sorted({r for s in samples for r in s.slowdowns})
    if slow:
        flags.append("clock slowdown reported: " + ", ".join(slow))

    def extreme(key: str, fn) -> float | None:
        values = [getattr(s, key) for s in samples if getattr(s, key) is not None]
        return fn(values) if values else None

    return {
        "available": True,
        "before": before.to_dict(),
        "after": after.to_dict(),
        "readings": len(samples),
        "sm_clock_mhz_min": extreme("sm_clock_mhz", min),
        "sm_clock_mhz_max": extreme("sm_clock_mhz", max),
        "mem_clock_mhz_min": extreme("mem_clock_mhz", min),
        "temperature_c_max": extreme("temperature_c", max),
        "power_w_max": extreme("power_w", max),
        "reasons_seen": sorted({r for s in samples for r in s.reasons}),
        "flagged": bool(flags),
        "flags": flags,
    }


def describe(summary: dict | None) -> str:
    """One line for tables and text outputs."""
    if not summary:
        return "telemetry: not recorded"
    if not summary.get("available"):
        return summary.get("reason", "telemetry unavailable")
    b, a = summary["before"], summary["after"]
    text = (
        f"GPU clocks SM {b['sm_clock_mhz'] or '?'}→{a['sm_clock_mhz'] or '?'} MHz (min "
        f"{summary['sm_clock_mhz_min'] or '?'}), "
        f"memory {b['mem_clock_mhz'] or '?'}→{a['mem_clock_mhz'] or '?'} MHz, max "
        f"{summary['temperature_c_max'] or '?'} °C, "
        f"max {summary['power_w_max'] or 0:,.0f} W"
    )
    return text + ("; FLAGGED: " + "; ".join(summary["flags"]) if summary["flagged"] else "; no throttling")


class TelemetryMonitor:
    """Samples before (``start``), every ``interval_s`` in a background thread, and after (``stop``).

    Use as a context manager around a GPU run; ``summary()`` may be called at any time.
    Without NVML it records nothing and the summary says why.
    """

    def __init__(
        self,
        index: int | str | None = None,
        interval_s: float = BACKGROUND_INTERVAL_S,
        module=None,
        clock=time.perf_counter,
    ):
        # None: the current CUDA device, by PCI bus id (NVML's index 0 may be another board)
        if index is None:
            index = 0 if module is not None else nvml_index_of_current_device()
        self._nvml, self.unavailable = open_nvml(index, module)
        self._interval_s = interval_s
        self._clock = clock
        self._samples: list[TelemetrySample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = clock()

    def _read(self) -> None:
        if self._nvml is None:
            return
        sample = self._nvml.read(self._clock() - self._t0)
        with self._lock:
            self._samples.append(sample)

    def start(self, background: bool = True) -> TelemetryMonitor:
        self._read()
        if background and self._nvml is not None:
            self._thread = threading.Thread(target=self._loop, name="kernel-lab-telemetry", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._read()

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._read()
        return self.summary()

    def summary(self) -> dict:
        with self._lock:
            return summarize(list(self._samples), self.unavailable)

    def __enter__(self) -> TelemetryMonitor:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


__all__ = [
    "TelemetryMonitor",
    "TelemetrySample",
    "decode_reasons",
    "describe",
    "nvml_index_of_current_device",
    "open_nvml",
    "pci_bus_id",
    "read_now",
    "summarize",
]
