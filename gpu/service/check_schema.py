"""Reading a ``python -m gpu check`` file (check.json): untrusted input, read as data only.

A check file brought from another machine (a cloud notebook's T4, a laptop GPU) is read in
three passes, each refusing the file with the path of the first bad field and what is allowed:

1. **Parsing** (``parse_check_bytes``): a size limit before anything is read; strict UTF-8
   JSON with NaN/Infinity refused; every whole number's digits and every number's text
   bounded before it is converted (a 5,000-digit integer is a field error, not a crash);
   a key twice in one object refused.
2. **Bounds** (``_walk``, over the whole file): every number finite, whole numbers within
   ±2^62, text and lists within limits, keys short; ``samples_s`` a list of numbers; every
   time (``*_s``, ``samples_s``) 0 or
   between a nanosecond and a day; every bandwidth (``*gbps``) at most a few times the
   device's theoretical memory peak.
3. **Types**: the top level's known keys; each section's results converted into their result
   types (``CheckSection.parts``, gpu/core/shape.py), whose annotations check every key and
   value; a section that declares no parts is read generically: its ``run`` and ``runs`` are
   converted into its experiment's result type when that type has a shape (a catalog run),
   and are otherwise bounded only (``ReferenceRun.rebuild_all`` rebuilds what it can).

``history_records`` turns a valid file into History records: each typed result rewritten
from its object, so a value the file derives (a median, a bandwidth) is recomputed, not
trusted. Both readers of check files use this module: the importer (gpu/service/importer.py)
and the committed reference runs (gpu/service/references.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gpu.core.device import DeviceInfo
from gpu.core.safe_text import shown
from gpu.core.shape import SHAPES, ShapeError, from_builtins, kind, to_builtins

MAX_IMPORT_BYTES = 4 * 2**20  # a full H200 check is ~0.6 MB; 4 MiB leaves room, refuses floods
MAX_SAMPLES = 100_000  # per list: far beyond any real run, bounds the work of reading one
MAX_TEXT = 200_000  # characters in one string (a PTX listing is ~5,000)
MAX_KEY = 200  # characters in one key
MAX_DEPTH = 12  # nesting of a check file is at most 8
MAX_DIGITS = 19  # a whole number's digits before it is converted (2^62 has 19)
MAX_NUMBER_TEXT = 40  # characters of a number with a fraction or exponent
# The plausible range of a time: 0 (nothing to time, e.g. the simulator's compile), or from a
# nanosecond (two cycles of a 2 GHz clock, below any CUDA event's or host timer's resolution)
# to a day (a whole check takes hours at most).
MIN_TIME_S = 1e-9
MAX_TIME_S = 86_400.0
# A bandwidth above the device's theoretical memory peak is only possible from its L2 (a working
# set that fits), and the L2 of no GPU reaches four times its memory's peak; a device whose peak
# the file does not give is held to ten times an H200's (4.8 TB/s).
PEAK_SLACK = 4.0
MAX_GBPS = 50_000.0

TOP_KEYS = {"started_at", "backend", "quick", "passed", "device", "host", "versions", "sections"}
OPTIONAL_TOP_KEYS = {"provenance", "telemetry", "methodology_version", "finished", "plan"}  # later checks write these
BACKENDS = ("cuda", "simulator")


class ImportProblem(ValueError):
    """The file is not a check file this version can read; the message names the first problem.

    The message quotes the file (a key, a device name): it is kept with every control and bidi
    character escaped, so printing it on a terminal or a page is safe.
    """

    def __init__(self, message: str) -> None:
        super().__init__(shown(message))


# --- parsing --------------------------------------------------------------------------


class _Oversized:
    """A number whose text is too long to convert; the walk names its field."""

    def __init__(self, text: str) -> None:
        self.text = text


def _refuse_constant(name: str) -> float:
    raise ImportProblem(f"the file holds {name}, which is not a number JSON allows; timings must be finite")


def _whole(text: str) -> int | _Oversized:
    digits = text.lstrip("-")
    return _Oversized(text) if len(digits) > MAX_DIGITS else int(text)


def _fraction(text: str) -> float | _Oversized:
    return _Oversized(text) if len(text) > MAX_NUMBER_TEXT else float(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    data: dict = {}
    for key, value in pairs:
        if key in data:
            raise ImportProblem(
                f"the key {_quoted(key)} appears twice in one object; a check file names each field once"
            )
        data[key] = value
    return data


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
        data = json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_int=_whole,
            parse_float=_fraction,
            object_pairs_hook=_unique_keys,
        )
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
    except ValueError as exc:  # anything else json's own converters refuse
        raise ImportProblem(f"the file is not a check file's JSON: {exc}") from None
    validate_check(data)
    return data


def canonical(data: Any) -> bytes:
    """One text for one content: keys sorted, no spaces, UTF-8 (a re-import is recognised by it)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


# --- bounds: every value in the file ---------------------------------------------------------


def _quoted(key: Any) -> str:
    """A key for a message: escaped, so no control or bidi character reaches a terminal."""
    return "'" + shown(str(key)[:60]) + "'"


def _where(path: str) -> str:
    return f"`{shown(path)}`" if path else "the top level"


_kind = kind


def _peak_gbps(data: Any) -> float | None:
    device = data.get("device") if isinstance(data, dict) else None
    if not isinstance(device, dict):
        return None
    clock, width = device.get("memory_clock_khz"), device.get("memory_bus_width_bits")
    if isinstance(clock, int) and isinstance(width, int) and 0 < clock < 2**40 and 0 < width < 2**20:
        return 2 * clock * 1e3 * width / 8 / 1e9
    return None


def _number(value: Any, path: str, key: str, peak: float | None) -> None:
    if isinstance(value, _Oversized):
        raise ImportProblem(f"{_where(path)} is a number {len(value.text):,} characters long; at most "
                            f"{MAX_DIGITS} digits allowed")
    if isinstance(value, int) and not -(2**62) <= value <= 2**62:
        raise ImportProblem(f"{_where(path)} is {value:,}; allowed -2^62 to 2^62")
    if not math.isfinite(value):
        raise ImportProblem(f"{_where(path)} must be finite")
    if key.endswith("_s") or key == "samples_s":
        if value < 0:
            raise ImportProblem(f"{_where(path)} is {value!r}; it must be at least 0 (a time)")
        if 0 < value < MIN_TIME_S or value > MAX_TIME_S:
            raise ImportProblem(
                f"{_where(path)} is {value!r} s; a time is 0 or between {MIN_TIME_S:g} s (two clock cycles) and "
                f"{MAX_TIME_S:,.0f} s (a day)"
            )
    elif key.endswith("gbps"):
        ceiling = PEAK_SLACK * peak if peak else MAX_GBPS
        if not 0 <= value <= ceiling:
            why = f"{PEAK_SLACK:g} × the device's {peak:,.0f} GB/s memory peak" if peak else "any GPU's memory"
            raise ImportProblem(f"{_where(path)} is {value:,.4g} GB/s; a bandwidth is 0 to {ceiling:,.0f} ({why})")


def _walk(value: Any, path: str = "", key: str = "", peak: float | None = None, depth: int = 0) -> None:
    """Every value bounded (see the module's docstring, pass 2); ``key``: the field a number is under."""
    if depth > MAX_DEPTH:
        raise ImportProblem(f"{_where(path)} is nested deeper than a check file ever is ({MAX_DEPTH} levels)")
    if isinstance(value, dict):
        peak = _peak_gbps(value) or peak
        for k, item in value.items():
            if len(k) > MAX_KEY:
                raise ImportProblem(f"{_where(path)} has a key of {len(k):,} characters; at most {MAX_KEY} allowed")
            _walk(item, f"{path}.{k}" if path else k, k, peak, depth + 1)
    elif isinstance(value, list):
        if len(value) > MAX_SAMPLES:
            raise ImportProblem(f"{_where(path)} has {len(value):,} entries; at most {MAX_SAMPLES:,} allowed")
        for i, item in enumerate(value):
            if key == "samples_s" and (isinstance(item, bool) or not isinstance(item, int | float | _Oversized)):
                raise ImportProblem(f"{_where(f'{path}[{i}]')} must be a number, got {_kind(item)}")
            _walk(item, f"{path}[{i}]", key, peak, depth + 1)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float | _Oversized):
        _number(value, path, key, peak)
    elif isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise ImportProblem(f"{_where(path)} is {len(value):,} characters; at most {MAX_TEXT:,} allowed")
    else:
        raise ImportProblem(f"{_where(path)} is {_kind(value)}, which a check file never holds")


# --- types: the top level and each section's results -----------------------------------------


def _obj(value: Any, path: str, required: frozenset[str] | set[str] = frozenset(),
         optional: set[str] | None = None) -> dict:
    """An object with these keys (``optional`` None: any others allowed)."""
    if not isinstance(value, dict):
        raise ImportProblem(f"{_where(path)} must be an object, got {_kind(value)}")
    missing = sorted(required - set(value))
    if missing:
        raise ImportProblem(f"{_where(path)} lacks {', '.join(repr(m) for m in missing)}")
    if optional is not None:
        unknown = sorted(set(value) - required - optional)
        if unknown:
            keys = ", ".join(_quoted(u) for u in unknown)
            raise ImportProblem(f"{_where(path)} has unknown key{'s' if len(unknown) > 1 else ''} {keys}")
    return value


def _typed(value: Any, cls: type, path: str) -> Any:
    try:
        return from_builtins(value, cls, path)
    except ShapeError as exc:
        raise ImportProblem(str(exc)) from None


def _choice(value: Any, path: str, choices: tuple[Any, ...], what: str) -> None:
    if value not in choices or isinstance(value, bool) != isinstance(choices[0], bool):
        said = _quoted(value) if isinstance(value, str) else _kind(value)
        raise ImportProblem(f"{_where(path)} is {said}; expected {what}")


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


def _node(section: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    node: Any = section
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def _section(key: str, value: Any, declared: Any) -> None:
    path = f"sections.{key}"
    data = _obj(value, path, {"title", "passed"})
    if not isinstance(data["title"], str):
        raise ImportProblem(f"`{path}.title` must be text, got {_kind(data['title'])}")
    _choice(data["passed"], f"{path}.passed", (True, False), "true or false")
    if "error" in data:  # a section that raised is kept as failed, with its error
        if not isinstance(data["error"], str):
            raise ImportProblem(f"`{path}.error` must be text, got {_kind(data['error'])}")
        return
    if declared is not None and declared.parts:
        for part in declared.parts:
            node = _node(data, part.keys)
            where = ".".join((path, *part.keys))
            if node is None:
                if part.required:
                    raise ImportProblem(f"`{where}` is missing; the section {key!r} always holds it")
                continue
            _typed(node, part.type, where)
        return
    if declared is not None:  # its runs are filed under its experiment: one that names another is refused
        from gpu.catalog.registry import aliases, check_sections

        experiment = check_sections()[key][0]
        owner = experiment.key
        names = (owner, *aliases(owner))
        for where, run in _generic_runs(data):
            if isinstance(run, Mapping) and run.get("experiment", owner) not in names:
                raise ImportProblem(
                    f"`{path}.{where}.experiment` is {_quoted(run['experiment'])}; the section {key!r} holds runs "
                    f"of {owner!r}"
                )
            if isinstance(run, Mapping) and experiment.result_type in SHAPES:  # a result type with a shape
                _typed(run, experiment.result_type, f"{path}.{where}")


def _generic_runs(section: Mapping[str, Any]) -> list[tuple[str, Any]]:
    runs = section.get("runs")
    listed = runs if isinstance(runs, list) else []
    return [("run", section.get("run")), *((f"runs[{i}]", r) for i, r in enumerate(listed))]


def validate_check(data: Any) -> None:
    """Raise ImportProblem naming the first thing that makes ``data`` not a check file (by the schema)."""
    _walk(data)
    top = _obj(data, "", TOP_KEYS, OPTIONAL_TOP_KEYS)
    started = top["started_at"]
    try:
        datetime.fromisoformat(started)
    except (TypeError, ValueError):
        raise ImportProblem(
            f"`started_at` is {_quoted(started)}; expected an ISO 8601 time such as 2026-11-29T23:47:40+00:00"
        ) from None
    _choice(top["backend"], "backend", BACKENDS, "'cuda' or 'simulator'")
    _choice(top["quick"], "quick", (True, False), "true or false")
    _choice(top["passed"], "passed", (True, False), "true or false")
    if "finished" in top:  # False: a check stopped before its end (its file is partial)
        _choice(top["finished"], "finished", (True, False), "true or false")
    if "plan" in top:  # the verification plan that chose and budgeted its sections (gpu/report/plan.py)
        _choice(top["plan"], "plan", ("first-look", "verify"), "'first-look' or 'verify'")
    device = _typed(top["device"], DeviceInfo, "device")
    _choice(device.backend, "device.backend", BACKENDS, "'cuda' or 'simulator'")
    _obj(top["host"], "host")
    for name, version in _obj(top["versions"], "versions").items():
        if version is not None and not isinstance(version, str):
            raise ImportProblem(f"`versions.{name}` must be text or null, got {_kind(version)}")
    if "methodology_version" in top:
        version = top["methodology_version"]
        if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= 1000:
            raise ImportProblem(f"`methodology_version` must be a whole number from 1 to 1000, got {_kind(version)}")
    if "provenance" in top:
        for key, value in _obj(top["provenance"], "provenance", set(), {"commit", "command"}).items():
            if value is not None and not isinstance(value, str):
                raise ImportProblem(f"`provenance.{key}` must be text or null, got {_kind(value)}")
    sections = _obj(top["sections"], "sections")
    declared = declared_sections()
    unknown = [k for k in sections if k not in declared]
    if unknown:  # unknown: no experiment of this version declares it
        raise ImportProblem(
            f"`sections` holds an unknown experiment {_quoted(unknown[0])}; this version knows {', '.join(declared)}"
        )
    if not sections:
        raise ImportProblem("`sections` is empty: the check recorded nothing")
    for key, value in sections.items():
        _section(key, value, declared[key])


# --- into History ---------------------------------------------------------------------


def default_records(section: Mapping[str, Any], sections: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A section read generically: its ``run`` mapping and each mapping of its ``runs`` list."""
    return [r for _where, r in _generic_runs(section) if isinstance(r, Mapping)]


def _rewritten(section: Mapping[str, Any], declared: Any) -> dict:
    """The section with each typed result rewritten from its object: what the file derives is recomputed."""
    out = dict(section)
    for part in declared.parts if declared is not None else ():
        node = _node(section, part.keys)
        if isinstance(node, Mapping):
            fresh = {**node, **to_builtins(from_builtins(node, part.type))}
            parent = out
            for key in part.keys[:-1]:
                parent[key] = dict(parent[key])
                parent = parent[key]
            parent[part.keys[-1]] = fresh
    return out


def section_records(data: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(experiment key, result dict) of every run a validated check holds, by the declarations' order.

    Each declared section gives its rows through its ``records`` function, or its parts marked
    ``record`` (no parts: its ``run`` and ``runs``); a row that names no experiment is filed
    under the declaring one. Failed sections (an ``error``) and the check's own sections hold none.
    """
    from gpu.catalog.registry import check_sections

    declared = check_sections()
    sections = {
        key: _rewritten(section, declared[key][1]) if key in declared and "error" not in section else section
        for key, section in data["sections"].items()
        if isinstance(section, Mapping)
    }
    out: list[tuple[str, Mapping[str, Any]]] = []
    for key, (experiment, section_type) in declared.items():
        section = sections.get(key)
        if section is None or "error" in section:
            continue
        if section_type.records is not None:
            rows = section_type.records(section, sections)
        elif section_type.parts:
            rows = [_node(section, p.keys) for p in section_type.parts if p.record]
        else:
            rows = default_records(section, sections)
        out += [(experiment.key, row) for row in rows if isinstance(row, Mapping)]
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
    "canonical",
    "declared_sections",
    "default_records",
    "history_records",
    "parse_check_bytes",
    "section_records",
    "validate_check",
]
