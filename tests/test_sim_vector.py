"""The vectorised tier against the per-thread tier: bit-identical outputs, identical faults, and the fallbacks.

Every lab kernel (the catalog's steps, which run gpu/kernels and gpu/experiments/*/kernels.py) and
every problem's reference solution runs in both tiers at every test size; outputs must have the
same bits. Hostile kernels — a race the statement-at-a-time order would hide, a missing barrier,
float atomics in a loop, out-of-bounds and negative indices, a divergent barrier — must give the
per-thread tier's result or its fault, word for word, with the memory as the per-thread tier left it.
"""

from __future__ import annotations

import ast
import itertools
import operator

import numpy as np
import pytest
from numpy import float32

from gpu.core.backend import BACKEND
from gpu.sim import cuda, jit, vector
from gpu.sim.errors import KernelFault
from gpu.sim.vector_ops import Bail, Weak, binary

pytestmark = pytest.mark.skipif(not BACKEND.lab_simulator, reason="the lab's simulator's tiers")

SMALL = {"reduction": {"n": 700}, "histogram": {"n": 600}, "transpose": {"n": 40}, "stencil": {"n": 20},
         "matmul": {"n": 20}}


@pytest.fixture
def tiers():
    """Run ``fn`` once per tier; yield (per-thread result, vectorised result, the tiers that ran)."""

    def both(fn):
        out = {}
        ran = []
        for mode in ("thread", "auto"):
            vector.set_tier(mode)
            out[mode] = fn()
            ran.append(vector.last_tier())
        return out["thread"], out["auto"], ran[1]

    yield both
    vector.set_tier("auto")


def _catalog_cases():
    from gpu.catalog.declare import kernel_keys, kernel_module

    for key in kernel_keys():
        for step in kernel_module(key).SPEC.steps:
            yield pytest.param(key, step.key, id=f"{key}-{step.key}")


# Steps the vectorised tier does not take (none today: the warp-shuffle reductions are in its subset too).
PER_THREAD_STEPS: set[tuple[str, str]] = set()


@pytest.mark.parametrize("key, step_key", list(_catalog_cases()))
def test_catalog_step_is_bit_identical_in_both_tiers(tiers, key, step_key):
    from gpu.catalog.declare import kernel_module
    from gpu.catalog.registry import get
    from gpu.core.backend import cuda

    spec = kernel_module(key).SPEC
    step = next(s for s in spec.steps if s.key == step_key)
    params = {**get(key).defaults(True), **SMALL.get(key, {})}
    inputs = spec.make_inputs(params, 3)

    def run():
        out = np.zeros(spec.output.shape(params), spec.output.dtype)
        if not spec.output.zeroed and out.dtype.kind == "f":
            out.fill(np.nan)
        d_out = cuda.to_device(out)
        d_in = {name: cuda.to_device(v) for name, v in inputs.items()}
        names = []
        for kernel, grid, block, args in step.launches(params, d_in, d_out):
            kernel[grid, block](*args)
            names.append(vector.last_tier().name)
        return d_out.copy_to_host(), names

    (thread, _), (vec, names), _ = tiers(run)
    assert np.array_equal(thread, vec, equal_nan=True)
    expected = "thread" if (key, step_key) in PER_THREAD_STEPS else "vector"
    assert set(names) == {expected}, names


def _problem_cases():
    from gpu.problems import problems

    for p in problems():
        for case in p.tests:
            yield pytest.param(p.key, case.sizes, id=f"{p.key}-{'-'.join(map(str, case.sizes.values()))}")


@pytest.mark.parametrize("key, sizes", list(_problem_cases()))
def test_problem_reference_is_bit_identical_in_both_tiers(tiers, key, sizes):
    from gpu.problems import get as get_problem
    from gpu.sandbox.harness import case_inputs, device_args, fresh_outputs
    from gpu.sandbox.loader import solution_kernel

    problem = get_problem(key)
    kernel = solution_kernel(problem.solution, problem.kernel_name)

    def run():
        inputs = case_inputs(problem, 11, 0, sizes)
        outputs = fresh_outputs(problem, sizes)
        launch = problem.solution.launch or (lambda s: problem.launch(s, problem.threads))
        grid, block = launch(sizes)
        args = device_args(problem, inputs, outputs)
        kernel[grid, block](*args)
        return {p: a.copy_to_host() for p, a in zip(problem.params, args) if p in outputs}

    thread, vec, ran = tiers(run)
    for name in thread:
        assert np.array_equal(thread[name], vec[name], equal_nan=True), name
    assert ran.name == "vector", ran


# --- hostile kernels: the vectorised tier must not change what they do


@jit
def chain_kernel(a):
    """Each thread adds its left neighbour: per thread (thread 0 first) that is a running sum, a race on a GPU."""
    i = cuda.grid(1)
    if 0 < i < a.size:
        a[i] = a[i - 1] + a[i]


@jit
def missing_barrier_kernel(x, out):
    partial = cuda.shared.array(64, float32)
    tid = cuda.threadIdx.x
    partial[tid] = x[cuda.grid(1)]
    stride = cuda.blockDim.x // 2
    while stride > 0:  # no syncthreads before the first level: a thread reads a slot not yet written
        if tid < stride:
            partial[tid] += partial[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = partial[0]


@jit
def atomics_in_a_loop_kernel(x, total):
    i = cuda.grid(1)
    for k in range(3):
        cuda.atomic.add(total, 0, x[i] * float32(k + 1))


@jit
def out_of_bounds_kernel(a, out):
    i = cuda.grid(1)
    out[i] = a[i] + float32(1.0)  # no guard: the last block runs past the end


@jit
def negative_index_kernel(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i - 703]  # below -size for the first threads: out of bounds (in [-size, 0) Numba wraps)


@jit
def divergent_barrier_kernel(out):
    tid = cuda.threadIdx.x
    if tid < 16:
        cuda.syncthreads()
    out[tid] = tid


@jit
def mixed_types_kernel(a, ints, out, out_ints):
    i = cuda.grid(1)
    if i < a.size:
        scale = 0.5
        value = a[i] * i + scale  # float32 with a Python int and a Python float: float32, as a thread
        if i % 3 == 0:
            value = value / (i + 1)
        elif i % 3 == 1:
            value = -value
        out[i] = value
        out_ints[i] = ints[i] * 1_000_003 + i  # int32 wraps
        k = i
        while k > 4:
            k = k // 2
        out[i] += float32(k) + (1.0 if i > 10 else 2.5)


@jit
def every_shuffle_kernel(x, out):
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % 32
    v = x[i]
    down = cuda.shfl_down_sync(0xFFFFFFFF, v, 3)
    up = cuda.shfl_up_sync(0xFFFFFFFF, v * float32(2.0), 5, 16)
    xor = cuda.shfl_xor_sync(0xFFFFFFFF, lane, 6, 8)
    same = cuda.shfl_sync(0xFFFFFFFF, v, lane + 7)
    cuda.syncwarp()
    out[i] = down + up + same + float32(xor)


@jit
def divergent_shuffle_kernel(x, out):
    i = cuda.grid(1)
    v = x[i]
    if cuda.threadIdx.x % 32 < 16:  # half a warp at a full-mask shuffle: a fault
        v = cuda.shfl_down_sync(0xFFFFFFFF, v, 1)
    out[i] = v


@jit
def jumps_kernel(x, out, counts):
    """Lanes leave loops at different turns: break, continue, and a uniform break, per-lane and uniform loops."""
    i = cuda.grid(1)
    if i >= x.size:
        return
    total = float32(0.0)
    turns = 0
    for k in range(i % 7, 40):  # a per-lane start
        if k % 3 == 0:
            continue
        if total > float32(3.0) + float32(i % 5):
            break
        total += x[(i + k) % x.size]
        turns += 1
    j = 0
    while True:  # a uniform loop with a per-lane exit
        j += 1
        if j > i % 4:
            break
        if j == 2:
            continue
        total += float32(0.5)
    for _ in range(5):
        break  # every lane at once
    out[i] = total
    counts[i] = turns * 10 + j


@jit
def earlier_block_kernel(out):
    """Block 1 reads what block 0 wrote: per thread, block 0 has finished by then."""
    i = cuda.grid(1)
    out[i] = i * 2
    if cuda.blockIdx.x == 1:
        out[i] += out[i - cuda.blockDim.x]


@jit
def ids_3d_kernel(out):
    x, y, z = cuda.grid(3)
    nx, ny, nz = cuda.gridsize(3)
    flat = x + nx * (y + ny * z)
    lin = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
    out[flat] = lin * 1000 + cuda.blockIdx.z * 100 + cuda.blockIdx.y * 10 + cuda.blockIdx.x + cuda.laneid * 0.5


@jit
def whole_block_returns_kernel(x, out):
    partial = cuda.shared.array(64, float32)
    if cuda.blockIdx.x == 1:
        return  # every thread of block 1: no barrier waits for it
    partial[cuda.threadIdx.x] = x[cuda.grid(1)]
    cuda.syncthreads()
    out[cuda.grid(1)] = partial[63 - cuda.threadIdx.x]


@jit
def part_of_a_block_returns_kernel(x, out):
    partial = cuda.shared.array(64, float32)
    if cuda.threadIdx.x == 5:
        return  # one thread: the others wait at the barrier for it (a fault)
    partial[cuda.threadIdx.x] = x[cuda.grid(1)]
    cuda.syncthreads()
    out[cuda.grid(1)] = partial[63 - cuda.threadIdx.x]


@jit
def votes_kernel(x, out, bits):
    i = cuda.grid(1)
    v = x[i]
    big = cuda.syncthreads_count(v > float32(0.5))
    every = cuda.syncthreads_and(v > float32(0.01))
    some = cuda.syncthreads_or(v > float32(0.99))
    ballot = cuda.ballot_sync(0xFFFFFFFF, v > float32(0.3))
    votes = cuda.all_sync(0xFFFFFFFF, v > float32(0.1)) + 2 * cuda.any_sync(0xFFFFFFFF, v > float32(0.9))
    votes += 4 * cuda.eq_sync(0xFFFFFFFF, v > float32(0.2))
    out[i] = big * 100 + every * 10 + some + votes * 1000
    bits[i] = ballot


def _copies(*arrays):
    return tuple(a.copy() for a in arrays)


def test_a_chain_between_threads_falls_back_and_keeps_the_per_thread_result(tiers):
    a0 = np.arange(1, 1025, dtype=np.float32)
    thread, vec, ran = tiers(lambda: _run(chain_kernel, (4,), (256,), a0.copy()))
    assert np.array_equal(thread, vec)
    assert ran.name == "thread" and "two lanes touch one element" in ran.reason
    assert vec[-1] == a0.sum()  # the per-thread order: a running sum


def test_a_missing_barrier_reads_the_poison_in_both_tiers(tiers):
    x = np.ones(128, np.float32)
    thread, vec, ran = tiers(lambda: _run(missing_barrier_kernel, (2,), (64,), x, np.zeros(2, np.float32))[1])
    assert np.isnan(thread).all() and np.array_equal(thread, vec, equal_nan=True)
    assert ran.name == "thread"


def test_float_atomics_at_one_address_from_a_loop_keep_the_per_thread_order(tiers):
    x = np.random.default_rng(5).random(512).astype(np.float32)
    thread, vec, ran = tiers(lambda: _run(atomics_in_a_loop_kernel, (2,), (256,), x, np.zeros(1, np.float32))[1])
    assert thread.tobytes() == vec.tobytes()
    assert ran.name == "thread" and "float atomics" in ran.reason


@pytest.mark.parametrize(
    "kernel, grid, block, make",
    [
        (out_of_bounds_kernel, (3,), (256,), lambda: (np.ones(700, np.float32), np.zeros(700, np.float32))),
        (negative_index_kernel, (3,), (256,), lambda: (np.ones(700, np.float32), np.zeros(700, np.float32))),
        (divergent_barrier_kernel, (1,), (64,), lambda: (np.zeros(64, np.int64),)),
        (divergent_shuffle_kernel, (2,), (64,), lambda: (np.ones(128, np.float32), np.zeros(128, np.float32))),
        (every_shuffle_kernel, (1,), (48,), lambda: (np.ones(48, np.float32), np.zeros(48, np.float32))),
        (part_of_a_block_returns_kernel, (2,), (64,), lambda: (np.ones(128, np.float32), np.zeros(128, np.float32))),
    ],
    ids=["out-of-bounds", "negative-index", "divergent-barrier", "divergent-shuffle", "partial-warp-shuffle",
         "returned-thread-at-barrier"],
)
def test_a_fault_has_the_same_words_and_leaves_the_same_memory_in_both_tiers(tiers, kernel, grid, block, make):
    def run():
        args = make()
        try:
            kernel[grid, block](*args)
        except KernelFault as fault:
            return str(fault), fault.thread, fault.block, fault.line, _copies(*args)
        raise AssertionError("no fault")

    thread, vec, _ = tiers(run)
    assert thread[:4] == vec[:4]
    assert all(np.array_equal(x, y) for x, y in zip(thread[4], vec[4]))


def test_break_and_continue_leave_each_lanes_loop_where_a_thread_would(tiers):
    x = np.random.default_rng(9).random(300).astype(np.float32)

    def run():
        out, counts = np.zeros(300, np.float32), np.zeros(300, np.int32)
        jumps_kernel[(3,), (128,)](x, out, counts)
        return out, counts

    thread, vec, ran = tiers(run)
    assert ran.name == "vector", ran
    assert thread[0].tobytes() == vec[0].tobytes() and np.array_equal(thread[1], vec[1])
    assert len(set(thread[1].tolist())) > 5  # the lanes really left at different turns


def test_a_block_reading_an_earlier_blocks_writes_keeps_the_per_thread_result(tiers):
    thread, vec, ran = tiers(lambda: _run(earlier_block_kernel, (2,), (64,), np.zeros(128, np.int64)))
    assert np.array_equal(thread, vec) and thread[64] == 128 + 0
    assert ran.name == "thread"


def test_three_dimensional_grids_number_threads_and_lanes_as_per_thread(tiers):
    def run():
        out = np.zeros(4 * 2 * 3 * 8 * 4 * 2, np.float64)
        ids_3d_kernel[(4, 2, 3), (8, 4, 2)](out)
        return out

    thread, vec, ran = tiers(run)
    assert ran.name == "vector", ran
    assert thread.tobytes() == vec.tobytes()


def test_a_block_whose_threads_all_returned_skips_the_barrier_in_both_tiers(tiers):
    x = np.arange(192, dtype=np.float32)
    thread, vec, ran = tiers(lambda: _run(whole_block_returns_kernel, (3,), (64,), x, np.zeros(192, np.float32))[1])
    assert ran.name == "vector", ran
    assert thread.tobytes() == vec.tobytes() and (thread[64:128] == 0).all()


def test_block_and_warp_votes_give_the_per_thread_numbers(tiers):
    x = np.random.default_rng(3).random(256).astype(np.float32)

    def run():
        out, bits = np.zeros(256, np.int64), np.zeros(256, np.uint32)
        votes_kernel[(2,), (128,)](x, out, bits)
        return out, bits

    thread, vec, ran = tiers(run)
    assert ran.name == "vector", ran
    assert np.array_equal(thread[0], vec[0]) and np.array_equal(thread[1], vec[1])
    assert len(set(thread[1].tolist())) > 1


def test_every_shuffle_gives_the_per_thread_lanes(tiers):
    x = np.random.default_rng(4).random(256).astype(np.float32)
    thread, vec, ran = tiers(lambda: _run(every_shuffle_kernel, (2,), (128,), x, np.zeros(256, np.float32))[1])
    assert ran.name == "vector", ran
    assert thread.tobytes() == vec.tobytes()


def test_python_numbers_meet_numpy_types_as_in_a_thread(tiers):
    n = 300
    a = np.random.default_rng(2).random(n).astype(np.float32)
    ints = np.arange(n, dtype=np.int32) * 7919

    def run():
        out, out_ints = np.zeros(n, np.float32), np.zeros(n, np.int32)
        mixed_types_kernel[(2,), (256,)](a, ints, out, out_ints)
        return out, out_ints

    thread, vec, ran = tiers(run)
    assert ran.name == "vector", ran
    assert thread[0].tobytes() == vec[0].tobytes() and np.array_equal(thread[1], vec[1])


def _run(kernel, grid, block, *args):
    kernel[grid, block](*args)
    return args if len(args) > 1 else args[0]


# --- one operation, every pairing of a thread's number types


_VALUES = [3, -7, 0, 2.5, -0.0, True, np.float32(1.25), np.float32(-3.5), np.int32(-9), np.int32(2**31 - 1),
           np.int64(5), np.uint8(200), np.float64(0.1)]
_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.lt,
        operator.eq, operator.ge, operator.and_, operator.rshift]


def _lanes(value):
    """``value`` in one lane, as the vectorised tier holds a value that differs between lanes."""
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        kind = np.bool_ if isinstance(value, bool) else np.int64 if isinstance(value, int) else np.float64
        return Weak(np.array([value], kind))
    return np.array([value])


@pytest.mark.parametrize("op", _OPS, ids=lambda op: op.__name__)
def test_an_operation_on_lanes_gives_what_a_thread_gets_or_bails(op):
    checked = 0
    for x, y in itertools.product(_VALUES, repeat=2):
        try:
            with np.errstate(all="ignore"):
                want = op(x, y)
        except (ArithmeticError, TypeError, ValueError):
            want = None
        for lx, ly in ((_lanes(x), y), (x, _lanes(y)), (_lanes(x), _lanes(y))):
            try:
                with np.errstate(all="ignore"):
                    got = binary(op, lx, ly, None)
            except Bail:
                continue
            assert want is not None, (op, x, y)
            data = got.a if isinstance(got, Weak) else got
            expected_type = type(want) if not isinstance(want, (bool, np.bool_)) else bool
            if isinstance(got, Weak):
                assert isinstance(want, (bool, int, float)) and not isinstance(want, np.generic), (op, x, y, want)
            else:
                assert data.dtype == np.asarray(want).dtype or expected_type is bool, (op, x, y, data.dtype, want)
            assert np.array_equal(data[0], want, equal_nan=True) and np.signbit(data[0]) == np.signbit(want), (
                op, x, y, data, want)
            checked += 1
    assert checked > 50


def test_the_subset_check_names_what_it_refuses():
    from gpu.sim.vector import _subset_reason

    source = "def k(a):\n    for x in a:\n        pass\n"
    assert "not over range" in _subset_reason(ast.parse(source).body[0], frozenset({"cuda"}))
    source = "def k(a):\n    v = cuda.match_any_sync(-1, a[0])\n"
    assert "match_any_sync" in _subset_reason(ast.parse(source).body[0], frozenset({"cuda"}))


def test_a_verdict_says_which_tier_ran_each_test():
    from gpu.problems import get as get_problem
    from gpu.sandbox.harness import judge

    problem = get_problem("vector-add")
    source = (
        "from numba import cuda\n\n\n@cuda.jit\ndef vector_add(a, b, c):\n    i = cuda.grid(1)\n"
        "    if i < c.size:\n        c[i] = a[i] + b[i]\n"
    )
    verdict = judge(problem, source, 0)
    assert verdict.status == "passed" and {t["tier"] for t in verdict.tests} == {"vector"}, verdict
    vector.set_tier("thread")
    try:
        verdict = judge(problem, source, 0)
    finally:
        vector.set_tier("auto")
    assert {t["tier"] for t in verdict.tests} == {"thread (KERNEL_LAB_SIM_TIER is 'thread')"}


def _lab_kernel_cases():
    """The kernels of gpu/kernels, gpu/core and gpu/trace that no catalog step runs, with arguments a page uses."""
    from gpu.core import copies
    from gpu.experiments.launch import overhead
    from gpu.kernels import vector_add as va
    from gpu.trace import examples

    n = 1000
    rng = np.random.default_rng(7)
    a, b = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)

    def vectors():
        return (a, b, np.full(n, np.nan, np.float32))

    words = rng.integers(0, 2**40, 3000).astype(np.int64)
    return [
        ("vector_add", va.vector_add_kernel, 4, 256, vectors),
        ("vector_add_ilp", va.vector_add_ilp_kernel, 1, 256, vectors),
        ("vector_add_grid_stride", va.vector_add_grid_stride_kernel, 2, 128, vectors),
        ("indexing_probe", va.indexing_probe_kernel, 4, 256,
         lambda: (*vectors(), np.zeros((1024, len(va.PROBE_FIELDS)), np.int32))),
        ("grid_stride_probe", va.grid_stride_probe_kernel, 2, 128,
         lambda: (*vectors(), np.zeros((256, len(va.PROBE_FIELDS)), np.int32), np.full(n, -1, np.int32),
                  np.zeros(n, np.int32))),
        ("read_coalesced", examples.read_coalesced_kernel, 4, 256, lambda: (a, np.zeros(n, np.float32))),
        ("read_strided", examples.read_strided_kernel, 4, 256, lambda: (a, np.zeros(n, np.float32))),
        ("copy", copies.copy_kernel, 1, 256, lambda: (words, np.zeros_like(words))),
        ("empty", overhead.empty_kernel, 2, 64, lambda: ()),
    ]


@pytest.mark.parametrize("case", _lab_kernel_cases(), ids=lambda c: c[0])
def test_every_other_lab_kernel_is_bit_identical_and_vectorised(tiers, case):
    _, kernel, grid, block, make = case

    def run():
        args = make()
        kernel[grid, block](*args)
        return args

    thread, vec, ran = tiers(run)
    for x, y in zip(thread, vec):
        assert x.tobytes() == y.tobytes()
    assert ran.name == "vector", ran


def test_a_sandboxed_child_runs_in_the_apps_tier():
    from gpu.sandbox.isolation import child_env

    assert child_env(True, "/tmp")["KERNEL_LAB_SIM_TIER"] == "auto"
    vector.set_tier("thread")
    try:
        assert child_env(True, "/tmp")["KERNEL_LAB_SIM_TIER"] == "thread"
    finally:
        vector.set_tier("auto")
