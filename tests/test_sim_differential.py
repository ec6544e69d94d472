"""Differential: every catalog kernel step and every problem's reference solution, in the lab's simulator,
in numba-cuda's simulator (where it can run them: it has no warp shuffles) and against NumPy.

Outputs are bit-identical between the simulators wherever the result does not depend on
the order of atomics (every case here but float sums through atomics, which are checked
against the kernel's own float32 bound instead, as the Kernels page checks them).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu.catalog.declare import kernel_keys, kernel_module
from gpu.catalog.registry import get
from gpu.core.agreement import ExactReference
from gpu.core.backend import BACKEND
from gpu.sandbox.loader import solution_kernel

pytestmark = pytest.mark.skipif(not BACKEND.lab_simulator, reason="compares the lab's simulator with numba-cuda's")

SMALL = {
    "reduction": {"n": 700},
    "histogram": {"n": 600},
    "transpose": {"n": 40},
    "stencil": {"n": 20},
    "matmul": {"n": 20},
}


def _cases():
    for key in kernel_keys():
        spec = kernel_module(key).SPEC
        for step in spec.steps:
            yield pytest.param(key, step.key, id=f"{key}-{step.key}")


def _run(spec, step, params, inputs, convert=lambda kernel: kernel):
    """Every pass of ``step`` (its scalars and scratch arrays as the engine passes them), each kernel
    through ``convert`` (the lab's own, or rebuilt for numba-cuda's simulator)."""
    from gpu.core.backend import cuda

    out = np.zeros(spec.output.shape(params), spec.output.dtype)
    if not spec.output.zeroed and out.dtype.kind == "f":
        out.fill(np.nan)  # a cell nobody writes shows
    d_out = cuda.to_device(out)
    d_in = {name: cuda.to_device(v) for name, v in inputs.items()}
    for kernel, grid, block, args in step.launches(params, d_in, d_out):
        convert(kernel)[grid, block](*args)
    return d_out.copy_to_host()


@pytest.mark.parametrize("key, step_key", list(_cases()))
def test_catalog_step_in_both_simulators(key, step_key):
    from gpu.sim.reference import as_numba

    spec = kernel_module(key).SPEC
    step = next(s for s in spec.steps if s.key == step_key)
    params = {**get(key).defaults(True), **SMALL.get(key, {})}
    inputs = spec.make_inputs(params, 3)
    reference = spec.reference(inputs, params)
    depth = step.depth(params) if step.depth else None
    lab = _run(spec, step, params, inputs)
    assert reference.check("lab", lab, depth).passed
    if step.needs:  # numba-cuda's simulator cannot run it; the lab's result stands alone against NumPy
        return
    numba = _run(spec, step, params, inputs, as_numba)
    assert reference.check("numba", numba, depth).passed
    if isinstance(reference, ExactReference):
        assert np.array_equal(lab, numba, equal_nan=True)


def _problems():
    from gpu.problems import problems

    return [pytest.param(p.key, id=p.key) for p in problems()]


@pytest.mark.parametrize("key", _problems())
def test_problem_reference_in_both_simulators(key):
    from gpu.problems import get as get_problem
    from gpu.sandbox.harness import case_inputs, device_args, fresh_outputs
    from gpu.sim.reference import as_numba

    problem = get_problem(key)
    kernel = solution_kernel(problem.solution, problem.kernel_name)
    case = min(problem.tests, key=lambda c: sum(c.sizes.values()) if sum(c.sizes.values()) >= 30 else 10**9)
    results = []
    for k in (kernel, as_numba(kernel)):
        inputs = case_inputs(problem, 11, 0, case.sizes)
        outputs = fresh_outputs(problem, case.sizes)
        launch = problem.solution.launch or (lambda s: problem.launch(s, problem.threads))
        grid, block = launch(case.sizes)
        args = device_args(problem, inputs, outputs)
        k[grid, block](*args)
        results.append({p: a.copy_to_host() for p, a in zip(problem.params, args) if p in outputs})
    expected = problem.reference(case_inputs(problem, 11, 0, case.sizes), case.sizes)
    for name, want in expected.items():
        lab, numba = results[0][name], results[1][name]
        assert problem.tolerance.close(lab, problem.tolerance.expected(want, lab.dtype)).all(), name
        assert np.array_equal(lab, numba, equal_nan=True), name
