"""The problem set: every declaration is complete, and every reference solution passes every test.

The solutions run in this process in the simulator (the same run_case the sandboxed child
uses), so the whole set stays fast; the child path itself is tested in test_solve_cli.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu.problems import get, problems
from gpu.problems.base import Problem
from gpu.sandbox.checker import check_source
from gpu.sandbox.harness import fresh_outputs, run_case, sentinel
from gpu.sandbox.loader import solution_kernel

TOPICS = ("vector-add", "map", "guard", "map-2d", "broadcast", "blocks", "shared", "pooling", "dot", "conv1d",
          "prefix-sum", "axis-sum", "transpose", "histogram", "matmul")
PAGES = {"Vector add", "Scaling", "Launch config", "Transfers", "Kernels", "Roofline"}


def test_the_issue_s_topics_in_teaching_order():
    keys = [p.key for p in problems()]
    assert len(set(keys)) == len(keys)
    # the issue's topics are all there, in this order; problems added later may sit anywhere in the order
    assert [k for k in keys if k in TOPICS] == list(TOPICS)
    assert [p.order for p in problems()] == sorted(p.order for p in problems())


@pytest.mark.parametrize("problem", problems(), ids=lambda p: p.key)
def test_declaration_is_complete(problem: Problem):
    assert problem.statement and problem.hint and problem.page in PAGES
    assert problem.tolerance.describe()
    assert set(problem.perf) == {"simulator", "gpu"}
    sizes = problem.perf["gpu"].sizes
    assert problem.bytes_moved(sizes) > 0 and problem.flops(sizes) >= 0
    # the starter passes the checker (it is a skeleton, not a refusal)
    check_source(problem.starter, problem.kernel_name, len(problem.params))
    if problem.solution.source:
        check_source(problem.solution.source, problem.kernel_name, len(problem.params))
    # inputs are reproducible from the seed and differ between seeds
    rng = lambda seed: np.random.default_rng([seed, 0])  # noqa: E731
    one, again, other = (problem.inputs(rng(s), problem.tests[-1].sizes) for s in (1, 1, 2))
    for name in one:
        assert np.array_equal(one[name], again[name]) and one[name].dtype == again[name].dtype
    assert any(not np.array_equal(one[n], other[n]) for n in one)


def test_functional_sizes_include_the_edges():
    sizes = {v for c in get("vector-add").tests for v in c.sizes.values()}
    assert {1, 255, 257} <= sizes and any(n % 256 for n in sizes if n > 512)
    two_d = [c.sizes for c in get("map-2d").tests]
    assert {"rows": 1, "cols": 1} in two_d and any(s["rows"] % 16 and s["cols"] % 16 for s in two_d)


@pytest.mark.parametrize("problem", problems(), ids=lambda p: p.key)
def test_reference_solution_passes_every_test(problem: Problem):
    kernel = solution_kernel(problem.solution, problem.kernel_name)
    launch = problem.solution.launch or (lambda s: problem.launch(s, problem.threads))
    for index, case in enumerate((*problem.tests, problem.perf["simulator"])):
        line, miss = run_case(problem, kernel, case, index, seed=20, launch=launch)
        assert line["passed"], f"{problem.key} / {case.name}: {line['message']}"
        assert miss is None


def test_sentinel_marks_unwritten_outputs():
    problem = get("guard")
    out = fresh_outputs(problem, {"n": 3})["out"]
    assert np.isnan(out).all()
    assert sentinel(np.int32) == np.iinfo(np.int32).min and sentinel(np.uint32) == np.iinfo(np.uint32).max
    assert (fresh_outputs(get("histogram"), {"n": 3})["hist"] == 0).all()  # accumulated outputs start at zero


def test_a_kernel_that_skips_elements_is_reported_with_its_thread():
    problem = get("vector-add")
    from gpu.sandbox.loader import load_kernel

    kernel = load_kernel("from numba import cuda\n\n@cuda.jit\ndef vector_add(a, b, out):\n    i = cuda.grid(1)\n"
                         "    if i < a.size and i != 300:\n        out[i] = a[i] + b[i]\n", "vector_add")
    line, miss = run_case(problem, kernel, problem.tests[3], 3, seed=1, launch=lambda s: problem.launch(s, 256))
    assert not line["passed"] and miss["index"] == [300] and miss["never_written"]
    assert miss["thread"] == "block 1, thread 44"
    assert "never written" in line["message"]


def test_a_kernel_that_writes_its_input_fails():
    problem = get("guard")
    from gpu.sandbox.loader import load_kernel

    kernel = load_kernel("from numba import cuda\n\n@cuda.jit\ndef square(a, out):\n    i = cuda.grid(1)\n"
                         "    if i < a.size:\n        out[i] = a[i] * a[i]\n        a[i] = 0\n", "square")
    line, miss = run_case(problem, kernel, problem.tests[1], 1, seed=1, launch=lambda s: problem.launch(s, 256))
    assert not line["passed"] and "changed its input 'a'" in line["message"]


