"""The Scaling check section read back from a check file: the sweep, value by value.

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


def _scaling_run(value: Any, path: str) -> None:
    from gpu.experiments.scaling.result import SERIES_LABELS

    data = _obj(value, path, {"experiment", "backend", "device", "config", "points"})
    _str(data["experiment"], f"{path}.experiment", choices=("scaling",))
    _device(data["device"], f"{path}.device")
    config = _obj(data["config"], f"{path}.config", {"min_n", "max_n", "spacing", "impls", "policy"})
    _int(config["min_n"], f"{path}.config.min_n", minimum=1)
    _int(config["max_n"], f"{path}.config.max_n", minimum=1)
    _str(config["spacing"], f"{path}.config.spacing", choices=("pow2", "decade"))
    _policy(config["policy"], f"{path}.config.policy")
    for i, point in enumerate(_list(data["points"], f"{path}.points")):
        where = f"{path}.points[{i}]"
        _obj(point, where, {"n", "series"})
        _int(point["n"], f"{where}.n", minimum=1)
        _str(point["series"], f"{where}.series", choices=tuple(SERIES_LABELS))
        if point.get("stats") is not None:
            _stats(point["stats"], f"{where}.stats")
        _num(point.get("estimate_s"), f"{where}.estimate_s", allow_none=True)
        _str(point.get("error"), f"{where}.error", allow_none=True)
        _bool(point.get("agree"), f"{where}.agree", allow_none=True)
    if data.get("peaks") is not None:
        peaks = _obj(data["peaks"], f"{path}.peaks", {"limits"})
        from gpu.core.peaks import LIMIT_LABELS

        limits = _obj(peaks["limits"], f"{path}.peaks.limits", set(), set(LIMIT_LABELS))
        for key, limit in limits.items():
            where = f"{path}.peaks.limits.{key}"
            _obj(limit, where, {"gbps", "how"})
            _num(limit["gbps"], f"{where}.gbps", allow_none=True)
            _str(limit["how"], f"{where}.how")
    for key in ("wall_s", "measuring_s", "compile_s"):
        _num(data.get(key, 0.0), f"{path}.{key}")


def scaling_section(data: Mapping[str, Any], path: str) -> None:
    if "run" in data:
        _scaling_run(data["run"], f"{path}.run")


def scaling_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [section["run"]] if isinstance(section.get("run"), Mapping) else []
