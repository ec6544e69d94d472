"""Fair judging when a class submits at once: one place in the queue per learner, and a long judge yields its turn.

The judges queue on one FIFO lock (the device lock, then the CPU lock: ``service.default_locks``).
FIFO alone lets one learner's never-ending kernel hold everyone behind it for the whole wall-clock
limit (measured: two 20-second time-outs sat ahead of most of a class of 16). Two rules here:

- ``LearnerGate``: a learner has at most one submission queued or being judged in this process
  (a second tab's Run is refused until the first verdict), so the queue takes the learners in
  turn, round-robin, however fast one of them presses Run.
- ``TimeSlice``: in the simulator, a judge holds the lock for at most ``QUANTUM_S``; a judge still
  running then keeps running (its limits still apply) in a background lane of ``LANE_SLOTS``
  children, and the lock goes to the next learner. The analysis after a verdict (compiler's facts
  and trace) holds the queue the same way, so a compile slowed by a busy machine does not hold
  the judges behind it. Most judges end well inside the quantum, so they
  run one at a time as before; only the long ones (a loop that never ends, a memory hog) overlap.
  On a GPU nothing yields: the lock keeps the device to one kernel so its timing is fair.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager

QUANTUM_S = 2.0  # a judge of the problem set takes about 0.5 s here when the machine is quiet
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
                 lane: threading.BoundedSemaphore | None = None):
        self._lock = lock
        self._quantum_s = quantum_s
        self._lane = lane if lane is not None else _LANE
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
            if not self._held or not self._lane.acquire(blocking=False):
                return  # finished meanwhile, or the lane is full: keep the turn
            self.yielded = True
            self._release()

    def _release(self) -> None:  # under self._mutex
        if self._held:
            self._held = False
            self._lock.__exit__(None, None, None)

    def __exit__(self, *exc) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._mutex:
            self._release()
            if self.yielded:
                self._lane.release()
        return None


__all__ = ["GATE", "LANE_SLOTS", "QUANTUM_S", "LearnerBusy", "LearnerGate", "TimeSlice"]
