"""A judge's process started before its submission: the next one is always past Python's start and the lab's imports.

A judge in a fresh sandboxed child takes about 0.5 s here, of which about 0.4 s is the child importing the lab
(numba, NumPy, the simulator) before it reads its request. A long-running server (the app) keeps such children
started ahead, one per core up to 4, 16 on a class's demo (``default_spares``): ``take`` hands out the oldest and
asks for another, so the judges behind it find their processes ready. (Cold, each judge held the queue through its
own imports: one core did all of it.) A judge's replacement waits until no child of the lab, judge or analysis, has
been at work for a while (``default_quiet``; ``AT_WORK``, kept by ``gpu.sandbox.judging``), even when none is left:
a class's burst of judges is served by the spares imported while its learners typed, and the replacements import
after the burst and its analyses, not on the cores its verdicts, analyses and pages need. (Replaced at once when
none was left, a class's 16 replacements imported together at the judges' priority: about 9 CPU-seconds in the 12 s
from the first press to the middle verdict, benchmarks/class_submit.md.) On a class's demo the quiet is 8 s, not 2
(``default_quiet``): after a class's last analysis its 16 pages draw the facts and traces, at the lowest share of
the cores, and replacements importing then took them (about 7 CPU-seconds, ``benchmarks/class_cpu.py``): the facts'
p50 9.9-11.5 s after the verdict against 13.6-14.9 s (three pairs of classes, alternating,
benchmarks/class_submit.md). A judge that finds none left starts its own, which costs it what its replacement would
have; with none left, a replacement waits at most ``LONGEST_WAIT_S``, so a class that never goes quiet still gets
its spares back. (One learner alone keeps 2 s: their one page draws at once, and a learner pressing Run every few
seconds would otherwise use up the spares.) The analyses' keeper refills at once when none is left: its spares serve
analyses already asked for.

Nothing about isolation changes: each submission still gets a process, a sandbox, cgroups and a work folder of
its own, used once and ended (``isolation.Started``); the spare holds no learner's code or seed until its request
is sent; its wall-clock limit counts from then. A spare whose limits, settings or sandbox no longer match the
request's is ended and replaced; one that died meanwhile is replaced. The CLI (one judge, then exit) keeps none:
``KEEPER`` is switched on by the app (``judging.keep_warm``) and ends its spare at exit.

Spares are started by one thread that lives as long as the process (``_starter``), never by the thread that
asks: bubblewrap's ``--die-with-parent`` is the kernel's parent-death signal, which follows the *thread* that
started the process, and Streamlit runs every script run in a thread that ends with it. (Started from a page's
thread, a class's spares were killed by SIGKILL as soon as the page run that started them ended.)
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from gpu.core import settings as _settings
from gpu.sandbox import isolation
from gpu.sandbox.isolation import Limits, SandboxStatus

MAX_SPARES = 32
CLASS_SPARES = 16  # a class's demo: its learners press Run within a moment of each other
QUIET_S = 2.0  # a spare is replaced once no judge or analysis has been at work for this long (``default_quiet``)
CLASS_QUIET_S = 8.0  # ... on a class's demo: its pages then draw the analyses' facts and traces first
# ... or, with none left, after this long whatever the activity: a class that never goes quiet for that long would
# otherwise judge every Run in a process started then, each holding the queue through its imports (about 0.5 s)
LONGEST_WAIT_S = 20.0


def default_spares() -> int:
    """``KERNEL_LAB_SPARE_JUDGES`` where set (at most ``MAX_SPARES``); on a class's demo ``CLASS_SPARES``; else as
    many as this machine has cores, up to 4: a queue of judges then imports on every core while the one holding
    the queue judges (one spare overlapped only the next judge's imports with this judge's few tens of
    milliseconds). Each waiting spare holds about 150 MB. A class presses Run together: with two spares, the
    judges after the first two waited for their processes' imports (about 0.5 s of CPU each, on cores the whole
    class shares), one after another; the spares a class's demo keeps import while its learners type, one per
    learner of a class of 16 (benchmarks/class_submit.md)."""
    chosen = _settings.settings()
    if chosen.spare_judges is not None:
        return min(chosen.spare_judges, MAX_SPARES)
    if chosen.class_mode:
        return CLASS_SPARES
    return max(1, min(4, os.cpu_count() or 1))


def default_quiet() -> float:
    """How long no judge or analysis must have been at work before a spare is replaced: ``CLASS_QUIET_S`` on a
    class's demo, where 16 pages draw their facts and traces after the class's last analysis (replacements importing
    then took about 7 CPU-seconds from them, benchmarks/class_submit.md), else ``QUIET_S``."""
    return CLASS_QUIET_S if _settings.settings().class_mode else QUIET_S


class Activity:
    """The lab's sandboxed children at work (judges and analyses, ``running``) and when the last of them ended: a
    judge's replacement waits until none has run for ``quiet_s`` (``SpareKeeper``)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._running = 0
        self._since = float("-inf")  # when the last one ended (time.monotonic)

    @contextmanager
    def running(self) -> Iterator[None]:
        with self._mutex:
            self._running += 1
        try:
            yield
        finally:
            with self._mutex:
                self._running -= 1
                self._since = time.monotonic()

    def quiet_for(self) -> float:
        """Seconds since the last child ended, none running now (0.0 while one runs)."""
        with self._mutex:
            return 0.0 if self._running else time.monotonic() - self._since


class SpareKeeper:
    """Up to ``capacity`` started, unused judge children (for the command line and sandbox last asked for); off
    until ``enable``."""

    def __init__(self, capacity: int | None = None, quiet_s: float | None = None, activity: Activity | None = None,
                 longest_wait_s: float = LONGEST_WAIT_S) -> None:
        self.capacity = capacity if capacity is not None else default_spares()
        self.quiet_s = quiet_s if quiet_s is not None else default_quiet()
        self.longest_wait_s = longest_wait_s  # with none left, replace after this long, quiet or not (0: at once)
        self.activity = activity if activity is not None else Activity()  # children at work hold a replacement
        self._spares: list[tuple[tuple, isolation.Started]] = []
        self._mutex = threading.Lock()
        self._enabled = False
        self._asks: queue.Queue = queue.Queue()
        self._starter: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self._enabled

    def enable(self) -> None:
        with self._mutex:
            if self._enabled:
                return
            self._enabled = True
            if self._starter is None:
                self._starter = threading.Thread(target=self._start_spares, name="kernel-lab-spare-starter",
                                                 daemon=True)
                self._starter.start()
                atexit.register(self.close)

    @staticmethod
    def _key(argv: list[str], simulated: bool, sandbox: SandboxStatus) -> tuple:
        # the child's environment (the simulator and its tier, CUDA's variables) is part of what it was started as
        env = tuple(sorted(isolation.child_env(simulated, "").items()))
        return (tuple(argv), env, simulated, sandbox.works, sandbox.how)

    def _sort(self, key: tuple) -> tuple[list[isolation.Started], list[isolation.Started]]:
        """Under the mutex: keep the live spares started for ``key`` (oldest first), return them, and take out the
        rest (started for other limits or settings, or died while they waited) for the caller to end."""
        fit = [child for k, child in self._spares if k == key and child.alive()]
        unfit = [child for k, child in self._spares if not (k == key and child.alive())]
        self._spares = [(key, child) for child in fit]
        return fit, unfit

    def _pop(self, key: tuple) -> isolation.Started | None:
        """The oldest live spare started for ``key``, if any; every spare that does not fit is ended."""
        with self._mutex:
            fit, unfit = self._sort(key)
            spare = self._spares.pop(0)[1] if fit else None
        for old in unfit:
            old.discard()
        return spare

    def take(self, argv: list[str], limits: Limits, simulated: bool, sandbox: SandboxStatus) -> isolation.Started:
        """A started child for this command line (the oldest spare when one fits, else a new one, started here:
        this thread waits for it), and, when enabled, its replacement asked for."""
        key = self._key(argv, simulated, sandbox)
        child = self._pop(key) or isolation.start(argv, limits, simulated, sandbox)
        if self._enabled:
            self._asks.put((key, argv, limits, simulated, sandbox))
        return child

    def prime(self, argv: list[str], limits: Limits, simulated: bool, sandbox: SandboxStatus) -> None:
        """Have ``capacity`` spares for this command line waiting (a page calls it on every run: cheap when they
        do)."""
        if not self._enabled:
            return
        key = self._key(argv, simulated, sandbox)
        with self._mutex:
            ready = sum(1 for k, child in self._spares if k == key and child.alive())
        for _ in range(self.capacity - ready):
            self._asks.put((key, argv, limits, simulated, sandbox))

    def settle(self) -> None:
        """Wait until every spare asked for so far has been started (or found not needed): for tests."""
        self._asks.join()

    def _start_spares(self) -> None:
        while True:
            key, argv, limits, simulated, sandbox = self._asks.get()
            try:
                self._start_one(key, argv, limits, simulated, sandbox)
            finally:
                self._asks.task_done()

    def _wait_for_quiet(self, key: tuple) -> None:
        """Hold a replacement until no child has been at work for ``quiet_s`` (``activity``): a class's burst of
        judges is served by the spares started while its learners typed, and the replacements' imports (about 0.5 s
        of CPU each) come after the burst and its analyses rather than on the cores they and the pages need. None
        left: no longer than ``longest_wait_s``."""
        asked = time.monotonic()
        while self._enabled:
            if time.monotonic() - asked >= self.longest_wait_s:
                with self._mutex:
                    if not any(k == key and child.alive() for k, child in self._spares):
                        return
            wait = self.quiet_s - self.activity.quiet_for()
            if wait <= 0:
                return
            time.sleep(min(wait, 0.25))

    def _start_one(self, key: tuple, argv: list[str], limits: Limits, simulated: bool,
                   sandbox: SandboxStatus) -> None:
        self._wait_for_quiet(key)
        with self._mutex:
            fit, unfit = self._sort(key)
        for old in unfit:
            old.discard()
        if not self._enabled or len(fit) >= self.capacity:
            return  # asked more than once (every page run asks), or closed meanwhile
        try:
            fresh = isolation.start(argv, limits, simulated, sandbox)
        except (OSError, RuntimeError):  # no spare this time: the next take starts its own child
            return
        with self._mutex:
            keep = self._enabled and len(self._spares) < self.capacity
            if keep:
                self._spares.append((key, fresh))
        if not keep:
            fresh.discard()  # closed meanwhile

    def spares(self) -> int:
        with self._mutex:
            return len(self._spares)

    def close(self) -> None:
        """End every spare and keep none from now on (at exit; in tests). The starter thread stays, idle."""
        with self._mutex:
            held, self._spares = self._spares, []
            self._enabled = False
        for _, child in held:
            child.discard()


AT_WORK = Activity()  # the lab's judges and analyses (gpu.sandbox.judging): a judge's replacement waits for quiet
KEEPER = SpareKeeper(activity=AT_WORK)  # one per process: the sessions of one server share it
# The analyses' own spares (the trace's simulator is chosen before the imports, so a judge's spare cannot serve one):
# an analysis is a few tens of milliseconds of tracing after about 0.4 s of imports, and a class's verdicts bring a
# burst of them. Two: one is taken while the next imports; each waiting spare holds about 150 MB. Refilled at once
# when none is left: the analyses after a class's verdicts are already asked for.
ANALYSES = SpareKeeper(capacity=min(2, os.cpu_count() or 1), activity=AT_WORK, longest_wait_s=0.0)

__all__ = [
    "ANALYSES", "AT_WORK", "CLASS_QUIET_S", "CLASS_SPARES", "KEEPER", "LONGEST_WAIT_S", "MAX_SPARES", "QUIET_S",
    "Activity", "SpareKeeper", "default_quiet", "default_spares",
]
