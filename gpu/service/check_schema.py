"""The schema of a ``python -m gpu check`` file (check.json): untrusted input, read as data only.

A check file brought from another machine (a cloud notebook's T4, a laptop GPU) is read
as data only: ``json.loads`` with NaN/Infinity refused, a size limit before parsing,
and a strict schema — every key known, every type checked, every timing a finite
non-negative number. The first problem found is reported with the path of the field
(``sections.breakdown.run.gpu.phases.h2d.samples_s[3]``) and what is allowed.

The sections come from the declarations (``Experiment.check``: ``CheckSection`` key,
``validate`` and ``records`` hooks): a key no experiment declares is refused, a section
that names no validator is read by the generic one (``generic_section``), and
``history_records`` turns a valid file into History records through each section's
``records`` hook. The validators and records of the sections older than that reader
(vector add, scaling, launch, transfers) are in each folder's readback.py (gpu/experiments/<name>/).

Both readers of check files use it: the importer (gpu/service/importer.py, uploads into
History) and the committed reference runs (gpu/service/references.py); each then
rebuilds the results into the engine's own objects (``ReferenceRun.rebuild_all``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

MAX_IMPORT_BYTES = 4 * 2**20  # a full H200 check is ~0.6 MB; 4 MiB leaves room, refuses floods
MAX_SAMPLES = 100_000  # per Stats: far beyond any real run, bounds the work of reading one
MAX_LIST = 10_000  # points, configs, launches, intervals per list
MAX_TEXT = 200_000  # characters in one string (a PTX listing is ~5,000)
MAX_DEPTH = 12  # nesting of a check file is at most 8

TOP_KEYS = {"started_at", "backend", "quick", "passed", "device", "host", "versions", "sections"}
OPTIONAL_TOP_KEYS = {"provenance", "telemetry", "methodology_version", "finished", "plan"}  # later checks write these
BACKENDS = ("cuda", "simulator")
# SECTION_KEYS (module attribute) is derived from the declarations: ``declared_sections()``


class ImportProblem(ValueError):
    """The file is not a check file this version can read; the message names the first problem."""


# --- parsing --------------------------------------------------------------------------


def _refuse_constant(name: str) -> float:
    raise ImportProblem(f"the file holds {name}, which is not a number JSON allows; timings must be finite")


def parse_check_bytes(raw: bytes, *, max_bytes: int = MAX_IMPORT_BYTES) -> dict:
    """Bytes of a check.json -> the dict, checked against the schema. Raises ImportProblem naming the first problem."""
    if len(raw) > max_bytes:
        raise ImportProblem(
            f"the file is {len(raw) / 2**20:,.1f} MiB; a check file may be at most {max_bytes / 2**20:,.0f} MiB"
        )
    if not raw.strip():
        raise ImportProblem("the file is empty; expected the check.json that `python -m gpu check --out DIR` writes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportProblem(f"the file is not UTF-8 text (byte {exc.start}); expected check.json") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except ImportProblem:
        raise
    except RecursionError:
        raise ImportProblem("the JSON is nested too deeply to be a check file") from None
    except json.JSONDecodeError as exc:
        what = (
            "ends before the JSON is complete (truncated?)"
            if exc.pos >= len(text.rstrip())
            else f"is not valid JSON: {exc.msg}"
        )
        raise ImportProblem(f"the file {what} at line {exc.lineno}, column {exc.colno}") from None
    validate_check(data)
    return data


# --- the schema -----------------------------------------------------------------------


def _where(path: str) -> str:
    return f"`{path}`" if path else "the top level"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _obj(value: Any, path: str, required: set[str] = frozenset(), optional: set[str] | None = None) -> dict:
    """An object with these keys (``optional`` None: any others allowed)."""
    if not isinstance(value, dict):
        raise ImportProblem(f"{_where(path)} must be an object, got {_kind(value)}")
    missing = sorted(required - set(value))
    if missing:
        raise ImportProblem(f"{_where(path)} lacks {', '.join(repr(m) for m in missing)}")
    if optional is not None:
        unknown = sorted(set(value) - required - optional)
        if unknown:
            raise ImportProblem(
                f"{_where(path)} has unknown key{'s' if len(unknown) > 1 else ''} {', '.join(repr(u) for u in unknown)}"
            )
    return value


def _str(value: Any, path: str, *, allow_none: bool = False, choices: tuple[str, ...] | None = None) -> str | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise ImportProblem(f"{_where(path)} must be text, got {_kind(value)}")
    if len(value) > MAX_TEXT:
        raise ImportProblem(f"{_where(path)} is {len(value):,} characters; at most {MAX_TEXT:,} allowed")
    if choices is not None and value not in choices:
        raise ImportProblem(f"{_where(path)} is {value[:60]!r}; expected one of {', '.join(repr(c) for c in choices)}")
    return value


def _bool(value: Any, path: str, *, allow_none: bool = False) -> bool | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, bool):
        raise ImportProblem(f"{_where(path)} must be true or false, got {_kind(value)}")
    return value


def _num(value: Any, path: str, *, allow_none: bool = False, minimum: float | None = 0.0) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ImportProblem(f"{_where(path)} must be a number, got {_kind(value)}")
    if not math.isfinite(value):
        raise ImportProblem(f"{_where(path)} must be finite")
    if minimum is not None and value < minimum:
        raise ImportProblem(f"{_where(path)} is {value!r}; it must be at least {minimum:g}")
    return value


def _int(value: Any, path: str, *, allow_none: bool = False, minimum: int = 0, maximum: int = 2**62) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ImportProblem(f"{_where(path)} must be a whole number, got {_kind(value)}")
    if not minimum <= value <= maximum:
        raise ImportProblem(f"{_where(path)} is {value:,}; allowed {minimum:,} to {maximum:,}")
    return value


def _list(value: Any, path: str, *, limit: int = MAX_LIST) -> list:
    if not isinstance(value, list):
        raise ImportProblem(f"{_where(path)} must be a list, got {_kind(value)}")
    if len(value) > limit:
        raise ImportProblem(f"{_where(path)} has {len(value):,} entries; at most {limit:,} allowed")
    return value


def _depth(value: Any, path: str = "", level: int = 0) -> None:
    if level > MAX_DEPTH:
        raise ImportProblem(f"{_where(path)} is nested deeper than a check file ever is ({MAX_DEPTH} levels)")
    if isinstance(value, dict):
        for k, v in value.items():
            _depth(v, f"{path}.{k}" if path else str(k), level + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _depth(v, f"{path}[{i}]", level + 1)


STATS_KEYS = {"median_s", "min_s", "max_s", "mean_s", "noise", "samples", "samples_s"}
# What Stats.to_dict() (few_samples, retries, held) and KernelTiming.to_dict() write beside
# those since the verified hold and the L2 flush (methodology 2): known, and bounded by the
# generic walk (a check written now is refused without them).
TIMING_KEYS = {"few_samples", "retries", "held", "sample_held", "sample_retries", "l2_flushed", "l2_note", "l2_bytes",
               "working_set_bytes", "l2_resident", "launch", "telemetry"}


def _stats(value: Any, path: str) -> None:
    """A Stats.to_dict() or KernelTiming.to_dict(): samples_s a non-empty list of finite seconds ≥ 0; the rest
    numbers."""
    data = _obj(value, path, {"samples_s"}, STATS_KEYS | TIMING_KEYS | {"compile_s"})
    for key in ("few_samples", "held", "l2_flushed", "l2_resident"):
        _bool(data.get(key), f"{path}.{key}", allow_none=True)
    _int(data.get("retries"), f"{path}.retries", allow_none=True)
    _walk({k: v for k, v in data.items() if k in TIMING_KEYS}, path)
    samples = _list(data["samples_s"], f"{path}.samples_s", limit=MAX_SAMPLES)
    if not samples:
        raise ImportProblem(f"`{path}.samples_s` is empty; a measurement has at least one sample")
    for i, s in enumerate(samples):
        _num(s, f"{path}.samples_s[{i}]")
    for key in STATS_KEYS - {"samples_s", "samples"}:
        if key in data:
            _num(data[key], f"{path}.{key}", allow_none=True)
    if "samples" in data:
        _int(data["samples"], f"{path}.samples")
        if data["samples"] != len(samples):
            raise ImportProblem(f"`{path}.samples` says {data['samples']} but `samples_s` holds {len(samples)}")


def _device(value: Any, path: str) -> None:
    data = _obj(value, path, {"backend", "name"})
    _str(data["backend"], f"{path}.backend", choices=BACKENDS)
    _str(data["name"], f"{path}.name")
    for key in (
        "multiprocessors",
        "total_memory_bytes",
        "memory_clock_khz",
        "memory_bus_width_bits",
        "max_threads_per_block",
        "warp_size",
        "index",
    ):
        if key in data:
            _int(data[key], f"{path}.{key}", allow_none=True)
    for key in ("compute_capability", "driver_version", "runtime_version"):
        if key in data:
            _str(data[key], f"{path}.{key}", allow_none=True)
    if "notes" in data:
        for i, note in enumerate(_list(data["notes"], f"{path}.notes")):
            _str(note, f"{path}.notes[{i}]")
    if "peak_bandwidth_gbps" in data:
        _num(data["peak_bandwidth_gbps"], f"{path}.peak_bandwidth_gbps", allow_none=True)


def _policy(value: Any, path: str) -> None:
    data = _obj(value, path, {"n_repeat", "warmup"}, {"n_repeat", "warmup", "budget_s", "max_noise", "min_samples"})
    _int(data["n_repeat"], f"{path}.n_repeat", minimum=1, maximum=1000)
    _int(data["warmup"], f"{path}.warmup")
    _num(data.get("budget_s"), f"{path}.budget_s", allow_none=True)
    _num(data.get("max_noise", 0.02), f"{path}.max_noise")
    _int(data.get("min_samples", 1), f"{path}.min_samples")


# The sections older than the generic reader (vector add, scaling, launch, transfers) have
# validators and records hooks of their own, in gpu/experiments/<name>/readback.py, named by
# their declarations.


def default_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A section read generically: its ``run`` mapping and each mapping of its ``runs`` list."""
    runs = [section.get("run"), *(section.get("runs") if isinstance(section.get("runs"), list) else ())]
    return [r for r in runs if isinstance(r, Mapping)]


# --- the generic reader: any section that declares no validator --------------------------


def _walk(value: Any, path: str) -> None:
    """Every value bounded: numbers finite (whole ones within ±2^62), ``*_s`` seconds ≥ 0,
    ``samples_s`` a list of seconds, lists and text within the limits, keys short text."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}"
            if len(key) > 200:
                raise ImportProblem(f"{_where(path)} has a key of {len(key):,} characters; at most 200 allowed")
            if key == "samples_s":
                for i, s in enumerate(_list(item, where, limit=MAX_SAMPLES)):
                    _num(s, f"{where}[{i}]")
            elif key.endswith("_s") and (item is None or isinstance(item, (int, float))) and not isinstance(item, bool):
                _num(item, where, allow_none=True)
            else:
                _walk(item, where)
    elif isinstance(value, list):
        for i, item in enumerate(_list(value, path, limit=MAX_SAMPLES)):
            _walk(item, f"{path}[{i}]")
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        _int(value, path, minimum=-(2**62))
    elif isinstance(value, float):
        _num(value, path, minimum=None)
    elif isinstance(value, str):
        _str(value, path)
    else:
        raise ImportProblem(f"{_where(path)} is {_kind(value)}, which a check file never holds")


def generic_section(data: Mapping[str, Any], path: str) -> None:
    """A declared section with no validator of its own: every value bounded (``_walk``); its
    runs are then rebuilt through the result type's ``from_dict`` where it has one
    (gpu/service/references.py: ``ReferenceRun.rebuild_all``)."""
    _walk(dict(data), path)


# The check's own sections, declared by no experiment: the methodology section reads the
# others (gpu/report/check.py: ``methodology_section``) and is read back generically.
CHECK_OWN_SECTIONS = ("methodology",)


def declared_sections() -> dict[str, Any]:
    """Every section key a check file may hold -> its ``CheckSection`` (None: the check's own)."""
    from gpu.catalog.registry import check_sections

    return {
        **{key: section for key, (_experiment, section) in check_sections().items()},
        **dict.fromkeys(CHECK_OWN_SECTIONS),
    }


def __getattr__(name: str):
    if name == "SECTION_KEYS":  # derived from the declarations on each use: no list to keep in step
        return tuple(declared_sections())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _section(key: str, value: Any, declared: Any) -> None:
    path = f"sections.{key}"
    data = _obj(value, path, {"title", "passed"})
    _str(data["title"], f"{path}.title")
    _bool(data["passed"], f"{path}.passed")
    _num(data.get("duration_s", 0.0), f"{path}.duration_s")
    if "error" in data:  # a section that raised is kept as failed, with its error
        _str(data["error"], f"{path}.error")
        return
    if declared is not None and declared.validate is not None:
        declared.validate.resolve()(data, path)
        return
    generic_section(data, path)
    if declared is not None:  # its runs are filed under its experiment: one that names another is refused
        from gpu.catalog.registry import aliases, check_sections

        owner = check_sections()[key][0].key
        names = (owner, *aliases(owner))
        listed = data.get("runs") if isinstance(data.get("runs"), list) else []
        for where, run in [("run", data.get("run")), *((f"runs[{i}]", r) for i, r in enumerate(listed))]:
            if isinstance(run, Mapping) and run.get("experiment", owner) not in names:
                raise ImportProblem(
                    f"`{path}.{where}.experiment` is {str(run['experiment'])[:60]!r}; the section {key!r} holds runs "
                    f"of {owner!r}"
                )


def validate_check(data: Any) -> None:
    """Raise ImportProblem naming the first thing that makes ``data`` not a check file (by the schema)."""
    _depth(data)
    top = _obj(data, "", TOP_KEYS, OPTIONAL_TOP_KEYS)
    started = _str(top["started_at"], "started_at")
    try:
        datetime.fromisoformat(started)
    except ValueError:
        raise ImportProblem(
            f"`started_at` is {started[:40]!r}; expected an ISO 8601 time such as 2026-11-29T23:47:40+00:00"
        ) from None
    _str(top["backend"], "backend", choices=BACKENDS)
    _bool(top["quick"], "quick")
    _bool(top["passed"], "passed")
    if "finished" in top:  # False: a check stopped before its end (its file is partial)
        _bool(top["finished"], "finished")
    if "plan" in top:  # the verification plan that chose and budgeted its sections (gpu/report/plan.py)
        _str(top["plan"], "plan", choices=("first-look", "verify"))
    _device(top["device"], "device")
    _obj(top["host"], "host")
    versions = _obj(top["versions"], "versions")
    for name, version in versions.items():
        _str(version, f"versions.{name}", allow_none=True)
    if "methodology_version" in top:
        _int(top["methodology_version"], "methodology_version", minimum=1, maximum=1000)
    if "provenance" in top:
        prov = _obj(top["provenance"], "provenance", set(), {"commit", "command"})
        for key, value in prov.items():
            _str(value, f"provenance.{key}", allow_none=True)
    sections = _obj(top["sections"], "sections")
    declared = declared_sections()
    unknown = [k for k in sections if k not in declared]
    if unknown:  # unknown: no experiment of this version declares it
        raise ImportProblem(
            f"`sections` holds an unknown experiment {unknown[0]!r}; this version knows {', '.join(declared)}"
        )
    if not sections:
        raise ImportProblem("`sections` is empty: the check recorded nothing")
    for key, value in sections.items():
        _section(key, value, declared[key])


# --- into History ---------------------------------------------------------------------


def no_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A section that holds no run of its own (correctness; the article, kept in the breakdown's row)."""
    return []


def section_records(data: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(experiment key, result dict) of every run a validated check holds, by the declarations' order.

    Each declared section gives its rows through its ``records`` hook (the default: its
    ``run`` and ``runs``); a row that names no experiment is filed under the declaring one.
    Failed sections (an ``error``) and the check's own sections hold none.
    """
    from gpu.catalog.registry import check_sections

    sections = data["sections"]
    out: list[tuple[str, Mapping[str, Any]]] = []
    for key, (experiment, declared) in check_sections().items():
        section = sections.get(key)
        if not isinstance(section, Mapping) or "error" in section:
            continue
        hook = declared.records.resolve() if declared.records is not None else default_records
        for result in hook(section, sections):
            if isinstance(result, Mapping):
                out.append((experiment.key, result))
    return out


def history_records(data: Mapping[str, Any], *, source: str, sha256: str) -> list[dict]:
    """The runs of a validated check as History records (result dicts), from ``section_records``.

    The article's method is kept inside the vector-add run (one row per run), and each
    record says where it came from under ``imported``.
    """
    prov = data.get("provenance") or {}
    imported = {
        "source": source,
        "sha256": sha256,
        "check_started_at": data["started_at"],
        "quick": data["quick"],
        "commit": prov.get("commit"),
        "command": prov.get("command"),
    }
    from gpu.core.provenance import METHODOLOGY_KEY, methodology_of

    version = methodology_of(data)  # 1 for a check recorded before versions: History shows its caveat
    return [
        {"experiment": key, **result, "imported": imported, METHODOLOGY_KEY: version}
        for key, result in section_records(data)
    ]


__all__ = [
    "CHECK_OWN_SECTIONS",
    "ImportProblem",
    "MAX_IMPORT_BYTES",
    "SECTION_KEYS",  # noqa: F822  (SECTION_KEYS: __getattr__)
    "declared_sections",
    "default_records",
    "generic_section",
    "history_records",
    "parse_check_bytes",
    "section_records",
    "validate_check",
]
