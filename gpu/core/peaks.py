"""Physical limits: how fast each memory system can move bytes at best.

Four ceilings frame every bandwidth figure on the Scaling page:

- device memory peak, from the memory clock and bus width (``DeviceInfo``);
- a measured device-to-device copy (what the device memory really delivers);
- the host link, from measured pinned host->device and device->host copies;
- host memory, from a measured NumPy copy at a size beyond the last-level cache.

Bytes are counted as in ``gpu.core.copies``: a copy within one memory reads and writes its
size (counts twice); a copy over the link counts once. GB/s are 1e9 bytes per second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpu.core.backend import BACKEND
from gpu.core.copies import bandwidth_gbps, time_copy, time_copy_kernel, time_device_memcpy, time_host_copy
from gpu.core.device import device_info
from gpu.core.limits import device_free_bytes, host_available_bytes
from gpu.core.shape import Shaped, shaped
from gpu.core.timing import RepeatPolicy, Stats, format_seconds, utc_timestamp

MiB = 2**20
DEVICE_COPY_BYTES = 512 * MiB  # large enough that launch overhead is < 1% on any GPU
HOST_COPY_MIN_BYTES = 256 * MiB
QUICK_BYTES = 16 * MiB  # simulator / quick runs: seconds matter more than accuracy

LIMIT_KEYS = ("device_peak", "d2d", "h2d_pinned", "d2h_pinned", "host_copy")
# The "d2d" reference is the faster of a driver memcpy and a copy kernel, both over
# DEVICE_COPY_BYTES (10x an H200's L2) with the L2 flushed before every sample. It is
# a measured reference: where a series beats it, it is shown as such, never as a limit
# that series "reaches x% of" (gpu.experiments.scaling.result.SweepRun.ceiling_beaten).
LIMIT_LABELS = {
    "device_peak": "device memory peak (clock × bus width)",
    "d2d": "device copy, best of memcpy and copy kernel (measured reference)",
    "h2d_pinned": "host→device link, pinned (measured)",
    "d2h_pinned": "device→host link, pinned (measured)",
    "host_copy": "host memory, NumPy copy (measured)",
}


@shaped(derived={"label": lambda limit: limit.label})
@dataclass(frozen=True)
class Limit(Shaped):
    """One ceiling: GB/s (None when unknown), how it was obtained, its samples if measured."""

    key: str
    gbps: float | None
    how: str
    nbytes: int | None = None
    stats: Stats | None = None
    skipped: str | None = None

    def __post_init__(self) -> None:
        if self.key not in LIMIT_LABELS:
            raise ValueError(f"the limit {self.key[:60]!r} is none of {', '.join(LIMIT_LABELS)}")

    @property
    def label(self) -> str:
        return LIMIT_LABELS[self.key]


def _peaks_to_file(peaks: Peaks, data: dict) -> dict:
    """The file keys the limits by name."""
    return {**data, "limits": {limit["key"]: limit for limit in data["limits"]}}


def _peaks_from_file(data: dict) -> dict:
    limits = data.get("limits")
    if isinstance(limits, dict):
        data["limits"] = [{"key": key, **v} if isinstance(v, dict) else v for key, v in limits.items()]
    data.setdefault("policy", {"n_repeat": 5, "warmup": 1})  # recorded before the policy was written
    data.setdefault("created_at", "")
    return data


@shaped(to_file=_peaks_to_file, from_file=_peaks_from_file)
@dataclass(frozen=True)
class Peaks(Shaped):
    """The physical limits measured (or read) on one device and host."""

    limits: tuple[Limit, ...]
    backend: str
    policy: RepeatPolicy
    created_at: str = field(default_factory=utc_timestamp)

    def get(self, key: str) -> Limit | None:
        return next((lim for lim in self.limits if lim.key == key), None)

    def gbps(self, key: str) -> float | None:
        limit = self.get(key)
        return limit.gbps if limit is not None else None

    def to_frame(self):
        """One row per known limit: key, label, gbps, how (pandas DataFrame)."""
        import pandas as pd

        rows = [(lim.key, lim.label, lim.gbps, lim.how) for lim in self.limits if lim.gbps]
        return pd.DataFrame(rows, columns=["key", "label", "gbps", "how"])

    def __str__(self) -> str:
        lines = ["physical limits:"]
        for lim in self.limits:
            value = f"{lim.gbps:,.4g} GB/s" if lim.gbps else f"unknown ({lim.skipped})"
            lines.append(f"  {lim.label:<42} {value}  [{lim.how}]")
        return "\n".join(lines)


def last_level_cache_bytes() -> int | None:
    """Size of the CPU's largest cache in bytes (Linux sysfs), or None when unknown."""
    best = None
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip().upper()
            scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1], 1)
            size = int(text.rstrip("KMG")) * scale
        except (OSError, ValueError, IndexError):
            continue
        best = size if best is None else max(best, size)
    return best


def host_copy_bytes() -> int:
    """A host-copy size well beyond the last-level cache (4x it), within free memory."""
    llc = last_level_cache_bytes() or 64 * MiB
    wanted = max(HOST_COPY_MIN_BYTES, 4 * llc)
    return int(min(wanted, host_available_bytes() // 8))  # two buffers, lots of headroom


def device_copy_bytes() -> int:
    free = device_free_bytes()
    if free is None:
        return QUICK_BYTES
    return int(min(DEVICE_COPY_BYTES, free // 4))  # two buffers, half of free at most


def _measured(key: str, direction: str, nbytes: int, stats: Stats, what: str) -> Limit:
    how = f"{what}; {nbytes / MiB:,.0f} MiB, median of {stats.n_samples} samples ({format_seconds(stats.median_s)})"
    return Limit(key, bandwidth_gbps(direction, nbytes, stats.median_s), how, nbytes, stats)


def _device_copy(nbytes: int, policy: RepeatPolicy) -> Limit:
    """The d2d reference: driver memcpy and a copy kernel, the faster one kept, both shown."""
    if BACKEND.simulated:  # a copy kernel over megabytes would take minutes and mean nothing
        timers = [("device-to-device memcpy, CUDA events", lambda: time_copy("d2d", nbytes, policy, pinned=False)[0])]
    else:  # both behind the verified hold, L2 flushed: the faster one is the reference
        timers = [("device-to-device memcpy (held stream)", lambda: time_device_memcpy(nbytes, policy)),
                  ("copy kernel, 4 × 8-byte words per thread (held stream)", lambda: time_copy_kernel(nbytes, policy))]
    tried: list[tuple[str, Stats | None, str | None]] = []
    for what, timer in timers:
        try:
            stats = timer()
        except Exception as exc:  # out of memory: record and go on
            tried.append((what, None, f"{type(exc).__name__}: {exc}"))
            continue
        tried.append((what, stats, None))
    measured = [(what, stats) for what, stats, _ in tried if stats is not None]
    if not measured:
        return Limit("d2d", None, "failed", nbytes, skipped="; ".join(f"{w}: {e}" for w, _, e in tried))
    what, stats = min(measured, key=lambda item: item[1].median_s)
    others = "; ".join(
        f"{w}: {bandwidth_gbps('d2d', nbytes, st.median_s):,.4g} GB/s" if st is not None else f"{w}: failed"
        for w, st, _ in tried
    )
    if BACKEND.simulated:
        what = "simulated: " + what
    limit = _measured("d2d", "d2d", nbytes, stats, f"faster of ({others}), L2 flushed; kept: {what}")
    return limit


def measure_peaks(
    policy: RepeatPolicy | None = None,
    *,
    quick: bool = False,
    device_nbytes: int | None = None,
    host_nbytes: int | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> Peaks:
    """Read the theoretical device peak and measure the copy ceilings.

    ``quick`` uses 16 MiB buffers (the host copy then may sit in cache, and says so).
    A copy that fails (e.g. out of memory) is recorded as skipped, never raised.
    """
    say = on_progress or (lambda _m: None)
    policy = policy or RepeatPolicy.count(5)
    device_nbytes = device_nbytes or (QUICK_BYTES if quick else device_copy_bytes())
    host_nbytes = host_nbytes or (QUICK_BYTES if quick else host_copy_bytes())
    dev = device_info()
    limits = []
    peak = dev.peak_bandwidth_gbps
    limits.append(
        Limit(
            "device_peak",
            peak,
            "2 × memory clock × bus width" if peak else "not reported by this device",
            skipped=None
            if peak
            else ("no device memory in the simulator" if BACKEND.simulated else "memory clock or bus width unknown"),
        )
    )
    say(f"measuring the {LIMIT_LABELS['d2d']}")
    limits.append(_device_copy(device_nbytes, policy))
    for key, direction, what in (
        ("h2d_pinned", "h2d", "pinned host→device copy, CUDA events"),
        ("d2h_pinned", "d2h", "pinned device→host copy, CUDA events"),
    ):
        say(f"measuring the {LIMIT_LABELS[key]}")
        try:
            stats, pinned_ok = time_copy(direction, device_nbytes, policy, pinned=True)
        except Exception as exc:  # out of memory, pinning refused: record and go on
            limits.append(Limit(key, None, "failed", device_nbytes, skipped=f"{type(exc).__name__}: {exc}"))
            continue
        if direction != "d2d" and not pinned_ok:
            what = what.replace("pinned", "pageable (pinning failed)")
        if BACKEND.simulated:
            what = what.replace("CUDA events", "simulated: a host memory copy, wall clock")
        limits.append(_measured(key, direction, device_nbytes, stats, what))
    say(f"measuring the {LIMIT_LABELS['host_copy']}")
    try:
        stats = time_host_copy(host_nbytes, policy)
        llc = last_level_cache_bytes()
        what = "NumPy copy, wall clock"
        if llc and host_nbytes < 2 * llc:
            what += f" (fits in the {llc / MiB:,.0f} MiB cache: an upper bound)"
        limits.append(_measured("host_copy", "h2h", host_nbytes, stats, what))
    except MemoryError as exc:
        limits.append(Limit("host_copy", None, "failed", host_nbytes, skipped=f"MemoryError: {exc}"))
    return Peaks(tuple(limits), BACKEND.kind, policy)


__all__ = ["LIMIT_KEYS", "LIMIT_LABELS", "Limit", "Peaks", "host_copy_bytes", "last_level_cache_bytes", "measure_peaks"]
