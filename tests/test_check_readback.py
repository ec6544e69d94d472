"""A check.json written now reads back: its sections are the declarations'.

``python -m gpu check`` writes a section per declared ``CheckSection``; the schema, the
importer and the recorded-runs loader find each section's key, validator and History
records from the same declarations, so a file written now — catalog sections included —
round-trips through ``history import`` and ``load_references``. The file here is written
by ``run_check`` itself in the simulator at quick sizes, from the real section functions
of the vector-add breakdown (its timings carry today's hold and L2 fields), two catalog
kernels and the check's own methodology section (about 10 s; a full quick check, 30 s).
"""

from __future__ import annotations

import copy
import json
import shutil

import pytest

from gpu.__main__ import main
from gpu.catalog.declare import catalog_section
from gpu.experiments.vector_add.check import breakdown_section
from gpu.experiments.vector_add.result import VectorAddRun
from gpu.report.check import methodology_section, run_check
from gpu.service.check_schema import SECTION_KEYS, history_records
from gpu.service.importer import ImportProblem, parse_check_bytes
from gpu.service.references import load_reference, load_references
from gpu.service.store import open_store
from ui.charts.history import samples_frame

KERNELS = ("reduction", "transpose")


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """(check.json path, its dict): a check run now, in the simulator, quick."""
    out = tmp_path_factory.mktemp("check")
    report = run_check(
        out, quick=True, sections=[breakdown_section, *(catalog_section(k) for k in KERNELS), methodology_section]
    )
    assert [s.key for s in report.sections] == ["breakdown", *KERNELS, "methodology"]
    path = out / "check.json"
    return path, json.loads(path.read_text())


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv("KERNEL_LAB_DB", str(path))
    return path


def test_every_section_a_check_writes_is_a_declared_key():
    from gpu.report.check import declared_sections

    written_keys = {fn.__name__.removesuffix("_section") for fn in declared_sections()}
    assert {"reduction", "transpose", "histogram", "stencil", "matmul", "methodology"} <= set(SECTION_KEYS)
    assert {"correctness", "breakdown", "article", "scaling", "launch", "transfers"} <= set(SECTION_KEYS)
    assert written_keys <= set(SECTION_KEYS)


def test_history_import_takes_a_check_written_now_catalog_sections_included(written, db, capsys):
    path, _data = written
    assert main(["history", "import", str(path)]) == 0
    assert "Imported 3 runs" in capsys.readouterr().out
    runs = open_store(db).runs()
    assert sorted(r.experiment for r in runs) == sorted(["vector-add", *KERNELS])
    assert all(r.simulated and r.result["imported"]["quick"] is True for r in runs)
    samples = samples_frame(runs)
    assert set(samples["experiment"]) == {"vector-add", *KERNELS}  # History's compare finds their samples
    # where the catalog's declaration says (catalog.samples): readable series, the kernel once
    reduction = set(samples[samples["experiment"] == "reduction"]["measure"])
    assert {"1 · global atomics · Kernel", "1 · global atomics · H2D copy", "NumPy sum · CPU"} <= reduction
    assert not any("implementations" in m or "kernel_timing" in m for m in reduction)
    assert main(["history", "import", str(path)]) == 2 and "already imported" in capsys.readouterr().err


def test_the_recorded_runs_loader_reads_it_and_finds_each_kernel(written, tmp_path):
    path, data = written
    ref = load_reference(path)
    assert all(ref.has(k) for k in ("vector-add", *KERNELS)) and not ref.has("matmul") and not ref.has("scaling")
    assert VectorAddRun.recorded(ref).gpu["kernel"].n_samples == 3  # rebuilt into the engine's own result
    assert [r["experiment"] for r in ref.history_records()] == ["vector-add", *KERNELS]
    # the same file as a full hardware run in a benchmarks-like folder: best() picks it per kernel
    full = {**copy.deepcopy(data), "backend": "cuda", "quick": False}
    (tmp_path / "gpu-a").mkdir()
    (tmp_path / "gpu-a" / "check.json").write_text(json.dumps(full))
    shutil.copy(path, tmp_path / "sim.json")  # not */check.json: not a reference
    refs = load_references(str(tmp_path))
    assert refs.problems == () and refs.best("reduction").key == "gpu-a" and refs.best("matmul") is None


def _first_samples(node):
    """The first ``samples_s`` list in ``node`` (the list itself, to edit)."""
    if isinstance(node, dict):
        if isinstance(node.get("samples_s"), list) and node["samples_s"]:
            return node["samples_s"]
        node = list(node.values())
    for item in node if isinstance(node, list) else ():
        found = _first_samples(item)
        if found is not None:
            return found
    return None


def _refusal(data) -> str:
    with pytest.raises(ImportProblem) as err:
        parse_check_bytes(json.dumps(data).encode())
    return str(err.value)


def test_a_generic_section_is_still_checked_value_by_value(written):
    _path, data = written
    negative = copy.deepcopy(data)
    negative["sections"]["reduction"]["runs"][0]["wall_s"] = -1.0
    assert "`sections.reduction.runs[0].wall_s` is -1.0; it must be at least 0" in _refusal(negative)
    text_sample = copy.deepcopy(data)
    _first_samples(text_sample["sections"]["transpose"])[0] = "fast"
    assert "samples_s[0]` must be a number, got text" in _refusal(text_sample)
    huge = copy.deepcopy(data)
    huge["sections"]["methodology"]["l2_rows"] = [0] * 200_000
    assert "at most 100,000 allowed" in _refusal(huge)
    untitled = copy.deepcopy(data)
    del untitled["sections"]["transpose"]["title"]
    assert "`sections.transpose` lacks 'title'" in _refusal(untitled)


def test_a_failed_section_is_kept_but_holds_no_run(written):
    _path, data = written
    failed = copy.deepcopy(data)
    failed["sections"]["transpose"] = {
        "title": "transpose",
        "passed": False,
        "duration_s": 0.1,
        "error": "RuntimeError('boom')",
    }
    records = history_records(parse_check_bytes(json.dumps(failed).encode()), source="s", sha256="")
    assert [r["experiment"] for r in records] == ["vector-add", "reduction"]


def test_a_declared_section_that_raises_is_written_under_its_declared_key_and_reads_back(tmp_path, monkeypatch):
    from gpu.catalog import declare as catalog
    from gpu.report.check import declared_sections

    def broken(key, quick, say, budget_s=None):
        raise RuntimeError("no device")

    monkeypatch.setattr(catalog, "check_kernel", broken)
    section = next(fn for fn in declared_sections() if getattr(fn, "section_key", None) == "reduction")
    report = run_check(tmp_path, quick=True, sections=[section])
    assert [s.key for s in report.sections] == ["reduction"] and not report.passed
    data = parse_check_bytes((tmp_path / "check.json").read_bytes())
    assert "no device" in data["sections"]["reduction"]["error"] and history_records(data, source="s", sha256="") == []


def test_a_generic_section_holding_another_experiments_run_is_refused(written):
    _path, data = written
    forged = copy.deepcopy(data)
    forged["sections"]["transpose"]["runs"][0]["experiment"] = "vector-add"
    assert (
        "`sections.transpose.runs[0].experiment` is 'vector-add'; the section 'transpose' holds runs of 'transpose'"
        in _refusal(forged)
    )


def test_a_check_stopped_half_way_says_incomplete_and_never_passes(tmp_path):
    # On the H200 a check killed by its time limit left a check.md saying "result: PASS"
    # over 8 of its sections. The files written after each section now say INCOMPLETE
    # until the last one is in, and the finished file says PASS.
    from gpu.report.check import Section

    seen = []

    def passing(_ctx):
        seen.append((tmp_path / "check.md").read_text() if (tmp_path / "check.md").exists() else "")
        return Section("breakdown", "one", True, {}, "fine")

    report = run_check(tmp_path, quick=True, sections=[passing, passing])
    assert "result: **INCOMPLETE**: 1 of 2 sections written (every one passed so far)" in seen[1]
    partial = json.loads(json.dumps(report.to_dict()))
    assert report.passed and partial["finished"] is True and partial["passed"] is True
    assert "result: **PASS**" in (tmp_path / "check.md").read_text()
    report.finished = False
    assert not report.passed and report.to_dict()["passed"] is False
