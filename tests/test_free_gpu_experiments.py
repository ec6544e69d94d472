"""The notebooks of Scaling, Launch config and the catalog kernels (every step of the Kernels page's ladders):
they carry the lab's own kernels, inputs and checks, execute in numba-cuda's simulator through nbclient, and
their results import into History as self-reported; a tampered file is refused with the field named."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from gpu.__main__ import main
from gpu.notebook.catalog import CATALOG, INPUTS, REFERENCES, kernels_source, params, plan
from gpu.notebook.importing import import_self_report
from gpu.notebook.selfreport import SelfReportProblem
from gpu.service.store import open_store
from tests.test_free_gpu import T4, _execute, _with

FAST = "transpose"  # the quickest notebook runs in the fast lane; the others are marked slow


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("catalog-notebooks")


def _result(folder: Path, key: str) -> Path:
    """The notebook the CLI writes for ``key``, executed in the simulator; its result file (once per module)."""
    result = folder / f"{key}.json"
    if not result.is_file():
        notebook = folder / f"{key}.ipynb"
        assert main(["notebook", key, "--out", str(notebook)]) == 0
        _execute(notebook, result)
    return result


@pytest.fixture
def db(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv("KERNEL_LAB_DB", str(path))
    return path


def _snippet(code: str, name: str):
    import math

    namespace = {"np": np, "math": math}
    exec(code, namespace)
    return namespace[name]


@pytest.mark.parametrize("key", CATALOG)
def test_the_notebooks_inputs_and_reference_are_the_labs_own(key):
    """The NumPy the notebook carries draws the lab's inputs and computes the lab's reference, bit for bit."""
    from gpu.notebook.catalog import _module

    spec = _module(key).SPEC
    p = params(key)["simulator"]
    ours = _snippet(INPUTS[key], "make_inputs")(p, 7)
    lab = spec.make_inputs(p, 7)
    assert list(ours) == list(lab)
    for name in lab:
        assert ours[name].dtype == lab[name].dtype and np.array_equal(ours[name], lab[name]), name
    mode, *want = _snippet(REFERENCES[key], "reference")(ours, p)
    reference = spec.reference(lab, p)
    assert mode == reference.mode
    if mode == "exact":
        assert np.array_equal(want[0], reference.expected) and want[0].dtype == reference.expected.dtype
    else:
        assert np.array_equal(want[0], reference.exact64) and np.array_equal(want[1], reference.abs_terms64)


def test_the_reduction_inputs_above_two_to_the_24_are_the_labs_own():
    """Above 2^24 the lab draws one 1 per aligned run: the notebook's code for the GPU's size does the same."""
    from gpu.core.agreement import ExactSumInputs

    n = 2**24 + 4096
    ours = _snippet(INPUTS["reduction"], "make_inputs")({"n": n}, 3)["x"]
    assert np.array_equal(ours, ExactSumInputs.for_size(n).make(3))


def test_the_notebook_carries_the_labs_kernels_module_with_only_its_lab_imports_replaced():
    from gpu.experiments.reduction import kernels

    source = kernels_source("reduction")
    assert "gpu." not in source.replace("gpu/core/launch_spec.py", "") and "BACKEND" not in source
    lab = Path(kernels.__file__).read_text()
    body = lab.split("from gpu.core.launch_spec import Launch\n", 1)[1]
    assert body.replace("@cuda.jit(cache=not BACKEND.simulated)", "@cuda.jit") in source


def test_a_one_wave_step_gets_its_grid_on_the_notebooks_gpu():
    """Grid-stride steps: one wave of the lab's build machine would be wrong on a T4 or an H200, so the plan marks
    every value that is that wave (the grid, the two-pass step's scratch and count) for the notebook to replace."""
    steps = {s["key"]: s for s in plan("reduction")["gpu"]["steps"]}
    two_pass = steps["two-pass"]
    wave = two_pass["wave"]["value"]
    assert two_pass["passes"][0]["grid"] == wave and two_pass["scratch"][0]["shape"] == [wave]
    assert two_pass["scalars"][0]["value"] == wave and steps["atomic"]["wave"] is None


@pytest.mark.parametrize("key", [pytest.param(k, marks=() if k == FAST else pytest.mark.slow) for k in CATALOG])
def test_every_catalog_notebook_runs_the_labs_checks_and_imports_as_self_reported(folder, key, db):
    raw = _result(folder, key).read_bytes()
    data = json.loads(raw)
    assert data["agree"] and data["backend"] == "simulator" and data["params"] == params(key)["simulator"]
    steps = plan(key)["simulator"]["steps"]
    assert set(data["phases"]) | set(data["skipped"]) == {s["key"] for s in steps}
    assert all(s["needs"] for s in steps if s["key"] in data["skipped"])  # only what the simulator lacks
    assert main(["import", str(folder / f"{key}.json")]) == 0
    (run,) = open_store(db).runs()
    assert run.experiment == key and run.result["imported"]["label"].startswith("self-reported on CUDA simulator")
    from ui.charts.history import run_samples

    labels = [name for name, _samples in run_samples(run)]
    assert labels == [f"{s['label']} · Kernel" for s in steps if s["key"] in data["phases"]]
    assert main(["import", str(folder / f"{key}.json")]) == 2  # once only


def _on_t4(data: dict, seconds: float) -> None:
    """The file as a T4 would write it at the GPU's size (the facts a T4 reports, a time we choose)."""
    data["backend"], data["device"], data["skipped"] = "cuda", dict(T4), {}
    data["params"] = params(data["key"])["gpu"]
    data["bytes_moved"] = plan(data["key"])["gpu"]["bytes_moved"]
    for stats in data["phases"].values():
        stats.update(samples_s=[seconds] * 3, median_s=seconds, min_s=seconds, max_s=seconds, samples=3)


def test_a_plausible_t4_catalog_result_imports_and_an_impossible_step_time_is_refused(folder, db):
    raw = _result(folder, FAST).read_bytes()  # transpose: 8 x 16384^2 bytes = 2.1 GB per step
    done = import_self_report(_with(raw, lambda d: _on_t4(d, 10e-3)), store=open_store(db))  # 215 GB/s
    assert done.report.label == "self-reported on Tesla T4"

    def one_fast_step(d):
        _on_t4(d, 10e-3)
        d["phases"]["padded"].update(samples_s=[1e-3] * 3, median_s=1e-3, min_s=1e-3, max_s=1e-3)  # 2,147 GB/s

    with pytest.raises(SelfReportProblem, match=r"^phases\.padded\.min_s: .* over this device's 320 GB/s peak"):
        import_self_report(_with(raw, one_fast_step), store=open_store(db))

    from streamlit.testing.v1 import AppTest  # beside the recorded ladder on Kernels

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "pages/7_Kernels.py"), default_timeout=90)
    at.run()
    at.selectbox(key="kernels.kernel").set_value(FAST).run()
    assert not at.exception
    (table,) = [d.value for d in at.dataframe if {"run", "step", "% of peak"} <= set(d.value.columns)]
    assert set(table["run"].str.split(" · ").str[0]) == {"self-reported on Tesla T4"}
    assert len(table) == len(plan(FAST)["gpu"]["steps"]) and list(table["GB/s"]) == [214.7] * len(table)
    assert list(table["% of peak"]) == [round(100 * 214.748 / T4["peak_bandwidth_gbps"], 1)] * len(table)


def _wrong_result(d: dict) -> None:
    d["checks"][0].update(passed=False, detail="1 wrong")
    d["agree"] = False


def _changed_kernel(d: dict) -> None:
    d["kernel_source"] += "\n# changed\n"
    d["kernel_sha256"] = hashlib.sha256(d["kernel_source"].encode()).hexdigest()


@pytest.mark.parametrize(("edit", "field"), [
    (_wrong_result, "agree"),
    (_changed_kernel, "kernel_source"),
    (lambda d: d["params"].update(n=64), "params"),
    (lambda d: d.update(bytes_moved=d["bytes_moved"] * 2), "bytes_moved"),
    (lambda d: d["phases"].pop("naive"), "phases"),
    (lambda d: d["skipped"].update(naive="not wanted"), "skipped.naive"),
    (lambda d: d.update(checks=d["checks"][1:]), "checks"),
    (lambda d: d["params"].update(n=[1]), "params.n"),
])
def test_a_tampered_catalog_file_is_refused_naming_the_field(folder, db, edit, field):
    raw = _result(folder, FAST).read_bytes()
    with pytest.raises(SelfReportProblem) as refused:
        import_self_report(_with(raw, edit), store=open_store(db))
    assert str(refused.value).startswith(f"{field}: ") or str(refused.value).startswith(f"{field}.")
    assert open_store(db).runs() == []


@pytest.mark.parametrize(("script", "key"), [("pages/2_Scaling.py", "scaling"),
                                             ("pages/3_Launch_config.py", "launch-sweep"),
                                             ("pages/4_Transfers.py", "transfers")])
def test_the_sweep_pages_offer_their_notebook(db, script, key):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / script), default_timeout=90).run()
    assert not at.exception
    assert "Download the notebook" in [b.proto.label for b in at.get("download_button")]
    assert any(f"kernel-lab-result-{key}.json" in c.value for c in at.caption)


def test_the_cli_names_the_experiments_with_a_notebook(tmp_path, capsys):
    assert main(["notebook", "no-such-kernel", "--out", str(tmp_path / "x.ipynb")]) == 2
    err = capsys.readouterr().err
    assert all(key in err for key in (*CATALOG, "scaling", "launch-sweep", "transfers"))


@pytest.mark.parametrize("key", ["scaling", pytest.param("launch-sweep", marks=pytest.mark.slow),
                                 pytest.param("transfers", marks=pytest.mark.slow)])
def test_the_sweep_notebooks_check_every_output_and_import_as_self_reported(folder, key, db):
    from gpu.notebook.sweeps import expected_phases
    from gpu.notebook.transfers import STRATEGIES
    from ui.charts.history import run_samples

    data = json.loads(_result(folder, key).read_bytes())
    phases = set(STRATEGIES) if key == "transfers" else expected_phases(key, "simulator")
    assert data["agree"] and set(data["phases"]) == phases
    assert all(c["detail"].startswith("bit-identical") for c in data["checks"])
    assert main(["import", str(folder / f"{key}.json")]) == 0
    (run,) = open_store(db).runs()
    assert run.experiment == key and run.result["imported"]["label"].startswith("self-reported on CUDA simulator")
    assert {name.split(" · ", 1)[1] for name, _samples in run_samples(run)} == set(data["phases"])


def _scaling_on_t4(d: dict, kernel_s: float) -> None:
    """Scaling as a T4 would write it up to N = 2^20 (the facts a T4 reports, times we choose)."""
    d["backend"], d["device"] = "cuda", dict(T4)
    sizes = [4**k for k in range(5, 11)]
    stats = lambda s: {"samples_s": [s] * 3, "median_s": s, "min_s": s, "max_s": s, "samples": 3}  # noqa: E731
    d["phases"] = {}
    for n in sizes:
        d["phases"].update({f"kernel N={n}": stats(kernel_s * n / sizes[-1]), f"with copies N={n}": stats(1e-3),
                            f"numpy N={n}": stats(1e-3)})
    d["n"], d["bytes_moved"] = sizes[-1], 12 * sizes[-1]


def test_a_scaling_result_is_checked_by_the_labs_own_bytes_per_size(folder, db):
    raw = _result(folder, "scaling").read_bytes()
    assert import_self_report(_with(raw, lambda d: _scaling_on_t4(d, 100e-6)), store=open_store(db))  # 126 GB/s
    with pytest.raises(SelfReportProblem, match=r"^phases\.kernel N=1024\.min_s: .* over this device's 320 GB/s"):
        import_self_report(_with(raw, lambda d: _scaling_on_t4(d, 10e-6)), store=open_store(db))  # 1,258 GB/s

    def a_size_left_out(d):
        _scaling_on_t4(d, 100e-6)
        for name in ("kernel N=4096", "with copies N=4096", "numpy N=4096"):
            d["phases"].pop(name)

    with pytest.raises(SelfReportProblem, match=r"^phases: the sizes .* are not the notebook's"):
        import_self_report(_with(raw, a_size_left_out), store=open_store(db))
    with pytest.raises(SelfReportProblem, match=r"^phases\.kernel N=x: "):
        import_self_report(_with(raw, lambda d: d["phases"].update({"kernel N=x": d["phases"]["kernel N=64"]})),
                           store=open_store(db))
    with pytest.raises(SelfReportProblem, match=r"^kernel_source: "):
        import_self_report(_with(raw, _changed_kernel), store=open_store(db))
    assert len(open_store(db).runs()) == 1


@pytest.mark.slow
def test_a_transfers_result_is_refused_when_a_strategy_is_too_fast_or_missing(folder, db):
    raw = _result(folder, "transfers").read_bytes()

    def on_t4(d, seconds):
        d["backend"], d["device"], d["n"], d["bytes_moved"] = "cuda", dict(T4), 10_000_000, 120_000_000
        for stats in d["phases"].values():
            stats.update(samples_s=[seconds] * 3, median_s=seconds, min_s=seconds, max_s=seconds, samples=3)

    assert import_self_report(_with(raw, lambda d: on_t4(d, 1e-3)), store=open_store(db))  # 120 GB/s per add
    with pytest.raises(SelfReportProblem, match=r"^phases\.article\.min_s: .* over this device's 320 GB/s"):
        import_self_report(_with(raw, lambda d: on_t4(d, 1e-4)), store=open_store(db))  # 1,200 GB/s
    with pytest.raises(SelfReportProblem, match=r"^skipped: pinned"):
        import_self_report(_with(raw, lambda d: (d["phases"].pop("pinned"), d["skipped"].update(pinned="no"))),
                           store=open_store(db))
    with pytest.raises(SelfReportProblem, match=r"^phases: resident not as"):
        import_self_report(_with(raw, lambda d: d["phases"].pop("resident")), store=open_store(db))


def test_the_kernels_page_offers_the_chosen_kernels_notebook(db):
    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parent.parent
    at = AppTest.from_file(str(root / "pages/7_Kernels.py"), default_timeout=90).run()
    assert not at.exception
    for key in (at.selectbox(key="kernels.kernel").value, "matmul"):
        at.selectbox(key="kernels.kernel").set_value(key).run()
        assert not at.exception
        assert "Download the notebook" in [b.proto.label for b in at.get("download_button")]
        assert any(f"kernel-lab-result-{key}.json" in c.value for c in at.caption), key


def test_every_experiment_notebook_is_valid_nbformat_and_self_contained():
    """Every notebook the CLI offers (the slow lane executes them all): nbformat accepts it, and no code cell
    imports the lab, which a free cloud GPU does not have."""
    import nbformat

    from gpu.notebook.build import EXPERIMENTS, experiment_notebook

    assert {"vector-add", "scaling", "launch-sweep", "transfers", *CATALOG} == set(EXPERIMENTS)
    for key in EXPERIMENTS:
        notebook = experiment_notebook(key)
        nbformat.validate(nbformat.from_dict(notebook))
        code = "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
        assert "from gpu" not in code and "import gpu" not in code, key
