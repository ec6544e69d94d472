"""Every result type survives its own JSON: written (``to_dict``), through JSON text, read back
(``from_dict``), it is the same object and the same text; and every result in every committed check
file reads back, writes out with every key it was recorded with, and reads back again as the same
object (gpu/core/shape.py, one converter for every type)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu.catalog.registry import experiments
from gpu.catalog.step_result import KINDS, ImplResult, KernelRun
from gpu.core.agreement import Agreement, BitAgreement
from gpu.core.device import DeviceInfo
from gpu.core.kernel_timing import KernelTiming
from gpu.core.occupancy import Occupancy, SmLimits
from gpu.core.peaks import LIMIT_LABELS, Limit, Peaks
from gpu.core.roofline import Roofs
from gpu.core.shape import SHAPES, STAMPS, Shaped, ShapeError, from_builtins, to_builtins
from gpu.core.timeline import Interval
from gpu.core.timing import RepeatPolicy, Stats
from gpu.experiments.launch.experiment import KIND_GRID_STRIDE, KIND_ONE_PER_ELEMENT, LaunchConfigResult, LaunchSweepRun
from gpu.experiments.scaling.config import SPACINGS, SweepConfig
from gpu.experiments.scaling.result import SERIES_LABELS, SweepPoint, SweepRun
from gpu.experiments.transfers.bandwidth import BandwidthCurves, BandwidthPoint
from gpu.experiments.transfers.result import STRATEGIES, StrategyComparison, StrategyRun
from gpu.experiments.vector_add.article import ArticleRun
from gpu.experiments.vector_add.result import VectorAddRun
from gpu.kernels.vector_add_timing import CpuTiming
from gpu.service.check_schema import declared_sections

ROOT = Path(__file__).resolve().parents[1]
CHECK_FILES = sorted(ROOT.glob("benchmarks/*/check.json"))

# --- values: what a run can hold (times a nanosecond to an hour, sizes a GPU can run) ----------

seconds = st.floats(min_value=1e-9, max_value=3600.0)
maybe_seconds = st.none() | seconds
counts = st.integers(min_value=1, max_value=2**40)
text = st.text(max_size=20)
names = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=8)

stats = st.builds(Stats, st.lists(seconds, min_size=1, max_size=6).map(tuple), st.integers(0, 50),
                  st.none() | st.booleans())
policies = st.builds(RepeatPolicy, st.integers(1, 1000), st.integers(0, 5), maybe_seconds,
                     st.floats(min_value=1e-4, max_value=1.0), st.integers(1, 20))
devices = st.builds(
    DeviceInfo, st.sampled_from(("cuda", "simulator")), text, st.integers(0, 8), st.none() | text,
    st.none() | counts, st.none() | counts, st.none() | st.integers(1, 10**7), st.none() | st.integers(1, 8192),
    st.integers(1, 1024), st.integers(1, 64), st.none() | text, st.none() | text, st.lists(text, max_size=2).map(tuple),
)
telemetry = st.none() | st.dictionaries(names, st.integers(0, 100), max_size=3)


def agreement(n: int | None = None) -> st.SearchStrategy[BitAgreement]:
    size = st.just(n) if n is not None else counts
    return size.flatmap(lambda k: st.builds(BitAgreement, names, st.just(k), st.integers(0, k),
                                            st.floats(0, 1e3), st.booleans()))


cpu_timings = st.one_of(
    st.builds(CpuTiming, st.just(""), stats, seconds),
    st.builds(CpuTiming, st.just(""), st.none(), st.just(0.0), text, maybe_seconds),
)


@st.composite
def vector_add_runs(draw) -> VectorAddRun:
    n = draw(counts)
    cpu = {name: CpuTiming(name, t.stats, t.compile_s, t.skipped, t.estimate_s)
           for name, t in draw(st.dictionaries(st.sampled_from(("python", "numpy", "numba")), cpu_timings)).items()}
    return VectorAddRun(
        n, draw(st.integers(1, 1024)), draw(counts), draw(st.sampled_from(("cuda", "simulator"))), draw(devices),
        draw(policies), draw(seconds),
        {phase: draw(stats) for phase in ("h2d", "kernel", "d2h", "total")}, cpu,
        {"gpu": draw(agreement(n))}, tuple(draw(st.lists(text, max_size=2))),
        draw(st.none() | st.builds(ArticleRun, counts, st.integers(1, 1024), st.booleans(), seconds, st.booleans(),
                                   seconds, text)),
        draw(st.integers(0, 2**31)), draw(text), draw(telemetry),
        draw(st.none() | st.integers(1, max(1, n - 1)).filter(lambda g: g < n)),  # the GPU's N, below the CPU's
    )


occupancies = st.none() | st.builds(Occupancy, st.integers(1, 1024), st.integers(0, 32), st.integers(0, 64),
                                    st.integers(0, 64), text, st.none() | text)
launch_configs = st.one_of(
    st.builds(LaunchConfigResult, st.just(KIND_ONE_PER_ELEMENT), st.integers(1, 1024), counts, stats, st.booleans(),
              st.none(), occupancies),
    st.builds(LaunchConfigResult, st.just(KIND_GRID_STRIDE), st.integers(1, 1024), counts, stats, st.booleans(),
              st.integers(1, 64), occupancies),
)
launch_sweeps = st.builds(
    LaunchSweepRun, counts, st.sampled_from(("cuda", "simulator")), devices, policies,
    st.lists(launch_configs, min_size=1, max_size=4).map(tuple), seconds, st.integers(1, 200),
    st.none() | st.builds(SmLimits, st.none() | counts, st.none() | counts, st.none() | counts, st.none() | counts),
    st.lists(text, max_size=2).map(tuple), st.integers(0, 9), text, st.none() | counts, telemetry,
)

configs = st.builds(
    SweepConfig, st.integers(1, 2**10), st.integers(2**10, 2**20), st.sampled_from(SPACINGS),
    st.lists(st.sampled_from(("gpu", "numpy", "numba-parallel")), max_size=3, unique=True).map(tuple),
    st.integers(1, 1024), policies, seconds, maybe_seconds, st.integers(0, 9), st.booleans(), st.booleans(),
    st.none() | counts,
)
points = st.builds(SweepPoint, counts, st.sampled_from(tuple(SERIES_LABELS)), st.none() | stats, maybe_seconds,
                   st.none() | text, st.none() | st.booleans())
limits = st.builds(Limit, st.sampled_from(tuple(LIMIT_LABELS)), st.none() | st.floats(0, 1e4), text,
                   st.none() | counts, st.none() | stats, st.none() | text)
peaks = st.builds(Peaks, st.lists(limits, max_size=3, unique_by=lambda lim: lim.key).map(tuple),
                  st.sampled_from(("cuda", "simulator")), policies, text)
sweeps = st.builds(
    SweepRun, configs, st.lists(points, max_size=5).map(tuple), st.sampled_from(("cuda", "simulator")), devices,
    seconds, st.none() | peaks, st.dictionaries(names, text, max_size=2).map(lambda d: tuple(d.items())),
    st.none() | text, st.integers(0, 50), st.integers(0, 50), seconds, seconds, st.none() | counts, telemetry, text,
)

bandwidth_points = st.builds(BandwidthPoint, st.sampled_from(("h2d", "d2h", "d2d")),
                             st.sampled_from(("pinned", "pageable", "device")), counts, stats, st.booleans())
curves = st.builds(BandwidthCurves, st.lists(counts, max_size=3).map(tuple),
                   st.lists(bandwidth_points, max_size=4).map(tuple), policies,
                   st.sampled_from(("cuda", "simulator")), devices, st.lists(text, max_size=2).map(tuple), text)


@st.composite
def comparisons(draw) -> StrategyComparison:
    n = draw(counts)
    keys = draw(st.lists(st.sampled_from(tuple(STRATEGIES)), min_size=1, max_size=3, unique=True))
    strategies = {
        key: StrategyRun(key, draw(text), draw(st.dictionaries(st.sampled_from(("h2d", "kernel", "d2h")), stats)),
                         draw(stats), draw(agreement(n)), draw(st.integers(1, 100)),
                         tuple(draw(st.lists(text, max_size=2))))
        for key in keys
    }
    intervals = draw(st.lists(st.builds(Interval, st.sampled_from(("1 chunk", "4 chunks, 2 streams")),
                                        st.integers(0, 8), st.integers(0, 4), st.sampled_from(("h2d", "kernel", "d2h")),
                                        st.floats(0, 1), st.floats(1, 2)), max_size=4).map(tuple))
    return StrategyComparison(
        n, draw(st.integers(1, 1024)), draw(st.integers(1, 16)), draw(st.integers(1, 8)), draw(st.integers(1, 100)),
        draw(policies), draw(st.sampled_from(("cuda", "simulator"))), draw(devices), strategies,
        draw(st.dictionaries(names, text, max_size=2)), intervals,
        draw(st.dictionaries(names, st.none() | st.integers(0, 10), max_size=2)), draw(seconds),
        draw(st.integers(0, 9)), tuple(draw(st.lists(text, max_size=2))), draw(text), draw(telemetry),
    )


agreements = st.one_of(
    st.builds(Agreement, names, st.just("exact"), counts, st.integers(0, 10), st.floats(0, 1e3)),
    st.builds(Agreement, names, st.just("bounded"), counts, st.integers(0, 10), st.floats(0, 1e3), st.floats(0, 1e3),
              st.integers(1, 10**6), st.floats(0, 1), st.floats(0, 1e3)),
)
kernel_timings = st.builds(KernelTiming, stats, st.lists(st.booleans(), max_size=4).map(tuple),
                           st.lists(st.integers(0, 5), max_size=4).map(tuple), st.booleans(), st.none() | text,
                           st.none() | counts, st.none() | counts, text, telemetry)
implementations = st.builds(
    ImplResult, names, text, st.sampled_from(KINDS),
    st.none() | st.dictionaries(st.sampled_from(("h2d", "d2h", "total", "cpu")), stats).flatmap(
        lambda phases: stats.map(lambda kernel: {**phases, "kernel": kernel})),
    st.none() | text, maybe_seconds, seconds, st.none() | agreements, st.none() | text, st.booleans(),
    st.none() | text, st.none() | kernel_timings, st.none() | text,
)
kernel_runs = st.builds(
    KernelRun, names, text, st.dictionaries(names, st.integers(0, 10**6) | text, max_size=3), text,
    st.sampled_from(("cuda", "simulator")), devices,
    st.builds(Roofs, st.none() | st.floats(1, 1e4), st.none() | st.floats(1, 1e5), st.none() | st.floats(1, 1e4), text),
    policies, counts, st.integers(0, 2**40),
    st.lists(implementations, max_size=4, unique_by=lambda r: r.key).map(tuple),
    st.sampled_from(("exact", "bounded")), st.lists(text, max_size=2).map(tuple), text,
    st.lists(text, max_size=2).map(tuple), st.integers(0, 9), text, st.none() | counts, telemetry,
)

RESULTS: dict[type, st.SearchStrategy[Any]] = {
    KernelRun: kernel_runs,
    VectorAddRun: vector_add_runs(),
    LaunchSweepRun: launch_sweeps,
    SweepRun: sweeps,
    BandwidthCurves: curves,
    StrategyComparison: comparisons(),
}


def test_every_result_a_check_section_holds_is_round_tripped_here():
    held = {part.type for s in declared_sections().values() if s is not None for part in s.parts}
    read_generically = {e.result_type for e in experiments() if hasattr(e.result_type, "from_dict")}
    assert read_generically <= set(RESULTS), f"read back without a round trip: {read_generically - set(RESULTS)}"
    assert held - {ArticleRun} <= set(RESULTS), f"no round trip for {held - set(RESULTS)}"
    assert all(cls in SHAPES for cls in held)


def test_every_shaped_type_reads_and_writes_its_file_one_way():
    """``Shaped`` gives every result type the same ``to_dict`` and ``from_dict``: what a file holds besides a type's
    fields is said by its ``@shaped`` (so the converter, and this file's round trips, see it), never by methods of
    its own that the converter would not use for a nested value."""

    def below(cls: type) -> set[type]:
        return {c for sub in cls.__subclasses__() for c in {sub} | below(sub)}

    shaped_types = below(Shaped)
    assert set(RESULTS) <= shaped_types
    assert [c.__name__ for c in shaped_types if {"to_dict", "from_dict"} & set(vars(c))] == []
    assert [c.__name__ for c in shaped_types if c not in SHAPES] == []


@pytest.mark.parametrize("cls", list(RESULTS), ids=lambda c: c.__name__)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_result_written_and_read_back_is_the_same_result(cls, data):
    result = data.draw(RESULTS[cls])
    text = json.dumps(result.to_dict())
    assert cls.from_dict(json.loads(text)) == result
    assert json.dumps(cls.from_dict(json.loads(text)).to_dict()) == text  # and writes the same text again


def test_a_vector_add_run_keeps_the_n_its_kernel_ran_at():
    result = next(r for r in _committed(VectorAddRun))
    capped = VectorAddRun(**{**result.__dict__, "n": 50_000_000, "gpu_n": 1_000_000})
    again = VectorAddRun.from_dict(json.loads(json.dumps(capped.to_dict())))
    assert again.gpu_n == 1_000_000 and again.gpu_capped and again.speedups == []


# --- the committed check files ---------------------------------------------------------------


def _parts(cls: type):
    for path in CHECK_FILES:
        data = json.loads(path.read_text())
        for key, section in declared_sections().items():
            for part in section.parts if section is not None else ():
                node: Any = data["sections"].get(key)
                for k in part.keys:
                    node = node.get(k) if isinstance(node, dict) else None
                if part.type is cls and isinstance(node, dict):
                    yield f"{path.parent.name}:{key}.{'.'.join(part.keys)}", node


def _generic_runs(cls: type):
    """Every run of a section read generically whose experiment's result type is ``cls``."""
    owners = {e.key for e in experiments() if e.result_type is cls}
    for path in CHECK_FILES:
        for key, section in json.loads(path.read_text())["sections"].items():
            for i, run in enumerate(section.get("runs") or ()):
                if isinstance(run, dict) and run.get("experiment") in owners:
                    yield f"{path.parent.name}:{key}.runs[{i}]", run


def _committed(cls: type):
    return (from_builtins(node, cls) for _where, node in _parts(cls))


@pytest.mark.parametrize("cls", [*RESULTS, ArticleRun], ids=lambda c: c.__name__)
def test_every_committed_result_reads_back_and_writes_out_as_recorded(cls):
    found = [*_parts(cls), *_generic_runs(cls)]
    assert found, f"no committed check file holds a {cls.__name__}"
    for where, node in found:
        result = from_builtins(node, cls, where)
        written = to_builtins(result)
        prose = SHAPES[cls].prose
        recorded = {k: v for k, v in node.items() if k not in prose and k not in STAMPS}
        assert _lost(recorded, json.loads(json.dumps(written)), where) == []
        assert from_builtins(written, cls) == result, where


def _lost(recorded: Any, written: Any, where: str) -> list[str]:
    """Every key of the file the rewrite drops (a key a later writer adds is not one; a value derived
    from the data, such as a median or a sentence, is recomputed under today's rules)."""
    if isinstance(recorded, dict):
        if not isinstance(written, dict):
            return [f"{where} is no longer an object"]
        return [p for k, v in recorded.items()
                for p in ([f"{where}.{k} dropped"] if k not in written else _lost(v, written[k], f"{where}.{k}"))]
    if isinstance(recorded, list):
        if not isinstance(written, list) or len(recorded) != len(written):
            return [f"{where} is no longer a list of {len(recorded)}"]
        return [p for i, (a, b) in enumerate(zip(recorded, written)) for p in _lost(a, b, f"{where}[{i}]")]
    return []


def test_a_bad_field_is_named_by_its_path_in_the_file():
    where, node = next(_parts(VectorAddRun))
    bad = json.loads(json.dumps(node))
    bad["gpu"]["phases"]["kernel"]["samples_s"][1] = "fast"
    with pytest.raises(ShapeError, match=r"`run\.gpu\.phases\.kernel\.samples_s\[1\]` must be a number, got text"):
        VectorAddRun.from_dict(bad, "run")
    bad = json.loads(json.dumps(node))
    bad["threads_per_block"] = True
    with pytest.raises(ShapeError, match=r"`run\.threads_per_block` must be a whole number, got true/false"):
        VectorAddRun.from_dict(bad, "run")
    bad = json.loads(json.dumps(node))
    bad["policy"]["surprise"] = 1
    with pytest.raises(ShapeError, match=r"`run\.policy` has unknown key 'surprise'"):
        VectorAddRun.from_dict(bad, "run")


def test_a_catalog_runs_bad_field_is_named_by_the_implementations_key():
    where, node = next(_generic_runs(KernelRun))
    bad = json.loads(json.dumps(node))
    key = next(iter(bad["implementations"]))
    bad["implementations"][key]["compile_s"] = "slow"
    path = where.split(":")[1]
    with pytest.raises(ShapeError) as refused:
        KernelRun.from_dict(bad, path)
    assert str(refused.value) == f"`{path}.implementations.{key}.compile_s` must be a number, got text"
