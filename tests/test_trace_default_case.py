"""The test a learner's kernel is traced at by default: the smallest where every loop runs twice and every block
shape (full, partial) appears, so a barrier missing between two iterations, or a guard missing at an edge, shows."""

from __future__ import annotations

import pytest

from gpu.core.backend import BACKEND

pytestmark = pytest.mark.skipif(
    not BACKEND.simulated, reason="the lab's simulator runs only where kernels are simulated"
)

TILED = """from numba import cuda, float32

TILE = 16


@cuda.jit
def matmul(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col, row = cuda.grid(2)
    n = c.shape[0]
    acc = float32(0.0)
    for t in range((n + TILE - 1) // TILE):
        k = t * TILE
        sa[ty, tx] = a[row, k + tx] if row < n and k + tx < n else float32(0.0)
        sb[ty, tx] = b[k + ty, col] if col < n and k + ty < n else float32(0.0)
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < n and col < n:
        c[row, col] = acc
"""


def traced(problem_key: str, source: str) -> dict:
    from gpu.problems import get
    from gpu.sandbox.trace_child import trace_source

    return trace_source(get(problem_key), source, seed=5)


def test_a_tiled_matmul_missing_its_second_barrier_races_in_the_default_trace():
    clean = traced("matmul", TILED)
    assert "33 × 33" in clean["label"] and not clean["races"], clean["label"]
    racy = traced("matmul", TILED.replace("            acc += sa[ty, j] * sb[j, tx]\n        cuda.syncthreads()\n",
                                          "            acc += sa[ty, j] * sb[j, tx]\n"))
    assert racy["races"], racy["label"]


def test_a_one_dimensional_kernel_is_traced_where_a_full_and_a_partial_block_appear():
    source = ("from numba import cuda\n\n\n@cuda.jit\ndef vector_add(a, b, out):\n    i = cuda.grid(1)\n"
              "    if i < out.size:\n        out[i] = a[i] + b[i]\n")
    report = traced("vector-add", source)
    assert "a block and one more" in report["label"], report["label"]


# A never-ending loop of loops: the work limit stops a launch after 2,097,152 turns, which the coverage's line tracer
# (a Python callback per line) would take half a minute to watch, in every test of the problem.
NESTED = ("from numba import cuda\n\n\n@cuda.jit\ndef vector_add(a, b, out):\n    i = cuda.grid(1)\n"
          "    while i >= 0:\n        for j in range(60000):\n            i += 1\n")


def test_a_loop_of_long_loops_is_watched_up_to_the_line_limit_at_its_smallest_test_only(monkeypatch):
    from gpu.problems import get
    from gpu.sandbox import trace_child
    from gpu.sandbox.loader import load_module
    from gpu.sim import coverage as sim_coverage

    seen, measure = [], sim_coverage.coverage

    def counted(*args, **kwargs):
        seen.append(measure(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(sim_coverage, "coverage", counted)
    problem = get("vector-add")
    kernel = load_module(NESTED, problem.kernel_name, len(problem.params))[problem.kernel_name]
    case = trace_child.default_case(problem, kernel, 256, seed=5)
    assert len(seen) == 1 and case.name == "one element"  # the larger tests would be cut as late
    assert seen[0].cut and not seen[0].faulted and seen[0].lines == sim_coverage.MAX_LINES
    assert max(seen[0].loops.values()) >= 2  # what ran until the cut is reported: the inner loop, many times
    report = traced("vector-add", NESTED)  # the trace itself: the launch stops at the work limit
    assert "work limit" in report["error"], report


def test_the_labs_own_solutions_are_watched_whole_but_the_register_tiled_matmul():
    """Every problem's solution at every test stays within the coverage's line limit (the most: axis sum, 64,200 line
    events of 524,288), but for the register-tiled matmul, whose 128 x 128 tiles on a 15 x 15 or 33 x 33 matrix are
    mostly padding (2,027,073 line events at 33 x 33): cut there, with what ran until then (its first loops, many
    times; its last, not yet)."""
    import warnings

    import numpy as np

    from gpu.problems import problems
    from gpu.sandbox.harness import fresh_outputs
    from gpu.sandbox.loader import solution_kernel
    from gpu.sim.coverage import coverage

    cut = []
    for problem in problems():
        kernel = solution_kernel(problem.solution, problem.kernel_name)
        launch = problem.solution.launch or (lambda sizes, p=problem: p.launch(sizes, p.threads))
        for case in problem.tests:
            inputs = problem.args(np.random.default_rng(5), case.sizes)
            outputs = fresh_outputs(problem, case.sizes)
            grid, block = launch(case.sizes)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                seen = coverage(kernel, grid, block, [inputs[p] if p in inputs else outputs[p] for p in problem.params])
            assert not seen.faulted, (problem.key, case.name)
            if seen.cut:
                assert max(seen.loops.values()) >= 2, (problem.key, case.name, seen.loops)
                cut.append((problem.key, case.name))
    assert cut == [("matmul", "15 × 15 (less than a block)"), ("matmul", "33 × 33 (edges)")]
