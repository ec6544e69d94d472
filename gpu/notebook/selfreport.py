"""The result file a lab notebook writes (``kernel-lab-result-<key>.json``), read as untrusted input.

``parse_self_report(raw)`` returns a frozen ``SelfReport`` or raises ``SelfReportProblem`` naming the
first field that is wrong, with its value: a file this version does not know, a value of the wrong type,
a statistic that is not what its own samples give, a peak that is not what the device's own clock and bus
width give, a kernel whose hash is not its source's, or a time no GPU could reach (a kernel moving its
bytes faster than the device's memory allows). What it cannot know from the file alone — whether a
learner's kernel is right — the importer asks the lab's own sandbox (``gpu.notebook.importing``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

FORMAT = "kernel-lab-self-reported"  # the harness writes these two (gpu/notebook/harness.py)
FORMAT_VERSION = 1
MAX_BYTES = 2 * 2**20  # a result file holds a kernel, its checks and at most MAX_SAMPLES samples per phase
MAX_SAMPLES = 10_000
MAX_SOURCE_CHARS = 64_000
# No GPU's memory reads and writes faster than this (the H200's theoretical peak is 4,814 GB/s): the bound
# on a time whose device does not state its clock and bus width.
MAX_PLAUSIBLE_GBPS = 10_000.0
RELATIVE = 1e-6  # a statistic or peak in the file must agree with what its own inputs give, to this


class SelfReportProblem(ValueError):
    """A self-reported result the lab refuses; the message names the field and its value."""


@dataclass(frozen=True)
class SelfReport:
    """One validated result file. ``data`` is the file's JSON; the properties are what the lab shows of it."""

    data: Mapping[str, Any]
    sha256: str

    @property
    def kind(self) -> str:  # "experiment" or "problem"
        return str(self.data["kind"])

    @property
    def key(self) -> str:
        return str(self.data["key"])

    @property
    def device(self) -> Mapping[str, Any]:
        return self.data["device"]

    @property
    def device_name(self) -> str:
        return str(self.device["name"])

    @property
    def simulated(self) -> bool:
        return self.data["backend"] == "simulator"

    @property
    def label(self) -> str:
        """How every surface names it: "self-reported on Tesla T4"."""
        return f"self-reported on {self.device_name}" + (" (simulated timings)" if self.simulated else "")

    @property
    def kernel_source(self) -> str:
        return str(self.data["kernel_source"])

    @property
    def kernel(self) -> Mapping[str, Any] | None:
        return (self.data.get("phases") or {}).get("kernel")

    @property
    def gbps(self) -> float | None:
        """Bytes the algorithm must move ÷ the kernel's median (None in the simulator or when not timed)."""
        kernel = self.kernel
        if self.simulated or not kernel:
            return None
        return self.data["bytes_moved"] / kernel["median_s"] / 1e9

    @property
    def fraction_of_peak(self) -> float | None:
        peak = self.device.get("peak_bandwidth_gbps")
        return self.gbps / peak if self.gbps is not None and peak else None


def _fail(field: str, value: Any, why: str) -> SelfReportProblem:
    shown = repr(value)
    return SelfReportProblem(f"{field}: {shown[:80] + '…' if len(shown) > 80 else shown} {why}")


def _get(data: Mapping[str, Any], field: str, kind: type | tuple[type, ...], *, path: str = "",
         optional: bool = False) -> Any:
    name = f"{path}{field}"
    if field not in data:
        if optional:
            return None
        raise SelfReportProblem(f"{name}: missing")
    value = data[field]
    if value is None and optional:
        return None
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise _fail(name, value, "is a true/false value, expected a number or text")
    if not isinstance(value, kind):
        expected = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise _fail(name, value, f"is not {expected}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(name, value, "is not a finite number")
    return value


def _text(data: Mapping[str, Any], field: str, *, path: str = "", limit: int = 200, optional: bool = False):
    value = _get(data, field, str, path=path, optional=optional)
    if value is not None and (len(value) > limit or not value.isprintable() and "\n" not in value):
        raise _fail(f"{path}{field}", value, f"is not printable text of at most {limit:,} characters")
    return value


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=1e-15)


def _stats(data: Mapping[str, Any], path: str) -> dict:
    samples = _get(data, "samples_s", list, path=path)
    if not 1 <= len(samples) <= MAX_SAMPLES:
        raise _fail(f"{path}samples_s", f"{len(samples)} samples", f"must hold 1 to {MAX_SAMPLES:,} samples")
    for i, s in enumerate(samples):
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s <= 0:
            raise _fail(f"{path}samples_s[{i}]", s, "is not a time in seconds above 0")
    ordered = sorted(float(s) for s in samples)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    for field, want in (("median_s", median), ("min_s", ordered[0]), ("max_s", ordered[-1])):
        got = _get(data, field, (int, float), path=path)
        if not _close(float(got), want):
            raise _fail(f"{path}{field}", got, f"is not what its samples_s give ({want!r})")
    if _get(data, "samples", int, path=path) != len(samples):
        raise _fail(f"{path}samples", data["samples"], f"is not the number of samples_s ({len(samples)})")
    return {"median_s": median, "min_s": ordered[0], "max_s": ordered[-1], "samples": len(samples),
            "samples_s": [float(s) for s in samples]}


def _device(data: Mapping[str, Any], simulated: bool) -> dict:
    device = _get(data, "device", dict)
    name = _text(device, "name", path="device.", limit=100)
    if not name.strip():
        raise _fail("device.name", name, "is empty")
    if simulated:
        return {"name": name, "peak_bandwidth_gbps": None}
    facts: dict[str, Any] = {"name": name}
    for field, low, high in (("multiprocessors", 1, 10_000), ("memory_clock_khz", 1, 50_000_000),
                             ("memory_bus_width_bits", 1, 65_536), ("l2_bytes", 1, 2**40)):
        value = _get(device, field, int, path="device.", optional=True)
        if value is not None and not low <= value <= high:
            raise _fail(f"device.{field}", value, f"is outside {low:,}..{high:,}")
        facts[field] = value
    facts["compute_capability"] = _text(device, "compute_capability", path="device.", limit=10, optional=True)
    peak = _get(device, "peak_bandwidth_gbps", (int, float), path="device.", optional=True)
    clock, bus = facts["memory_clock_khz"], facts["memory_bus_width_bits"]
    if clock and bus:
        want = 2 * clock * 1e3 * bus / 8 / 1e9  # double data rate × bus width, as the lab computes a peak
        if peak is None or not _close(float(peak), want):
            raise _fail("device.peak_bandwidth_gbps", peak, f"is not what device.memory_clock_khz and "
                        f"device.memory_bus_width_bits give ({want:,.1f} GB/s)")
    elif peak is not None:
        raise _fail("device.peak_bandwidth_gbps", peak, "is given without the clock and bus width it comes from")
    facts["peak_bandwidth_gbps"] = float(peak) if peak is not None else None
    return facts


def _checks(data: Mapping[str, Any]) -> list[dict]:
    checks = _get(data, "checks", list)
    if not 1 <= len(checks) <= 1000:
        raise _fail("checks", f"{len(checks)} checks", "must hold 1 to 1,000 checks")
    out = []
    for i, check in enumerate(checks):
        if not isinstance(check, dict):
            raise _fail(f"checks[{i}]", check, "is not an object")
        out.append({"name": _text(check, "name", path=f"checks[{i}]."),
                    "passed": _get(check, "passed", bool, path=f"checks[{i}]."),
                    "detail": _text(check, "detail", path=f"checks[{i}].", limit=500)})
    agree = _get(data, "agree", bool)
    if agree != all(c["passed"] for c in out):
        raise _fail("agree", agree, "is not what the checks say")
    return out


def _params(data: Mapping[str, Any]) -> dict | None:
    """A catalog kernel's parameters: names to whole numbers or short texts."""
    params = _get(data, "params", dict, optional=True)
    if params is None:
        return None
    for name, value in params.items():
        if not (isinstance(value, (int, str)) and not isinstance(value, bool)) or len(str(value)) > 40:
            raise _fail(f"params.{name}", value, "is not a whole number or a short text")
    return dict(params)


def _skipped(data: Mapping[str, Any]) -> dict:
    """The steps the notebook skipped (in the simulator: a feature it lacks), each with its reason."""
    skipped = _get(data, "skipped", dict, optional=True) or {}
    for name in skipped:
        _text(skipped, name, path="skipped.", limit=200)
    return dict(skipped)


def _kernel_phases(data: Mapping[str, Any], phases: Mapping[str, dict]) -> dict[str, int]:
    """The phases that time a kernel alone, and the bytes each moves, as the lab knows them (not the file's word):
    "kernel"; every step of a catalog kernel; each launch of Launch config; Scaling's "kernel N=<N>"; every
    Transfers strategy (each moves a, b and c through the device's memory, or across its link, per vector add)."""
    from gpu.notebook.catalog import CATALOG
    from gpu.notebook.sweeps import phase_bytes

    key = data.get("key")
    if key in CATALOG or key == "transfers":
        return {name: data["bytes_moved"] for name in phases}
    if key in ("launch-sweep", "scaling"):
        out = {}
        for name in phases:
            try:
                moved = phase_bytes(str(key), name, dict(data))
            except ValueError as exc:
                raise _fail(f"phases.{name}", name, f"is not a phase this notebook writes ({exc})") from None
            if moved is not None:
                out[name] = moved
        return out
    return {"kernel": data["bytes_moved"]} if "kernel" in phases else {}


def _impossible(data: Mapping[str, Any], phases: Mapping[str, dict], device: Mapping[str, Any]) -> None:
    """Refuse a kernel faster than the device's memory allows (or than any GPU's, without the device's facts)."""
    peak = device.get("peak_bandwidth_gbps")
    limit, whose = (peak, f"this device's {peak:,.0f} GB/s peak") if peak else (
        MAX_PLAUSIBLE_GBPS, f"{MAX_PLAUSIBLE_GBPS:,.0f} GB/s, faster than any GPU's memory")
    for name, moved in _kernel_phases(data, phases).items():
        gbps = moved / phases[name]["min_s"] / 1e9  # the fastest sample: none may beat the peak
        if gbps > limit:
            raise _fail(f"phases.{name}.min_s", phases[name]["min_s"], f"moves {moved:,} bytes at "
                        f"{gbps:,.0f} GB/s, over {whose}: no kernel can, so the time is refused")


def validate(data: Any) -> dict:
    """The file's JSON, checked field by field; returns the fields the lab keeps. Raises SelfReportProblem."""
    if not isinstance(data, dict):
        raise SelfReportProblem("the file is not a JSON object")
    if data.get("format") != FORMAT:
        raise _fail("format", data.get("format"), f"is not {FORMAT!r}: not a result file of a Kernel Lab notebook")
    if _get(data, "format_version", int) != FORMAT_VERSION:
        raise _fail("format_version", data["format_version"], f"is not {FORMAT_VERSION}, the version this lab reads")
    kind = _text(data, "kind")
    if kind not in ("experiment", "problem"):
        raise _fail("kind", kind, "is not 'experiment' or 'problem'")
    backend = _text(data, "backend")
    if backend not in ("cuda", "simulator"):
        raise _fail("backend", backend, "is not 'cuda' or 'simulator'")
    created = _text(data, "created_at", limit=40)
    try:
        datetime.fromisoformat(created)
    except ValueError:
        raise _fail("created_at", created, "is not an ISO 8601 date and time") from None
    device = _device(data, backend == "simulator")
    source = _text(data, "kernel_source", limit=MAX_SOURCE_CHARS)
    if _text(data, "kernel_sha256", limit=64) != hashlib.sha256(source.encode()).hexdigest():
        raise _fail("kernel_sha256", data["kernel_sha256"], "is not the SHA-256 of kernel_source: the kernel was "
                    "changed after the notebook ran it")
    if _get(data, "bytes_moved", int) <= 0:
        raise _fail("bytes_moved", data["bytes_moved"], "is not a whole number of bytes above 0")
    phases_in = _get(data, "phases", dict)
    phases = {name: _stats(_get(phases_in, name, dict, path="phases."), f"phases.{name}.") for name in phases_in}
    checks = _checks(data)
    if backend == "cuda":
        _impossible(data, phases, device)
    else:
        _kernel_phases(data, phases)  # the phases' names are checked in the simulator too
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "method": _text(data, "method", limit=40),
            "kind": kind, "key": _text(data, "key", limit=60), "created_at": created, "backend": backend,
            "device": device, "versions": {k: str(v) for k, v in (_get(data, "versions", dict)).items()
                                           if isinstance(k, str) and isinstance(v, str)},
            "kernel_source": source, "kernel_sha256": data["kernel_sha256"],
            "threads_per_block": _get(data, "threads_per_block", int),
            "n": _get(data, "n", int, optional=True), "sizes": _get(data, "sizes", dict, optional=True),
            "params": _params(data), "skipped": _skipped(data),
            "bytes_moved": data["bytes_moved"], "warmup": _get(data, "warmup", int),
            "l2_flushed": _get(data, "l2_flushed", bool), "phases": phases, "checks": checks,
            "agree": data["agree"]}


def parse_self_report(raw: bytes) -> SelfReport:
    """Bytes of a result file -> a validated SelfReport (strict JSON, at most MAX_BYTES)."""
    if len(raw) > MAX_BYTES:
        raise SelfReportProblem(f"the file is {len(raw):,} bytes, over the {MAX_BYTES:,} a result file may be")

    def no_constant(name: str):
        raise SelfReportProblem(f"the file holds {name}, which is not JSON")

    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SelfReportProblem(f"the file is not JSON: {exc}") from None
    return SelfReport(validate(data), hashlib.sha256(raw).hexdigest())


__all__ = ["FORMAT", "FORMAT_VERSION", "MAX_BYTES", "SelfReport", "SelfReportProblem", "parse_self_report",
           "validate"]
