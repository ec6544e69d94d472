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
from typing import Any, NoReturn

import numpy as np

from gpu.sim import device
from gpu.sim.device import STATE, WARP
from gpu.sim.errors import KernelFault, _OutOfBounds
from gpu.sim.rewrite import BLOCK_SYNC

FULL_MASK = 0xFFFFFFFF
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


def _set_thread(linear: int, bx: int, by: int) -> None:
    t = STATE.threadIdx
    t.x = linear % bx
    rest = linear // bx
    t.y = rest % by
    t.z = rest // by


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
) -> None:
    """Run ``function`` (the rewritten kernel) over the grid; raise KernelFault on a GPU-defined error.

    ``block_function(threadIdx, count, *args)``, where the rewrite could make one, runs a whole
    1-D block in one call (same semantics, thread 0 first): used unless the order is shuffled.
    ``hooks`` (gpu/sim/recording.py: a recorded launch; ``args`` already watched) are told of
    every barrier and collective and installed for shared arrays and atomics; ``only`` runs just
    the blocks with these linear ids (x fastest), the others not at all. ``dynamic_shared_bytes`` is the
    launch's dynamic shared memory (``kernel[grid, block, stream, bytes]``), what ``cuda.shared.array(0, dtype)``
    returns in every block.
    """
    if getattr(_RUNNING, "active", False):
        raise KernelFault("unsupported", "a kernel launched a kernel; a launch inside a kernel is refused, as Numba's "
                          "CUDA compiler refuses it (launch kernels from the host)")
    gx, gy, gz = dims(grid, "grid")
    bx, by, bz = dims(block, "block")
    rng = np.random.default_rng(seed) if seed is not None else None
    with _LAUNCH_LOCK, np.errstate(all="ignore"):
        _RUNNING.active = True
        STATE.wrapped_lines = set()
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
            for b in blocks:
                STATE.blockIdx.x, STATE.blockIdx.y, STATE.blockIdx.z = b
                STATE.block_shared = {}
                STATE.exited = set()
                if is_generator:
                    _run_block_sync(function, codes, args, nthreads, bx, by, rng, hooks)
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
                _set_thread(int(linear), bx, by)
                function(*args)
    except Exception as exc:
        raise _fault_from(exc, codes) from None


def _run_block_sync(function, codes, args, nthreads, bx, by, rng, hooks=None) -> None:
    t = STATE.threadIdx
    flat = by == 1 and nthreads == bx  # a 1-D block: the linear id is threadIdx.x
    threads = []
    for linear in range(nthreads):
        _set_thread(linear, bx, by)
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
                    _set_thread(linear, bx, by)
                    try:
                        waiting[linear] = threads[linear].send(replies[linear])
                    except StopIteration:
                        exited.add(linear)
        except Exception as exc:
            raise _fault_from(exc, codes) from None
        if not waiting:
            return
        first = waiting[next(iter(waiting))]
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


def _fault_at(linear: int, bx: int, by: int, kind: str, sentence: str, line: int | None) -> NoReturn:
    _set_thread(linear, bx, by)
    STATE.fault(kind, sentence, line)


def _lanes(mask: int) -> list[int]:
    return [lane for lane in range(WARP) if mask >> lane & 1]


def _mask(request) -> int:
    args, kwargs = request[2], request[3]
    value = args[0] if args else (kwargs or {}).get("mask", FULL_MASK)
    return int(value) & FULL_MASK


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
    masks = {t: _learner_mask(t, r, bx, by) for t, r in collective.items()}
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
                _fault_at(
                    linear,
                    bx,
                    by,
                    "warp collective",
                    f"lane {lane} calls {_name(kind)} with mask {mask:#010x}, "
                    "which leaves out the lane itself; a GPU leaves that undefined",
                    line,
                )
            # Lanes past the end of a partial warp do not exist: they count as exited, as on a GPU
            members = [warp * WARP + m for m in _lanes(mask) if warp * WARP + m < nthreads]
            why = _absent(members, collective, masks, waiting, exited, nthreads, kind, mask, lane)
            if why:
                problem = problem or (linear, why, line, kind)
                continue
            try:
                results = _collective(kind, [collective[m] for m in members], [m % WARP for m in members], linear,
                                      bx, by)
            except Exception as exc:  # a learner's value the collective cannot take (a width of 0, an array...)
                _learner_fault(exc, linear, bx, by, "warp collective", f"{_name(kind)} cannot use its arguments", line)
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
        _fault_at(
            linear,
            bx,
            by,
            "warp collective",
            f"{_name(kind)} cannot complete: {why}; on a GPU the result is undefined or the warp hangs",
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
        _fault_at(
            gone,
            bx,
            by,
            "barrier",
            f"this thread returned while other threads of its block wait at "
            f"{_name(kind)} on line {line}; every thread of a block must reach the same "
            "barrier (a GPU may hang or give wrong results)",
            None,
        )
    other = next((t for t, r in sorted(barrier.items()) if r[4] != site), None)
    if other is not None:
        mine = barrier[other]
        same_line = mine[1] == line
        _fault_at(
            other,
            bx,
            by,
            "barrier",
            f"this thread waits at {_name(mine[0])} on {_place(mine, same_line)} "
            f"while thread {first} waits at {_name(kind)} on {_place(barrier[first], same_line)}: divergent "
            "barriers (every thread of a block must reach the same one)",
            mine[1],
        )
    if kind != "bar":
        predicates = []
        for t, r in barrier.items():
            try:
                predicates.append(bool(r[2][0] if r[2] else (r[3] or {}).get("predicate", 0)))
            except Exception as exc:  # an array, or anything else with no single truth value
                _learner_fault(exc, t, bx, by, "barrier", f"the predicate of {_name(kind)} is not one true/false "
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


def _learner_fault(exc: Exception, linear: int, bx: int, by: int, kind: str, what: str, line: int | None) -> NoReturn:
    """A learner's value broke a collective or a barrier: a KernelFault naming the thread and the line."""
    if isinstance(exc, KernelFault):
        _fault_at(linear, bx, by, exc.kind, exc.sentence, exc.line or line)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    _fault_at(linear, bx, by, kind, f"{what} ({type(exc).__name__}: {text})", line)


def _learner_mask(linear: int, request, bx: int, by: int) -> int:
    try:
        return _mask(request)
    except Exception as exc:  # a NaN, an array, a missing argument
        _learner_fault(exc, linear, bx, by, "warp collective",
                       f"the mask of {_name(request[0])} is not a 32-bit whole number", request[1])


_BARRIERS = frozenset(BLOCK_SYNC.values())


def _absent(members, collective, masks, waiting, exited, nthreads, kind, mask, lane) -> str | None:
    """Why the lanes a mask names cannot all take part now (None: they can)."""
    for m in members:
        if m in exited:
            return f"the mask {mask:#010x} names lane {m % WARP}, which has already returned"
        if m not in collective:
            return (
                f"the mask {mask:#010x} names lane {m % WARP}, which is waiting at a {_name(waiting[m][0])} "
                f"(line {waiting[m][1]}) instead"
            )
        if collective[m][0] != kind:
            return (
                f"the mask {mask:#010x} names lane {m % WARP}, which is at {_name(collective[m][0])} "
                f"(line {collective[m][1]}) instead"
            )
        if masks[m] != mask:
            return f"lanes {lane} and {m % WARP} pass different masks to {_name(kind)}"
    return None


_NAMES = {
    "bar": "syncthreads",
    "bar_count": "syncthreads_count",
    "bar_and": "syncthreads_and",
    "bar_or": "syncthreads_or",
    "syncwarp": "syncwarp",
    "shfl": "shfl_sync",
    "shfl_up": "shfl_up_sync",
    "shfl_down": "shfl_down_sync",
    "shfl_xor": "shfl_xor_sync",
    "all": "all_sync",
    "any": "any_sync",
    "eq": "eq_sync",
    "ballot": "ballot_sync",
    "match_any": "match_any_sync",
    "match_all": "match_all_sync",
    "activemask": "activemask",
}


def _name(kind: str) -> str:
    return f"cuda.{_NAMES.get(kind, kind)}"


def _arg(request, position: int, name: str, default=None):
    args, kwargs = request[2], request[3] or {}
    if len(args) > position:
        return args[position]
    if name in kwargs:
        return kwargs[name]
    if default is None:
        raise KernelFault("warp collective", f"{_name(request[0])} is missing its {name!r} argument", line=request[1])
    return default


def _collective(kind: str, requests: list, lanes: list[int], first: int, bx: int, by: int) -> list:
    """The value each member lane gets back (members in lane order)."""
    if kind == "syncwarp":
        return [None] * len(lanes)
    if kind in ("all", "any", "eq", "ballot"):
        predicates = [_arg(r, 1, "predicate") for r in requests]
        if kind == "ballot":
            bits = sum(1 << lane for lane, p in zip(lanes, predicates) if p)
            return [np.uint32(bits)] * len(lanes)
        if kind == "eq":
            truth = [bool(p) for p in predicates]
            value = int(all(truth) or not any(truth))
        else:
            value = int(all(predicates)) if kind == "all" else int(any(bool(p) for p in predicates))
        return [value] * len(lanes)
    if kind == "match_any":
        values = [_arg(r, 1, "value") for r in requests]
        return [np.uint32(sum(1 << lane for lane, v in zip(lanes, values) if v == mine)) for mine in values]
    if kind == "match_all":  # (the mask of the lanes if every one passed the same value, else 0; that predicate)
        values = [_arg(r, 1, "value") for r in requests]
        same = all(v == values[0] for v in values)
        matched = np.uint32(sum(1 << lane for lane in lanes) if same else 0)
        return [(matched, same)] * len(lanes)
    if any(r[3] or len(r[2]) < 3 for r in requests):  # keywords or a missing argument: the careful way
        requests = [
            (
                r[0],
                r[1],
                (
                    _arg(r, 0, "mask"),
                    _arg(r, 1, "value"),
                    _arg(r, 2, {"shfl": "src_lane", "shfl_xor": "lane_mask"}.get(kind, "delta")),
                    _arg(r, 3, "width", WARP),
                ),
                None,
            )
            for r in requests
        ]
    shuffled = {lane: r[2][1] for lane, r in zip(lanes, requests)}
    out = []
    for lane, r in zip(lanes, requests):
        args = r[2]
        operand = int(args[2])
        width = int(args[3]) if len(args) > 3 else WARP
        if kind == "shfl_down":
            source = lane + operand if lane % width + operand < width else lane
        elif kind == "shfl_up":
            source = lane - operand if lane % width >= operand else lane
        elif kind == "shfl":
            source = lane - lane % width + operand % width
        else:
            source = lane ^ operand
            if source // width != lane // width:
                source = lane
        value = shuffled.get(source, _MISSING)
        if value is _MISSING:
            warp = first // WARP
            size = STATE.blockDim.x * STATE.blockDim.y * STATE.blockDim.z
            why = (f"which does not exist (the block has {size} threads)" if warp * WARP + source >= size
                   else "which is not in the mask")
            _fault_at(
                warp * WARP + lane,
                bx,
                by,
                "warp collective",
                f"{_name(kind)} reads lane {source}, {why} (its value is undefined on a GPU)",
                r[1],
            )
        out.append(value)
    return out


_MISSING = object()


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
