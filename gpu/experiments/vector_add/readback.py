"""The vector-add check sections read back from a check file: the correctness launches,
the breakdown run and the article's method.

Validators and History rows as ``CheckSection`` (gpu/catalog/base.py) describes them, written
with the schema's field checkers (gpu/service/check_schema.py) so every message reads alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu.service.check_schema import (
    BACKENDS,
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


def _vector_add_run(value: Any, path: str) -> None:
    data = _obj(
        value,
        path,
        {
            "experiment",
            "n",
            "threads_per_block",
            "blocks_per_grid",
            "backend",
            "device",
            "policy",
            "gpu",
            "cpu",
            "agreement",
        },
    )
    _str(data["experiment"], f"{path}.experiment", choices=("vector-add",))
    _int(data["n"], f"{path}.n", minimum=1)
    _int(data["threads_per_block"], f"{path}.threads_per_block", minimum=1, maximum=1024)
    _int(data["blocks_per_grid"], f"{path}.blocks_per_grid", minimum=1)
    _str(data["backend"], f"{path}.backend", choices=BACKENDS)
    _device(data["device"], f"{path}.device")
    _policy(data["policy"], f"{path}.policy")
    gpu = _obj(data["gpu"], f"{path}.gpu", {"phases"})
    _num(gpu.get("compile_s", 0.0), f"{path}.gpu.compile_s")
    phases = _obj(
        gpu["phases"],
        f"{path}.gpu.phases",
        {"h2d", "kernel", "d2h", "total"},
        {"h2d", "launch", "kernel", "d2h", "total"},
    )
    for phase, stats in phases.items():
        _stats(stats, f"{path}.gpu.phases.{phase}")
    cpu = _obj(data["cpu"], f"{path}.cpu", set(), {"python", "numpy", "numba", "numba-parallel"})
    for name, timing in cpu.items():
        where = f"{path}.cpu.{name}"
        if isinstance(timing, dict) and "skipped" in timing:
            _obj(timing, where, {"skipped"}, {"skipped", "estimate_s"})
            _str(timing["skipped"], f"{where}.skipped")
            _num(timing.get("estimate_s"), f"{where}.estimate_s", allow_none=True)
        else:
            _stats(timing, where)
    agreement = _obj(data["agreement"], f"{path}.agreement")
    for name, row in agreement.items():
        where = f"{path}.agreement.{name}"
        _obj(row, where, {"implementation", "n", "identical", "max_abs_diff", "allclose"})
        _int(row["n"], f"{where}.n")
        _int(row["identical"], f"{where}.identical")
        _num(row["max_abs_diff"], f"{where}.max_abs_diff", allow_none=True)
        _bool(row["allclose"], f"{where}.allclose")


def _article(value: Any, path: str) -> None:
    data = _obj(value, path, {"n", "threads_per_block", "results_match", "cpu_time_s", "gpu_time_s", "speedup"})
    _int(data["n"], f"{path}.n", minimum=1)
    _int(data["threads_per_block"], f"{path}.threads_per_block", minimum=1, maximum=1024)
    _bool(data["results_match"], f"{path}.results_match")
    for key in ("cpu_time_s", "gpu_time_s", "speedup"):
        _num(data[key], f"{path}.{key}", allow_none=True)
    if "lines" in data:
        for i, line in enumerate(_list(data["lines"], f"{path}.lines", limit=50)):
            _str(line, f"{path}.lines[{i}]")


def correctness_section(data: Mapping[str, Any], path: str) -> None:
    for i, row in enumerate(_list(data.get("launches", []), f"{path}.launches")):
        _obj(row, f"{path}.launches[{i}]", {"n", "threads_per_block", "passed"})
        _bool(row["passed"], f"{path}.launches[{i}].passed")


def breakdown_section(data: Mapping[str, Any], path: str) -> None:
    _vector_add_run(_obj(data, path, {"run"})["run"], f"{path}.run")


def article_section(data: Mapping[str, Any], path: str) -> None:
    _article(_obj(data, path, {"article"})["article"], f"{path}.article")


def breakdown_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The vector-add run, with the article's method folded in (one row per run)."""
    if "run" not in section:
        return []
    run = dict(section["run"])
    article = (sections.get("article") or {}).get("article")
    if article is not None:
        run["article"] = article
    return [run]
