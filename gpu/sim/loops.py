"""The simulator's two limits on loops, a GPU has neither: one run of one loop in one thread, and a launch's work.

The rewritten kernel (gpu/sim/rewrite.py, rule 5) calls these: ``turns`` before a ``while`` and ``spent`` on its way
out, ``within`` around what a ``for`` iterates, ``endless`` at the turn past a ``while``'s allowance. A loop past
either limit is a KernelFault (kind "loop limit") naming the loop's line; the engine adds the thread. The vectorised
tier (gpu/sim/vector_eval.py: ``turn``) counts the same turns from the same ``STATE`` and leaves a launch past either
to the per-thread tier, which faults. How and why: docs/simulator.md.
"""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from gpu.sim.device import STATE
from gpu.sim.errors import KernelFault

# One run of one loop in one thread may take at most this many turns, or this many per element of the launch's largest
# array (or per unit of its largest whole-number argument) where that is more: a grid-stride loop, or one thread
# walking a whole array, takes at most one turn per element. Past it the thread faults (``endless``). A GPU has no
# such limit: there the kernel would spin until the submission's wall-clock limit. The simulator's thread tier takes
# the 65,536 turns of an empty loop in about 10 ms, the vectorised tier in about 0.5 s.
LOOP_TURNS_MIN = 1 << 16
LOOP_TURNS_PER_ELEMENT = 4
# Every loop of a launch, in every thread, together may take at most this many turns, or this many times the square of
# the launch's largest array size (or whole-number argument) where that is more. The lab's own kernels take at most a
# fifth of it (the register-tiled matmul's 128 x 128 tiles on a 33 x 33 matrix: 969,984 turns of 4,743,684), the
# next most a two-hundredth (every problem's solution is checked: tests/test_sim_work_limit.py). A loop inside a loop
# is counted turn by turn here, so a never-ending loop whose every turn is a long loop of its own (which the loop
# limit above, counting each run of each loop, would reach in hours) faults too (``past_work``). Counted the same in
# both tiers and independent of the machine's load, so a kernel's verdict never depends on how busy the server was;
# the wall clock stays the last resort. The thread tier takes the 2,097,152 turns of a cheap inner loop in about
# 0.1 s, of a loop reading arrays in seconds; a judge's child the five tests of a vector add whose every launch
# reaches it, 0.8 s of CPU.
WORK_TURNS_MIN = 1 << 21
WORK_TURNS_PER_ELEMENT_SQUARED = 4


def _largest(args) -> int:
    """The size of the largest array among a launch's arguments, or its largest whole-number argument if larger."""
    largest = 0
    for value in args:
        if isinstance(value, np.ndarray):
            largest = max(largest, value.size)
        elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            largest = max(largest, abs(int(value)))
    return largest


def loop_limit(args) -> int:
    """The most turns one run of one loop may take in one thread of a launch given ``args`` (kernel arguments)."""
    return max(LOOP_TURNS_MIN, LOOP_TURNS_PER_ELEMENT * _largest(args))


def work_limit(args) -> int:
    """The most turns all the loops of a launch given ``args`` may take, in all its threads together."""
    largest = _largest(args)
    return max(WORK_TURNS_MIN, WORK_TURNS_PER_ELEMENT_SQUARED * largest * largest)


def start_counting(args) -> None:
    """A launch given ``args`` begins: its loop limit, its work limit, and all of its work left."""
    STATE.loop_turns = loop_limit(args)
    STATE.work_turns = STATE.work_left = work_limit(args)
    STATE.launches += 1


def turns() -> int:
    """What a ``while`` loop counts its turns down from (the rewritten source calls this before each one): the loop
    limit, or the launch's work left where that is less."""
    left = STATE.work_left
    return STATE.loop_turns if STATE.loop_turns <= left else max(left, 0)


def spent(turns: int, line: int) -> None:
    """A ``while`` loop left after ``turns`` turns (on its way out: past its condition, a ``break``, a ``return``)."""
    STATE.work_left -= turns
    if STATE.work_left < 0:
        past_work(line, "while")


def within(items, line: int, leaves: bool = False):
    """What a ``for`` loop iterates. ``items`` itself, its turns charged to the launch's work at once, when it has at
    most the loop limit's turns and the work left, and the loop cannot leave early (``leaves``: a ``break`` or a
    ``return`` in its body); else the items counted one by one as the loop takes them."""
    try:
        size = len(items)
    except (TypeError, OverflowError):  # no length, or one past sys.maxsize (range(10**30))
        return _counted(items, line)
    if not leaves and size <= STATE.loop_turns and size <= STATE.work_left:
        STATE.work_left -= size
        return items
    return _counted(items, line)


def _counted(items, line: int):
    state, limit, taken, launch = STATE, STATE.loop_turns, 0, STATE.launches
    try:
        for item in items:
            if taken == limit:
                endless(line, "for")
            if taken >= state.work_left:  # the loops inside this one charge theirs meanwhile
                past_work(line, "for")
            taken += 1
            yield item
    finally:  # the loop is over (its end, a break, a return: the generator is closed), or the launch faulted; a
        if state.launches == launch:  # generator closed later (a thread left suspended) charges no other launch
            state.work_left -= taken


def endless(line: int, keyword: str, allowed: int | None = None) -> NoReturn:
    """The turn past what a loop was ``allowed`` (a ``while``: ``turns()`` at its start; a ``for``: the loop limit): a
    fault naming the loop (the engine adds the thread). Where the launch's work left allowed less than the loop limit,
    it is the work limit that stopped it."""
    limit = STATE.loop_turns
    if allowed is not None and allowed < limit:
        past_work(line, keyword)
    raise KernelFault(
        "loop limit",
        f"this {keyword} loop ran {limit:,} turns in one thread without ending, the simulator's loop limit for this "
        "launch (a GPU has none: it would spin until the wall-clock limit); check that its condition can become false",
        line=line,
    )


def past_work(line: int, keyword: str) -> NoReturn:
    """The turn past the launch's work limit, taken by the loop at ``line``: a fault (the engine adds the thread)."""
    raise KernelFault(
        "loop limit",
        f"the loops of this launch took more than {STATE.work_turns:,} turns in all its threads together, the "
        f"simulator's work limit for this launch, at this {keyword} loop (a GPU has none: it would run on until the "
        "wall-clock limit); check that every loop, and every loop inside one, can end",
        line=line,
    )


__all__ = [
    "LOOP_TURNS_MIN", "LOOP_TURNS_PER_ELEMENT", "WORK_TURNS_MIN", "WORK_TURNS_PER_ELEMENT_SQUARED", "endless",
    "loop_limit", "past_work", "spent", "start_counting", "turns", "within", "work_limit",
]
