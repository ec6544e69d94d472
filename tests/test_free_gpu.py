"""Run it on a free GPU: the notebooks `python -m gpu notebook` writes execute (here in numba-cuda's simulator,
in a real Jupyter kernel through nbclient), their result files import as self-reported, apart from the lab's
own runs, and a tampered file is refused with the field named."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from gpu.__main__ import main
from gpu.notebook.importing import import_self_report
from gpu.notebook.selfreport import SelfReportProblem, parse_self_report
from gpu.sandbox.submissions import SubmissionStore
from gpu.service.store import open_store

# Every test here reads notebooks executed in a Jupyter kernel (about 30 s for the file): make test runs them,
# the fast lane (make test-fast) leaves them out.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
LEARNER = '''from numba import cuda

THREADS_PER_BLOCK = 128


@cuda.jit
def vector_add(a, b, out):
    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if i < out.size:
        out[i] = a[i] + b[i]
'''
T4 = {"name": "Tesla T4", "compute_capability": "7.5", "multiprocessors": 40, "memory_clock_khz": 5_001_000,
      "memory_bus_width_bits": 256, "l2_bytes": 4 * 2**20, "peak_bandwidth_gbps": 2 * 5_001_000e3 * 256 / 8 / 1e9}


def _execute(notebook: Path, result: Path) -> None:
    """Every cell in order, in a fresh ipykernel with the simulator on (no GPU here), writing ``result``."""
    nb = nbformat.read(notebook, as_version=4)
    nbformat.validate(nb)
    env = {"NUMBA_ENABLE_CUDASIM": "1", "KERNEL_LAB_RESULT": str(result)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel process inherits them
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(notebook.parent)}}).execute()
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    assert result.is_file()


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("notebooks")
    kernel = folder / "kernel.py"
    kernel.write_text(LEARNER)
    assert main(["notebook", "vector-add", "--out", str(folder / "vector-add.ipynb")]) == 0
    assert main(["notebook", "vector-add", str(kernel), "--out", str(folder / "problem-1.ipynb")]) == 0
    out = {"experiment": folder / "experiment.json", "problem": folder / "problem.json"}
    _execute(folder / "vector-add.ipynb", out["experiment"])
    _execute(folder / "problem-1.ipynb", out["problem"])
    return out


@pytest.fixture
def db(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv("KERNEL_LAB_DB", str(path))
    return path


def _with(raw: bytes, edit) -> bytes:
    data = json.loads(raw)
    edit(data)
    return json.dumps(data).encode()


def _as_t4(data: dict, kernel_s: float) -> None:
    """A run on a T4 (for the tests: the facts a T4 reports, a time we choose), re-hashed and consistent."""
    data["backend"], data["device"] = "cuda", dict(T4)
    for stats in data["phases"].values():
        stats.update(samples_s=[kernel_s] * 3, median_s=kernel_s, min_s=kernel_s, max_s=kernel_s, samples=3)
    if data["kind"] == "experiment":
        data["n"], data["bytes_moved"] = 10_000_000, 120_000_000
    else:
        data["sizes"], data["bytes_moved"] = {"n": 1 << 26}, 12 << 26


# --- the notebooks run and their results import ----------------------------------------------------


def test_the_vector_add_notebook_runs_the_labs_checks_and_imports_into_history_as_self_reported(results, db):
    report = parse_self_report(results["experiment"].read_bytes())
    assert report.data["agree"] and report.simulated and report.device_name == "CUDA simulator"
    assert set(report.data["phases"]) == {"h2d", "kernel", "d2h", "total"}
    assert report.data["checks"][0]["detail"].startswith("bit-identical")
    assert main(["import", str(results["experiment"])]) == 0
    (run,) = open_store(db).runs()
    assert run.experiment == "vector-add" and run.simulated
    assert run.result["imported"]["self_reported"] and run.result["imported"]["label"].startswith(
        "self-reported on CUDA simulator")
    assert main(["import", str(results["experiment"])]) == 2  # once only


def test_the_problem_notebook_checks_the_learners_kernel_and_the_lab_judges_it_again_on_import(results, db,
                                                                                              capsys):
    report = parse_self_report(results["problem"].read_bytes())
    assert report.data["agree"] and report.data["threads_per_block"] == 128
    assert len(report.data["checks"]) == 4  # the problem's four tests, embedded
    assert main(["import", str(results["problem"]), "--name", "ada"]) == 0
    assert "self-reported on CUDA simulator" in capsys.readouterr().out
    (entry,) = SubmissionStore(db).leaderboard("vector-add", "self-reported on CUDA simulator")
    assert entry.name == "ada" and entry.source == LEARNER and entry.median_s is None  # simulated: never a GPU time
    assert SubmissionStore(db).leaderboard("vector-add", "CUDA simulator") == []  # apart from the lab's own runs
    (run,) = open_store(db).runs()  # and a History row, self-reported, beside the leaderboard entry
    assert run.experiment == "problem:vector-add" and run.result["imported"]["leaderboard_entry"] == entry.id
    assert run.result["imported"]["label"].startswith("self-reported on CUDA simulator")


def test_a_plausible_t4_result_is_shown_as_reported_with_the_devices_facts(results, db):
    raw = _with(results["experiment"].read_bytes(), lambda d: _as_t4(d, 0.5e-3))  # 240 GB/s of a 320 GB/s peak
    done = import_self_report(raw, source="t4.json", store=open_store(db))
    assert done.report.label == "self-reported on Tesla T4"
    assert done.report.gbps == pytest.approx(240.0) and done.report.fraction_of_peak == pytest.approx(240 / 320.064)
    from ui.charts.history import vector_add_entry

    (run,) = open_store(db).runs()
    rows = vector_add_entry(run.result["imported"]["label"], "self-reported", run.result)
    assert {r["device"] for r in rows} == {"Tesla T4"} and {r["source"] for r in rows} == {"self-reported on Tesla T4"}


# --- tampered files are refused, the field named ----------------------------------------------------


def test_an_impossible_time_is_refused_naming_the_field(results, db):
    raw = _with(results["experiment"].read_bytes(), lambda d: _as_t4(d, 1e-6))  # 120 TB/s on a T4
    with pytest.raises(SelfReportProblem, match=r"^phases\.kernel\.min_s: .* over this device's 320 GB/s peak"):
        import_self_report(raw, store=open_store(db))
    no_facts = _with(raw, lambda d: d["device"].update(memory_clock_khz=None, memory_bus_width_bits=None,
                                                       peak_bandwidth_gbps=None))
    with pytest.raises(SelfReportProblem, match=r"^phases\.kernel\.min_s: .* faster than any GPU's memory"):
        import_self_report(no_facts, store=open_store(db))
    assert open_store(db).runs() == []


def test_a_wrong_kernel_is_judged_by_the_labs_sandbox_and_refused(results, db):
    wrong = LEARNER.replace("a[i] + b[i]", "a[i] - b[i]")

    def swap(d):
        d["kernel_source"], d["kernel_sha256"] = wrong, hashlib.sha256(wrong.encode()).hexdigest()

    with pytest.raises(SelfReportProblem, match=r"^kernel_source: the lab's sandbox judged this kernel wrong"):
        import_self_report(_with(results["problem"].read_bytes(), swap))
    assert SubmissionStore(db).count() == 0


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d.update(kernel_source=d["kernel_source"] + "\n# edited\n"), "kernel_sha256"),
    (lambda d: d["phases"]["kernel"].update(median_s=1e-9), "phases.kernel.median_s"),
    (lambda d: d["phases"]["kernel"]["samples_s"].__setitem__(0, -1.0), "phases.kernel.samples_s[0]"),
    (lambda d: d.update(agree=not d["agree"]), "agree"),
    (lambda d: d.update(format="check.json"), "format"),
    (lambda d: d.update(created_at="yesterday"), "created_at"),
    (lambda d: (_as_t4(d, 1e-3), d["device"].update(peak_bandwidth_gbps=9999.0)), "device.peak_bandwidth_gbps"),
])
def test_a_tampered_file_is_refused_naming_the_field(results, edit, field):
    with pytest.raises(SelfReportProblem) as refused:
        parse_self_report(_with(results["problem"].read_bytes(), edit))
    assert str(refused.value).startswith(f"{field}: ")


def test_a_changed_vector_add_kernel_is_not_the_labs_and_is_refused(results, db):
    def change(d):
        d["kernel_source"] = d["kernel_source"].replace("a[position] + b[position]", "a[position] * 2")
        d["kernel_sha256"] = hashlib.sha256(d["kernel_source"].encode()).hexdigest()

    with pytest.raises(SelfReportProblem, match=r"^kernel_source: is not the lab's vector_add_kernel"):
        import_self_report(_with(results["experiment"].read_bytes(), change), store=open_store(db))


def test_the_cli_refuses_a_tampered_file_in_one_line_naming_the_field(results, db, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_bytes(_with(results["experiment"].read_bytes(), lambda d: d["phases"]["h2d"].update(samples=99)))
    assert main(["import", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: bad.json was not imported: phases.h2d.samples: 99 is not the number of samples_s")
    assert copy.deepcopy(open_store(db).runs()) == []


def test_notebook_cli_says_what_has_a_notebook(tmp_path, capsys):
    assert main(["notebook", "indexing", "--out", str(tmp_path / "x.ipynb")]) == 2
    assert "not an experiment with a notebook (vector-add, scaling, launch-sweep, transfers, reduction," in (
        capsys.readouterr().err)
    assert main(["notebook", "no-such-problem", str(tmp_path / "missing.py"), "--out", "x.ipynb"]) == 2


def test_the_harness_and_the_reader_agree_on_the_format():
    text = (ROOT / "gpu" / "notebook" / "harness.py").read_text()
    from gpu.notebook.selfreport import FORMAT, FORMAT_VERSION

    assert f'FORMAT = "{FORMAT}"' in text and f"FORMAT_VERSION = {FORMAT_VERSION}" in text


@pytest.mark.parametrize("script", ["pages/1_Vector_add.py", "pages/9_Write_a_kernel.py"])
def test_the_page_offers_its_notebook(script, db):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / script), default_timeout=60).run()
    assert not at.exception
    assert "Download the notebook" in [b.proto.label for b in at.get("download_button")]
    assert any("kernel-lab-result-vector-add.json" in c.value for c in at.caption)


def test_every_problem_has_a_notebook_that_nbformat_accepts():
    from gpu.notebook.build import problem_notebook
    from gpu.problems import problems

    for problem in problems():  # the starter: a 2D launch, scalars, accumulated outputs all embed
        nbformat.validate(nbformat.from_dict(problem_notebook(problem.key, problem.starter)))


def test_a_self_reported_run_appears_in_compare_gpus_and_history_under_its_own_label(results, db):
    from streamlit.testing.v1 import AppTest

    raw = _with(results["experiment"].read_bytes(), lambda d: _as_t4(d, 0.5e-3))
    import_self_report(raw, source="t4.json", store=open_store(db))  # from the CLI: no browser session's
    at = AppTest.from_file(str(ROOT / "pages/5_History.py"), default_timeout=60).run()
    assert not at.exception
    sources = set()
    for chart in at.tabs[3].get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        sources |= set((spec.get("encoding") or spec["layer"][0]["encoding"])["color"]["scale"]["domain"])
    assert any(s.startswith("self-reported on Tesla T4") for s in sources), sources
    table = at.tabs[1].dataframe[0].value  # Everyone's runs
    assert list(table["status"]) == ["self-reported on Tesla T4"]


def test_a_self_reported_problem_run_is_a_history_row(results, db):
    from streamlit.testing.v1 import AppTest

    import_self_report(results["problem"].read_bytes(), source="problem.json", name="ada")
    at = AppTest.from_file(str(ROOT / "pages/5_History.py"), default_timeout=60).run()
    assert not at.exception
    table = at.tabs[1].dataframe[0].value  # Everyone's runs
    assert list(table["experiment"]) == ["problem:vector-add"]
    assert list(table["status"]) == ["self-reported on CUDA simulator (simulated timings)"]


def test_an_inputs_recipe_says_integral_only_when_every_value_is_a_whole_number():
    import numpy as np

    from gpu.notebook.build import _recipe

    whole = np.arange(10_000, dtype=np.float32)
    assert _recipe("a", whole)["integral"] is True
    late = whole.copy()
    late[9_000] = 0.5  # past the first few thousand: the whole array is looked at
    assert _recipe("a", late)["integral"] is False
    assert _recipe("a", np.array([1.0, np.nan]))["integral"] is False
    assert _recipe("a", np.array([1.0, np.inf]))["integral"] is False
    assert _recipe("a", np.arange(5))["integral"] is True
