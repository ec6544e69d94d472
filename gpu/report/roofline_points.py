"""Points for the roofline: measured kernels as (intensity, GFLOP/s), from this session's
catalog runs and from recorded ``gpu check`` runs under ``benchmarks/``.

Intensity is FLOPs per byte the algorithm must move at least, declared by each kernel,
not read from hardware counters. Kernels that do no floating-point work (transpose,
histogram) have no place on a FLOP/s roofline and are returned apart, with their GB/s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpu.core.roofline import VECTOR_ADD_INTENSITY, Roofs

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
    copy = (scaling_peaks.get("d2d") or {}).get("gbps")
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
        roofs = Roofs(roofs.memory_gbps, roofs.fp32_gflops, copy, roofs.how)
    points = PointSet(f"recorded: {check_json.parent.name}", device.get("name", "?"), "cuda", roofs)
    if roofs.fp32_gflops is None:
        points.notes.append("this recorded run did not record the SM clock, so its FP32 roof is unknown")
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
    "recorded_runs",
    "session_points",
]
