"""Without a GPU the CPU side still runs at the user's N (the article's 10^7),
the simulated kernel at the simulator's cap, and the recorded real GPU is set beside
the CPU's figures, labelled, with its source. Nothing simulated is passed off as
measured at the CPU's N."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import gpu
from gpu.__main__ import main
from gpu.core import cpu
from gpu.core.limits import (
    SIMULATOR_MAX_N,
    VECTORISED_MAX_N,
    VECTORISED_WORK_SHARE,
    InputError,
    check_cpu_n,
    kernel_n,
)
from gpu.core.timing import RepeatPolicy
from gpu.experiments.scaling import config as scaling_config
from gpu.experiments.scaling import experiment as scaling
from gpu.experiments.scaling.report import summary as scaling_summary
from gpu.experiments.vector_add import experiment as vector_add
from gpu.experiments.vector_add.experiment import EXPERIMENT, run_vector_add
from gpu.report.cpu_vs_recorded import (
    YOUR_CPU,
    companion,
    sweep_vs_recorded,
    vector_add_vs_recorded,
)
from gpu.report.recorded_gpu import recorded_gpu_at
from gpu.service.admission import admit
from ui.charts import cpu_vs_recorded as charts

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(not gpu.BACKEND.simulated, reason="the simulator's cap only exists without a GPU")
CAP = 512  # a small simulated-kernel cap keeps the simulated part to a fraction of a second


@pytest.fixture
def cap(monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_MAX_N", str(CAP))
    return CAP


@pytest.fixture(scope="module")
def million():
    """One Vector add at N = 10^6, every CPU implementation, the simulated kernel at its cap."""
    mp = pytest.MonkeyPatch()
    mp.setenv("KERNEL_LAB_MAX_N", str(CAP))
    try:
        yield run_vector_add(10**6, 256, RepeatPolicy.count(2), tuple(cpu.IMPLEMENTATIONS))
    finally:
        mp.undo()


# --- limits and admission ------------------------------------------------------------------


def test_the_simulators_cap_applies_to_the_kernel_only(cap):
    assert kernel_n(10**7) == cap and kernel_n(100) == 100
    assert check_cpu_n("1e7") == 10**7  # the CPU side takes the article's N
    with pytest.raises(InputError, match="too large"):
        check_cpu_n("1e12")


@pytest.mark.skipif(not gpu.BACKEND.lab_simulator, reason="the lab simulator's vectorised tier")
def test_the_vectorised_tier_runs_vector_add_at_the_articles_n_unless_the_server_caps_it(monkeypatch):
    from gpu.sim import vector

    assert vector_add.vectorised() and kernel_n(10**7, vectorised=True) == 10**7 <= VECTORISED_MAX_N
    assert kernel_n(10**7) == SIMULATOR_MAX_N < 10**7  # a kernel it does not run keeps the per-thread cap
    vector.set_tier("thread")
    try:
        assert not vector_add.vectorised()
    finally:
        vector.set_tier("auto")
    monkeypatch.setenv("KERNEL_LAB_MAX_N", "5000")
    assert kernel_n(10**7, vectorised=True) == 5000  # the server's own limit still rules


def test_admission_counts_cpu_and_simulated_work_apart(monkeypatch):
    params = EXPERIMENT.parse({"n": "1e7", "repeats": "5"}, simulated=True)
    # the article's N with a few repeats is admitted: simulated work at the kernel's N only (in the lab's
    # vectorised tier the article's N itself, its element-passes counted at 1/VECTORISED_WORK_SHARE)
    fast = vector_add.vectorised()
    passes = kernel_n(10**7, vectorised=fast) * (5 + 1 + vector_add.ARTICLE_RUNS + 1)
    assert admit(EXPERIMENT, params) == (-(-passes // VECTORISED_WORK_SHARE) if fast else passes)
    monkeypatch.setenv("KERNEL_LAB_MAX_CPU_WORK", "1e8")
    with pytest.raises(InputError, match=r"CPU: 180,000,000 CPU element-passes.*KERNEL_LAB_MAX_CPU_WORK"):
        admit(EXPERIMENT, params)  # 10^7 x 6 passes x 3 compiled implementations
    only_python = EXPERIMENT.parse({"n": "1e7", "repeats": "5", "cpu": "python"}, simulated=True)
    assert admit(EXPERIMENT, only_python)  # the Python loop has its own time budget
    monkeypatch.setenv("KERNEL_LAB_MAX_WORK", "1000")
    with pytest.raises(
        InputError, match=r"simulated-kernel element-passes, over the budget of 1,000 \(KERNEL_LAB_MAX_WORK\)"
    ):
        admit(EXPERIMENT, only_python)  # the simulated kernel's budget still applies


# --- the engine at N = 10^6 ------------------------------------------------------------------


def test_every_cpu_implementation_runs_at_a_million_and_the_kernel_at_the_cap(million):
    run = million
    assert (run.n, run.kernel_n, run.gpu_capped) == (10**6, CAP, True)
    for name in cpu.IMPLEMENTATIONS:
        timing = run.cpu[name]
        assert timing.stats is not None, f"{name} must be measured at 10^6, not estimated: {timing.skipped}"
        assert run.agreement[name].n == 10**6 and run.agreement[name].passed
    assert run.agreement["gpu"].n == CAP and run.agreement["gpu"].passed  # checked where it ran
    assert run.blocks_per_grid == CAP // 256
    assert run.speedups == []  # times at two sizes are no speedup
    frame = run.to_frame()
    assert set(frame[frame["implementation"] == "gpu"]["n"]) == {CAP}
    assert set(frame[frame["implementation"] != "gpu"]["n"]) == {10**6}
    text = str(run)
    assert f"simulated kernel ran at N = {CAP}" in text and "GPU at N = 512" in text and "speedup" not in text


def test_the_capped_kernels_check_can_fail(cap, monkeypatch):
    real = vector_add.time_gpu_phases

    def wrong(a, b, out, *args, **kwargs):
        stats = real(a, b, out, *args, **kwargs)
        out[-1] += 1  # one wrong element at the kernel's N
        return stats

    monkeypatch.setattr(vector_add, "time_gpu_phases", wrong)
    run = run_vector_add(5000, 256, RepeatPolicy.count(1), ["numpy"])
    assert run.kernel_n == cap and not run.agreement["gpu"].passed and not run.agree


def test_json_keeps_every_documented_field_and_adds_the_sizes(million):
    data = million.to_dict()
    assert (
        data["n"] == 10**6 and data["gpu_n"] == CAP and data["cpu_n"] == 10**6 and "simulator's cap" in data["gpu_note"]
    )
    for key in ("dtype", "threads_per_block", "blocks_per_grid", "backend", "agree", "max_abs_diff", "speedup"):
        assert key in data
    assert data["device"]["name"] and data["gpu"]["compile_s"] is not None
    for phase in ("h2d", "kernel", "d2h", "total"):
        assert set(data["gpu"]["phases"][phase]) >= {"median_s", "min_s", "max_s", "samples"}
    assert set(data["cpu"]) == set(cpu.IMPLEMENTATIONS)


def test_history_keeps_no_gpu_figure_at_the_cpus_n(million):
    measures = EXPERIMENT.measures(million)
    assert "kernel_s" not in measures and "gpu_total_s" not in measures
    assert measures["cpu_numpy_s"] == million.cpu["numpy"].median_s


# --- the recorded GPU beside your CPU ---------------------------------------------------------


def test_recorded_figures_are_matched_by_n_and_say_when_nearest():
    same = recorded_gpu_at(10**7)
    assert same.exact and same.n == 10**7 and "same N" in same.size_note
    assert same.source == "benchmarks/h200-2026-12-04/check.json, vector add breakdown"
    near = recorded_gpu_at(10**6)
    assert not near.exact and near.n == 2**20 and "nearest recorded N is 1,048,576 (5% more elements)" in near.size_note


def test_the_comparison_names_its_source_and_says_the_ratios_in_words(million):
    comparison = companion(million)
    assert comparison is not None and comparison == vector_add_vs_recorded(million)
    data = comparison.to_dict()
    assert data["cpu_label"] == YOUR_CPU == "your CPU, measured now"
    assert data["gpu_label"].startswith("NVIDIA H200, recorded 4 Dec 2026")
    assert data["recorded"]["source"] == "benchmarks/h200-2026-12-04/check.json, scaling sweep"
    assert data["recorded"]["n"] == 2**20 and data["cpu_n"] == 10**6
    text = " ".join(comparison.sentences())
    assert "recorded on a real GPU, not measured in this session, under today's measurement rules" in text
    assert "nearest recorded N is 1,048,576" in text
    assert "On the recorded NVIDIA H200 the kernel alone takes 8.1 µs" in text and "your NumPy" in text
    assert "With pageable copies the GPU takes 1.87 ms end to end" in text
    assert "e-0" not in text and "simulat" not in text  # no simulated figure, no 1e-06x
    numpy = million.cpu["numpy"].median_s
    assert data["ratios"]["numpy_over_recorded_kernel"] == pytest.approx(numpy / comparison.recorded.phases["kernel"])


def test_the_comparison_at_the_articles_n_quotes_the_articles_cpu_line():
    run = run_vector_add(10**7, 256, RepeatPolicy.count(1), ["numpy"], gpu_n=64, python_budget_s=1e-9)
    assert run.cpu["numpy"].stats is not None and run.agreement["numpy"].n == 10**7
    comparison = vector_add_vs_recorded(run)
    assert comparison.recorded.exact and comparison.recorded.pinned_total_s is not None
    assert "With pinned host memory the recorded GPU takes 2.39 ms" in " ".join(comparison.sentences())
    # an estimated Python loop is said to be one
    estimated = run_vector_add(10**5, 256, RepeatPolicy.count(1), ["python"], gpu_n=64, python_budget_s=1e-9)
    assert "Your Python loop was not run" in " ".join(vector_add_vs_recorded(estimated).sentences())


def test_one_size_chart_labels_each_source_and_has_a_log_time_axis(million):
    comparison = vector_add_vs_recorded(million)
    spec = charts.one_size_chart(comparison.to_frame(), "subtitle").to_dict()
    text = json.dumps(spec)
    assert YOUR_CPU in text and "NVIDIA H200, recorded" in text
    dots = spec["layer"][0]["encoding"]
    assert dots["x"]["scale"]["type"] == "log" and dots["shape"]["field"] == "source"


# --- Scaling ----------------------------------------------------------------------------------


def test_scaling_runs_the_cpu_past_the_cap_and_compares_with_the_recorded_sweep(cap):
    config = scaling_config.make_config(256, 4096, ["gpu", "numpy"], policy=RepeatPolicy.count(1))
    assert config.kernel_max_n == cap and config.kernel_skipped_sizes == (1024, 2048, 4096)
    assert config.steps == 5 * 1 + 2  # NumPy at 5 sizes, the simulated kernel at 256 and 512
    run = scaling.run_sweep(config)
    assert {p.n for p in run.points if p.series == "numpy"} == {256, 512, 1024, 2048, 4096}
    assert {p.n for p in run.points if p.series.startswith("gpu")} == {256, 512}
    assert run.agree and not run.failures and run.complete
    assert "only the CPU implementations ran" in run.kernel_note and run.kernel_note in scaling_summary(run)
    comparison = sweep_vs_recorded(run)
    assert [r.n for r in comparison.recorded] == [8192] * 5  # the recorded sweep starts at 8,192
    text = " ".join(comparison.sentences())
    assert "nearest recorded N is used: 256 → 8,192; 512 → 8,192" in text and "recorded on a real GPU" in text
    spec = json.dumps(charts.sweep_chart(comparison.to_frame(), "subtitle").to_dict())
    assert "NumPy (your CPU)" in spec and "Kernel alone (recorded GPU)" in spec


def test_scaling_admission_counts_cpu_work_apart(monkeypatch):
    params = scaling.EXPERIMENT.parse(
        {"min_n": str(2 * SIMULATOR_MAX_N), "max_n": "2^26", "impls": "gpu,numpy", "repeats": "2"}, simulated=True
    )
    assert admit(scaling.EXPERIMENT, params) == 0  # no simulated kernel past the cap: the CPU's work is counted apart
    monkeypatch.setenv("KERNEL_LAB_MAX_CPU_WORK", "1e6")
    with pytest.raises(InputError, match="KERNEL_LAB_MAX_CPU_WORK"):
        admit(scaling.EXPERIMENT, params)


# --- the CLI ----------------------------------------------------------------------------------


def test_cli_measures_the_cpu_at_n_and_says_where_the_gpu_figures_come_from(cap, capsys):
    assert main(["vector-add", "--n", "2e5", "--repeats", "1", "--cpu", "numpy,numba", "--no-article", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n"] == 200_000 and data["gpu_n"] == cap and data["blocks_per_grid"] == 2
    assert data["cpu"]["numpy"]["samples"] == 1 and data["agree"] is True
    recorded = data["recorded_gpu"]
    assert recorded["cpu_label"] == "your CPU, measured now"
    assert recorded["recorded"]["provenance"]["device"] == "NVIDIA H200" and recorded["recorded"]["provenance"]["date"]
    assert recorded["recorded"]["source"].startswith("benchmarks/h200-2026-12-04/check.json")
    assert main(["vector-add", "--n", "2e5", "--repeats", "1", "--cpu", "numpy", "--no-article"]) == 0
    out = capsys.readouterr().out
    assert "simulated kernel ran at N = 512" in out
    assert "Your CPU, measured now (N = 200,000), beside NVIDIA H200, recorded 4 Dec 2026" in out


# --- the page ---------------------------------------------------------------------------------


def test_vector_add_page_at_a_million_shows_your_cpu_beside_the_recorded_gpu(cap):
    at = AppTest.from_file(str(ROOT / "pages/1_Vector_add.py"), default_timeout=300).run()
    at.text_input(key="n").input("1e6")
    at.text_input(key="repeats").input("1")
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any(i.value.startswith(f"The simulated kernel ran at N = {cap}, the simulator's cap") for i in at.info)
    assert any("the CPU's at N = 1,000,000, the simulated kernel's at N = 512" in s.value for s in at.success)
    assert any(w.value.startswith("The GPU column is at N = 1,048,576, not yours") for w in at.warning)
    markdown = "\n".join(m.value for m in at.markdown)
    assert "**your CPU, measured now** · N = 1,000,000" in markdown
    assert "**NVIDIA H200, recorded 4 Dec 2026, 17:44 UTC** · N = 1,048,576 (nearest recorded)" in markdown
    assert "the kernel alone takes 8.1 µs: about" in markdown and "faster than your NumPy" in markdown
    metrics = {m.label: m.value for m in at.metric}
    assert (
        "Your NumPy" in metrics and metrics["GPU launch"] == f"{-(-cap // 256)} × 256"
    )  # no simulated time as a headline
    assert not any("imulated" in label or "GPU vs" in label for label in metrics), metrics
    assert any(c.value.startswith("Your CPU at N = 1,000,000, measured now") for c in at.caption)
    assert not any("e-0" in v for v in [*metrics.values(), markdown])
    assert any(f"The article's method ran at N = {cap}" in c.value for c in at.caption)
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    assert any("your CPU, measured now" in json.dumps(s) for s in specs)


def test_scaling_page_past_the_cap_shows_the_cpu_beside_the_recorded_sweep(monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_MAX_N", "128")
    at = AppTest.from_file(str(ROOT / "pages/2_Scaling.py"), default_timeout=300).run()
    at.text_input(key="scaling.min_n").input("64")
    at.text_input(key="scaling.max_n").input("2^20")
    at.multiselect(key="scaling.impls").set_value(["gpu", "numpy"])
    at.text_input(key="scaling.repeats").input("1")
    at.checkbox(key="scaling.peaks").uncheck()
    next(b for b in at.button if b.label == "Run sweep").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any(
        i.value.startswith("Simulated kernels ran up to N = 128") and "N = 256 to 1,048,576 only the CPU" in i.value
        for i in at.info
    )
    markdown = "\n".join(m.value for m in at.markdown)
    assert "benchmarks/h200-2026-12-04/check.json, scaling sweep" in markdown and "beats your NumPy" in markdown
    assert "At N = 1,048,576: your NumPy" in markdown and "e-0" not in markdown
    specs = [c.proto.spec for c in at.get("vega_lite_chart")]
    assert any("NumPy (your CPU)" in s and "Kernel alone (recorded GPU)" in s for s in specs)
