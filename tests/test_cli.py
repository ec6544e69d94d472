"""`python -m gpu`: JSON shape per DESIGN.md and exit codes."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu.__main__ import main

ROOT = Path(__file__).resolve().parent.parent


def test_info_json_names_backend_and_device(capsys):
    assert main(["info", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["backend"] in ("cuda", "simulator")
    assert data["devices"][0]["name"]
    assert data["versions"]["numpy"]


def test_vector_add_json_has_the_documented_shape(capsys):
    assert (
        main(
            [
                "vector-add",
                "--n",
                "300",
                "--threads-per-block",
                "64",
                "--repeats",
                "2",
                "--cpu",
                "numpy,python",
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["n"] == 300 and data["dtype"] == "float32"
    assert data["threads_per_block"] == 64 and data["blocks_per_grid"] == 5
    assert data["backend"] in ("cuda", "simulator") and data["device"]["name"]
    assert data["agree"] is True and data["max_abs_diff"] == 0
    assert "compile_s" in data["gpu"]
    for phase in ("h2d", "kernel", "d2h", "total"):
        stats = data["gpu"]["phases"][phase]
        assert {"median_s", "min_s", "max_s", "samples"} <= set(stats) and stats["samples"] == 2
    assert set(data["cpu"]) == {"numpy", "python"}
    assert "median_s" in data["cpu"]["numpy"] or "skipped" in data["cpu"]["numpy"]
    assert "total_vs_numpy" in data["speedup"]


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["vector-add", "--n", "0"], "at least 1"),
        (["vector-add", "--n", "x"], "whole number"),
        (["vector-add", "--n", "100", "--threads-per-block", "0"], "threads per block"),
        (["vector-add", "--n", "100", "--threads-per-block", "4096"], "threads per block"),
        (["vector-add", "--n", "100", "--repeats", "0"], "repeats"),
        (["vector-add", "--n", "100", "--cpu", "cobol"], "unknown CPU implementation"),
        (["no-such-command"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, fragment, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


def test_module_entry_point_exit_code_in_a_real_process():
    proc = subprocess.run(
        [sys.executable, "-m", "gpu", "vector-add", "--n", "-3"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error:") and "Traceback" not in proc.stderr


def test_check_writes_json_and_markdown(tmp_path):
    from gpu.experiments.vector_add.check import article_section, correctness_section
    from gpu.report.check import run_check

    report = run_check(tmp_path, quick=True, sections=[correctness_section, article_section])
    assert report.passed
    data = json.loads((tmp_path / "check.json").read_text())
    assert data["sections"]["correctness"]["passed"] is True
    assert len(data["sections"]["correctness"]["launches"]) == 7 * 4  # sizes up to 257 x 4 block sizes
    assert "Results match: True" in (tmp_path / "check.md").read_text()


def test_a_failing_section_is_recorded_and_fails_the_check(tmp_path):
    from gpu.report.check import run_check

    def broken(ctx):
        raise RuntimeError("boom")

    report = run_check(tmp_path, quick=True, sections=[broken])
    assert not report.passed
    assert "boom" in (tmp_path / "check.md").read_text()


@pytest.mark.skipif(not __import__("gpu").BACKEND.simulated, reason="the simulator's wording")
def test_every_text_output_in_the_simulator_starts_with_the_warning_and_says_na(capsys):
    from gpu.__main__ import SIMULATOR_LINE

    assert main(["vector-add", "--n", "64", "--repeats", "1", "--cpu", "numpy"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == SIMULATOR_LINE and "timings are not GPU performance" in SIMULATOR_LINE
    # no zero duration (a "0 ns" not preceded by a digit: "630 ns" is a real time) and no simulated speedup
    assert "kernel compile: n/a (simulator)" in out and not re.search(r"(?<![\d.])0 ns", out)
    assert "speedup" not in out and "no GPU-vs-CPU ratio: the GPU times above are simulated" in out
    assert (
        main(["sweep", "--min-n", "32", "--max-n", "32", "--impl", "numpy", "--repeats", "1", "--no-peaks", "--quiet"])
        == 0
    )
    assert capsys.readouterr().out.splitlines()[0] == SIMULATOR_LINE


@pytest.mark.skipif(not __import__("gpu").BACKEND.simulated, reason="the simulator's wording")
def test_gpu_check_stdout_and_check_md_start_with_the_simulator_warning(tmp_path, capsys, monkeypatch):
    from gpu.__main__ import SIMULATOR_LINE
    from gpu.core.provenance import METHODOLOGY_VERSION
    from gpu.report import check

    def tiny(ctx):
        return check.Section("tiny", "Tiny", True, {}, "nothing measured")

    monkeypatch.setattr(check, "declared_sections", lambda: [tiny])  # the CLI runs every declared section
    main(["check", "--out", str(tmp_path), "--quick"])
    assert capsys.readouterr().out.splitlines()[0] == SIMULATOR_LINE
    assert (tmp_path / "check.md").read_text().splitlines()[0] == f"**{SIMULATOR_LINE}**"
    assert json.loads((tmp_path / "check.json").read_text())["methodology_version"] == METHODOLOGY_VERSION


@pytest.mark.skipif(not __import__("gpu").BACKEND.simulated, reason="the simulator's wording")
def test_check_breakdown_says_compile_is_na_and_tags_simulated_speedups(tmp_path):
    from gpu.experiments.vector_add.check import breakdown_section
    from gpu.report.check import run_check

    run_check(tmp_path, quick=True, sections=[breakdown_section])
    text = (tmp_path / "check.md").read_text()
    assert (
        "| kernel compile (or cache load), first in this check | n/a (simulator) |" in text and "| 0 ns |" not in text
    )
    speedups = [line for line in text.splitlines() if line.startswith("- GPU ") and " vs " in line]
    assert speedups and all("(simulated: not GPU performance)" in line for line in speedups)
