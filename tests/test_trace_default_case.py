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
