"""`python -m gpu trace`: exit 0 clean, 1 on a finding, 2 for bad input; and the child-process runner."""

from __future__ import annotations

import json

import pytest

import gpu
from gpu.__main__ import main
from gpu.trace.child import run_in_child
from gpu.trace.report import TraceReport


def test_a_clean_lab_kernel_exits_0_and_prints_sectors_per_request(capsys):
    assert main(["trace", "transpose-naive"]) == 0
    out = capsys.readouterr().out
    assert "No race, no out-of-bounds access" in out and "32.0 sectors/request" in out and "cannot see timing" in out


def test_json_has_the_findings(capsys):
    assert main(["trace", "transpose-tiled", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["problems"] is False and data["races"] == [] and data["barrier_intervals"] == 2
    assert max(b["ways"] for b in data["banks"]) == 32


@pytest.mark.skipif(
    not gpu.BACKEND.simulated,
    reason="the stand-in kernel is registered in this process; on a GPU the CLI traces in a child",
)
def test_a_finding_exits_1_with_thread_and_line(capsys, monkeypatch):
    # the lab's kernels are clean; a lab entry whose kernel has the off-by-one stands in for a bad one
    import numpy as np

    from gpu.trace import lab
    from tests.test_trace import add_off_by_one

    bad = lab.LabKernel(
        "off-by-one",
        "off by one",
        "a vector",
        100,
        lambda n: n,
        lambda n: lab.Launch(
            add_off_by_one,
            1,
            128,
            (np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)),
            "off-by-one",
        ),
    )
    monkeypatch.setattr(lab, "_KERNELS", (*lab.lab_kernels(), bad))
    assert main(["trace", "off-by-one"]) == 1
    out = capsys.readouterr().out
    assert "out of bounds" in out and "thread (100, 0, 0)" in out and "line " in out


@pytest.mark.parametrize("args,fragment", [
    (["trace", "no-such-kernel"], "unknown kernel"),
    (["trace"], "needs a kernel name"),
    (["trace", "transpose-naive", "--n", "1e6"], "too large"),
    (["trace", "matmul-naive", "--n", "41"], "N may be at most 40"),
    (["trace", "copy-strided", "--n", "1000"], "multiple of 1,024"),
    (["trace", "transpose-naive", "--n", "zero"], "N"),
    (["trace", "learner.py"], "add --problem"),
    (["trace", "no-such-file.py", "--problem", "vector-add"], "cannot read"),
    (["trace", "no-such-file.py", "--problem", "vector-add", "--n", "5"], "--n goes with a lab kernel"),
    (["trace", "transpose-naive", "--problem", "vector-add"], "--problem goes with a .py file"),
    (["trace", "transpose-naive", "--test", "1 × 1"], "--test goes with a .py file"),
])
def test_bad_input_exits_2_with_one_line(args, fragment, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1


def test_the_child_process_returns_reports_and_reasons():
    report, shuffles, reason = run_in_child([("copy-strided", 2048), ("reduction-shuffle", 1024),
                                             ("transpose-naive", 300)])
    assert isinstance(report, TraceReport) and "N = 2,048" in report.label
    assert next(s for s in report.sectors if s.kind == "read").sectors_per_request == 32
    assert isinstance(shuffles, TraceReport) and "N = 1,024" in shuffles.label and not shuffles.problems
    assert dict(shuffles.collectives)["shfl_down_sync"] > 0
    assert "N may be at most 256" in reason


def test_a_shuffle_step_traces_from_the_command_line_at_the_size_asked(capsys):
    assert main(["trace", "reduction-shuffle", "--n", "256", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "N = 256" in data["label"] and data["blocks_total"] == 2 and data["problems"] is False
    assert dict(map(tuple, data["collectives"]))["shfl_down_sync"] == 2 * (4 * 5 + 5)


def test_the_list_gives_each_kernels_largest_traced_size(capsys):
    assert main(["trace", "--list"]) == 0
    out = capsys.readouterr().out
    assert "reduction-shuffle" in out and "at most 65,536" in out and "at most 40" in out
    assert "cannot be traced" not in out


def test_a_learners_file_is_checked_then_traced_in_the_sandbox(tmp_path, capsys):
    from gpu.problems import get

    solution = get("shared").solution.source
    missing_sync = solution.replace("    cuda.syncthreads()\n    stride", "    stride")
    assert missing_sync != solution
    good, bad, hostile = tmp_path / "good.py", tmp_path / "bad.py", tmp_path / "hostile.py"
    good.write_text(solution)
    bad.write_text(missing_sync)
    hostile.write_text("import os\n")
    assert main(["trace", str(good), "--problem", "shared"]) == 0
    assert main(["trace", str(bad), "--problem", "shared"]) == 1
    out = capsys.readouterr().out
    assert "race on shared `partial" in out and "line 14 (`partial[tid]`)" in out and "line 18" in out
    assert main(["trace", str(hostile), "--problem", "shared"]) == 2  # refused by the checker: never run
    assert "not allowed" in capsys.readouterr().err


def test_a_learners_file_is_traced_at_the_test_asked_for_and_an_unknown_test_is_refused(tmp_path, capsys):
    from gpu.problems import get

    problem = get("shared")
    good = tmp_path / "good.py"
    good.write_text(problem.solution.source)
    smallest = min(problem.tests, key=lambda c: sum(c.sizes.values()))
    assert main(["trace", str(good), "--problem", "shared", "--test", smallest.name, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert smallest.name in data["label"] and data["problems"] is False
    assert main(["trace", str(good), "--problem", "shared", "--test", "no such test"]) == 2
    err = capsys.readouterr().err
    assert "no test 'no such test'" in err and smallest.name in err and err.count("\n") == 1


def test_on_a_gpu_the_cli_traces_in_a_simulator_child_and_never_in_its_own_process(monkeypatch, capsys):
    import numpy as np

    from gpu.core import backend
    from gpu.trace import record
    from gpu.trace.examples import read_coalesced_kernel

    on_a_gpu = backend.Backend("cuda", "pretend: this process has a GPU")
    monkeypatch.setattr(backend, "BACKEND", on_a_gpu)
    monkeypatch.setattr(record, "BACKEND", on_a_gpu)
    with pytest.raises(record.TraceUnavailable, match="child process"):
        record.trace_launch(read_coalesced_kernel, 1, 32, [np.zeros(32, np.float32), np.zeros(32, np.float32)])
    assert main(["trace", "copy-coalesced", "--json"]) == 0  # through gpu.trace.child, with NUMBA_ENABLE_CUDASIM=1
    assert json.loads(capsys.readouterr().out)["sectors"][0]["sectors_per_request"] == 4
