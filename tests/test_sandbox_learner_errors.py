"""A learner's error is the learner's: a clear message naming the line.

"The harness could not finish" (status ``error``, exit 3) is kept for a real fault of the lab.
Each case runs the whole path (the app's precheck, then the child) without bubblewrap, to stay
quick; the sandbox does not change what the checker and the loader say.
"""

from __future__ import annotations

import pytest

from gpu.sandbox import loader
from gpu.sandbox.isolation import Limits, SandboxStatus
from gpu.sandbox.judging import judge_in_child

OFF = SandboxStatus(False, "none", "switched off for this test", False)
LIMITS = Limits(wall_s=60.0, cpu_s=60)
BODY = """
@cuda.jit{deco}
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + b[i]{extra}
"""


def source(header: str = "from numba import cuda\n", deco: str = "", extra: str = "") -> str:
    return header + BODY.format(deco=deco, extra=extra)


def judge(src: str):
    return judge_in_child("vector-add", src, limits=LIMITS, simulated=True, sandbox=OFF)


@pytest.mark.parametrize(
    ("deco", "fragment"),
    [
        ("(lineinfo=True)", "lineinfo= is not available in the lab"),
        ("(max_registers=32)", "max_registers= is not available in the lab"),
        ("(device=1)", "device= must be True or False, not 1"),
        ("('void(float32[:])', 'second')", "takes no positional argument"),
        ("('void(float32[:])')", "takes no positional argument"),
    ],
    ids=["lineinfo", "max_registers", "device=1", "two strings", "signature string"],
)
def test_jit_options_are_refused_by_name_and_line(deco, fragment):
    verdict = judge(source(deco=deco))
    assert verdict.status == "refused" and verdict.exit_code == 2
    assert verdict.refusal["rule"] == "decorator" and verdict.refusal["line"] == 3  # the decorator's line
    assert fragment in verdict.message and "line 3" in verdict.message


def test_an_overflow_caught_by_the_checker_names_its_line():
    verdict = judge(source("from numba import cuda, int8\nX = int8(1000)\n"))
    assert verdict.status == "refused" and verdict.refusal == {
        "rule": "constant", "line": 2, "message": "int8(1000) overflows: int8 holds -128 to 127"}


def test_an_overflow_in_the_learners_module_code_is_the_learners_with_its_line():
    # the checker folds 100 + 1000 = 1100 (a fine constant); NumPy raises OverflowError when the module runs
    verdict = judge(source("from numba import cuda, int8\n\nX = int8(100) + 1000\n"))
    assert verdict.status == "refused", verdict.message
    assert verdict.refusal["rule"] == "module" and verdict.refusal["line"] == 3, verdict.refusal
    assert "OverflowError" in verdict.message and "int8" in verdict.message
    assert "harness" not in verdict.message and "not allowed" not in verdict.message


def test_an_overflow_inside_a_kernel_fails_the_test_with_its_line():
    verdict = judge(source("from numba import cuda, int8\n", extra="\n    x = int8(i) + 1000"))
    assert verdict.status == "wrong", verdict.message
    assert "OverflowError" in verdict.message and "line 8" in verdict.message
    assert verdict.mismatch["line"] == 8  # the editor marks it
    assert "not allowed" not in verdict.message  # NumPy's own lazy import is not blamed on the learner


def test_a_division_by_zero_passes_as_numba_compiles_it_with_a_note_naming_the_line():
    verdict = judge(source(extra="\n        out[i] += 0 * (7 // (i - i))"))
    assert verdict.status == "passed", verdict.message
    assert verdict.notes == ["line 8: // by zero gave 0, an integer's result as Numba compiles it (NumPy's error "
                             "model: no error is raised); in CUDA C an integer division by zero is undefined"]


def test_numpys_own_imports_are_allowed_the_submissions_are_not():
    # an import made by NumPy's C code while the submission's frame is the current one
    scope = loader.namespace()
    exec(compile("from numba import int8\ndef f():\n    return int8(100) + 1000\n", "submission.py", "exec"), scope)
    with pytest.raises(OverflowError):
        scope["f"]()
    # the submission's own import statements stay restricted, whatever the frame calls them
    with pytest.raises(ImportError, match="not allowed in a submission"):
        exec(compile("import os\n", "submission.py", "exec"), loader.namespace())
    with pytest.raises(ImportError, match="not allowed in a submission"):
        exec(compile("from numba import cuda\nimport subprocess\n", "submission.py", "exec"), loader.namespace())
    # a direct call of the restricted __import__ (were the checker bypassed) gets nothing outside numpy and numba
    scope = loader.namespace()
    with pytest.raises(ImportError, match="not allowed in a submission"):
        exec(compile("x = __import__('os')\n", "submission.py", "exec"), scope)


def test_a_module_error_is_refused_with_the_line_by_the_loader():
    with pytest.raises(loader.Refusal) as info:
        loader.load_module("from numba import cuda, int8\nX = int8(100) + 1000\n" + BODY.format(deco="", extra=""),
                           "vector_add", 3)
    assert info.value.rule == "module" and info.value.line == 2


def test_a_fault_of_the_lab_is_still_an_error_with_exit_3(monkeypatch):
    from gpu.sandbox import harness
    from gpu.sandbox.verdict import Verdict

    def broken(*args, **kwargs):
        raise KeyError("the lab's own bug")

    monkeypatch.setattr(harness, "run_case", broken)
    verdict = harness.judge(__import__("gpu.problems", fromlist=["get"]).get("vector-add"), source(), 1)
    assert verdict.status == "error" and "harness could not finish" in verdict.message
    assert verdict.exit_code == 3 and Verdict.start("x", "y").failed("z").exit_code == 3
