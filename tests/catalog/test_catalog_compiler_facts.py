"""The catalog steps improved from the compiler's report: their fast paths give
the same bits in the simulator, and the figures their "what changed and why" cites are the
compiler's own (ptxas, recompiled here; no GPU needed).

The sizes are the smallest where a fast path runs: a full transpose tile needs N ≥ 32 with
an edge beside it, an inner 16 × 16 stencil block N ≥ 34, an inner 32 × 32 tile N ≥ 65, and
three k-tiles of the double-buffered matmul N ≥ 17.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import replace

import pytest

from gpu.catalog.steps import run_kernel
from gpu.core.timing import RepeatPolicy
from gpu.experiments.matmul import experiment as matmul
from gpu.experiments.matmul import kernels as matmul_kernels
from gpu.experiments.reduction import kernels as reduction_kernels
from gpu.experiments.stencil import experiment as stencil
from gpu.experiments.stencil import kernels as stencil_kernels
from gpu.experiments.transpose import experiment as transpose
from gpu.experiments.transpose import kernels as transpose_kernels

ONE = RepeatPolicy.count(1, warmup=0)


@pytest.mark.parametrize("module,step,n", [
    (transpose, "tiled", 40),  # one full tile, three edge tiles
    (transpose, "padded", 40),
    (stencil, "tiled", 34),  # block (1, 1) and its halo lie inside the grid
    (stencil, "rows", 65),  # tile (1, 1) and its halo lie inside the grid
    (matmul, "register", 20),  # three k-tiles: both buffers used, the first one twice
])
def test_fast_paths_agree_with_the_reference(module, step, n):
    spec = replace(module.SPEC, steps=tuple(s for s in module.SPEC.steps if s.key == step), libraries=())
    run = run_kernel(spec, {"n": n}, ONE)
    agreement = run.get(step).agreement
    assert agreement.passed, agreement.describe()


# --- the figures each step cites ---------------------------------------------------------

CITED = (
    transpose_kernels.transpose_tiled_kernel,
    transpose_kernels.transpose_padded_kernel,
    stencil_kernels.blur_tiled_kernel,
    stencil_kernels.blur_rows_kernel,
    matmul_kernels.matmul_register_kernel,
    transpose_kernels.transpose_big_tile_kernel,
    reduction_kernels.reduce_unrolled_kernel,
)
FACTS = re.compile(
    r"ptxas, CUDA (?P<cuda>\d+\.\d+), (?P<target>sm_\d+)\): (?P<regs>\d+) registers, no spills, (?P<smem>[\d,]+)\s+"
    r"bytes of shared memory.*?(?P<blocks>\d+) blocks? of (?P<threads>\d+) threads per SM",
    re.S,
)


def cited(kernel) -> dict:
    match = FACTS.search(inspect.getdoc(kernel.py_func))
    assert match, f"{kernel.py_func.__name__}: its docstring cites no ptxas figures in the usual form"
    return match.groupdict()


def test_every_improved_step_cites_the_compiler():
    for kernel in CITED:
        assert cited(kernel)["target"] == "sm_90"


def test_the_cited_registers_shared_memory_and_blocks_per_sm_are_what_ptxas_reports():
    compiler = pytest.importorskip("gpu.core.compiler")
    tools = compiler.toolkit()
    if tools.problem:
        pytest.skip(tools.problem)
    # each kernel's figures are checked with the toolkit they were read from; the others wait for theirs
    checked = [(kernel, cited(kernel)) for kernel in CITED if cited(kernel)["cuda"] == tools.version]
    if not checked:
        pytest.skip(f"no figures here were measured with this toolkit, CUDA {tools.version}")
    requests = [compiler.request_for(kernel, *_launch(kernel)) for kernel, _ in checked]
    for (kernel, claim), facts in zip(checked, compiler.compile_many(requests, ["sm_90"])):
        name = kernel.py_func.__name__
        assert facts.ok, f"{name}: {facts.error}"
        assert facts.spill_stores_bytes == 0 and facts.spill_loads_bytes == 0, name
        assert facts.registers_per_thread == int(claim["regs"]), name
        assert facts.shared_memory_bytes == int(claim["smem"].replace(",", "")), name
        assert facts.occupancy.threads_per_block == int(claim["threads"]), name
        assert facts.occupancy.blocks_per_sm == int(claim["blocks"]), name


def _launch(kernel) -> tuple[str, int]:
    module = inspect.getmodule(kernel.py_func)
    launch = module.LAUNCHES[kernel.py_func.__name__]
    return launch.signatures[0], launch.threads_per_block
