"""Fair judging when a class submits at once: one place in the queue per learner, and a long judge yields its turn.

The judges queue on one FIFO lock (the device lock, then the CPU lock: ``service.default_locks``).
FIFO alone lets one learner's never-ending kernel hold everyone behind it for the whole wall-clock
limit (measured: two 20-second time-outs sat ahead of most of a class of 16). Two rules here:

- ``LearnerGate``: a learner has at most one submission queued or being judged in this process
  (a second tab's Run is refused until the first verdict), so the queue takes the learners in
  turn, round-robin, however fast one of them presses Run.
- ``TimeSlice``: in the simulator, a judge holds the lock for at most ``QUANTUM_S``; a judge still
  running then keeps running (its limits still apply) in a background lane of ``LANE_SLOTS`` children,
  and the lock goes to the next learner; past ``LATE_CPU_S`` of CPU used since its request it runs at the
  lowest CPU priority (``gpu.sandbox.child``). The analysis after a verdict (compiler's facts and trace)
  holds the queue the same way, so a compile slowed by a busy machine does not hold the judges behind
  it, but keeps the children's priority (``child.yields_when_late``): it is bounded, and the class's analyses of
  the same source wait for it. Most judges end well inside the quantum, so they run one at a time; only the long
  ones (a loop that never ends, a memory hog) overlap the judges behind them. If the lane is full when the
  quantum ends, the judge keeps the turn and looks again every ``RETRY_S``. On a GPU nothing yields: the lock
  keeps the device to one kernel so its timing is fair.
- ``JudgesFirst`` / ``judges_first``: an analysis queues for the lock only when no judge of this
  process is queued or holding it, and when its turn comes while a judge has queued behind it, it
  gives the turn back and waits again. In a class, the first verdicts' analyses otherwise queued
  ahead of the judges of learners who pressed Run a moment later, each holding the queue for its
  whole quantum (a compile is about 2.7 s of CPU): verdicts waited behind facts. (Judges and
  analyses of other app processes on the host still queue in plain turn, by the lock files.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

# A judge of the problem set holds the queue for about 0.05 s here with a spare waiting (0.005 s of it judging), and
# 0.07-0.16 s (p50) while a class of 16 loads the machine; past this, it goes on beside the queue. With 2 s, the class's
# one kernel stopped at the simulator's work limit (0.4 s of CPU in five tests) held everyone behind it for 0.8-2.0 s of
# its turn, at the children's priority on a machine its class's pages kept busy. Side by side, four pairs of classes
# of 16 (2026-12-06, benchmarks/class_submit.md): the queue's wait p50 0.16-1.64 s against 1.07-1.99 s, the server's
# press received -> verdict kept p50 lower in four pairs of four, Submit -> verdict p50 in three of four. (Tried
# before, when a judge dropped to the lowest priority by the clock, 0.5 s made p95 worse: the long kernels crawled
# behind the pages. Lowered by the CPU it used, ``LATE_CPU_S``, such a kernel keeps its priority for its 0.4 s.)
QUANTUM_S = 0.5
# A judge (or a trace) that has used this much CPU since its request runs at the lowest priority from then on
# (``gpu.sandbox.child.lower_priority_after``): a judge of the problem set uses 0.005-0.05 s, a loop stopped at the
# simulator's limit about 0.6 s; only the long ones (a loop the wall clock stops, a memory hog) pass it. (It was 2 s
# of wall clock, the quantum then: on a loaded machine the 0.6 s loop was lowered before it had had its CPU, and its
# verdict crawled behind the class's pages.)
LATE_CPU_S = 1.0
# A judge past its quantum while the lane is full keeps the turn and looks again this often: it yields as soon as a
# place in the lane frees (once, a never-ending kernel whose one look found the lane full of analyses held a class's
# queue for its whole 20 s limit).
RETRY_S = 0.25
LANE_SLOTS = 4  # judges and analyses that may run past their quantum at once (each bounded by its wall-clock limit)
_LANE = threading.BoundedSemaphore(LANE_SLOTS)  # process-wide: every session's judges share the lane


class LearnerBusy(Exception):
    """The learner already has a submission queued or being judged."""


class LearnerGate:
    """At most one submission in the judge's queue per learner (by folded name), across this process's sessions."""

    def __init__(self) -> None:
        self._inside: set[str] = set()
        self._mutex = threading.Lock()

    def enter(self, learner: str) -> None:
        with self._mutex:
            if learner in self._inside:
                raise LearnerBusy(
                    "your previous submission (in this or another tab) is still queued or being judged; "
                    "its verdict comes first, then press Run again"
                )
            self._inside.add(learner)

    def leave(self, learner: str) -> None:
        with self._mutex:
            self._inside.discard(learner)

    def holding(self) -> set[str]:
        with self._mutex:
            return set(self._inside)


GATE = LearnerGate()  # one per process: the sessions of one server share the queue


class TimeSlice(AbstractContextManager):
    """Hold ``lock`` (a context manager) while a judge runs, for at most ``quantum_s``: then, when the background
    lane has room, release it early so the next judge starts, and leave this one running. Exiting releases the lock
    (if still held) and the lane slot. ``yielded`` says whether the judge gave up its turn."""

    def __init__(self, lock: AbstractContextManager, quantum_s: float = QUANTUM_S,
                 lane: threading.BoundedSemaphore | None = None, on_yield: Callable[[], None] | None = None):
        self._lock = lock
        self._quantum_s = quantum_s
        self._lane = lane if lane is not None else _LANE
        self._on_yield = on_yield
        self._mutex = threading.Lock()
        self._held = False
        self._timer: threading.Timer | None = None
        self.yielded = False

    def __enter__(self) -> TimeSlice:
        self._lock.__enter__()
        self._held = True
        self._timer = threading.Timer(self._quantum_s, self._yield_turn)
        self._timer.daemon = True
        self._timer.start()
        return self

    def _yield_turn(self) -> None:
        with self._mutex:
            if not self._held:
                return  # finished meanwhile
            if not self._lane.acquire(blocking=False):  # the lane is full: keep the turn, and look again soon
                self._timer = threading.Timer(RETRY_S, self._yield_turn)
                self._timer.daemon = True
                self._timer.start()
                return
            self.yielded = True
            self._release()
        if self._on_yield is not None:
            self._on_yield()

    def _release(self) -> None:  # under self._mutex
        if self._held:
            self._held = False
            self._lock.__exit__(None, None, None)

    def __exit__(self, *exc) -> None:
        with self._mutex:
            if self._timer is not None:
                self._timer.cancel()
            self._release()
            if self.yielded:
                self._lane.release()
        return None


class JudgesFirst:
    """How many judges of this process are queued or holding the queue; an analysis waits until there are none."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    @contextmanager
    def judging(self) -> Iterator[Callable[[], None]]:
        """Count one judge while inside; yields ``done``, which stops counting it early (a judge that yielded its
        turn: ``TimeSlice(on_yield=done)``). Idempotent."""
        counted = [True]

        def done() -> None:
            with self._changed:
                if counted[0]:
                    counted[0] = False
                    self._count -= 1
                    self._changed.notify_all()

        with self._changed:
            self._count += 1
        try:
            yield done
        finally:
            done()

    def pending(self) -> int:
        with self._changed:
            return self._count

    def wait_clear(self, on_wait: Callable[[int], None] | None = None, poll_s: float = 1.0) -> None:
        """Return once no judge is counted; meanwhile ``on_wait(judges)`` every ``poll_s`` (it may raise to leave)."""
        while True:
            with self._changed:
                count = self._count
                if not count:
                    return
            if on_wait is not None:
                on_wait(count)
            with self._changed:
                if self._count:
                    self._changed.wait(poll_s)


JUDGES = JudgesFirst()  # one per process, like GATE


@contextmanager
def judges_first(lock: Callable[[], AbstractContextManager], on_wait: Callable[[int], None] | None = None, *,
                 time_sliced: bool = False, judges: JudgesFirst | None = None) -> Iterator[None]:
    """Hold a fresh ``lock()`` for an analysis once no judge is counted, giving the turn back (and waiting again)
    whenever a judge was counted by the time it came; ``time_sliced``: held as a ``TimeSlice``."""
    judges = judges if judges is not None else JUDGES
    while True:
        judges.wait_clear(on_wait)
        held = TimeSlice(lock()) if time_sliced else lock()
        with held:
            if judges.pending():  # a judge queued while this analysis waited for its turn: the judge goes first
                continue
            yield
            return


__all__ = ["GATE", "JUDGES", "LANE_SLOTS", "LATE_CPU_S", "QUANTUM_S", "RETRY_S", "JudgesFirst", "LearnerBusy",
           "LearnerGate", "TimeSlice", "judges_first"]
