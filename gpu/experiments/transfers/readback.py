"""The Transfers check section read back from a check file: the bandwidth curves and the strategies at two sizes.

Validators and History rows as ``CheckSection`` (gpu/catalog/base.py) describes them, written
with the schema's field checkers (gpu/service/check_schema.py) so every message reads alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu.service.check_schema import (
    _bool,
    _device,
    _int,
    _list,
    _num,
    _obj,
    _policy,
    _stats,
    _str,
)


def _bandwidth(value: Any, path: str) -> None:
    data = _obj(value, path, {"experiment", "backend", "device", "policy", "sizes", "points"})
    _str(data["experiment"], f"{path}.experiment", choices=("transfers-bandwidth",))
    _device(data["device"], f"{path}.device")
    _policy(data["policy"], f"{path}.policy")
    for i, size in enumerate(_list(data["sizes"], f"{path}.sizes", limit=100)):
        _int(size, f"{path}.sizes[{i}]", minimum=1)
    for i, point in enumerate(_list(data["points"], f"{path}.points")):
        where = f"{path}.points[{i}]"
        _obj(point, where, {"direction", "memory", "nbytes", "stats", "pinned_ok"})
        _str(point["direction"], f"{where}.direction", choices=("h2d", "d2h", "d2d"))
        _str(point["memory"], f"{where}.memory", choices=("pinned", "pageable", "device"))
        _int(point["nbytes"], f"{where}.nbytes", minimum=1)
        _stats(point["stats"], f"{where}.stats")
        _bool(point["pinned_ok"], f"{where}.pinned_ok")


def _strategies(value: Any, path: str) -> None:
    from gpu.experiments.transfers.result import STRATEGIES

    data = _obj(
        value,
        path,
        {
            "experiment",
            "n",
            "threads_per_block",
            "chunks",
            "streams",
            "iterations",
            "backend",
            "device",
            "policy",
            "strategies",
        },
    )
    _str(data["experiment"], f"{path}.experiment", choices=("transfers-strategies",))
    for key in ("n", "threads_per_block", "chunks", "streams", "iterations"):
        _int(data[key], f"{path}.{key}", minimum=1)
    _device(data["device"], f"{path}.device")
    _policy(data["policy"], f"{path}.policy")
    strategies = _obj(data["strategies"], f"{path}.strategies", set(), set(STRATEGIES))
    for key, run in strategies.items():
        where = f"{path}.strategies.{key}"
        _obj(run, where, {"host_memory", "phases", "total", "agreement"})
        _str(run["host_memory"], f"{where}.host_memory")
        _int(run.get("iterations", 1), f"{where}.iterations", minimum=1)
        phases = _obj(run["phases"], f"{where}.phases", set(), {"h2d", "launch", "kernel", "d2h", "span"})
        for phase, stats in phases.items():
            _stats(stats, f"{where}.phases.{phase}")
        _stats(run["total"], f"{where}.total")
        _obj(run["agreement"], f"{where}.agreement", {"implementation", "n", "identical", "max_abs_diff", "allclose"})
    for i, iv in enumerate(_list(data.get("timeline", []), f"{path}.timeline")):
        where = f"{path}.timeline[{i}]"
        _obj(iv, where, {"run", "chunk", "stream", "phase", "start_s", "end_s"})
        _str(iv["run"], f"{where}.run")
        _int(iv["chunk"], f"{where}.chunk")
        _int(iv["stream"], f"{where}.stream")
        _str(iv["phase"], f"{where}.phase", choices=("h2d", "kernel", "d2h"))
        _num(iv["start_s"], f"{where}.start_s")
        _num(iv["end_s"], f"{where}.end_s")


def transfers_section(data: Mapping[str, Any], path: str) -> None:
    if data.get("bandwidth") is not None:
        _bandwidth(data["bandwidth"], f"{path}.bandwidth")
    for size, run in (_obj(data.get("strategies") or {}, f"{path}.strategies", set(), {"small", "large"})).items():
        if run is not None:
            _strategies(run, f"{path}.strategies.{size}")


def transfers_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    runs = [section.get("bandwidth"), *((section.get("strategies") or {}).get(size) for size in ("small", "large"))]
    return [r for r in runs if isinstance(r, Mapping)]
