"""The memory trace on small kernels with known bugs and known access patterns (simulator, in process)."""

from __future__ import annotations

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
        out[i] = a[i - 1]  # i - 1 is -1 for thread 0: NumPy would wrap it silently


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


def test_a_negative_index_is_out_of_bounds_not_wrapped():
    a = np.arange(64, dtype=np.float32)
    out = np.full_like(a, -7)
    report = analyse(trace_launch(read_previous, 1, 64, [a, out]))
    assert [(o.who.thread, o.index) for o in report.out_of_bounds] == [((0, 0, 0), (-1,))]
    assert out[0] == 0  # the out-of-bounds read gave 0, not a[-1] = 63


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


TRACEABLE = [k.name for k in lab_kernels() if not k.skip]
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


def test_the_steps_the_simulator_cannot_run_are_skipped_with_the_reason():
    skipped = {k.name: k.skip for k in lab_kernels() if k.skip}
    needing = {f"{spec.key}-{s.key}" for spec in catalog_specs() for s in spec.steps if s.needs}
    assert set(skipped) == needing and "reduction-shuffle" in needing
    assert all("warp shuffles" in why and "simulator" in why for why in skipped.values())


def test_what_the_lab_steps_teach():
    naive, tiled, padded = (trace_lab_kernel(f"transpose-{s}") for s in ("naive", "tiled", "padded"))
    store = lambda r: next(s for s in r.sectors if s.kind == "write")  # noqa: E731
    assert store(naive).sectors_per_request == 32 and store(tiled).sectors_per_request == 4
    column = lambda r: next(b for b in r.banks if b.kind == "read")  # noqa: E731
    assert column(tiled).ways == 32 and column(padded).ways == 1
    tree = trace_lab_kernel("reduction-tree")
    assert tree.barrier_intervals == 2 + 7  # one after the loads, one per halving of 128 threads (log2 128 = 7)
