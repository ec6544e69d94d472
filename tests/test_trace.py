"""The memory trace on small kernels with known bugs and known access patterns (simulator, in process)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from numba import float32

import gpu
from gpu.catalog.declare import kernel_module
from gpu.core.backend import cuda
from gpu.trace.lab import lab_kernels, trace_lab_kernel
from gpu.trace.record import trace_launch
from gpu.trace.report import analyse

pytestmark = pytest.mark.skipif(not gpu.BACKEND.simulated, reason="the trace runs kernels in this process's simulator "
                                "(on a GPU the CLI and the app run it in a child process; see test_trace_cli.py)")

TILE = 32
PADDED = TILE + 1


@cuda.jit
def shift_left_no_sync(x, out):
    buf = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    # missing cuda.syncthreads(): thread t reads what thread t + 1 writes
    out[t] = buf[(t + 1) % 64]


@cuda.jit
def shift_left_synced(x, out):
    buf = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncthreads()
    out[t] = buf[(t + 1) % 64]


@cuda.jit
def add_off_by_one(a, b, c):
    i = cuda.grid(1)
    if i <= c.size:  # off by one: i == c.size passes the guard
        c[i] = a[i] + b[i]


@cuda.jit
def read_previous(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i - 1]  # i - 1 is -1 for thread 0: Numba wraps it once, to a[63]


@cuda.jit
def strided_load(a, out):
    i = cuda.grid(1)
    out[i] = a[i * 8]  # 32 bytes apart: each thread of a warp in its own sector


@cuda.jit
def column_read_unpadded(a, out):
    tile = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    for r in range(TILE):
        tile[r, tx] = a[r, tx]
    cuda.syncthreads()
    out[tx] = tile[tx, 0]  # a column: 32 words 32 words apart, all in bank 0


@cuda.jit
def column_read_padded(a, out):
    tile = cuda.shared.array((TILE, PADDED), float32)
    tx = cuda.threadIdx.x
    for r in range(TILE):
        tile[r, tx] = a[r, tx]
    cuda.syncthreads()
    out[tx] = tile[tx, 0]


@cuda.jit
def broadcast_read(a, out):
    tile = cuda.shared.array(TILE, float32)
    tx = cuda.threadIdx.x
    tile[tx] = a[tx]
    cuda.syncthreads()
    out[tx] = tile[0]  # every thread reads one word: a broadcast, not a conflict


@cuda.jit
def divergent_barrier(x):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncthreads()  # only half the block gets here
    x[t] = t


@cuda.jit
def diagonal_through_a_row(a, out):
    r = cuda.threadIdx.x
    row = a[r]  # a view: still traced, addressed from the start of a
    out[r] = row[r]


@cuda.jit
def every_block_writes_zero(out):
    out[0] = cuda.blockIdx.x  # no atomic: the blocks race


@cuda.jit
def atomic_count(out):
    cuda.atomic.add(out, 0, 1)


def _line_of(kernel, text: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(kernel.py_func)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_missing_syncthreads_is_a_race_with_both_threads_and_lines():
    x = np.arange(64, dtype=np.float32)
    report = analyse(trace_launch(shift_left_no_sync, 1, 64, [x, np.zeros_like(x)]))
    assert report.problems and len(report.races) == 1, str(report)
    race = report.races[0]
    assert race.array == "buf" and race.space == "shared" and race.scope == "in a block"
    lines = {race.first.line, race.second.line}
    assert lines == {_line_of(shift_left_no_sync, "buf[t] = x[t]"), _line_of(shift_left_no_sync, "out[t] = buf")}
    assert {race.first.kind, race.second.kind} == {"write", "read"}
    assert race.first.thread != race.second.thread
    writer, reader = (race.first, race.second) if race.first.kind == "write" else (race.second, race.first)
    assert reader.thread[0] == (writer.thread[0] - 1) % 64  # the reader is the writer's left neighbour
    assert race.addresses == 64
    assert "race on shared `buf" in str(race) and f"line {writer.line}" in str(race)


def test_the_same_kernel_with_its_syncthreads_is_clean_and_correct():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    report = analyse(trace_launch(shift_left_synced, 1, 64, [x, out]))
    assert not report.problems, str(report)
    assert report.barrier_intervals == 2
    np.testing.assert_array_equal(out, np.roll(x, -1))  # the traced run computes what the kernel computes


def test_an_off_by_one_is_out_of_bounds_with_the_thread_before_the_simulator_raises():
    n = 100
    a = np.ones(n, np.float32)
    report = analyse(trace_launch(add_off_by_one, 1, 128, [a, a.copy(), np.zeros(n, np.float32)]))
    assert report.error is None, report.error  # found and reported, not an IndexError from the simulator
    assert report.problems and report.out_of_bounds
    first = report.out_of_bounds[0]
    assert first.who.thread == (100, 0, 0) and first.index == (100,) and first.shape == (100,)
    assert first.who.line == _line_of(add_off_by_one, "c[i] = a[i] + b[i]")
    assert report.out_of_bounds_count == 3  # a[100], b[100] and c[100], by thread 100 only
    assert "thread (100, 0, 0)" in str(first)


def test_a_negative_index_wraps_once_in_a_trace_as_numba_compiles_it():
    a = np.arange(64, dtype=np.float32)
    out = np.full_like(a, -7)
    report = analyse(trace_launch(read_previous, 1, 64, [a, out]))  # the wrap is a note of the report (below)
    assert not report.out_of_bounds
    np.testing.assert_array_equal(out, np.roll(a, 1))  # thread 0 read a[-1], the last element


def test_a_row_view_keeps_tracing_with_offsets_from_the_allocation():
    a = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    out = np.zeros(16, np.float32)
    report = analyse(trace_launch(diagonal_through_a_row, 1, 16, [a, out]))
    np.testing.assert_array_equal(out, np.diag(a))
    read = next(s for s in report.sectors if s.kind == "read")
    assert read.array == "a" and read.sectors_per_request == 16  # the diagonal: 68 bytes apart, one sector each


def test_a_strided_load_touches_at_least_8_sectors_per_request_and_a_contiguous_one_4():
    a = np.zeros(64 * 8, np.float32)
    report = analyse(trace_launch(strided_load, 2, 32, [a, np.zeros(64, np.float32)]))
    by_kind = {s.kind: s for s in report.sectors}
    assert by_kind["read"].sectors_per_request >= 8 and by_kind["read"].sectors_per_request == 32
    assert by_kind["write"].sectors_per_request == 4 and by_kind["write"].requests == 2


def test_an_unpadded_tile_read_by_column_is_32_way_and_a_padded_one_conflict_free():
    a = np.arange(TILE * TILE, dtype=np.float32).reshape(TILE, TILE)
    unpadded = analyse(trace_launch(column_read_unpadded, 1, TILE, [a, np.zeros(TILE, np.float32)]))
    padded = analyse(trace_launch(column_read_padded, 1, TILE, [a, np.zeros(TILE, np.float32)]))
    column = lambda r: next(b for b in r.banks if b.kind == "read")  # noqa: E731
    assert column(unpadded).ways == 32 and column(unpadded).max_ways == 32
    assert column(padded).ways == 1
    assert all(b.ways == 1 for b in unpadded.banks if b.kind == "write")  # the row writes were fine all along


def test_a_broadcast_of_one_word_is_not_a_bank_conflict():
    a = np.arange(TILE, dtype=np.float32)
    report = analyse(trace_launch(broadcast_read, 1, TILE, [a, np.zeros(TILE, np.float32)]))
    assert next(b for b in report.banks if b.kind == "read").ways == 1


def test_a_syncthreads_reached_by_half_the_block_is_barrier_divergence():
    report = analyse(trace_launch(divergent_barrier, 1, 32, [np.zeros(32, np.int64)]))
    assert report.problems and len(report.divergence) == 1
    d = report.divergence[0]
    assert (d.reached, d.missed, d.missed_did) == (16, 16, "exited")
    assert d.line == _line_of(divergent_barrier, "cuda.syncthreads()") and d.missed_example == (16, 0, 0)


def test_two_blocks_writing_one_address_race_and_atomics_do_not():
    racy = analyse(trace_launch(every_block_writes_zero, 3, 1, [np.zeros(1, np.int64)]))
    assert [r.scope for r in racy.races] == ["between blocks"] and racy.races[0].first.block != racy.races[
        0
    ].second.block
    counted = np.zeros(1, np.int64)
    atomic = analyse(trace_launch(atomic_count, 3, 32, [counted]))
    assert not atomic.problems and counted[0] == 96


def test_blocks_past_the_limit_are_skipped_and_said_so():
    a = np.ones(64 * 8, np.float32)
    report = analyse(trace_launch(strided_load, 16, 4, [a, np.zeros(64, np.float32)], max_blocks=3))
    assert (report.blocks_traced, report.blocks_total) == (3, 16)
    assert any("3 of 16 blocks traced" in n for n in report.notes)


def test_accesses_past_the_limit_are_counted_not_recorded():
    x = np.arange(64, dtype=np.float32)
    report = analyse(trace_launch(shift_left_synced, 1, 64, [x, np.zeros_like(x)], max_accesses=100))
    assert report.accesses == 100 and report.accesses_dropped == 4 * 64 - 100
    assert any("were not recorded" in n for n in report.notes)


TRACEABLE = [k.name for k in lab_kernels()]
# matmul's work grows as N³: 17 keeps it to seconds and still leaves partial tiles at the edges
SIZES = {"matmul-naive": 17, "matmul-shared": 17, "matmul-register": 17}


@pytest.mark.parametrize("name", TRACEABLE)
def test_every_kernel_of_the_lab_has_no_race_and_no_out_of_bounds(name):
    report = trace_lab_kernel(name, SIZES.get(name))
    assert not report.races and not report.out_of_bounds and not report.divergence and report.error is None, str(report)
    assert report.accesses > 0


def catalog_specs():

    from gpu.catalog.declare import kernel_keys

    return [kernel_module(key).SPEC for key in kernel_keys()]


def test_every_catalog_step_is_traced_warp_shuffle_steps_included():
    names = {k.name for k in lab_kernels()}
    steps = {f"{spec.key}-{s.key}" for spec in catalog_specs() for s in spec.steps}
    assert steps <= names
    shuffle_steps = [f"{spec.key}-{s.key}" for spec in catalog_specs() for s in spec.steps if s.needs]
    assert "reduction-shuffle" in shuffle_steps and len(shuffle_steps) >= 3
    for name in shuffle_steps:
        report = trace_lab_kernel(name)
        assert not report.problems, str(report)
        assert dict(report.collectives).get("shfl_down_sync", 0) > 0, name  # the shuffles ran, counted
        assert report.barrier_intervals == 2  # one syncthreads: the warp sums in shared memory, then warp 0


def test_a_multi_pass_step_says_which_launch_its_trace_shows():
    report = trace_lab_kernel("reduction-two-pass")
    assert any("launches 2 kernels" in n and "reduce_final_kernel" in n for n in report.notes), report.notes


@pytest.mark.parametrize("name,n,size,blocks", [
    ("reduction-shuffle", 256, "N = 256", 2), ("reduction-shuffle", 1024, "N = 1,024", 8),
    ("transpose-naive", 64, "64 × 64", 16), ("copy-strided", 2048, "N = 2,048", 8),
])
def test_the_traced_size_is_the_one_asked_for(name, n, size, blocks):
    report = trace_lab_kernel(name, n)
    assert size in report.label and report.blocks_total == blocks, (report.label, report.blocks_total)


@pytest.mark.parametrize("name,value,fragment", [
    ("matmul-naive", 41, "N may be at most 40 here"),  # 41³ = 68,921 steps of work, over 65,536
    ("transpose-naive", 257, "N may be at most 256 here"),
    ("reduction-shuffle", 65_537, "N may be at most 65,536 here"),
    ("reduction-shuffle", 0, "at least 1"),
    ("reduction-shuffle", "lots", "whole number"),
    ("copy-strided", 1000, "multiple of 1,024"),
])
def test_a_traced_size_out_of_bounds_is_refused_with_what_is_allowed(name, value, fragment):
    from gpu.core.limits import InputError

    with pytest.raises(InputError, match=fragment):
        trace_lab_kernel(name, value)


def test_every_kernel_at_its_largest_traced_size_stays_interactive():
    """The bound (gpu.trace.MAX_TRACE_WORK) is what keeps a trace interactive: the slowest lab kernels at their max."""
    import time

    from gpu.trace.lab import find

    for name in ("matmul-register", "reduction-grid-stride", "transpose-padded"):
        kernel = find(name)
        start = time.perf_counter()
        report = trace_lab_kernel(name, kernel.max_n)
        assert not report.problems, str(report)
        assert time.perf_counter() - start < 30, name  # seconds on a 2-core machine; generous for a loaded one


def test_what_the_lab_steps_teach():
    naive, tiled, padded = (trace_lab_kernel(f"transpose-{s}") for s in ("naive", "tiled", "padded"))
    store = lambda r: next(s for s in r.sectors if s.kind == "write")  # noqa: E731
    assert store(naive).sectors_per_request == 32 and store(tiled).sectors_per_request == 4
    column = lambda r: next(b for b in r.banks if b.kind == "read")  # noqa: E731
    assert column(tiled).ways == 32 and column(padded).ways == 1
    tree = trace_lab_kernel("reduction-tree")
    assert tree.barrier_intervals == 2 + 7  # one after the loads, one per halving of 128 threads (log2 128 = 7)


# --- warp-level ordering and atomics: the trace records through the lab simulator's own hooks

WARP_BUF = 32


@cuda.jit
def store_racing_an_atomic(out):
    t = cuda.threadIdx.x
    if t == 0:
        out[0] = 5  # a plain store: races the other threads' atomics (no barrier between)
    else:
        cuda.atomic.add(out, 0, 1)


@cuda.jit
def read_racing_atomics(out, seen):
    t = cuda.threadIdx.x
    if t == 0:
        seen[0] = out[0]  # a plain read while the other threads add atomically: which sum it sees is a race
    else:
        cuda.atomic.add(out, 0, 1)


@cuda.jit
def store_racing_an_atomic_after_a_syncwarp(out):
    t = cuda.threadIdx.x
    cuda.syncwarp()  # orders nothing that follows it: the store and the atomics are after it in every lane
    if t == 0:
        out[0] = 5
    else:
        cuda.atomic.add(out, 0, 1)


@cuda.jit
def block_zero_stores_the_others_add(out):
    if cuda.blockIdx.x == 0:
        out[0] = 5  # no barrier orders blocks: this store races the other blocks' atomics
    else:
        cuda.atomic.add(out, 0, 1)


@cuda.jit
def warp_sum_through_shared(x, out):
    buf = cuda.shared.array(32, float32)
    lane = cuda.threadIdx.x
    buf[lane] = x[lane]
    cuda.syncwarp()
    offset = 16
    while offset > 0:
        v = buf[lane]
        if lane < offset:
            v += buf[lane + offset]
        cuda.syncwarp()
        buf[lane] = v
        cuda.syncwarp()
        offset //= 2
    if lane == 0:
        out[0] = buf[0]


@cuda.jit
def warp_sum_missing_a_syncwarp(x, out):
    buf = cuda.shared.array(32, float32)
    lane = cuda.threadIdx.x
    buf[lane] = x[lane]
    cuda.syncwarp()
    offset = 16
    while offset > 0:
        v = buf[lane]
        if lane < offset:
            v += buf[lane + offset]
        # missing cuda.syncwarp(): lane 0 may read buf[16] after lane 16 overwrote it
        buf[lane] = v
        cuda.syncwarp()
        offset //= 2
    if lane == 0:
        out[0] = buf[0]


@cuda.jit
def two_warps_exchange_with_syncwarp(x, out):
    buf = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncwarp()  # orders lanes of one warp only: thread t reads what thread 63 - t (the other warp) wrote
    out[t] = buf[63 - t]


def test_a_plain_store_racing_an_atomic_to_the_same_address_is_a_race():
    report = analyse(trace_launch(store_racing_an_atomic, 1, 32, [np.zeros(1, np.int32)]))
    assert report.problems and len(report.races) == 1, str(report)
    race = report.races[0]
    assert race.scope == "in a block" and race.array == "out"
    assert {race.first.kind, race.second.kind} == {"write", "atomic"}
    assert {race.first.line, race.second.line} == {
        _line_of(store_racing_an_atomic, "out[0] = 5"), _line_of(store_racing_an_atomic, "cuda.atomic.add")
    }


def test_a_plain_read_racing_atomics_is_a_race_and_atomics_alone_are_not():
    report = analyse(trace_launch(read_racing_atomics, 1, 32, [np.zeros(1, np.int32), np.zeros(1, np.int32)]))
    found = [(r.array, {r.first.kind, r.second.kind}) for r in report.races]
    assert found == [("out", {"read", "atomic"})], str(report)


def test_a_store_racing_an_atomic_is_a_race_in_a_kernel_that_also_syncs_its_warp():
    report = analyse(trace_launch(store_racing_an_atomic_after_a_syncwarp, 1, 32, [np.zeros(1, np.int32)]))
    found = [(r.array, {r.first.kind, r.second.kind}) for r in report.races]
    assert found == [("out", {"write", "atomic"})], str(report)
    assert dict(report.collectives) == {"syncwarp": 1}


def test_between_blocks_atomics_do_not_race_but_a_plain_store_against_them_does():
    racy = analyse(trace_launch(block_zero_stores_the_others_add, 3, 1, [np.zeros(1, np.int32)]))
    assert [r.scope for r in racy.races] == ["between blocks"], str(racy)
    assert {racy.races[0].first.kind, racy.races[0].second.kind} == {"write", "atomic"}
    counted = np.zeros(1, np.int64)
    assert not analyse(trace_launch(atomic_count, 4, 32, [counted])).problems and counted[0] == 128


def test_a_syncwarp_reduction_through_shared_memory_is_clean_and_correct():
    x = np.arange(WARP_BUF, dtype=np.float32)
    out = np.zeros(1, np.float32)
    report = analyse(trace_launch(warp_sum_through_shared, 1, WARP_BUF, [x, out]))
    assert not report.problems, str(report)
    assert out[0] == x.sum()
    assert report.barrier_intervals == 1  # no syncthreads at all: syncwarp alone orders the lanes


def test_a_missing_syncwarp_in_a_warp_exchange_is_a_race_with_both_lines():
    x = np.arange(WARP_BUF, dtype=np.float32)
    report = analyse(trace_launch(warp_sum_missing_a_syncwarp, 1, WARP_BUF, [x, np.zeros(1, np.float32)]))
    assert report.problems and report.races, str(report)
    race = report.races[0]
    assert race.array == "buf" and race.space == "shared" and race.scope == "in a block"
    assert {race.first.line, race.second.line} == {
        _line_of(warp_sum_missing_a_syncwarp, "v += buf[lane + offset]"),
        _line_of(warp_sum_missing_a_syncwarp, "buf[lane] = v"),
    }
    assert {race.first.kind, race.second.kind} == {"read", "write"}


def test_syncwarp_does_not_order_lanes_of_different_warps():
    x = np.arange(64, dtype=np.float32)
    report = analyse(trace_launch(two_warps_exchange_with_syncwarp, 1, 64, [x, np.zeros_like(x)]))
    assert report.races and report.races[0].array == "buf", str(report)
    writer = next(w for w in (report.races[0].first, report.races[0].second) if w.kind == "write")
    reader = next(w for w in (report.races[0].first, report.races[0].second) if w.kind == "read")
    assert writer.thread[0] // 32 != reader.thread[0] // 32


def test_shuffles_are_counted_as_collectives_not_memory_accesses():
    from gpu.experiments.reduction import kernels as k

    x = np.ones(256, np.float32)
    raw = trace_launch(k.reduce_shuffle_kernel, 2, 128, [x, np.zeros(1, np.float32)])
    assert raw.error is None, raw.error
    # per block of 4 warps: 5 shuffle rounds in each warp, then 5 more in warp 0 over the warp sums
    assert raw.collectives == {"shfl_down": 2 * (4 * 5 + 5)}
    assert {(a.name, a.space) for a in raw.arrays} == {("x", "global"), ("total", "global"), ("warp_sums", "shared")}
    kinds = Counter((raw.arrays[r[3]].name, r[5]) for r in raw.records)
    assert kinds == {("x", 0): 256, ("warp_sums", 1): 8, ("warp_sums", 0): 8, ("total", 2): 2}  # no shuffle in here


def test_the_recorder_is_not_reachable_from_the_kernels_globals_or_arguments():
    """A learner's kernel must not be able to reach the recorder and forge its own trace."""
    import types
    import warnings

    from gpu.sim import SimKernel
    from gpu.sim import device as sim_device
    from gpu.trace import record

    seen_recorders: list = []
    found: list = []

    class Probe(record._Tracer):
        def access(self, *args):
            if not found:
                found.append(_reachable(frame_globals(), args_seen, self))
            super().access(*args)

    args_seen: list = []

    def frame_globals():
        import sys

        frame = sys._getframe(0)
        while frame is not None and frame.f_code.co_name != "shift_left_synced":
            frame = frame.f_back
        assert frame is not None
        args_seen[:] = [frame.f_locals["x"], frame.f_locals["out"]]
        return frame.f_globals

    def _reachable(scope, args, target, depth=4) -> bool:
        todo, seen = [(v, 0) for v in [*scope.values(), *args, sim_device.STATE]], set()
        while todo:
            obj, d = todo.pop()
            if obj is target:
                return True
            if id(obj) in seen or d >= depth or isinstance(obj, (types.ModuleType, type, str, bytes, int, float)):
                continue
            seen.add(id(obj))
            if isinstance(obj, dict):
                todo += [(v, d + 1) for v in obj.values()]
            elif isinstance(obj, (list, tuple, set, frozenset)):
                todo += [(v, d + 1) for v in obj]
            elif not isinstance(obj, np.ndarray):
                for name in dir(obj):
                    if name.startswith("__"):
                        continue  # dunders: refused by the write-a-kernel checker (and so are "_" names)
                    try:
                        with warnings.catch_warnings():  # deprecated attributes of library objects on the way
                            warnings.simplefilter("ignore")
                            todo.append((getattr(obj, name), d + 1))
                    except Exception:
                        continue
        return False

    x = np.arange(64, dtype=np.float32)
    tracer = Probe((1, 1, 1), (64, 1, 1), 1000)
    seen_recorders.append(tracer)
    kernel = shift_left_synced if isinstance(shift_left_synced, SimKernel) else SimKernel(shift_left_synced.py_func)
    kernel.record(1, 64, (x, np.zeros_like(x)), tracer)
    assert found == [False]
    assert type(args_seen[0]).__name__ == "Watched" and not hasattr(args_seen[0], "recorder")


@cuda.jit
def sum_by_iterating(x, out):
    if cuda.threadIdx.x == 0:
        total = float32(0.0)
        for v in x:  # iterating a traced array reads each element once, and ends
            total += v
        out[0] = total


def test_iterating_over_a_traced_array_reads_each_element_and_ends():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(1, np.float32)
    report = analyse(trace_launch(sum_by_iterating, 1, 32, [x, out]))
    assert not report.problems and out[0] == x.sum(), str(report)
    assert next(s for s in report.sectors if s.array == "x").requests == 8


def test_a_trace_notes_the_line_where_a_negative_index_wrapped():
    a = np.arange(64, dtype=np.float32)
    report = analyse(trace_launch(read_previous, 1, 64, [a, np.zeros_like(a)]))
    line = _line_of(read_previous, "out[i] = a[i - 1]")
    assert any(f"line {line}: index -1" in note and "wrap" in note for note in report.notes), report.notes


@cuda.jit
def spin_forever(out):
    i = cuda.grid(1)
    while i >= 0:
        i += 1
    out[0] = i


def test_a_loop_that_never_ends_is_the_traces_error_and_its_picture_says_why_there_is_none():
    """The loop limit stops the trace's launch too (gpu/sim/device.py); the picture's place says the launch recorded
    no access because the kernel stopped, not that the launch was too large for a picture (it has one block)."""
    from streamlit.testing.v1 import AppTest

    report = analyse(trace_launch(spin_forever, 1, 32, [np.zeros(1, np.int64)]))
    assert report.error and "loop limit (thread (0, 0, 0) of block (0, 0, 0)" in report.error
    assert report.picture == () and report.blocks_total == 1

    def page(report):
        from ui.views.trace import show_picture

        show_picture(report, "t")

    at = AppTest.from_function(page, args=(report,)).run()
    captions = [c.value for c in at.caption]
    assert captions == ["No picture: the launch recorded no memory access (the kernel stopped before it made one)."]
