"""CONTRIBUTING.md's "A problem", done for real: a new problem is one new file, no other edit.

The problem set is read from a temporary copy of ``gpu/problems/`` without
``p16_saxpy.py`` (the package's ``__path__`` pointed at it: the folder discovery scans),
then with that one file dropped in. The file is the whole difference, and the problem it
declares — SAXPY, with ``alpha`` a float32 scalar argument drawn per test — is judged like
every other: its reference passes, the starter and wrong kernels fail, and ``python -m gpu
solve`` judges it in the sandbox with the compiler's facts and the trace. Its float64
bound is tested against both float32 orders of arithmetic and against results a few ulps off.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpu.problems as package
from gpu.problems import get, problems

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "gpu" / "problems"
NEW = "p16_saxpy.py"
MODULE = f"gpu.problems.{NEW[:-3]}"

HARD_CODED = """from numba import cuda


@cuda.jit
def saxpy(alpha, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 2.0 * x[i] + y[i]
"""


@pytest.fixture(scope="module")
def discovered(tmp_path_factory):
    """(keys without the file, keys with it, the new module's file), read from a temporary problems folder."""
    folder = tmp_path_factory.mktemp("problems")
    for path in FOLDER.glob("*.py"):
        if path.name != NEW:
            shutil.copy(path, folder / path.name)
    patch = pytest.MonkeyPatch()
    patch.setattr(package, "__path__", [str(folder)])
    kept = sys.modules.pop(MODULE, None)
    try:
        problems.cache_clear()
        before = [p.key for p in problems()]
        shutil.copy(FOLDER / NEW, folder / NEW)  # the contributor's one new file
        problems.cache_clear()
        after = [p.key for p in problems()]
        yield before, after, sys.modules[MODULE].__file__, get("saxpy")
    finally:
        patch.undo()
        sys.modules.pop(MODULE, None)
        if kept is not None:
            sys.modules[MODULE] = kept
        problems.cache_clear()


def test_the_one_file_is_the_whole_difference(discovered):
    before, after, found_in, _problem = discovered
    assert "saxpy" not in before and [k for k in after if k != "saxpy"] == before
    assert set(after) - set(before) == {"saxpy"}
    assert Path(found_in).parent != FOLDER  # read from the temporary folder, not the lab's


def test_the_new_problem_is_judged_like_every_other(discovered):
    from gpu.sandbox.harness import judge

    problem = discovered[3]
    assert problem.solution.source
    passed = judge(problem, problem.solution.source, seed=20)
    assert passed.status == "passed", passed.message
    assert len(passed.tests) == len(problem.tests) + 1  # every functional test and the performance size
    assert judge(problem, problem.starter, seed=20).status == "wrong"
    wrong = judge(problem, HARD_CODED, seed=20)
    assert wrong.status == "wrong" and "with alpha = " in wrong.message, wrong.message


def test_its_scalar_is_declared_shown_and_drawn_per_seed():
    problem = get("saxpy")
    (alpha,) = problem.scalars
    assert problem.params[0] == "alpha" and problem.signature == "saxpy(alpha, x, y, out)"
    assert "`alpha` float32 scalar, drawn per test" in problem.arguments
    assert "def saxpy(alpha, x, y, out):" in problem.starter
    draws = [problem.args(np.random.default_rng([seed, 0]), {"n": 4})["alpha"] for seed in (1, 1, 2)]
    assert all(isinstance(a, np.float32) for a in draws)
    assert draws[0] == draws[1] != draws[2]  # reproducible from the seed, different between seeds
    assert problem.summary()["scalars"] == [
        {"name": "alpha", "dtype": "float32", "value": None, "about": "from 0.5 to 4", "drawn_per_test": True}
    ]


def test_the_float64_bound_passes_both_float32_orders_and_fails_three_ulps_off():
    problem = get("saxpy")
    rng = np.random.default_rng(7)
    for _ in range(5):
        args = problem.args(rng, {"n": 200_000})
        alpha, x, y = args["alpha"], args["x"], args["y"]
        expected = problem.tolerance.expected(problem.reference(args, {"n": x.size})["out"], np.float32)
        assert expected.dtype == np.float64
        two_roundings = alpha * x + y  # NumPy in float32: the product rounded, then the sum
        fused = expected.astype(np.float32)  # one rounding of the exact value: what an FMA returns
        assert problem.tolerance.close(two_roundings, expected).all()
        assert problem.tolerance.close(fused, expected).all()
        assert (two_roundings != fused).any()  # the two orders really differ: an exact check would fail one
        off = fused
        for _ulp in range(3):
            off = np.nextafter(off, np.float32(np.inf))
        assert not problem.tolerance.close(off[expected > 0], expected[expected > 0]).any()
        assert not problem.tolerance.close(np.full_like(fused, np.nan), expected).any()  # the sentinel


@pytest.fixture
def solve(tmp_path):
    env = {**os.environ, "KERNEL_LAB_DB": str(tmp_path / "h.sqlite3"), "KERNEL_LAB_LOCK_DIR": str(tmp_path / "locks")}

    def run(source: str, *flags: str) -> subprocess.CompletedProcess:
        path = tmp_path / "kernel.py"
        path.write_text(source)
        return subprocess.run([sys.executable, "-m", "gpu", "solve", "saxpy", str(path), "--json", "--no-save", *flags],
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)

    return run


def test_solve_judges_it_in_the_sandbox_with_facts_and_trace(solve):
    done = solve(get("saxpy").solution.source)
    assert done.returncode == 0, done.stdout + done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["status"] == "passed"
    assert verdict["compile_facts_status"] in ("compiled", "unavailable"), verdict["compile_facts_note"]
    assert isinstance(verdict.get("trace"), dict) and not verdict["trace"].get("races"), verdict.get("trace")
    wrong = solve(HARD_CODED, "--no-facts", "--no-trace")
    assert wrong.returncode == 1 and "alpha = " in json.loads(wrong.stdout)["message"]
