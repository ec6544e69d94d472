"""The CLI contract: `problems [--json]`, `solve PROBLEM FILE [--json]` exits 0 / 1 / 2, `submissions delete`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu.problems import problems

ROOT = Path(__file__).resolve().parent.parent
GOOD = """from numba import cuda


@cuda.jit
def square(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] * a[i]
"""
NO_GUARD = GOOD.replace(
    "    if i < a.size:\n        out[i] = a[i] * a[i]", "    if i < a.size - 1:\n        out[i] = a[i] * a[i]"
)


@pytest.fixture
def cli(tmp_path):
    env = {**os.environ, "KERNEL_LAB_DB": str(tmp_path / "h.sqlite3"), "KERNEL_LAB_LOCK_DIR": str(tmp_path / "locks")}

    def run(*args: str, source: str | None = None) -> subprocess.CompletedProcess:
        argv = list(args)
        if source is not None:
            path = tmp_path / "kernel.py"
            path.write_text(source)
            argv.append(str(path))
        return subprocess.run(
            [sys.executable, "-m", "gpu", *argv], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
        )

    return run


def test_problems_lists_every_registered_problem(cli):
    text = cli("problems")
    assert text.returncode == 0 and "vector-add" in text.stdout and "matmul" in text.stdout
    data = json.loads(cli("problems", "--json").stdout)
    assert [p["key"] for p in data["problems"]] == [p.key for p in problems()]
    assert data["problems"][0]["signature"] == "vector_add(a, b, out)"
    assert "def square(a, out)" in cli("problems", "--starter", "guard").stdout


def test_solve_passes_with_exit_0_and_one_line_per_test(cli):
    done = cli("solve", "guard", "--name", "ada", source=GOOD)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("  pass  ") == 5 and "PASSED" in done.stdout and "Traceback" not in done.stderr
    assert "registers" in done.stdout and "static facts from the compiler" in done.stdout  # the real compiler, no GPU
    listed = cli("submissions", "--json")
    entries = json.loads(listed.stdout)["submissions"]
    assert [e["name"] for e in entries] == ["ada"]
    deleted = cli("submissions", "delete", entries[0]["id"][:8], "--yes")
    assert deleted.returncode == 0 and "deleted 1 submission" in deleted.stdout
    assert json.loads(cli("submissions", "--json").stdout)["submissions"] == []


def test_solve_wrong_result_exits_1_with_the_first_mismatch(cli):
    done = cli("solve", "guard", "--no-facts", source=NO_GUARD)
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("first mismatch: test 'one element': out[0]: expected ")
    assert "never written" in last and "block 0, thread 0's element" in last
    data = json.loads(cli("solve", "guard", "--json", "--no-save", "--no-facts", source=NO_GUARD).stdout)
    assert data["status"] == "wrong" and data["exit_code"] == 1 and data["mismatch"]["index"] == [0]


def test_solve_refusals_exit_2_in_one_line(cli):
    refused = cli("solve", "guard", source="import os\n" + GOOD)
    assert refused.returncode == 2 and refused.stdout.strip() == (
        "refused (import): line 1: `import os` is not allowed; allowed imports: `from numba import cuda`, "
        "`from numba import float32` (and other dtypes), `import math`, `from math import sqrt`")
    bad_name = cli("solve", "no-such-problem", source=GOOD)
    assert bad_name.returncode == 2 and bad_name.stderr.startswith("error: there is no problem 'no-such-problem'")
    missing = cli("solve", "guard", "/nonexistent/kernel.py")
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr
    delete = cli("submissions", "delete", "abc")
    assert delete.returncode == 2 and "--yes" in delete.stderr
