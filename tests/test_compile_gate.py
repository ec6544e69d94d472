"""The compile gate: every kernel in gpu/, with every signature the experiments launch it
with, compiled by the real CUDA compiler (NVVM + ptxas) for every target, without a GPU.

The simulator runs code no GPU compiles; this is what catches it. Kernels are found by
walking gpu/ (gpu/catalog/kernel_index.py), so a new kernel module is covered with no edit
here; its module must declare LAUNCHES (gpu/core/launch_spec.py).
"""

from __future__ import annotations

import time

import pytest

from gpu.catalog.kernel_index import find_kernels, stale_declarations
from gpu.core.arch import TARGETS
from gpu.core.compiler import available_targets, compile_many, compile_source_facts, toolkit

# every kernel through the real compiler, in worker processes, for every target: about a minute here
pytestmark = pytest.mark.slow

# The targets the issue names; newer ones join when the installed ptxas knows them.
REQUIRED_TARGETS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
# (kernel, target) pairs that CUDA 12's compiler is known not to compile, and why. Only for
# CUDA 12 (the wheels a pre-580 driver needs), and strict there: when one starts compiling (a
# newer numba-cuda), the gate fails so the entry is removed. CUDA 13's NVVM, which `make run`
# and `make test` install wherever no driver constrains the choice, compiles every kernel for
# every target, so with it there is no allowance: `python -m gpu compile` exits 0.
FLOAT_ATOMIC_ON_BLACKWELL = (
    "numba-cuda 0.30 lowers a float32 cuda.atomic.add to the intrinsic llvm.nvvm.atomic.load.add.f32, "
    "which NVVM (CUDA 12.9) rejects for sm_100 and newer: ERROR_INVALID_IR"
)
KNOWN_CUDA_12_FAILURES = {
    (kernel, target): FLOAT_ATOMIC_ON_BLACKWELL
    for kernel in ("reduce_atomic_kernel", "reduce_tree_kernel", "reduce_shuffle_kernel", "reduce_grid_stride_kernel")
    for target in ("sm_100", "sm_120")
}


def known_failures() -> dict:
    return KNOWN_CUDA_12_FAILURES if toolkit().version_tuple[0] == 12 else {}


@pytest.fixture(scope="module")
def gate():
    """Every kernel x signature x target, compiled once. The cache is the test session's
    (tests/conftest.py), so a verdict reused here was compiled in this session from the
    same source by the same toolkit."""
    requests = [r for k in find_kernels() for r in k.requests()]
    started = time.perf_counter()
    facts = compile_many(requests, available_targets())
    elapsed = time.perf_counter() - started
    reused = sum(f.cached for f in facts)
    print(f"\ncompile gate: {len(requests)} kernel signatures x {len(available_targets())} targets in {elapsed:.1f} s"
          f" ({reused} of {len(facts)} reused from this session's cache)")
    return facts


def test_the_toolkit_wheels_are_installed():
    assert toolkit().problem is None, toolkit().problem


def test_every_kernel_found_declares_how_it_is_launched():
    kernels = find_kernels()
    undeclared = [k.qualified for k in kernels if k.launch is None]
    assert not undeclared, f"kernels without a LAUNCHES entry (gpu/core/launch_spec.py says how): {undeclared}"
    assert not stale_declarations(), f"LAUNCHES entries that name no kernel: {stale_declarations()}"


def test_the_search_finds_kernels_the_simulator_never_launches():
    names = {k.name for k in find_kernels()}
    # the five the issue found uncompiled, and one per kernel module
    for name in (
        "reduce_shuffle_kernel",
        "reduce_grid_stride_kernel",
        "vector_add_ilp_kernel",
        "copy_kernel",
        "hold_stream",
        "transpose_padded_kernel",
        "matmul_register_kernel",
        "histogram_shared_kernel",
        "blur_tiled_kernel",
        "empty_kernel",
    ):
        assert name in names, f"{name} not found by gpu/catalog/kernel_index.py"


def test_the_required_targets_are_available():
    have = [t.name for t in available_targets()]
    assert all(t in have for t in REQUIRED_TARGETS), f"ptxas {toolkit().version} offers {have}"


@pytest.mark.parametrize("target", list(TARGETS))
def test_every_kernel_compiles_for(target, gate):
    if target not in [t.name for t in available_targets()]:
        pytest.skip(f"ptxas {toolkit().version} does not know {target}")
    failures, unexpected_passes = [], []
    for f in (f for f in gate if f.target == target):
        assert not f.unavailable, f"the compiler could not run for {f.kernel}: {f.error}"
        known = known_failures().get((f.kernel, target))
        if known and f.ok:
            unexpected_passes.append(
                f"{f.kernel} {f.signature}: compiles now; remove it from KNOWN_CUDA_12_FAILURES ({known})"
            )
        elif not f.ok and not known:
            failures.append(f"{f.kernel} {f.signature} for {target}:\n    {f.error}")
        elif f.ok:
            assert f.registers_per_thread and f.ptx and f".target {target}" in f.ptx, (
                f"{f.kernel}: no facts from ptxas for {target}"
            )
    assert not failures, f"{len(failures)} kernel(s) do not compile for {target}:\n" + "\n".join(failures)
    assert not unexpected_passes, "\n".join(unexpected_passes)


COMPUTED_SHAPE = '''
from numba import cuda, float32
TILE = 32
PADDED = TILE + 1

@cuda.jit
def padded_copy(a, out):
    tile = cuda.shared.array({shape}, float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tile[ty, tx] = a[ty, tx]
    cuda.syncthreads()
    out[tx, ty] = tile[ty, tx]
'''


def test_the_gate_rejects_a_shared_array_shape_computed_in_the_kernel():
    sig = "void(float32[:, ::1], float32[:, ::1])"
    computed = compile_source_facts(COMPUTED_SHAPE.format(shape="(TILE, TILE + 1)"), "padded_copy", sig, "sm_90", 1024)
    assert not computed.ok
    assert "shared.array" in computed.error and "int64" in computed.error, computed.error
    # the same kernel with the shape as a module constant compiles: the shape was the fault
    constant = compile_source_facts(COMPUTED_SHAPE.format(shape="(TILE, PADDED)"), "padded_copy", sig, "sm_90", 1024)
    assert constant.ok, constant.error
    assert constant.shared_memory_bytes == 32 * 33 * 4
