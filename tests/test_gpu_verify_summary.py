"""scripts/gpu_verify_summary.py: SUMMARY.md of a `make gpu-verify` folder, from its JSON files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_verify_summary", ROOT / "scripts" / "gpu_verify_summary.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)


def test_summary_sorts_catalog_targets_into_met_not_met_and_not_measurable(tmp_path):
    target = lambda name, measured, met: {  # noqa: E731
        "name": name,
        "measured": measured,
        "threshold": 1.0,
        "higher_is_better": True,
        "met": met,
    }
    check = {
        "started_at": "2026-12-01T00:00:00Z",
        "passed": False,
        "device": {
            "name": "NVIDIA H200",
            "compute_capability": "9.0",
            "multiprocessors": 132,
            "driver_version": "13.0",
            "runtime_version": "13.0",
        },
        "versions": {"numba-cuda": "0.30.4", "streamlit": None},
        "sections": {
            "reduction": {
                "title": "Reduction",
                "passed": True,
                "data": {"targets": [target("shuffle GB/s", 2.0, True)]},
            },
            "matmul": {
                "title": "Matmul",
                "passed": False,
                "data": {"targets": [target("vs cuBLAS", 0.5, False), target("vs CuPy", None, None)]},
            },
        },
    }
    (tmp_path / "check.json").write_text(json.dumps(check))
    (tmp_path / "compile.json").write_text(json.dumps({"compiler": "NVVM/ptxas 12.9", "failed": 1, "kernels": [
        {"kernel": "k1", "target": "sm_90", "ok": True, "error": None},
        {"kernel": "k2", "target": "sm_100", "ok": False, "error": "NVVM (sm_100): nvvmError\nmore"}]}))
    text = module.summary(tmp_path, 0, 1, 0, 412.0)
    assert "NVIDIA H200 (cc 9.0, 132 SMs)" in text and "numba-cuda 0.30.4" in text and "streamlit" not in text
    assert "1 met, 1 not met, 1 not measurable" in text
    assert "- matmul: vs cuBLAS: 0.5 (target ≥ 1)" in text and "- reduction: shuffle GB/s: 2" in text
    assert "k2 for sm_100: NVVM (sm_100): nvvmError" in text and "1 of 2 kernel x target compiled" in text
    assert (
        "compile (`python -m gpu compile --json`, compile.json): FAILED (exit 1)" in text and "wall time: 412 s" in text
    )


def test_summary_of_a_folder_where_nothing_ran_says_so(tmp_path):
    text = module.summary(tmp_path, None, None, None, None)
    assert text.count("not run") == 4  # tests, compile, check, pages
    assert "verification: FAILED" in text


def test_the_peak_claims_state_their_bytes_formula_and_l2_state():
    peak_claims = module.peak_claims
    check = json.loads((ROOT / "benchmarks" / "h200-final" / "check.json").read_text())
    claims = peak_claims(check)
    ilp = next(c for c in claims if "4-per-thread" in c)
    assert "12,884,901,888 bytes" in ilp and "91% of the peak 4,814 GB/s" in ilp
    assert "2 × memory clock × bus width" in ilp and "L2 flushed before every sample" in ilp
    check["sections"]["scaling"]["run"]["config"]["warm_l2"] = True
    assert all("L2 warm (not flushed)" in c for c in peak_claims(check))
    assert peak_claims({"sections": {}}) == []


def test_a_check_cut_by_its_time_limit_is_summarised_as_incomplete_never_pass(tmp_path):
    # The H200's first runs: a check killed mid-way left check.json saying passed; the summary said "overall PASS".
    check = {"started_at": "2026-12-04T17:44:28+00:00", "passed": False, "finished": False, "device": {},
             "versions": {}, "sections": {"breakdown": {"title": "Vector add", "passed": True}}}
    (tmp_path / "check.json").write_text(json.dumps(check))
    text = module.summary(tmp_path, 0, 0, 124, 320.0)
    assert "FAILED (exit 124), overall INCOMPLETE (1 sections written)" in text and "overall PASS" not in text


def test_the_headline_judges_the_launch_the_sweep_and_each_budget_on_a_gpu_and_nothing_in_the_simulator():
    launch = {"backend": "cuda", "engine_ratio": 1.5, "engine_target": 2.0, "engine_baseline": "cupy-rawkernel-args",
              "ladder": [{"label": "cuLaunchKernel", "median_s": 7e-6, "vs_cupy": 1.1},
                         {"label": "cuda.core", "median_s": None, "vs_cupy": None}]}
    check = {"backend": "cuda", "sections": {
        "scaling": {"duration_s": 50.0, "budget_s": 40, "targets": {"overhead": {"fraction": 0.08, "target": 0.1,
                                                                                "met": True}}},
        "reduction": {"duration_s": 10.0, "budget_s": 15, "targets": [
            {"name": "reduction: share of peak", "measured": 0.9, "threshold": 0.85, "met": True}]},
    }}
    lines = module.headline(check, launch)
    assert lines[0].endswith("1.50x (target ≤ 2x): met") and "7.00 µs, 1.10x CuPy's" in lines[1]
    assert "cuda.core: skipped" in lines[2] and "8.0% (target < 10%): met" in lines[3]
    assert "reduction: share of peak: 0.9 (target ≥ 0.85): met" in lines[4]
    assert lines[5] == "- sections over their plan's budget: scaling 50 s of 40 s"
    assert module.headline(check, {**launch, "engine_ratio": 2.5})[0].endswith("NOT met")
    simulated = module.headline({**check, "backend": "simulator"}, {**launch, "backend": "simulator"})
    assert "simulated" in simulated[0] and not any(line.endswith(": met") for line in simulated)
