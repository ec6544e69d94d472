"""Points for the roofline: measured kernels as (intensity, GFLOP/s), from this session's
catalog runs and from recorded ``gpu check`` runs under ``benchmarks/``.

Intensity is FLOPs per byte the algorithm must move at least, declared by each kernel,
not read from hardware counters. Kernels that do no floating-point work (transpose,
histogram) have no place on a FLOP/s roofline and are returned apart, with their GB/s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpu.core.roofline import DRIVER_MEMCPY_ROOF, VECTOR_ADD_INTENSITY, Roofs, published_fp32_gflops

COLUMNS = ("kernel", "step", "kind", "size", "intensity", "gflops", "gbps", "fraction", "bound", "source", "backend")
VECTOR_ADD_SERIES = {
    "gpu-kernel": "the article's kernel",
    "gpu-ilp": "4 per thread",
    "cupy": "CuPy a + b",
    "torch": "PyTorch a + b",
}


@dataclass(frozen=True)
class PointSet:
    """Points on one device with its roofs; ``off_roofline`` holds zero-FLOP kernels (GB/s only)."""

    source: str  # "this session" or "recorded: <folder>"
    device: str
    backend: str
    roofs: Roofs
    points: list[dict] = field(default_factory=list)
    off_roofline: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _roofs(data: Mapping | None) -> Roofs:
    data = data or {}
    return Roofs(data.get("memory_gbps"), data.get("fp32_gflops"), data.get("copy_gbps"), data.get("how", ""))


def _point(kernel: str, step: str, kind: str, size: str, flops: float, nbytes: float, seconds: float,
           roofs: Roofs, source: str, backend: str) -> dict:
    intensity = flops / nbytes if nbytes else 0.0
    gflops = flops / seconds / 1e9 if seconds else None
    return {
        "kernel": kernel, "step": step, "kind": kind, "size": size, "intensity": intensity,
        "gflops": gflops, "gbps": nbytes / seconds / 1e9 if seconds else None,
        "fraction": roofs.fraction(gflops, intensity) if gflops and flops else (
            nbytes / seconds / 1e9 / roofs.memory_gbps if seconds and roofs.memory_gbps else None),
        "bound": roofs.bound_by(intensity) if flops else "memory",
        "source": source, "backend": backend,
    }


def add_catalog_run(points: PointSet, run: Mapping) -> None:
    """Add every measured GPU implementation of one ``KernelRun.to_dict()`` to ``points``."""
    for impl in run["implementations"].values():
        if impl["kind"] == "cpu" or impl.get("phases") is None or not impl.get("seconds"):
            continue
        point = _point(run["title"], impl["label"], impl["kind"], run["size"], run["flops"], run["bytes_moved"],
                       impl["seconds"], points.roofs, points.source, run["backend"])
        (points.points if run["flops"] else points.off_roofline).append(point)


def session_points(runs: Iterable[Mapping], roofs: Roofs, device: str, backend: str) -> PointSet:
    """The points of this browser session's catalog runs (``KernelRun.to_dict()`` each)."""
    points = PointSet("this session", device, backend, roofs)
    for run in runs:
        add_catalog_run(points, run)
    return points


def _vector_add_points(points: PointSet, sections: Mapping) -> None:
    scaling = (sections.get("scaling") or {}).get("run") or {}
    rows = [p for p in scaling.get("points", []) if p.get("series") in VECTOR_ADD_SERIES]
    if rows:
        largest = max(p["n"] for p in rows)
        for p in rows:
            if p["n"] == largest:
                n = p["n"]
                points.points.append(
                    _point(
                        "Vector add",
                        VECTOR_ADD_SERIES[p["series"]],
                        "library" if p["series"] in ("cupy", "torch") else "step",
                        f"N = {n:,} float32",
                        n,
                        12 * n,
                        p["stats"]["median_s"],
                        points.roofs,
                        points.source,
                        "cuda",
                    )
                )
        return
    breakdown = (sections.get("breakdown") or {}).get("run")
    if breakdown:
        n = breakdown["n"]
        seconds = breakdown["gpu"]["phases"]["kernel"]["median_s"]
        points.points.append(
            _point(
                "Vector add",
                "the article's kernel",
                "step",
                f"N = {n:,} float32",
                n,
                12 * n,
                seconds,
                points.roofs,
                points.source,
                breakdown.get("backend", "cuda"),
            )
        )


def _at_largest(sections: Mapping) -> str:
    """ " at N = 1,073,741,824 (12.9 GB, far beyond any L2)": the vector-add points' size, when known."""
    scaling = (sections.get("scaling") or {}).get("run") or {}
    sizes = [p["n"] for p in scaling.get("points", []) if p.get("series") in VECTOR_ADD_SERIES]
    if not sizes:
        return ""
    n = max(sizes)
    return f" at N = {n:,} ({12 * n / 1e9:.1f} GB{', far beyond any L2' if 12 * n > 2**30 else ''})"


def recorded_points(check_json: Path) -> PointSet | None:
    """Points from one recorded ``gpu check`` run (check.json); None when it holds no GPU data."""
    try:
        data = json.loads(check_json.read_text())
    except (OSError, ValueError):
        return None
    if data.get("backend") != "cuda":
        return None
    device = data.get("device") or {}
    sections = data.get("sections") or {}
    scaling_peaks = (((sections.get("scaling") or {}).get("run") or {}).get("peaks") or {}).get("limits") or {}
    d2d = scaling_peaks.get("d2d") or {}
    copy = d2d.get("gbps")
    # In older runs the "d2d" limit was the driver's device-to-device memcpy alone, timed with plain
    # events: 2.4-2.8 TB/s on the H200, slower than the vector-add kernel itself. It is no ceiling.
    memcpy_only = bool(copy) and "copy kernel" not in str(d2d.get("how", ""))
    catalog_runs = [
        run
        for s in sections.values()
        for run in (s.get("runs") or [])
        if isinstance(run, dict) and "implementations" in run
    ]
    roofs = (
        _roofs(catalog_runs[0]["roofs"])
        if catalog_runs
        else Roofs(device.get("peak_bandwidth_gbps"), None, None, "memory: 2 × memory clock × bus width")
    )
    if copy and not roofs.copy_gbps:
        roofs = replace(roofs, copy_gbps=copy, copy_label=DRIVER_MEMCPY_ROOF if memcpy_only else roofs.copy_label)
    notes = []
    if roofs.fp32_gflops is None:
        fp32, how = published_fp32_gflops(device.get("name"), device.get("compute_capability"),
                                          device.get("multiprocessors"))
        if fp32:
            roofs = replace(roofs, fp32_gflops=fp32, how="; ".join(h for h in (roofs.how, how) if h))
            notes.append("this recorded run did not record its SM clock: the FP32 roof uses the device's published "
                         "boost clock (the most it can reach, not the clock it ran at)")
        else:
            notes.append("this recorded run did not record the SM clock, so its FP32 roof is unknown")
    if memcpy_only:
        notes.append(
            f"the dashed line is the driver's device-to-device memcpy as this run recorded it ({copy:,.0f} GB/s, "
            f"{d2d.get('how', '')}), not a ceiling: on this GPU the driver's memcpy moves memory more slowly than "
            "a plain kernel does. So the vector-add dots above it are right, not the line: they count "
            f"the 12 bytes per element the kernel must move{_at_largest(sections)}, read and written once each, and "
            "stay below the memory roof. Newer checks draw the best of the memcpy and a copy kernel"
        )
    points = PointSet(f"recorded: {check_json.parent.name}", device.get("name", "?"), "cuda", roofs, notes=notes)
    from gpu.core.provenance import caveat_for

    if caveat_for(data):  # every surface showing a run recorded before the rules says so
        points.notes.insert(0, f"this run was {caveat_for(data)}")
    _vector_add_points(points, sections)
    for run in catalog_runs:
        add_catalog_run(points, run)
    return points if points.points or points.off_roofline else None


def recorded_runs(benchmarks: Path) -> list[PointSet]:
    """Every recorded run under ``benchmarks/`` with GPU points, newest folder name last."""
    sets = (recorded_points(path) for path in sorted(benchmarks.glob("*/check.json")))
    return [s for s in sets if s is not None]


def ranked_recorded(sets: list[PointSet], refs) -> list[PointSet]:
    """The recorded sets, most telling first: measured under today's rules, then with points at the most
    distinct intensities (a run of vector add alone is dots at one x), then newest. ``refs``: References."""
    from gpu.report.compare_gpus import recorded_peers

    not_peers = {ref.key for ref, _why in recorded_peers(refs.runs).excluded}  # a kernel time with its launch in it

    def rank(points: PointSet) -> tuple:
        ref = refs.get(points.source.removeprefix("recorded: "))
        spread = len({round(p["intensity"], 9) for p in points.points} | {round(p["intensity"], 9)
                                                                              for p in points.off_roofline})
        return (ref is not None and ref.caveat is None, spread, ref.started_at if ref is not None else "")

    kept = [s for s in sets if s.source.removeprefix("recorded: ") not in not_peers]
    return sorted(kept, key=rank, reverse=True)


def add_vector_add(points: PointSet, n: int, kernel_s: float, step: str = "the article's kernel") -> None:
    """A vector add of ``n`` float32 elements whose kernel took ``kernel_s``: 1 FLOP per 12 bytes."""
    points.points.append(_point("Vector add", step, "step", f"N = {n:,} float32", n, n / VECTOR_ADD_INTENSITY, kernel_s,
                                points.roofs, points.source, points.backend))


__all__ = [
    "COLUMNS",
    "PointSet",
    "add_catalog_run",
    "add_vector_add",
    "recorded_points",
    "ranked_recorded",
    "recorded_runs",
    "session_points",
]
