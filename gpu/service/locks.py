"""A first-come, first-served lock that tells waiters their place in the queue.

Runs that overlap on one GPU corrupt each other's timings, so every run holds the
device's lock. Waiters are served in arrival order; a waiter that gives up (its
callback raises, e.g. when the user leaves the page) is removed from the queue
without blocking anyone. Pure Python: the app keeps one per device in a cache.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Interval:
    """When one holder held the lock: perf_counter seconds, and its label."""

    label: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class LockState:
    """A lock at one moment: its holder's label (None when free), seconds held, runs waiting."""

    name: str
    holder: str | None
    held_s: float | None
    waiting: int

    @property
    def load(self) -> int:
        """Runs in front of a newcomer: the holder plus everyone waiting."""
        return self.waiting + (1 if self.holder is not None else 0)


def overlaps(intervals: Sequence[Interval]) -> list[tuple[Interval, Interval]]:
    """Neighbouring (by start) intervals that overlap; empty exactly when none overlap."""
    ordered = sorted(intervals, key=lambda i: i.start_s)
    return [(a, b) for a, b in zip(ordered, ordered[1:]) if b.start_s < a.end_s]


class Countdown:
    """Tells a waiter its place so that the queue is seen counting down, whatever the timing.

    A waiter polls (or is woken) and may miss a moment: under load the run ahead of it can
    start and finish between two looks, and its place would jump from 2 straight to
    "running". A FIFO place only ever moves one run at a time (a run leaves the queue or
    the lock, one at a time), so every place between two observations was really held:
    ``see(ahead)`` reports each of them in order, and ``see(0)`` (our turn has come)
    reports down to 1 — "behind the run that has just ended" — before the run starts.
    ``on_wait`` is called on every change and again every ``heartbeat_s`` without one,
    so a caller that has gone away finds out and can raise to leave the queue.
    """

    def __init__(self, on_wait: Callable[[int], None] | None, heartbeat_s: float):
        self._on_wait = on_wait
        self._heartbeat_s = heartbeat_s
        self.last: int | None = None
        self._last_call = 0.0

    def see(self, ahead: int) -> None:
        if self._on_wait is None:
            return
        if self.last is not None and ahead < self.last:
            for place in range(self.last - 1, max(ahead, 1) - 1, -1):  # every place in between, ending at 1 on our turn
                self._report(place)
        elif ahead > 0 and (ahead != self.last or time.perf_counter() - self._last_call >= self._heartbeat_s):
            self._report(ahead)

    def _report(self, place: int) -> None:
        self.last, self._last_call = place, time.perf_counter()
        if self._on_wait is not None:  # see() reports only when there is someone to tell
            self._on_wait(place)


class QueueLock(Protocol):
    """What a run queues on: ``FifoLock`` (one process) or ``devicelock.FileFifoLock`` (every process of a host)."""

    def snapshot(self) -> LockState: ...

    def hold(self, label: str = "run", on_wait: Callable[[int], None] | None = None) -> AbstractContextManager[None]:
        ...


def least_loaded(locks: Sequence[QueueLock]) -> int:
    """Index of the first free lock, else of the one with the shortest queue (lowest index on ties)."""
    if not locks:
        raise ValueError("no locks to choose from")
    loads = [lock.snapshot().load for lock in locks]
    return loads.index(min(loads))


class FifoLock:
    """Mutual exclusion with FIFO order and a visible queue.

    ``hold(label, on_wait)`` waits its turn; while waiting it calls
    ``on_wait(ahead)`` whenever the number of runs ahead changes (and at least every
    ``heartbeat_s``), outside the internal lock, so the callback may raise to abandon.
    The last ``history`` intervals are kept for checking that holders never overlapped.
    """

    def __init__(self, name: str = "gpu", history: int = 256, poll_s: float = 0.25, heartbeat_s: float = 1.0):
        self.name = name
        self._heartbeat_s = heartbeat_s
        self._held_since: float | None = None
        self._cond = threading.Condition()
        self._queue: deque[int] = deque()
        self._holder: str | None = None
        self._tickets = 0
        self._poll_s = poll_s
        self._intervals: deque[Interval] = deque(maxlen=history)

    @property
    def busy(self) -> bool:
        return self._holder is not None

    @property
    def waiting(self) -> int:
        """Runs queued, not counting the one that holds the lock."""
        return len(self._queue)

    def snapshot(self) -> LockState:
        """Who holds the lock, for how long, and how many runs wait (for status lines)."""
        with self._cond:
            held = None if self._held_since is None else time.perf_counter() - self._held_since
            return LockState(self.name, self._holder, held, len(self._queue))

    def intervals(self) -> list[Interval]:
        with self._cond:
            return list(self._intervals)

    def _ahead(self, ticket: int) -> int:
        return self._queue.index(ticket) + (1 if self._holder is not None else 0)

    @contextmanager
    def hold(self, label: str = "run", on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
        """Wait for our turn, then hold the lock for the body of the ``with``.

        ``on_wait(ahead)`` is called with the number of runs ahead of this one (the
        holder included) whenever it changes and at least every ``heartbeat_s`` while
        waiting, so a caller that has gone away finds out and can raise to leave.
        """
        countdown = Countdown(on_wait, self._heartbeat_s)
        with self._cond:
            ticket = self._tickets
            self._tickets += 1
            self._queue.append(ticket)
            first = self._ahead(ticket)
        try:
            countdown.see(first)  # our place on arrival, reported before anything can move it
            while True:
                with self._cond:
                    if self._holder is None and self._queue[0] == ticket:
                        ahead = 0
                    else:
                        self._cond.wait(self._poll_s)  # woken by every release and departure
                        ahead = self._ahead(ticket)
                countdown.see(ahead)  # outside the internal lock: the callback may raise to leave
                if ahead > 0:
                    continue
                with self._cond:
                    if self._holder is None and self._queue[0] == ticket:
                        self._queue.popleft()
                        self._holder = label
                        self._held_since = time.perf_counter()
                        break
        except BaseException:
            with self._cond:  # give up our place without blocking those behind us
                if ticket in self._queue:
                    self._queue.remove(ticket)
                self._cond.notify_all()
            raise
        start = time.perf_counter()
        try:
            yield
        finally:
            with self._cond:
                self._intervals.append(Interval(label, start, time.perf_counter()))
                self._holder = None
                self._held_since = None
                self._cond.notify_all()
