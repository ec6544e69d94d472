"""CONTRIBUTING.md's "A catalog step", done for real: if this fails, the recipe is wrong.

The kernel and the ``Step`` are read from CONTRIBUTING.md's two marked code blocks. The
kernel is written into a temporary folder (no file of the lab is touched) and the step
appended to a copy of the reduction's spec. It then runs the way every step runs: in the
engine (timed, checked against the exact total), in both simulators, in the Kernels page's
list of sources, and through the real compiler for every target with its ``LAUNCHES``
signature. The step passes a scalar (the chunk length), so a wrong scalar must fail.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gpu.catalog.declare import step_sources
from gpu.catalog.steps import Scalar, Step, run_kernel
from gpu.core.backend import BACKEND, cuda
from gpu.core.timing import RepeatPolicy
from gpu.experiments.reduction import experiment as reduction
from gpu.kernels.geometry import blocks_for

ROOT = Path(__file__).resolve().parent.parent
PARAMS = {"n": 2000, "threads_per_block": 64}  # 125 chunks of 16: two blocks


def snippet(marker: str) -> str:
    """The fenced block after ``<!-- contributing:MARKER -->`` in CONTRIBUTING.md."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    found = re.search(rf"<!-- contributing:{marker} -->\n```python\n(.*?)```", text, re.S)
    assert found, f"CONTRIBUTING.md has no block marked contributing:{marker}"
    return found.group(1)


@pytest.fixture(scope="module")
def added(tmp_path_factory):
    """(the kernel module, the new step, the spec with it appended), from CONTRIBUTING.md's blocks."""
    root = tmp_path_factory.mktemp("contributor")
    (root / "toystep_kernels.py").write_text(snippet("step-kernel"))
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("toystep_kernels")
        step = eval(snippet("step"), {"Step": Step, "Scalar": Scalar, "np": np, "k": module, "blocks_for": blocks_for})
        yield module, step, replace(reduction.SPEC, steps=(*reduction.SPEC.steps, step))
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("toystep_kernels", None)


def test_the_step_runs_in_the_engine_timed_and_checked_with_the_others(added):
    _module, step, spec = added
    run = run_kernel(spec, PARAMS, RepeatPolicy.count(1, warmup=0))
    result = run.get(step.key)
    assert result.measured and result.agreement.passed, result.agreement.describe()
    assert result.launch == step.geometry(PARAMS) and result.launch == "2 blocks of 64 threads"
    assert [r.key for r in run.results if r.kind == "step"] == [s.key for s in spec.steps]


def _run(step, params, inputs, convert=lambda kernel: kernel):
    d_out = cuda.to_device(np.zeros(1, np.float32))
    d_in = {name: cuda.to_device(v) for name, v in inputs.items()}
    for kernel, grid, block, args in step.launches(params, d_in, d_out):
        convert(kernel)[grid, block](*args)
    return d_out.copy_to_host()


@pytest.mark.skipif(not BACKEND.lab_simulator, reason="compares the lab's simulator with numba-cuda's")
def test_the_step_agrees_in_both_simulators_and_a_wrong_scalar_fails(added):
    from gpu.sim.reference import as_numba

    _module, step, spec = added
    inputs = spec.make_inputs(PARAMS, 3)
    reference = spec.reference(inputs, PARAMS)
    lab, numba = _run(step, PARAMS, inputs), _run(step, PARAMS, inputs, as_numba)
    assert reference.check("lab", lab).passed and np.array_equal(lab, numba)
    (chunk,) = step.scalars
    short = replace(step, scalars=(replace(chunk, value=lambda p: 15),))  # each thread skips its 16th element
    assert not reference.check("wrong", _run(short, PARAMS, inputs)).passed


def test_the_step_s_source_is_listed_with_what_changed(added):
    _module, step, spec = added
    sources = {s.key: s for s in step_sources(spec)}
    assert "for i in range(start, min(start + chunk, x.size))" in sources[step.key].source
    assert any(tag == "+" for tag, _ in sources[step.key].lines)  # marked against the step before it


def test_the_real_compiler_compiles_it_for_every_target_with_its_launches(added, monkeypatch):
    import os

    from gpu.core.compiler import compile_many, request_for

    module, step, _spec = added
    launch = module.LAUNCHES[step.kernel.py_func.__name__]
    assert "int32" in launch.signatures[0]  # the scalar is declared as what the engine passes: np.int32
    # the compile worker imports the kernel's module by name, as the gate imports gpu/kernels/*
    folder = str(Path(module.__file__).parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")])))
    found = compile_many([request_for(step.kernel, launch.signatures[0], launch.threads_per_block)])
    assert found and all(f.ok and f.registers_per_thread for f in found), [(f.target, f.error) for f in found]


def test_every_file_contributing_points_at_exists():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    named = set(re.findall(r"`((?:tests|gpu|docs)/[\w/]+\.(?:py|md))`", text))
    assert {"tests/test_add_an_experiment.py", "tests/test_add_a_catalog_step.py", "tests/test_add_a_problem.py",
            "gpu/problems/p16_saxpy.py"} <= named
    assert all((ROOT / path).exists() for path in named), sorted(p for p in named if not (ROOT / p).exists())
