"""Reference runs and importing check files: the committed H200 checks load with their
provenance and rebuild into the engine's results; an imported check file is validated
strictly, through the CLI and through the History uploader, and a rejected file changes
nothing in the database."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gpu.__main__ import main
from gpu.experiments.launch.experiment import LaunchSweepRun
from gpu.experiments.launch.report import launch_sentence
from gpu.experiments.scaling.report import crossover_sentences, scaling_sentence
from gpu.experiments.scaling.result import SweepRun
from gpu.experiments.transfers.bandwidth import BandwidthCurves
from gpu.experiments.transfers.report import transfers_sentence
from gpu.experiments.transfers.result import StrategyComparison
from gpu.experiments.vector_add.report import vector_add_sentence
from gpu.experiments.vector_add.result import VectorAddRun
from gpu.service.importer import ImportProblem, import_check, parse_check_bytes
from gpu.service.references import ARTICLE, PUBLISHED_LABEL, load_references
from gpu.service.store import open_store
from ui.charts.history import (
    article_entry,
    gpus_bandwidth_chart,
    gpus_time_chart,
    vector_add_entry,
)

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "benchmarks" / "h200-final" / "check.json"


@pytest.fixture(scope="module")
def check_data() -> dict:
    return json.loads(CHECK.read_text())


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv("KERNEL_LAB_DB", str(path))
    return path


def _bytes(data) -> bytes:
    return json.dumps(data).encode()


# --- references -------------------------------------------------------------------------------


def test_every_committed_check_loads_with_its_provenance():
    refs = load_references()
    assert not refs.problems, refs.problems
    keys = {r.key for r in refs.runs}
    assert {"h200", "h200-rerun", "h200-final", "h200-first"} <= keys
    final = refs.get("h200-final")
    prov = final.provenance
    assert (prov.device, prov.driver, prov.commit) == ("NVIDIA H200", "13.0", "16ddd36")
    assert prov.command == "python3 -m gpu check --out $OUT/check"
    assert prov.versions["numba-cuda"] == "0.30.4" and prov.date.startswith("2026-11-29T23:47")
    assert (
        refs.get("h200").provenance.command == "python3 -m gpu check --out $OUT/check"
    )  # the comment after it is dropped
    cut = refs.get("h200-2026-12-04")  # cut by its time limit, but its finished sections follow today's rules
    assert cut is not None and cut.has("scaling") and not cut.full and cut.caveat is None
    assert refs.best("scaling").key == "h200-2026-12-04"  # the newest section under today's rules is quoted


def test_references_rebuild_into_the_engines_results_with_the_recorded_figures(check_data):
    ref = load_references().get("h200-final")
    run = VectorAddRun.recorded(ref)
    recorded = check_data["sections"]["breakdown"]["run"]["gpu"]["phases"]["kernel"]["median_s"]
    assert run.gpu["kernel"].median_s == pytest.approx(recorded)
    sweep, recorded_sweep = SweepRun.recorded(ref), check_data["sections"]["scaling"]["run"]
    assert len(sweep.points) == len(recorded_sweep["points"])
    first = recorded_sweep["points"][0]
    point = next(p for p in sweep.points if p.n == first["n"] and p.series == first["series"])
    assert point.stats.samples_s == tuple(first["stats"]["samples_s"])  # the recorded samples, unchanged
    # crossovers are recomputed from the samples with today's rule (ranges where the spreads overlap)
    assert len(crossover_sentences(sweep)) == len(recorded_sweep["crossover_sentences"])
    assert LaunchSweepRun.recorded(ref).best.label == check_data["sections"]["launch"]["sweep"]["best"]
    winner = check_data["sections"]["transfers"]["strategies"]["small"]["winner"]
    assert StrategyComparison.recorded(ref).winner.key == winner


def test_the_sentences_state_recorded_numbers_in_words():
    ref = load_references().get("h200-final")
    text = vector_add_sentence(VectorAddRun.recorded(ref), StrategyComparison.recorded(ref).strategies["pinned"].cost_s)
    assert (
        "38.9 µs" in text
        and "about 320x faster than the NVIDIA H200 host's NumPy" in text
        and "about 1.5x slower than the NVIDIA H200 host's NumPy" in text
        and "pinned" in text
    )
    assert "e-0" not in text
    assert "beats NumPy from" in scaling_sentence(SweepRun.recorded(ref))
    assert "grid-stride 8×SMs × 256" in launch_sentence(LaunchSweepRun.recorded(ref))
    assert "pinned memory" in transfers_sentence(BandwidthCurves.recorded(ref), StrategyComparison.recorded(ref))


def test_the_recorded_panel_marks_single_sample_figures_and_never_states_a_crossover_as_a_point():
    ref = load_references().get("h200-final")
    text = scaling_sentence(SweepRun.recorded(ref))
    # 3,395 GB/s at 2^30 rests on one sample: said beside it
    assert "3,395 GB/s" in text and "from one sample: spread unknown" in text
    # the end-to-end crossover rests on single samples: no three-figure point
    assert "no exact point" in text and "beats NumPy from N ≈ 470,000,000" not in text
    assert "CPU samples on warm caches" in text and "L2 not flushed" in text


def test_recorded_runs_before_the_rules_carry_the_caveat_and_their_l2_resident_points_are_marked():
    from gpu.core.provenance import METHODOLOGY_VERSION, PRE_RULES_CAVEAT

    for ref in load_references().runs:  # every committed check.json says which rules it followed
        version = ref.data["methodology_version"]
        assert version in (1, METHODOLOGY_VERSION)
        assert ref.caveat == (PRE_RULES_CAVEAT if version == 1 else None)  # only the runs before the rules
        assert all(record["methodology_version"] == version for record in ref.history_records())  # History keeps it
    assert load_references().get("h200-2026-12-04").caveat is None  # measured under today's rules
    ref = load_references().get("h200-final")
    sweep = SweepRun.recorded(ref)
    assert sweep.l2_bytes == 50 * 2**20 and sweep.config.warm_l2 and "did not record its L2 size" in ref.l2_note
    frame = sweep.to_frame()
    kernel = frame[frame["series"] == "gpu-kernel"].set_index("n")
    assert (
        kernel.loc[2**21, "fits_l2"] and round(kernel.loc[2**21, "bandwidth_gbps"]) == 2902
    )  # 103% of the device copy
    assert not kernel.loc[2**30, "fits_l2"] and kernel.loc[2**30, "few_samples"]
    assert LaunchSweepRun.recorded(ref).l2_bytes == 50 * 2**20


def test_a_check_written_now_carries_the_current_methodology_and_no_caveat():
    from gpu.core.provenance import METHODOLOGY_VERSION, caveat_for

    assert caveat_for({"methodology_version": METHODOLOGY_VERSION}) is None
    assert caveat_for({}) is not None and caveat_for({"methodology_version": "junk"}) is not None


def test_the_articles_figures_are_labelled_published_not_measured():
    assert (ARTICLE.cpu_time_s, ARTICLE.gpu_time_s, ARTICLE.speedup) == (4.033822, 0.047736, 84.50)
    assert ARTICLE.provenance.label == PUBLISHED_LABEL == "published in the article, not measured here"


def test_compare_gpus_charts_hold_every_source_and_the_device_peak(check_data):
    import pandas as pd

    rows = article_entry("T4 — article", ARTICLE.n, ARTICLE.cpu_time_s, ARTICLE.gpu_time_s)
    rows += vector_add_entry("H200 — recorded", "recorded reference", check_data["sections"]["breakdown"]["run"])
    frame = pd.DataFrame(rows)
    spec = json.dumps(gpus_time_chart(frame).to_dict(), ensure_ascii=False)
    assert "T4 — article" in spec and "H200 — recorded" in spec and '"type": "log"' in spec
    bw = gpus_bandwidth_chart(frame).to_dict()
    values = json.dumps(bw, ensure_ascii=False)
    assert "4,814 GB/s" in values  # the H200's theoretical peak as a tick
    assert "3,084 GB/s" in values  # its kernel bandwidth


# --- importing: accepted ------------------------------------------------------------------------


def test_cli_imports_a_check_file_once(db, capsys):
    assert main(["history", "import", str(CHECK)]) == 0
    out = capsys.readouterr().out
    assert "Imported 6 runs" in out and "NVIDIA H200" in out
    store = open_store(db)
    runs = store.runs()
    assert {r.experiment for r in runs} == {
        "vector-add",
        "scaling",
        "launch-sweep",
        "transfers-bandwidth",
        "transfers-strategies",
    }
    vector_add = next(r for r in runs if r.experiment == "vector-add")
    assert vector_add.result["article"]["speedup"] == pytest.approx(
        66.1146, rel=1e-4
    )  # one row: the article's method inside
    assert vector_add.result["imported"]["source"] == "check.json" and not vector_add.simulated
    assert vector_add.versions["numba-cuda"] == "0.30.4"
    assert main(["history", "import", str(CHECK)]) == 2  # the same file again
    assert "already imported" in capsys.readouterr().err
    assert store.count() == 6


def test_the_history_page_imports_an_uploaded_check_file(db, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_UPLOADS", "1")
    at = AppTest.from_file("../pages/5_History.py", default_timeout=90).run()
    assert not at.exception
    at.file_uploader(key="history.upload").set_value(("check.json", CHECK.read_bytes(), "application/json")).run()
    assert not at.exception, at.exception
    assert any("Imported 6 runs" in s.value for s in at.success), [s.value for s in at.success]
    assert open_store(db).count() == 6
    at.run()  # a rerun with the same upload imports nothing more
    assert open_store(db).count() == 6


def test_uploads_are_off_on_a_shared_server(db, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_UPLOADS", "0")
    at = AppTest.from_file("../pages/5_History.py", default_timeout=90).run()
    assert not at.exception
    assert not at.get("file_uploader")
    assert any("Uploads are off" in c.value for c in at.caption)


# --- importing: rejected, nothing changes -------------------------------------------------------


def _malformed(check: dict) -> dict[str, tuple[bytes, str]]:
    wrong_schema = {"experiment": "vector-add", "n": 10}
    wrong_types = copy.deepcopy(check)
    wrong_types["sections"]["breakdown"]["run"]["gpu"]["phases"]["kernel"]["samples_s"][3] = "fast"
    unknown = copy.deepcopy(check)
    # unknown means declared by no experiment (matmul, a catalog kernel, is declared: readable)
    unknown["sections"]["warp-drive"] = {"title": "warp drive", "passed": True}
    negative = copy.deepcopy(check)
    negative["sections"]["scaling"]["run"]["points"][0]["stats"]["samples_s"][0] = -1.0
    bad_backend = copy.deepcopy(check)
    bad_backend["backend"] = "quantum"
    text = json.dumps(check)
    return {
        "wrong schema": (_bytes(wrong_schema), "lacks"),
        "truncated JSON": (text[: len(text) // 2].encode(), "truncated"),
        "huge file": (b" " * (5 * 2**20) + text.encode(), "at most 4 MiB"),
        "wrong types": (
            _bytes(wrong_types),
            "`sections.breakdown.run.gpu.phases.kernel.samples_s[3]` must be a number, got text",
        ),
        "unknown experiment": (_bytes(unknown), "unknown experiment 'warp-drive'"),
        "negative time": (_bytes(negative), "must be at least 0"),
        "NaN": (
            text.replace('"noise": 0.0', '"noise": NaN', 1).encode()
            if '"noise": 0.0' in text
            else text.replace("0.02", "NaN", 1).encode(),
            "NaN",
        ),
        "unknown backend": (_bytes(bad_backend), "'quantum'"),
        "not JSON": (b"<html>hello</html>", "not valid JSON"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "wrong schema",
        "truncated JSON",
        "huge file",
        "wrong types",
        "unknown experiment",
        "negative time",
        "NaN",
        "unknown backend",
        "not JSON",
    ],
)
def test_a_malformed_file_is_rejected_with_the_first_problem_and_changes_nothing(
    case, check_data, db, tmp_path, capsys
):
    raw, message = _malformed(check_data)[case]
    store = open_store(db)
    store.save({"experiment": "vector-add", "n": 1, "backend": "simulator"}, versions={})
    with pytest.raises(ImportProblem) as err:
        import_check(store, raw)
    assert message in str(err.value), str(err.value)
    assert store.count() == 1
    path = tmp_path / "bad.json"
    path.write_bytes(raw)
    assert main(["history", "import", str(path)]) == 2
    assert message in capsys.readouterr().err
    assert store.count() == 1


@pytest.mark.parametrize("case", ["wrong schema", "truncated JSON", "wrong types", "unknown experiment", "huge file"])
def test_the_uploader_rejects_a_malformed_file_with_a_clear_message(case, check_data, db, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_UPLOADS", "1")
    raw, message = _malformed(check_data)[case]
    at = AppTest.from_file("../pages/5_History.py", default_timeout=90).run()
    at.file_uploader(key="history.upload").set_value(("bad.json", raw, "application/json")).run()
    assert not at.exception, at.exception
    assert any("bad.json was not imported" in e.value and message in e.value for e in at.error), [
        e.value for e in at.error
    ]
    assert open_store(db).count() == 0


def test_parsing_never_evaluates_anything():
    with pytest.raises(ImportProblem):
        parse_check_bytes(b'__import__("os").system("true")')


def test_a_committed_run_a_page_could_not_draw_is_refused_when_it_is_loaded(monkeypatch, tmp_path):
    # Each declaration's Recorded.read rebuilds what its "On a real GPU" panel draws at load:
    # a run whose Scaling sweep cannot be rebuilt is listed as a problem, not drawn half-way.
    import shutil

    from gpu.experiments.scaling.result import SweepRun

    shutil.copytree(ROOT / "benchmarks" / "h200-final", tmp_path / "h200-final")

    def broken(cls, d):
        raise ValueError("this sweep cannot be rebuilt")

    monkeypatch.setattr(SweepRun, "from_dict", classmethod(broken))
    refs = load_references.__wrapped__(str(tmp_path))
    assert refs.runs == () and "h200-final/check.json" in refs.problems[0]
    assert "this sweep cannot be rebuilt" in refs.problems[0]


def _bench(tmp_path: Path, key: str, source: str, edit) -> None:
    data = json.loads((ROOT / "benchmarks" / source / "check.json").read_text())
    edit(data)
    (tmp_path / key).mkdir()
    (tmp_path / key / "check.json").write_text(json.dumps(data))


def test_pages_quote_each_section_from_the_newest_run_under_todays_rules_and_a_cut_runs_missing_ones_from_older(
    tmp_path,
):
    # A cut run under today's rules holding only the breakdown; an older finished run holding scaling too.
    def cut(data):
        data["sections"] = {k: v for k, v in data["sections"].items() if k in ("correctness", "breakdown")}

    def newer_but_old_rules(data):
        data["started_at"] = "2026-12-05T00:00:00+00:00"  # newer than the cut run, measured under the old rules

    _bench(tmp_path, "cut-current", "h200-2026-12-04", cut)
    _bench(tmp_path, "old-finished", "h200-final", lambda data: None)
    _bench(tmp_path, "old-newest", "h200-final", newer_but_old_rules)
    refs = load_references.__wrapped__(str(tmp_path))
    assert not refs.problems, refs.problems
    assert refs.best("vector-add").key == "cut-current"  # today's rules win over a newer older-method run
    assert refs.best("vector-add").caveat is None
    quoted = refs.best("scaling")  # missing from the cut run: the newest finished older-method run, with its caveat
    assert quoted.key == "old-newest" and quoted.caveat is not None
    from gpu.report.cpu_vs_recorded import _source_sentence
    from gpu.report.recorded_gpu import recorded_gpu_at

    swept = recorded_gpu_at(2**20, refs)  # from the older sweep: its caveat travels with its figures
    assert swept.reference == "old-newest" and swept.caveat == quoted.caveat
    assert quoted.caveat in _source_sentence(swept) and swept.to_dict()["caveat"] == quoted.caveat
    assert recorded_gpu_at(10**7, refs).caveat is None  # the breakdown, from the cut run under today's rules


def test_a_failed_section_or_an_unfinished_older_run_is_never_quoted(tmp_path):
    def failed_scaling(data):
        data["sections"]["scaling"] = {"title": "Scaling", "passed": False, "duration_s": 1.0, "error": "cut"}

    def unfinished(data):
        data["finished"] = False
        data["started_at"] = "2026-12-05T00:00:00+00:00"

    _bench(tmp_path, "current-failed", "h200-2026-12-04", failed_scaling)
    _bench(tmp_path, "old-unfinished", "h200-final", unfinished)
    _bench(tmp_path, "old-finished", "h200-final", lambda data: None)
    refs = load_references.__wrapped__(str(tmp_path))
    assert not refs.problems, refs.problems
    assert refs.best("scaling").key == "old-finished"
    assert refs.best("transfers").key == "current-failed"
