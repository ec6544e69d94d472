"""The simulator runs what Numba runs: each class where it once differed from numba-cuda, against Numba's behaviour.

Every expected value below is what numba-cuda documents or its own tests assert (read in
NVIDIA/numba-cuda: numba_cuda/numba/cuda/tests/cudapy/test_warp_ops.py, test_intrinsics.py,
test_sm.py, test_record_dtype.py, test_globals.py, test_closure.py; docs/source/user/...): our
own kernels, written to the same semantics.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpu.core.backend import BACKEND
from gpu.sim import KernelFault
from gpu.sim import cuda as cuda
from tests.test_sim_hostile import kernels_from

pytestmark = pytest.mark.skipif(
    not BACKEND.simulated, reason="the lab's simulator runs only where kernels are simulated"
)

FULL = 0xFFFFFFFF


def kernels(source: str) -> dict:
    return kernels_from("from gpu.sim import cuda\nimport numpy as np\nfrom numba import float32, int32, uint32\n"
                        + source)


# --- an index held in a variable as a tuple; a record field read by name


def test_a_tuple_index_held_in_a_variable():
    k = kernels("""
@cuda.jit
def fill(a):
    gid = cuda.grid(2)
    if gid[0] < a.shape[0] and gid[1] < a.shape[1]:
        a[gid] = gid[0] * 10 + gid[1]
""")["fill"]
    a = np.zeros((4, 6), np.int32)
    k[(1, 2), (4, 3)](a)
    np.testing.assert_array_equal(a, np.add.outer(np.arange(4) * 10, np.arange(6)))


def test_a_record_field_by_name_and_by_attribute():
    k = kernels("""
@cuda.jit
def swap(recs):
    i = cuda.grid(1)
    if i < recs.size:
        x = recs[i]["x"]
        recs[i]["x"] = recs[i].y
        recs[i].y = x
""")["swap"]
    recs = np.zeros(5, dtype=[("x", np.float32), ("y", np.int32)])
    recs["x"], recs["y"] = np.arange(5), np.arange(5) * 2
    k[1, 8](recs)
    np.testing.assert_array_equal(recs["x"], np.arange(5) * 2)
    np.testing.assert_array_equal(recs["y"], np.arange(5))


# --- warps: a block of fewer than 32 threads; activemask in a divergent branch; 64-bit brev


def test_full_mask_collectives_in_a_block_of_ten_threads():
    """numba-cuda's test_match_any_sync: 10 threads, the full mask; lanes that do not exist count as exited."""
    k = kernels("""
@cuda.jit
def votes(x, matched, ballot, all_, summed):
    i = cuda.grid(1)
    matched[i] = cuda.match_any_sync(0xFFFFFFFF, x[i])
    ballot[i] = cuda.ballot_sync(0xFFFFFFFF, x[i] == 1)
    all_[i] = cuda.all_sync(0xFFFFFFFF, x[i] >= 0)
    summed[i] = x[i] + cuda.shfl_xor_sync(0xFFFFFFFF, x[i], 1)
""")["votes"]
    x = (np.arange(10) % 2).astype(np.int32)
    matched, ballot, all_, summed = (np.zeros(10, np.int64) for _ in range(4))
    k[1, 10](x, matched, ballot, all_, summed)
    np.testing.assert_array_equal(matched, np.tile((0b0101010101, 0b1010101010), 5))
    assert (ballot == 0b1010101010).all() and (all_ == 1).all() and (summed == 1).all()


def test_a_shuffle_reading_a_lane_that_does_not_exist_is_still_a_fault():
    k = kernels("""
@cuda.jit
def down(x):
    i = cuda.grid(1)
    x[i] = cuda.shfl_down_sync(0xFFFFFFFF, x[i], 8)
""")["down"]
    with pytest.raises(KernelFault, match="does not exist"):
        k[1, 10](np.zeros(10, np.int32))


def test_a_lane_that_exists_and_skips_the_collective_is_still_a_fault():
    k = kernels("""
@cuda.jit
def skip(x):
    i = cuda.grid(1)
    if i == 3:
        return
    x[i] = cuda.ballot_sync(0xFFFFFFFF, True)
""")["skip"]
    with pytest.raises(KernelFault, match="lane 3"):
        k[1, 10](np.zeros(10, np.int64))


def test_activemask_in_a_divergent_branch_is_the_branchs_lanes():
    """numba-cuda's test_activemask: even lanes see 0x55555555, odd lanes 0xAAAAAAAA."""
    k = kernels("""
@cuda.jit
def use_activemask(x):
    i = cuda.grid(1)
    if (i % 2) == 0:
        x[i] = cuda.activemask()
    else:
        x[i] = cuda.activemask()
""")["use_activemask"]
    out = np.zeros(32, np.uint32)
    k[1, 32](out)
    np.testing.assert_array_equal(out, np.tile((0x55555555, 0xAAAAAAAA), 16))
    out = np.zeros(12, np.uint32)
    k[1, 12](out)  # a partial warp: only lanes that exist
    np.testing.assert_array_equal(out, np.tile((0x555, 0xAAA), 6))


def test_brev_reverses_as_many_bits_as_the_values_type_has():
    """numba-cuda's test_brev_u4 and test_brev_u8."""
    k = kernels("""
@cuda.jit
def rev(out32, out64, c32, c64):
    out32[0] = cuda.brev(c32[0])
    out64[0] = cuda.brev(c64[0])
""")["rev"]
    out32, out64 = np.zeros(1, np.uint32), np.zeros(1, np.uint64)
    k[1, 1](out32, out64, np.array([0x00000001], np.uint32), np.array([0x0000000000000001], np.uint64))
    assert out32[0] == 0x80000000 and out64[0] == 0x8000000000000000
    k[1, 1](out32, out64, np.array([0x000A3F1B], np.uint32), np.array([0x0000A3F1B0000000], np.uint64))
    assert out32[0] == 0xD8FC5000 and out64[0] == 0x0000000D8FC50000


# --- dynamic shared memory; global arrays frozen at compile; closures


def test_dynamic_shared_memory_takes_the_launchs_size_and_every_array_aliases_it():
    """numba-cuda's test_sm.py: cuda.shared.array(0, ...) is the launch's dynamic shared memory, shared by all such."""
    k = kernels("""
@cuda.jit
def reverse(x):
    dyn = cuda.shared.array(0, float32)
    same = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    dyn[t] = x[t]
    cuda.syncthreads()
    x[t] = same[cuda.blockDim.x - 1 - t]
""")["reverse"]
    x = np.arange(16, dtype=np.float32)
    k[1, 16, 0, 16 * 4](x)
    np.testing.assert_array_equal(x, np.arange(16)[::-1])
    with pytest.raises(KernelFault, match="out of bounds"):
        k[1, 16](x)  # no dynamic shared memory asked for at the launch: every index is outside it


def test_a_global_array_is_frozen_at_the_first_launch():
    scope = kernels("""
TABLE = np.arange(4, dtype=np.float32)

@cuda.jit
def look(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = TABLE[i]
""")
    out = np.zeros(4, np.float32)
    scope["look"][1, 4](out)
    scope["TABLE"][:] = 100  # Numba compiled the values in as constants: the next launch still sees them
    scope["look"][1, 4](out)
    np.testing.assert_array_equal(out, np.arange(4))


def test_a_kernel_built_by_a_function_that_takes_cuda_gpu_puzzles_style():
    scope = kernels("""
def map_spoke(cuda):
    def call(out, a) -> None:
        local_i = cuda.threadIdx.x
        out[local_i] = a[local_i] + 10
    return call
""")
    k = cuda.jit(scope["map_spoke"](cuda))
    out, a = np.zeros(4, np.float32), np.arange(4, dtype=np.float32)
    k[1, 4](out, a)
    np.testing.assert_array_equal(out, a + 10)


# --- signature strings: parsed by the lab's own grammar, never evaluated


@pytest.mark.parametrize("signature", [
    "void(float32[:], float32[:])", "void(float32[:, :], int32)", "void(float64[::1], uint8[:, ::1])",
    "(float32[:],)", ["void(float32[:])", "void(float64[:])"], "void()", "f4(f4, i8)",
])
def test_a_signature_string_is_parsed_and_accepted(signature):
    k = cuda.jit(signature)(lambda a: None)
    assert k is not None


@pytest.mark.parametrize("signature, words", [
    ("__import__('os').system('id') or void()", "not a type"),
    ("void(float32[:]", "expected ')'"),
    ("void(float33[:])", "float33"),
    ("void(float32[:]) extra", "after"),
])
def test_a_bad_signature_is_refused_with_what_is_wrong_never_evaluated(signature, words):
    with pytest.raises(TypeError, match=re.escape(words)):
        cuda.jit(signature)


# --- the judge's sentinel is not the simulator's NaN poison


def test_a_missing_first_barrier_is_told_apart_from_a_missing_store():
    """A tree reduction without its first barrier reads the poison and writes NaN: that is not 'never written'."""
    from gpu.problems import get
    from gpu.sandbox.harness import judge

    problem = get("shared")
    missing_barrier = problem.solution.source.replace("    partial[tid] = value\n    cuda.syncthreads()\n",
                                                      "    partial[tid] = value\n")
    assert missing_barrier != problem.solution.source
    verdict = judge(problem, missing_barrier, seed=5)
    assert verdict.status == "wrong" and not verdict.mismatch["never_written"], verdict.message
    assert "wrote NaN" in verdict.message and "no thread had written" in verdict.message
    missing_store = problem.solution.source.replace("        out[cuda.blockIdx.x] = partial[0]\n", "        pass\n")
    verdict = judge(problem, missing_store, seed=5)
    assert verdict.status == "wrong" and verdict.mismatch["never_written"] and "never written" in verdict.message


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.uint8])
def test_the_sentinel_is_never_the_poison(dtype):
    from gpu.sandbox.harness import is_sentinel, sentinel
    from gpu.sim.device import poisoned

    filled = np.full(3, sentinel(dtype), dtype)
    assert is_sentinel(filled).all() and not is_sentinel(poisoned(3, dtype)).any()
    if np.dtype(dtype).kind == "f":
        assert not is_sentinel(np.array([np.nan, 1.0], dtype)).any()


# --- what stays unmodelled is refused at the first launch, in one sentence naming the API


@pytest.mark.parametrize("call, api", [
    ("cuda.atomic.fetch_add(out, 0, 1)", "cuda.atomic.fetch_add"),
    ("cuda.clock64()", "cuda.clock64"),
])
def test_an_unmodelled_api_is_refused_at_the_first_launch_naming_it(call, api):
    k = kernels(f"""
@cuda.jit
def kern(out):
    if cuda.threadIdx.x == 99:  # never true: a run-time check would never see it
        {call}
""")["kern"]
    with pytest.raises(KernelFault) as info:
        k[1, 4](np.zeros(4, np.int32))
    assert info.value.kind == "unsupported" and info.value.line == 8 and api in info.value.sentence


# --- cuda.fp16: IEEE half, each operation rounded to half from float32 arithmetic


def test_fp16_arithmetic_is_ieee_half_rounded_from_float32():
    k = kernels("""
@cuda.jit
def half_ops(a, b, c, out, flags):
    i = cuda.grid(1)
    if i < a.size:
        out[0, i] = cuda.fp16.hadd(a[i], b[i])
        out[1, i] = cuda.fp16.hsub(a[i], b[i])
        out[2, i] = cuda.fp16.hmul(a[i], b[i])
        out[3, i] = cuda.fp16.hdiv(a[i], b[i])
        out[4, i] = cuda.fp16.hfma(a[i], b[i], c[i])
        out[5, i] = cuda.fp16.hneg(cuda.fp16.habs(a[i]))
        out[6, i] = cuda.fp16.hsqrt(cuda.fp16.habs(a[i]))
        out[7, i] = cuda.fp16.hmax(a[i], b[i])
        flags[i] = cuda.fp16.hlt(a[i], b[i])
""")["half_ops"]
    rng = np.random.default_rng(3)
    a, b, c = (rng.normal(0, 100, 256).astype(np.float16) for _ in range(3))
    out, flags = np.zeros((8, 256), np.float16), np.zeros(256, np.bool_)
    k[2, 128](a, b, c, out, flags)
    f32 = np.float32
    expected = [a.astype(f32) + b, a.astype(f32) - b, a.astype(f32) * b, a.astype(f32) / b,
                (a.astype(np.float64) * b + c), -np.abs(a.astype(f32)), np.sqrt(np.abs(a.astype(f32))),
                np.maximum(a.astype(f32), b)]
    for row, want in enumerate(expected):
        np.testing.assert_array_equal(out[row], np.asarray(want).astype(np.float16), err_msg=f"row {row}")
    np.testing.assert_array_equal(flags, a < b)
    from gpu.sim.device import STATE

    assert STATE.fp16.hadd(np.float16(1), np.float16(2 ** -11)) == np.float16(1)  # a tie: to even, as IEEE half
    assert STATE.fp16.hadd(np.float16(1), np.float16(3 * 2 ** -12)) == np.float16(1 + 2 ** -10)


# --- cooperative groups: grid.sync() runs every block of the grid up to it


SEQUENTIAL_ROWS = """
@cuda.jit
def sequential_rows(M):
    col = cuda.grid(1)
    g = cuda.cg.this_grid()
    rows = M.shape[0]
    cols = M.shape[1]
    for row in range(1, rows):
        opposite = cols - col - 1
        M[row, col] = M[row - 1, opposite] + 1
        g.sync()
"""


def test_grid_sync_orders_every_block_numba_cudas_sequential_rows_example():
    """numba-cuda's doc example test_ex_grid_sync, at 64 x 64: each row reads the row above from another block."""
    k = kernels(SEQUENTIAL_ROWS)["sequential_rows"]
    a = np.zeros((64, 64), np.int32)
    k[4, 16](a)
    np.testing.assert_array_equal(a, np.tile(np.arange(64), (64, 1)).T)
    assert k.overloads and next(iter(k.overloads.values())).max_cooperative_grid_blocks(16) >= 4


def test_a_thread_that_returns_before_a_grid_sync_others_wait_at_is_a_fault():
    k = kernels("""
@cuda.jit
def early(out):
    i = cuda.grid(1)
    if i == 37:
        return
    cuda.cg.this_grid().sync()
    out[i] = 1
""")["early"]
    with pytest.raises(KernelFault) as info:
        k[4, 16](np.zeros(64, np.int32))
    assert info.value.kind == "barrier" and "grid" in info.value.sentence and info.value.thread == (5, 0, 0)
