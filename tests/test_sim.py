"""The lab's own simulator (gpu/sim): GPU semantics where a GPU defines them, a KernelFault where it does not.

Every kernel below is written against ``cuda`` as a learner writes it. Each error class
the simulator claims has a test with a kernel that commits it, and each check is also run
on a kernel that does not (so a simulator that raised always would fail here too).
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import float32, int32

from gpu.core.backend import BACKEND
from gpu.sim import KernelFault, cuda, set_shuffle

pytestmark = pytest.mark.skipif(
    not BACKEND.simulated, reason="the lab's simulator runs only where kernels are simulated"
)

FULL = 0xFFFFFFFF


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def write_before_start(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i - 1] = a[i]  # thread 0 writes out[-1]: Numba wraps it once, to the last element


@cuda.jit
def write_below_start(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i - out.size - 1] = a[i]  # thread 0 writes out[-65]: below -size, outside the array even wrapped


@cuda.jit
def read_past_end(a, out):
    i = cuda.grid(1)
    out[i] = a[i + 1]


@cuda.jit
def atomic_at_negative(counts, keys):
    i = cuda.grid(1)
    if i < keys.size:
        cuda.atomic.add(counts, keys[i] - 1, 1)


@cuda.jit
def tree_sum(x, total):
    partial = cuda.shared.array(256, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    value = float32(0.0)
    if i < x.size:
        value = x[i]
    partial[tid] = value
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if tid < stride:
            partial[tid] += partial[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        cuda.atomic.add(total, 0, partial[0])


@cuda.jit
def missing_barrier(x, out):
    tile = cuda.shared.array(64, float32)
    tid = cuda.threadIdx.x
    tile[tid] = x[tid]
    out[tid] = tile[(tid + 1) % 64]  # reads a neighbour's slot with no syncthreads between


@cuda.jit
def divergent_barrier(out):
    if cuda.threadIdx.x < 16:
        cuda.syncthreads()
    out[cuda.threadIdx.x] = 1.0


@cuda.jit
def early_return(out):
    if cuda.threadIdx.x == 5:
        return
    cuda.syncthreads()
    out[cuda.threadIdx.x] = 1.0


@cuda.jit(device=True)
def warp_sum(value):
    offset = 16
    while offset > 0:
        value += cuda.shfl_down_sync(FULL, value, offset)
        offset //= 2
    return value


@cuda.jit
def shuffle_sum(x, total):
    i = cuda.grid(1)
    value = float32(0.0)
    if i < x.size:
        value = x[i]
    value = warp_sum(value)
    if cuda.laneid == 0:
        cuda.atomic.add(total, 0, value)


@cuda.jit
def shuffle_after_exit(x, out):
    i = cuda.grid(1)
    if cuda.laneid == 3:
        return
    out[i] = cuda.shfl_down_sync(FULL, x[i], 1)


@cuda.jit
def lanes(x, down, up, xor, idx, ballot, all_, any_, eq):
    i = cuda.grid(1)
    v = x[i]
    down[i] = cuda.shfl_down_sync(FULL, v, 3)
    up[i] = cuda.shfl_up_sync(FULL, v, 2)
    xor[i] = cuda.shfl_xor_sync(FULL, v, 5)
    idx[i] = cuda.shfl_sync(FULL, v, 7)
    ballot[i] = cuda.ballot_sync(FULL, v > 10)
    all_[i] = cuda.all_sync(FULL, v >= 0)
    any_[i] = cuda.any_sync(FULL, v > 31)
    eq[i] = cuda.eq_sync(FULL, v >= 0)


@cuda.jit
def barrier_forms(flags, out):
    t = cuda.threadIdx.x
    out[0] = cuda.syncthreads_count(flags[t])
    out[1] = cuda.syncthreads_and(flags[t])
    out[2] = cuda.syncthreads_or(flags[t])


@cuda.jit
def atomics(values, out, old):
    i = cuda.grid(1)
    if i < values.size:
        old[i] = cuda.atomic.max(out, 0, values[i])
        cuda.atomic.min(out, 1, values[i])
        cuda.atomic.inc(out, 2, 4)
        cuda.atomic.exch(out, 3, 7)
        cuda.atomic.cas(out, 4, 0, 9)


@cuda.jit
def index_2d(out):
    x, y = cuda.grid(2)
    w, h = cuda.gridsize(2)
    if x < out.shape[1] and y < out.shape[0]:
        out[y, x] = y * w + x + 1000 * h


@cuda.jit
def local_poison(out):
    scratch = cuda.local.array(4, float32)
    scratch[0] = 1.0
    out[cuda.threadIdx.x] = scratch[0] + scratch[1]  # scratch[1] was never written


@cuda.jit
def huge_shared(out):
    big = cuda.shared.array(16384, float32)  # 64 KiB: more than a block may declare statically
    big[0] = 1.0
    out[0] = big[0]


@cuda.jit
def int32_wraps(out):
    a = int32(2147483647)
    out[0] = a + int32(1)


@cuda.jit
def last_writer(out):
    out[0] = cuda.threadIdx.x  # every thread writes one address: a race, whose winner is the order


def test_vector_add_is_bit_identical_to_numpy():
    rng = np.random.default_rng(1)
    a, b = rng.random(10_000, dtype=np.float32), rng.random(10_000, dtype=np.float32)
    out = np.full(10_000, np.nan, np.float32)
    vector_add[(10_000 + 255) // 256, 256](cuda.to_device(a), cuda.to_device(b), out)
    assert out.dtype == np.float32 and np.array_equal(out, a + b)


def test_device_arrays_round_trip():
    a = np.arange(1000, dtype=np.float32)
    d_out = cuda.device_array(1000, np.float32)
    vector_add[4, 256](cuda.to_device(a), cuda.to_device(a), d_out)
    assert np.array_equal(d_out.copy_to_host(), a + a)


def test_a_negative_index_wraps_once_as_numba_compiles_it():
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    with pytest.warns(UserWarning, match=f"line {write_before_start.py_func.__code__.co_firstlineno + 4}: index -1"):
        write_before_start[1, 64](a, out)
    np.testing.assert_array_equal(out, np.roll(a, -1))  # out[-1] is the last element, as numba-cuda's fix_index


def test_an_index_below_minus_size_is_out_of_bounds_with_thread_and_line():
    a = np.ones(64, np.float32)
    with pytest.raises(KernelFault) as caught:
        write_below_start[1, 64](a, np.zeros(64, np.float32))
    fault = caught.value
    assert fault.kind == "out of bounds" and fault.thread == (0, 0, 0) and fault.block == (0, 0, 0)
    assert fault.line == write_below_start.py_func.__code__.co_firstlineno + 4
    assert "below -64" in fault.sentence and "wrap" in fault.sentence


def test_index_past_the_end_names_the_thread():
    with pytest.raises(KernelFault) as caught:
        read_past_end[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32))
    assert caught.value.kind == "out of bounds" and caught.value.thread == (31, 0, 0)


def test_an_atomic_wraps_a_negative_index_once_and_faults_below_minus_size():
    counts = np.zeros(4, np.int32)
    with pytest.warns(UserWarning, match="wrapped"):
        atomic_at_negative[1, 8](counts, np.array([1, 2, 0, 3, 1, 1, 2, 3], np.int32))
    assert counts.tolist() == [3, 2, 2, 1]  # key 0 - 1 = -1 is counts[3], as Numba's atomics index
    with pytest.raises(KernelFault, match="cuda.atomic.add at index -5"):
        atomic_at_negative[1, 8](counts, np.array([1, 2, -4, 3, 1, 1, 2, 3], np.int32))
    counts[:] = 0
    atomic_at_negative[1, 8](counts, np.array([1, 2, 1, 3, 1, 1, 2, 4], np.int32))  # every key in range: no fault
    assert counts.tolist() == [4, 2, 1, 1]


def test_tree_reduction_and_its_barriers():
    x = np.ones(4096, np.float32)
    total = np.zeros(1, np.float32)
    tree_sum[16, 256](x, total)
    assert total[0] == 4096.0


def test_shared_memory_starts_poisoned_so_a_missing_barrier_shows():
    out = np.zeros(64, np.float32)
    missing_barrier[1, 64](np.arange(64, dtype=np.float32), out)
    assert np.isnan(out[:63]).all()  # each thread read its neighbour's slot before the neighbour wrote it


def test_a_divergent_barrier_is_an_error_not_a_hang():
    with pytest.raises(KernelFault) as caught:
        divergent_barrier[1, 32](np.zeros(32, np.float32))
    assert caught.value.kind == "barrier"


def test_a_thread_that_returned_before_a_barrier_is_an_error():
    with pytest.raises(KernelFault) as caught:
        early_return[1, 32](np.zeros(32, np.float32))
    assert caught.value.kind == "barrier" and caught.value.thread == (5, 0, 0)


def test_warp_shuffle_reduction():
    x = np.arange(1024, dtype=np.float32)
    total = np.zeros(1, np.float32)
    shuffle_sum[4, 256](x, total)
    assert total[0] == np.float32(x.sum())


def test_a_mask_naming_an_exited_lane_is_an_error():
    with pytest.raises(KernelFault) as caught:
        shuffle_after_exit[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32))
    assert caught.value.kind == "warp collective" and "lane 3" in caught.value.sentence


def test_warp_collectives_match_their_definitions():
    x = np.arange(64, dtype=np.int32)
    outs = [np.zeros(64, np.int64) for _ in range(8)]
    lanes[2, 32](x, *outs)
    down, up, xor, idx, ballot, all_, any_, eq = outs
    lane = np.arange(64) % 32
    base = np.arange(64) - lane
    assert down.tolist() == np.where(lane + 3 < 32, x + 3, x).tolist()
    assert up.tolist() == np.where(lane >= 2, x - 2, x).tolist()
    assert xor.tolist() == (base + (lane ^ 5)).tolist()
    assert idx.tolist() == (base + 7).tolist()
    bits = [sum(1 << k for k in range(32) if x[w * 32 + k] > 10) for w in range(2)]
    assert ballot.tolist() == [bits[0]] * 32 + [bits[1]] * 32
    assert all_.tolist() == [1] * 64 and eq.tolist() == [1] * 64
    assert any_.tolist() == [0] * 32 + [1] * 32


def test_syncthreads_count_and_or():
    flags = np.array([1, 0, 1, 1] * 8, np.int32)
    out = np.zeros(3, np.int32)
    barrier_forms[1, 32](flags, out)
    assert out.tolist() == [24, 0, 1]


def test_atomics_return_the_old_value():
    values = np.array([3, 9, 1, 5], np.int32)
    out = np.array([0, 100, 0, 0, 0], np.int32)
    old = np.zeros(4, np.int32)
    atomics[1, 4](values, out, old)
    assert out.tolist() == [9, 1, 4, 7, 9]
    assert old.tolist() == [0, 3, 9, 9]  # thread order 0..3: each saw the maximum so far


def test_two_dimensional_grid():
    out = np.zeros((5, 7), np.int64)
    index_2d[(2, 3), (4, 2)](out)
    y, x = np.indices((5, 7))
    assert out.tolist() == (y * 8 + x + 1000 * 6).tolist()


def test_local_memory_starts_poisoned():
    out = np.zeros(4, np.float32)
    local_poison[1, 4](out)
    assert np.isnan(out).all()


def test_shared_memory_beyond_a_blocks_limit_is_an_error():
    with pytest.raises(KernelFault, match="48 KiB"):
        huge_shared[1, 1](np.zeros(1, np.float32))


def test_int32_wraps_and_float32_stays_float32():
    out = np.zeros(1, np.int64)
    int32_wraps[1, 1](out)
    assert out[0] == -(2**31)
    a = np.full(1, 1 / 3, np.float32)
    c = np.zeros(1, np.float32)
    vector_add[1, 1](a, a, c)
    assert c[0] == np.float32(1 / 3) + np.float32(1 / 3)


@pytest.mark.parametrize(
    "grid, block, words",
    [
        (1, 2048, "at most 1,024"),
        (0, 32, "at least 1"),
        (1, (32, 32, 2), "1024 threads per block"),
        (1, 2.5, "whole numbers"),
    ],
)
def test_launch_geometry_is_checked(grid, block, words):
    with pytest.raises(KernelFault, match=words):
        vector_add[grid, block](np.zeros(1, np.float32), np.zeros(1, np.float32), np.zeros(1, np.float32))


def test_order_is_deterministic_and_a_seed_shuffles_it():
    out = np.zeros(1, np.int64)
    last_writer[1, 256](out)
    assert out[0] == 255  # thread 0 first, so the last thread's write stands
    seen = set()
    try:
        for seed in range(4):
            set_shuffle(seed)
            last_writer[1, 256](out)
            seen.add(int(out[0]))
    finally:
        set_shuffle(None)
    assert len(seen) > 1  # an order-dependent result changes with the order


def test_a_signature_string_is_parsed_never_evaluated():
    assert cuda.jit("void(float32[:])")(lambda a: None) is not None
    with pytest.raises(TypeError, match="not a type"):
        cuda.jit("__import__('os').system('id') or void()")


def test_the_lab_is_the_default_simulator():
    assert BACKEND.engine == "lab" and type(vector_add).__name__ == "SimKernel"


NEGATIVE_STORE = """from numba import cuda


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i - out.size - 1] = a[i] + b[i]
"""

NEGATIVE_ATOMIC = """from numba import cuda


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]
    if i == 0:
        cuda.atomic.add(out, -out.size - 1, 0.0)
"""


@pytest.mark.parametrize("source, line", [(NEGATIVE_STORE, 8), (NEGATIVE_ATOMIC, 10)])
def test_a_learners_negative_index_fails_the_verdict_with_its_thread_and_line(source, line):
    """Below -size even Numba's wrapped index lies before the array: a fault, with the thread and the line."""
    from gpu.problems import get
    from gpu.sandbox.harness import judge

    verdict = judge(get("vector-add"), source, seed=5)
    assert verdict.status == "wrong", verdict
    failing = [t for t in verdict.tests if not t["passed"]]
    assert failing and "out of bounds" in failing[0]["message"] and f"line {line}" in failing[0]["message"]
    assert "thread (0, 0, 0) of block (0, 0, 0)" in failing[0]["message"]
    assert "harness" not in verdict.message


def test_a_correct_submission_still_passes():
    from gpu.problems import get
    from gpu.sandbox.harness import judge

    correct = NEGATIVE_STORE.replace("out[i - out.size - 1]", "out[i]")
    verdict = judge(get("vector-add"), correct, seed=5)
    assert verdict.status == "passed", verdict


def test_a_wrong_answer_shows_the_inputs_at_the_mismatching_index():
    """The verdict names what the kernel read there, so a learner can redo the arithmetic by hand."""
    from gpu.problems import get
    from gpu.sandbox.harness import judge

    wrong = NEGATIVE_STORE.replace("out[i - out.size - 1] = a[i] + b[i]", "out[i] = a[i] - b[i]")
    verdict = judge(get("vector-add"), wrong, seed=5)
    assert verdict.status == "wrong"
    miss = verdict.mismatch
    assert set(miss["inputs"]) == {"a", "b"} and "the inputs there: a[" in verdict.message
    # the values are shown in float32's shortest form: their float32 sum is the expected value, bit for bit
    assert np.float32(miss["expected"]) == np.float32(miss["inputs"]["a"]) + np.float32(miss["inputs"]["b"])


# --- the memory hooks (gpu/sim/recording.py): what a recorder is told, and nothing on a plain launch


@cuda.jit
def hooked(x, out):
    buf = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncthreads()
    v = buf[63 - t]
    cuda.syncwarp()
    v += cuda.shfl_down_sync(FULL, v, 1)
    if out.size == 1:  # an attribute of the array: the array's own, through the watched one
        cuda.atomic.add(out, 0, v)


class _Recorder:
    def __init__(self):
        self.arrays, self.accesses, self.syncs, self.oob = [], [], [], []

    def array(self, name, space, array):
        self.arrays.append((name, space, array.shape))
        return len(self.arrays) - 1

    def access(self, block, thread, array, offset, kind, site):
        self.accesses.append((block, thread, self.arrays[array][0], offset, kind, site[2]))

    def out_of_bounds(self, block, thread, array, index, kind, site):
        self.oob.append((block, thread, self.arrays[array][0], index, kind, site[2]))

    def sync(self, block, kind, site, threads, completed):
        self.syncs.append((block, kind, site[2], tuple(threads), completed))


def _line(text: str, kernel=hooked) -> int:
    import inspect

    lines, start = inspect.getsourcelines(kernel.py_func)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_recorder_is_told_every_access_barrier_and_collective_with_block_thread_and_line():
    from gpu.sim.recording import ATOMIC, READ, WRITE

    x, out = np.arange(128, dtype=np.float32), np.zeros(1, np.float32)
    rec = _Recorder()
    hooked.record(3, 64, (x, out), rec, blocks=(0, 2))  # block 1 not run at all
    assert rec.arrays == [("x", "global", (128,)), ("out", "global", (1,)), ("buf", "shared", (64,))]
    assert {a[0] for a in rec.accesses} == {0, 2}
    by = lambda name, kind: [a for a in rec.accesses if a[2] == name and a[4] == kind]  # noqa: E731
    assert len(by("x", READ)) == 128 and {a[5] for a in by("x", READ)} == {_line("buf[t] = x[t]")}
    assert sorted(a[3] for a in by("x", READ) if a[0] == 0) == [4 * t for t in range(64)]  # byte offsets
    assert len(by("buf", WRITE)) == len(by("buf", READ)) == 128
    assert {a[5] for a in by("buf", READ)} == {_line("v = buf[63 - t]")}
    assert len(by("out", ATOMIC)) == 128 and {a[5] for a in by("out", ATOMIC)} == {_line("cuda.atomic.add")}
    kinds = [(s[0], s[1], s[2], len(s[3])) for s in rec.syncs]
    for block in (0, 2):
        assert (block, "bar", _line("cuda.syncthreads()"), 64) in kinds
        assert kinds.count((block, "syncwarp", _line("cuda.syncwarp()"), 32)) == 2  # once per warp
        assert kinds.count((block, "shfl_down", _line("shfl_down_sync"), 32)) == 2
    v = x[:64][::-1]  # thread t's buf[63 - t]; lane 31 of a warp shuffles its own value down to itself
    shuffled = np.array([v[t + 1] if t % 32 < 31 else v[t] for t in range(64)])
    assert out[0] == 2 * (v + shuffled).sum()  # the recorded launch computes what the kernel computes (blocks 0, 2)


def test_a_recorded_launch_records_an_out_of_bounds_index_and_goes_on():
    rec = _Recorder()
    a, out = np.arange(64, dtype=np.float32), np.full(64, -7, np.float32)
    write_below_start.record(1, 64, (a, out), rec)
    assert rec.oob == [(0, 0, "out", (-65,), 1, _line("out[i - out.size - 1]", write_below_start))]
    assert (out[:-1] == a[1:]).all() and out[-1] == -7  # the bad write dropped, every other thread ran


SEEN_TYPES: list = []


@cuda.jit
def note_type(x):
    SEEN_TYPES.append(type(x))  # plain Python in the simulator: what the kernel is handed


def test_a_plain_launch_hands_the_kernel_numpy_arrays_even_after_a_recorded_one():
    from gpu.sim import device

    x = np.zeros(4, np.float32)
    note_type.record(1, 1, (x,), _Recorder())
    assert device.WATCHING[0] is None  # the hooks are gone with the launch
    note_type[1, 1](x)
    assert [t.__name__ for t in SEEN_TYPES] == ["Watched", "ndarray"]


def test_the_simulator_imports_nothing_else_of_the_lab():
    import ast
    from pathlib import Path

    for path in (Path(__file__).resolve().parents[1] / "gpu" / "sim").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith("gpu.") or name.startswith("gpu.sim"), f"{path.name} imports {name}"
