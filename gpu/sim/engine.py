"""Run a launch: blocks one after another, a block's threads in order, switching only at sync points.

A kernel without barriers or warp collectives runs as a plain loop: one Python call per
thread. A kernel with them is a generator (gpu/sim/rewrite.py): each thread runs until it
yields a request at a sync point; when every live thread of the block waits, the engine
resolves what can be resolved — warp collectives among the lanes their masks name, then
the block barrier — and sends each thread its result. Anything a GPU leaves undefined
(a barrier some threads never reach, a mask naming a lane that is elsewhere) is a
KernelFault naming the thread and the line, never a hang.

Memory semantics: one thread runs at a time, so every store is visible to the next
thread that runs; that is *more* ordered than a GPU, which is why shared and local arrays
start poisoned (NaN, or 0xEF bytes for integers): a read before a missing barrier or
write shows in the result. Order is deterministic (thread 0 first) unless a seed shuffles
it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from gpu.sim import device, loops
from gpu.sim.device import STATE, WARP
from gpu.sim.errors import KernelFault, _OutOfBounds
from gpu.sim.rewrite import BLOCK_SYNC, GRID_SYNC
from gpu.sim.warps import (
    absent,
    api_name,
    collective_result,
    fault_at,
    lanes_of,
    learner_fault,
    learner_mask,
    set_thread,
)

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)

_LAUNCH_LOCK = threading.RLock()  # one launch at a time in a process: the state below is shared
_RUNNING = threading.local()  # .active: this thread is inside a launch (a launch from a kernel is refused)


# --- launch geometry


def dims(value, what: str) -> tuple[int, int, int]:
    parts = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(parts) <= 3:
        raise KernelFault("launch", f"the {what} has {len(parts)} dimensions; it has 1 to 3")
    out = []
    for p in parts:
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
            raise KernelFault("launch", f"the {what} must be whole numbers, not {p!r}")
        out.append(int(p))
    while len(out) < 3:
        out.append(1)
    limits = MAX_GRID if what == "grid" else MAX_BLOCK
    for axis, (v, most) in enumerate(zip(out, limits)):
        if v < 1:
            raise KernelFault("launch", f"the {what}'s {'xyz'[axis]} dimension is {v}; a launch needs at least 1")
        if v > most:
            raise KernelFault("launch", f"the {what}'s {'xyz'[axis]} dimension is {v:,}; a GPU allows at most {most:,}")
    if what == "block" and out[0] * out[1] * out[2] > MAX_THREADS_PER_BLOCK:
        raise KernelFault(
            "launch",
            f"a block of {out[0] * out[1] * out[2]:,} threads; a GPU allows at most "
            f"{MAX_THREADS_PER_BLOCK} threads per block",
        )
    return out[0], out[1], out[2]


# --- errors raised inside a thread, with the thread and the line


def _kernel_line(exc: BaseException, codes: frozenset) -> int | None:
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _fault_from(exc: Exception, codes: frozenset) -> KernelFault:
    block, thread = STATE.blockIdx.tuple(), STATE.threadIdx.tuple()
    if isinstance(exc, KernelFault):
        if exc.thread is None:
            exc.block, exc.thread = block, thread
        if exc.line is None:
            exc.line = _kernel_line(exc, codes)
        exc.args = (exc.describe(),)
        return exc
    if isinstance(exc, _OutOfBounds):
        return KernelFault("out of bounds", exc.sentence, block=block, thread=thread, line=exc.line)
    line = _kernel_line(exc, codes)
    if isinstance(exc, IndexError):
        text = str(exc)
        sentence = (
            f"{text}; a GPU would read or write memory outside the array"
            if "out of bounds" in text
            else f"{text} (a GPU array takes whole-number indices)"
        )
        return KernelFault("out of bounds", sentence, block=block, thread=thread, line=line)
    if isinstance(exc, ValueError) and "read-only" in str(exc):
        return KernelFault(
            "constant memory",
            "a store into a cuda.const array; constant memory is read-only in a kernel",
            block=block,
            thread=thread,
            line=line,
        )
    fault = KernelFault(
        type(exc).__name__,
        str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
        block=block,
        thread=thread,
        line=line,
    )
    return fault


def launch(
    function,
    is_generator: bool,
    codes: frozenset,
    grid,
    block,
    args: tuple,
    seed: int | None = None,
    block_function=None,
    hooks=None,
    only: frozenset[int] | None = None,
    dynamic_shared_bytes: int = 0,
    cooperative: bool = False,
) -> None:
    """Run ``function`` (the rewritten kernel) over the grid; raise KernelFault on a GPU-defined error.

    ``block_function(threadIdx, count, *args)``, where the rewrite could make one, runs a whole
    1-D block in one call (same semantics, thread 0 first): used unless the order is shuffled.
    ``hooks`` (gpu/sim/recording.py: a recorded launch; ``args`` already watched) are told of
    every barrier and collective and installed for shared arrays and atomics; ``only`` runs just
    the blocks with these linear ids (x fastest), the others not at all. ``dynamic_shared_bytes`` is the
    launch's dynamic shared memory (``kernel[grid, block, stream, bytes]``), what ``cuda.shared.array(0, dtype)``
    returns in every block. ``cooperative`` (a kernel that calls a grid group's ``sync()``): every block runs
    as a coroutine up to each grid sync, all of them before any goes on.
    """
    if getattr(_RUNNING, "active", False):
        raise KernelFault("unsupported", "a kernel launched a kernel; a launch inside a kernel is refused, as Numba's "
                          "CUDA compiler refuses it (launch kernels from the host)")
    gx, gy, gz = dims(grid, "grid")
    bx, by, bz = dims(block, "block")
    rng = np.random.default_rng(seed) if seed is not None else None
    with _LAUNCH_LOCK, np.errstate(all="ignore"):
        _RUNNING.active = True
        STATE.wrapped_lines, STATE.divided_lines = set(), set()
        loops.start_counting(args)  # the loop limit and the work limit
        STATE.dynamic_shared_bytes = device.check_dynamic_shared(dynamic_shared_bytes)
        STATE.gridDim.x, STATE.gridDim.y, STATE.gridDim.z = gx, gy, gz
        STATE.blockDim.x, STATE.blockDim.y, STATE.blockDim.z = bx, by, bz
        blocks = [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]
        if only is not None:
            blocks = [b for b in blocks if b[0] + gx * (b[1] + gy * b[2]) in only]
        if rng is not None:
            blocks = [blocks[i] for i in rng.permutation(len(blocks))]
        nthreads = bx * by * bz
        if hooks is not None:
            device.watch(hooks)
        try:
            if cooperative:
                _run_grid_cooperative(function, codes, args, blocks, nthreads, bx, by, rng, hooks)
                return
            for b in blocks:
                STATE.blockIdx.x, STATE.blockIdx.y, STATE.blockIdx.z = b
                STATE.block_shared = {}
                STATE.exited = set()
                if is_generator:
                    for _ in _run_block_sync(function, codes, args, nthreads, bx, by, rng, hooks):
                        raise KernelFault("unsupported", "a grid sync in a launch not run as cooperative; launch the "
                                          "kernel through its SimKernel, which runs every block up to the sync")
                else:
                    _run_block_plain(function, codes, args, nthreads, bx, by, bz, rng, block_function)
        finally:
            _RUNNING.active = False
            if hooks is not None:
                device.watch(None)


def _run_block_plain(function, codes, args, nthreads, bx, by, bz, rng, block_function=None) -> None:
    t = STATE.threadIdx
    try:
        if block_function is not None and rng is None and by == 1 and bz == 1:
            t.y = t.z = 0
            block_function(t, bx, *args)
        elif rng is None and by == 1 and bz == 1:
            t.y = t.z = 0
            for x in range(bx):
                t.x = x
                function(*args)
        else:
            order = range(nthreads) if rng is None else rng.permutation(nthreads)
            for linear in order:
                set_thread(int(linear), bx, by)
                function(*args)
    except Exception as exc:
        raise _fault_from(exc, codes) from None


COOPERATIVE_MAX_THREADS = 1 << 20  # every thread of a grid that syncs stays alive (a generator) until the last sync


def _run_grid_cooperative(function, codes, args, blocks, nthreads, bx, by, rng, hooks) -> None:
    """Every block as a coroutine (``_run_block_sync``), each run up to the grid sync, then all released together."""
    if len(blocks) * nthreads > COOPERATIVE_MAX_THREADS:
        raise KernelFault("launch", f"a grid that syncs with {len(blocks) * nthreads:,} threads; the simulator keeps "
                          f"every thread alive across cuda.cg.this_grid().sync() and runs at most "
                          f"{COOPERATIVE_MAX_THREADS:,} (a GPU's limit, max_cooperative_grid_blocks, is lower still)")
    running: list[tuple] = [(b, {}, set(), None) for b in blocks]  # index, shared arrays, exited threads, coroutine
    while running:
        arrived, ended = [], []
        for b, shared, exited, coroutine in running:
            STATE.blockIdx.x, STATE.blockIdx.y, STATE.blockIdx.z = b
            STATE.block_shared, STATE.exited = shared, exited
            if coroutine is None:
                coroutine = _run_block_sync(function, codes, args, nthreads, bx, by, rng, hooks)
            try:
                line = next(coroutine)  # every live thread of the block now waits at a grid sync
            except StopIteration:
                ended.append(b)
                continue
            arrived.append((b, shared, exited, coroutine))
        if arrived and ended:
            STATE.blockIdx.x, STATE.blockIdx.y, STATE.blockIdx.z = ended[0]
            fault_at(0, bx, by, "barrier", "this thread's block returned while other blocks wait at "
                     f"cuda.cg.this_grid().sync() on line {line}; every thread of the grid must reach it", None)
        running = arrived


def _run_block_sync(function, codes, args, nthreads, bx, by, rng, hooks=None) -> Iterator[int]:
    """Run one block's threads (generators) to their ends, switching at sync points.

    A generator itself: it yields (the line) when every live thread of the block waits at a grid sync, and
    goes on when resumed (gpu/sim/engine.py: ``_run_grid_cooperative``); a plain launch never sees a yield.
    """
    t = STATE.threadIdx
    flat = by == 1 and nthreads == bx  # a 1-D block: the linear id is threadIdx.x
    threads = []
    for linear in range(nthreads):
        set_thread(linear, bx, by)
        threads.append(function(*args))
    replies: list[Any] = [None] * nthreads
    waiting: dict[int, tuple] = {}
    everyone = list(range(nthreads))
    runnable = everyone
    exited = STATE.exited
    while True:
        if rng is not None:
            runnable = [runnable[i] for i in rng.permutation(len(runnable))]
        try:
            if flat:
                t.y = t.z = 0
                for linear in runnable:
                    t.x = linear
                    try:
                        waiting[linear] = threads[linear].send(replies[linear])
                    except StopIteration:
                        exited.add(linear)
            else:
                for linear in runnable:
                    set_thread(linear, bx, by)
                    try:
                        waiting[linear] = threads[linear].send(replies[linear])
                    except StopIteration:
                        exited.add(linear)
        except Exception as exc:
            raise _fault_from(exc, codes) from None
        if not waiting:
            return
        first = waiting[next(iter(waiting))]
        if any(r[0] == GRID_SYNC for r in waiting.values()):
            released = _at_grid_sync(waiting, replies, exited, nthreads, bx, by, threads, hooks)
            if released is not None:
                runnable = released
            else:
                yield next(r[1] for r in waiting.values())  # the block is at the grid sync: the others run up to it
                for linear in waiting:  # resumed (the block's own state back in STATE): the grid is released
                    replies[linear] = None
                runnable = sorted(waiting)
                waiting.clear()
            continue
        if first[0] == "bar" and len(waiting) == nthreads and all(r is first for r in waiting.values()):
            # The common case: every thread at the same plain syncthreads (one constant request).
            if hooks is not None:
                hooks.sync("bar", threads[0], everyone, True)
            waiting.clear()
            for linear in everyone:
                replies[linear] = None
            runnable = everyone
            continue
        for linear in runnable:
            if linear not in waiting:
                replies[linear] = None
        runnable = _resolve(waiting, replies, exited, nthreads, bx, by, threads, hooks)


def _at_grid_sync(waiting, replies, exited, nthreads, bx, by, threads, hooks) -> list[int] | None:
    """Some threads wait at a grid sync. None: every live thread of the block does (suspend the block). Otherwise
    release what the others can (warp collectives), or fault where they cannot (a block barrier they wait at)."""
    others = {t: r for t, r in waiting.items() if r[0] != GRID_SYNC}
    if not others:
        if exited:
            gone = min(exited)
            line = next(iter(waiting.values()))[1]
            fault_at(gone, bx, by, "barrier", "this thread returned while other threads of the grid wait at "
                     f"cuda.cg.this_grid().sync() on line {line}; every thread of the grid must reach it", None)
        return None
    barrier = next((t for t, r in sorted(others.items()) if r[0] in _BARRIERS), None)
    if barrier is not None:
        grid_waiter = min(t for t in waiting if t not in others)
        fault_at(barrier, bx, by, "barrier", f"this thread waits at {api_name(others[barrier][0])} on line "
                 f"{others[barrier][1]} while thread {grid_waiter} waits at cuda.cg.this_grid().sync() on line "
                 f"{waiting[grid_waiter][1]}: every thread of a block must reach the same barrier", others[barrier][1])
    released = _resolve(others, replies, exited, nthreads, bx, by, threads, hooks)
    for t in released:
        waiting.pop(t, None)
    return released


def _resolve(
    waiting: dict, replies: list, exited: set, nthreads: int, bx: int, by: int, threads=(), hooks=None
) -> list[int]:
    """Release what can be released; return the threads that run next. Raise when nothing can.

    ``hooks`` (a recorded launch) are told of each release, and of a barrier that cannot complete before the fault.
    """
    released: list[int] = []
    problem = None
    active = {t: r for t, r in waiting.items() if r[0] == "activemask"}
    if active:  # each lane gets the lanes of its warp waiting at the same activemask() call: the branch's lanes
        converged: dict[tuple, list[int]] = {}
        for t, r in active.items():
            converged.setdefault((t // WARP, r[4]), []).append(t)
        for members in converged.values():
            bits = np.uint32(sum(1 << (m % WARP) for m in members))
            for m in members:
                replies[m] = bits
                del waiting[m]
        return sorted(active)
    collective = {t: r for t, r in waiting.items() if r[0] not in _BARRIERS}
    masks = {t: learner_mask(t, r, bx, by) for t, r in collective.items()}
    by_warp: dict[int, list[int]] = {}
    for linear in sorted(collective):
        by_warp.setdefault(linear // WARP, []).append(linear)
    for warp, lanes_waiting in by_warp.items():
        done: set[int] = set()
        for linear in lanes_waiting:
            if linear in done:
                continue
            request = collective[linear]
            kind, line = request[0], request[1]
            lane = linear % WARP
            mask = masks[linear]
            if not mask >> lane & 1:
                fault_at(
                    linear,
                    bx,
                    by,
                    "warp collective",
                    f"lane {lane} calls {api_name(kind)} with mask {mask:#010x}, "
                    "which leaves out the lane itself; a GPU leaves that undefined",
                    line,
                )
            # Lanes past the end of a partial warp do not exist: they count as exited, as on a GPU
            members = [warp * WARP + m for m in lanes_of(mask) if warp * WARP + m < nthreads]
            why = absent(members, collective, masks, waiting, exited, nthreads, kind, mask, lane)
            if why:
                problem = problem or (linear, why, line, kind)
                continue
            try:
                results = collective_result(kind, [collective[m] for m in members], [m % WARP for m in members], linear,
                                      bx, by)
            except Exception as exc:  # a learner's value the collective cannot take (a width of 0, an array...)
                learner_fault(exc, linear, bx, by, "warp collective", f"{api_name(kind)} cannot use its arguments",
                              line)
            if hooks is not None:
                hooks.sync(kind, threads[linear], members, True)
            for m, value in zip(members, results):
                replies[m] = value
                del waiting[m]
                done.add(m)
                released.append(m)
    if released:
        return sorted(released)
    barrier = {t: r for t, r in waiting.items() if r[0] in _BARRIERS}
    if problem is not None:
        linear, why, line, kind = problem
        fault_at(
            linear,
            bx,
            by,
            "warp collective",
            f"{api_name(kind)} cannot complete: {why}; on a GPU the result is undefined or the warp hangs",
            line,
        )
    first = min(barrier)
    kind, line, site = barrier[first][0], barrier[first][1], barrier[first][4]
    stuck = bool(exited) or any(r[4] != site for r in barrier.values())
    if hooks is not None and stuck:  # the trace sees who waited where before the fault stops the launch
        groups: dict[tuple, list[int]] = {}
        for t, r in sorted(barrier.items()):
            groups.setdefault((r[0], r[4]), []).append(t)
        for (group_kind, _), members in groups.items():
            hooks.sync(group_kind, threads[members[0]], members, False)
    if exited:
        gone = min(exited)
        fault_at(
            gone,
            bx,
            by,
            "barrier",
            f"this thread returned while other threads of its block wait at "
            f"{api_name(kind)} on line {line}; every thread of a block must reach the same "
            "barrier (a GPU may hang or give wrong results)",
            None,
        )
    other = next((t for t, r in sorted(barrier.items()) if r[4] != site), None)
    if other is not None:
        mine = barrier[other]
        same_line = mine[1] == line
        fault_at(
            other,
            bx,
            by,
            "barrier",
            f"this thread waits at {api_name(mine[0])} on {_place(mine, same_line)} "
            f"while thread {first} waits at {api_name(kind)} on {_place(barrier[first], same_line)}: divergent "
            "barriers (every thread of a block must reach the same one)",
            mine[1],
        )
    if kind != "bar":
        predicates = []
        for t, r in barrier.items():
            try:
                predicates.append(bool(r[2][0] if r[2] else (r[3] or {}).get("predicate", 0)))
            except Exception as exc:  # an array, or anything else with no single truth value
                learner_fault(exc, t, bx, by, "barrier", f"the predicate of {api_name(kind)} is not one true/false "
                               "value", r[1])
        value = {"bar_count": sum(predicates), "bar_and": int(all(predicates)), "bar_or": int(any(predicates))}[kind]
        for t in barrier:
            replies[t] = value
    if hooks is not None:
        hooks.sync(kind, threads[first], sorted(barrier), True)
    waiting.clear()
    return sorted(barrier)


def _place(request, with_column: bool) -> str:
    """``line 7``, or ``line 7, column 5`` where two barriers share a line."""
    return f"line {request[1]}, column {request[4][1] + 1}" if with_column else f"line {request[1]}"


_BARRIERS = frozenset(BLOCK_SYNC.values())


# An integer seed: run blocks and threads in a seeded random order. Declared in gpu/core/settings.py with every
# KERNEL_LAB_* variable, but read here: the simulator imports nothing of gpu (the one exception, tested).
SHUFFLE_ENV = "KERNEL_LAB_SIM_SHUFFLE"  # an integer seed: run blocks and threads in a seeded random order
_seed: list[int | None] = [None]


def _read_seed() -> int | None:
    raw = os.environ.get(SHUFFLE_ENV, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{SHUFFLE_ENV} must be an integer seed, not {raw!r}") from None


_seed[0] = _read_seed()


def launch_seed() -> int | None:
    return _seed[0]


def set_shuffle(seed: int | None) -> None:
    """Shuffle thread and block order from now on with ``seed`` (None: thread 0 first, deterministic)."""
    _seed[0] = seed


def kernel_argument(value):
    """What a kernel sees for one argument: the NumPy array behind a simulated device array."""
    inner = getattr(value, "_ary", None)
    if isinstance(inner, np.ndarray):
        value = inner
    if isinstance(value, np.ndarray):
        # A record array: Numba reads a field as recs[i].x or recs[i]["x"]; NumPy's record view takes both
        return value.view(np.recarray) if value.dtype.names and not isinstance(value, np.recarray) else value
    if np.isscalar(value):
        return value
    if type(value).__name__ == "FakeWithinKernelCUDAArray":
        return value._item._ary  # pragma: no cover
    return value


__all__ = [
    "SHUFFLE_ENV",
    "kernel_argument",
    "launch_seed",
    "set_shuffle",
    "STATE",
    "KernelFault",
    "launch",
]
