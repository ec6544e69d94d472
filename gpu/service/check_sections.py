"""The ``gpu check`` sections with a shape of their own: vector add, scaling, launch, transfers.

Each section's declaration (``CheckSection`` in gpu/experiments) names its validator here
(``<section>_section(data, path)``: raises ``ImportProblem`` naming the first bad field)
and its History rows (``<section>_records(section, sections)``). They predate the generic
reader of gpu/service/check_schema.py and check every key and type of their results;
they use the schema's field checkers (``_obj``, ``_num``...), so every message reads alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu.service.check_schema import (
    BACKENDS,
    ImportProblem,
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
    from gpu.experiments.transfers.experiment import STRATEGIES

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


# --- sections: each declared by an experiment (gpu/experiments, ``CheckSection``) ------------
# The validators below are the ``validate`` hooks of the sections whose shape predates the
# generic reader; each gets the section's dict after its title/passed/duration/error.


def correctness_section(data: Mapping[str, Any], path: str) -> None:
    for i, row in enumerate(_list(data.get("launches", []), f"{path}.launches")):
        _obj(row, f"{path}.launches[{i}]", {"n", "threads_per_block", "passed"})
        _bool(row["passed"], f"{path}.launches[{i}].passed")


def breakdown_section(data: Mapping[str, Any], path: str) -> None:
    _vector_add_run(_obj(data, path, {"run"})["run"], f"{path}.run")


def article_section(data: Mapping[str, Any], path: str) -> None:
    _article(_obj(data, path, {"article"})["article"], f"{path}.article")


def scaling_section(data: Mapping[str, Any], path: str) -> None:
    if "run" in data:
        _scaling_run(data["run"], f"{path}.run")


def launch_section(data: Mapping[str, Any], path: str) -> None:
    if "sweep" in data:
        _launch_sweep(data["sweep"], f"{path}.sweep")


def transfers_section(data: Mapping[str, Any], path: str) -> None:
    if data.get("bandwidth") is not None:
        _bandwidth(data["bandwidth"], f"{path}.bandwidth")
    for size, run in (_obj(data.get("strategies") or {}, f"{path}.strategies", set(), {"small", "large"})).items():
        if run is not None:
            _strategies(run, f"{path}.strategies.{size}")


# ... and their ``records`` hooks: the History rows each section holds.


def breakdown_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The vector-add run, with the article's method folded in (one row per run)."""
    if "run" not in section:
        return []
    run = dict(section["run"])
    article = (sections.get("article") or {}).get("article")
    if article is not None:
        run["article"] = article
    return [run]


def no_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A section that holds no run of its own (correctness; the article, kept in the breakdown's row)."""
    return []


def scaling_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [section["run"]] if isinstance(section.get("run"), Mapping) else []


def launch_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [section["sweep"]] if isinstance(section.get("sweep"), Mapping) else []


def transfers_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    runs = [section.get("bandwidth"), *((section.get("strategies") or {}).get(size) for size in ("small", "large"))]
    return [r for r in runs if isinstance(r, Mapping)]
