"""The Launch config check section read back from a check file: the block-size sweep.

Validators and History rows as ``CheckSection`` (gpu/catalog/base.py) describes them, written
with the schema's field checkers (gpu/service/check_schema.py) so every message reads alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu.service.check_schema import (
    ImportProblem,
    _bool,
    _device,
    _int,
    _list,
    _obj,
    _policy,
    _stats,
    _str,
)


def _launch_sweep(value: Any, path: str) -> None:
    data = _obj(value, path, {"experiment", "n", "backend", "device", "policy", "configs"})
    _str(data["experiment"], f"{path}.experiment", choices=("launch-sweep",))
    _int(data["n"], f"{path}.n", minimum=1)
    _device(data["device"], f"{path}.device")
    _policy(data["policy"], f"{path}.policy")
    configs = _list(data["configs"], f"{path}.configs", limit=100)
    if not configs:
        raise ImportProblem(f"`{path}.configs` is empty")
    for i, config in enumerate(configs):
        where = f"{path}.configs[{i}]"
        _obj(config, where, {"kind", "threads_per_block", "blocks", "kernel", "agree"})
        _str(config["kind"], f"{where}.kind", choices=("one thread per element", "grid-stride"))
        _int(config["threads_per_block"], f"{where}.threads_per_block", minimum=1, maximum=1024)
        _int(config["blocks"], f"{where}.blocks", minimum=1)
        _int(config.get("sm_multiple"), f"{where}.sm_multiple", allow_none=True, minimum=1)
        _stats(config["kernel"], f"{where}.kernel")
        _bool(config["agree"], f"{where}.agree")
        if config.get("occupancy") is not None:
            occ = _obj(
                config["occupancy"],
                f"{where}.occupancy",
                {"threads_per_block", "blocks_per_sm", "warps_per_sm", "max_warps_per_sm", "source"},
            )
            for key in ("threads_per_block", "blocks_per_sm", "warps_per_sm", "max_warps_per_sm"):
                _int(occ[key], f"{where}.occupancy.{key}")
            _str(occ["source"], f"{where}.occupancy.source")


def launch_section(data: Mapping[str, Any], path: str) -> None:
    if "sweep" in data:
        _launch_sweep(data["sweep"], f"{path}.sweep")


def launch_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [section["sweep"]] if isinstance(section.get("sweep"), Mapping) else []
