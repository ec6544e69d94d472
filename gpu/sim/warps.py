"""Warp-level pieces of a launch: which lanes a mask names, what each collective returns, and faults that name
the lane and the line. The engine (gpu/sim/engine.py) decides when a collective is released; this computes it."""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from gpu.sim.device import STATE, WARP
from gpu.sim.errors import KernelFault

FULL_MASK = 0xFFFFFFFF


def set_thread(linear: int, bx: int, by: int) -> None:
    t = STATE.threadIdx
    t.x = linear % bx
    rest = linear // bx
    t.y = rest % by
    t.z = rest // by


def fault_at(linear: int, bx: int, by: int, kind: str, sentence: str, line: int | None) -> NoReturn:
    set_thread(linear, bx, by)
    STATE.fault(kind, sentence, line)


def lanes_of(mask: int) -> list[int]:
    return [lane for lane in range(WARP) if mask >> lane & 1]


def mask_of(request) -> int:
    args, kwargs = request[2], request[3]
    value = args[0] if args else (kwargs or {}).get("mask", FULL_MASK)
    return int(value) & FULL_MASK


def learner_fault(exc: Exception, linear: int, bx: int, by: int, kind: str, what: str, line: int | None) -> NoReturn:
    """A learner's value broke a collective or a barrier: a KernelFault naming the thread and the line."""
    if isinstance(exc, KernelFault):
        fault_at(linear, bx, by, exc.kind, exc.sentence, exc.line or line)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    fault_at(linear, bx, by, kind, f"{what} ({type(exc).__name__}: {text})", line)


def learner_mask(linear: int, request, bx: int, by: int) -> int:
    try:
        return mask_of(request)
    except Exception as exc:  # a NaN, an array, a missing argument
        learner_fault(exc, linear, bx, by, "warp collective",
                       f"the mask of {api_name(request[0])} is not a 32-bit whole number", request[1])


def absent(members, collective, masks, waiting, exited, nthreads, kind, mask, lane) -> str | None:
    """Why the lanes a mask names cannot all take part now (None: they can)."""
    for m in members:
        if m in exited:
            return f"the mask {mask:#010x} names lane {m % WARP}, which has already returned"
        if m not in collective:
            return (
                f"the mask {mask:#010x} names lane {m % WARP}, which is waiting at a {api_name(waiting[m][0])} "
                f"(line {waiting[m][1]}) instead"
            )
        if collective[m][0] != kind:
            return (
                f"the mask {mask:#010x} names lane {m % WARP}, which is at {api_name(collective[m][0])} "
                f"(line {collective[m][1]}) instead"
            )
        if masks[m] != mask:
            return f"lanes {lane} and {m % WARP} pass different masks to {api_name(kind)}"
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


def api_name(kind: str) -> str:
    return f"cuda.{_NAMES.get(kind, kind)}"


def _arg(request, position: int, name: str, default=None):
    args, kwargs = request[2], request[3] or {}
    if len(args) > position:
        return args[position]
    if name in kwargs:
        return kwargs[name]
    if default is None:
        raise KernelFault("warp collective", f"{api_name(request[0])} is missing its {name!r} argument",
                          line=request[1])
    return default


def collective_result(kind: str, requests: list, lanes: list[int], first: int, bx: int, by: int) -> list:
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
            fault_at(
                warp * WARP + lane,
                bx,
                by,
                "warp collective",
                f"{api_name(kind)} reads lane {source}, {why} (its value is undefined on a GPU)",
                r[1],
            )
        out.append(value)
    return out


_MISSING = object()


__all__ = [
    "FULL_MASK", "absent", "api_name", "collective_result", "fault_at", "lanes_of", "learner_fault", "learner_mask",
    "mask_of", "set_thread",
]
