"""Write a kernel's judge, in a background thread that outlives the page run that asked for it.

A judge that ran inside the page's run lost its verdict whenever the page was rerun meanwhile (an edit, a
click, the code editor sending its text): Streamlit stopped that run at its next element or session-state
access, so it could neither draw the verdict nor say it was done, and the newer run waited for ever
("still being judged"). Now the Run press starts a ``JudgeJob`` (``ui/jobs.py``) and the session keeps its
token; every run of the page follows the session's job — its place in the queue, then its verdict — and the
first run that sees it finished keeps the verdict in the session (``run_panel.follow``). One job per
session at a time: a press while one is being judged stays pending (``Clicks``) and is judged after it,
never lost, never twice.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from gpu.sandbox.isolation import SandboxStatus
from gpu.sandbox.service import Submission
from gpu.service import judge_log
from gpu.service.learners import LearnerId
from ui.jobs import Jobs
from ui.run_record import runs_ahead

JUDGE_KEY = "write_kernel.judge"  # this session's judge: {"token": the job's token until its verdict is kept}
CLICKS_KEY = "write_kernel.clicks"  # this session's Clicks
FOLLOW_S = 0.25  # how often a run following a job looks at it (and so how soon a stopped run lets go)
# A queued judge's place is drawn again at most this often (its first place and its turn at once): in a class's burst
# each page's place fell by one every few tenths of a second, and each new place was two elements (the page's line and
# the sidebar's) for a browser to draw before it could draw the verdict behind them.
RECOUNT_S = 1.0
_START = threading.Lock()  # one start per press, whichever of a stopped run and its newer one gets here first


@dataclass
class Clicks:
    """Run presses, counted by the button's callback, and how many were handed to a judge. Changed in place: a
    stopped run cannot write the session's state, but it can change an object kept there."""

    pressed: int = 0
    handled: int = 0

    @property
    def pending(self) -> bool:
        return self.pressed > self.handled


def clicks() -> Clicks:
    return st.session_state.setdefault(CLICKS_KEY, Clicks())


def count_click() -> None:
    """The Run button's callback: Streamlit calls it once per press, before the run the press starts."""
    clicks().pressed += 1


@dataclass
class JudgeJob:
    """One submission's judge in a background thread: ``state`` is queued, running, done or failed; ``result`` the
    judged submission (done), ``error`` why there is none (failed: a bad test name, the learner busy elsewhere,
    or the judge's own failure)."""

    problem: str
    source: str
    learner: LearnerId | None
    sandbox: SandboxStatus
    locks: list[tuple[Any, str]]  # (FileFifoLock, what it serialises), taken in order: device first, then CPU
    trace_test: str | None = None  # carried to the analysis that follows a verdict
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    state: str = "queued"
    ahead: int | None = None  # runs ahead in the queue, as the lock last said
    waiting_for: str = ""  # the queue it waits in
    most_ahead: int = 0  # the most runs it was behind (0: it never waited)
    queued_s: float | None = None  # how long it waited for its turn, when it waited
    result: Submission | None = None
    error: str = ""
    finished_at: float | None = None
    finished: threading.Event = field(default_factory=threading.Event)

    @property
    def waited(self) -> str:
        """How long it waited for its turn, for the verdict's line ("" when it never waited)."""
        if not self.most_ahead or self.queued_s is None:
            return ""
        return f"waited {self.queued_s:.1f} s in the queue, behind {runs_ahead(self.most_ahead)}"

    @property
    def who(self) -> str | None:
        return self.learner.name if self.learner is not None else None

    def start(self) -> None:
        judge_log.mark("received", self.token, self.who)
        threading.Thread(target=self._run, name=f"judge-{self.token[:8]}", daemon=True).start()

    @contextmanager
    def _held(self):
        from contextlib import ExitStack

        label = f"write-a-kernel {self.problem}"
        arrived = time.monotonic()
        with ExitStack() as stack:
            for lock, what in self.locks:
                stack.enter_context(lock.hold(label, on_wait=self._waiting(what)))
            if self.most_ahead:
                self.queued_s = time.monotonic() - arrived
            self.state, self.ahead = "running", None
            judge_log.mark("turn", self.token, self.who)
            yield

    def _waiting(self, what: str):
        def seen(ahead: int) -> None:
            self.waiting_for, self.ahead, self.most_ahead = what, ahead, max(self.most_ahead, ahead)

        return seen

    def _run(self) -> None:
        from gpu.core.limits import InputError
        from gpu.problems import get
        from gpu.sandbox.fairness import LearnerBusy
        from gpu.sandbox.service import Queueing, judge
        from gpu.sandbox.trace_child import test_case

        try:
            if self.trace_test is not None:  # InputError naming the problem's tests, before anything runs
                test_case(get(self.problem), self.trace_test)
            self.result = judge(self.problem, self.source, learner=self.learner, sandbox=self.sandbox,
                                queueing=Queueing(judge_lock=self._held))
            self.state = "done"
        except (InputError, LearnerBusy) as exc:
            self.state, self.error = "failed", str(exc)
        except Exception as exc:  # never lose the page over the judge: say why
            self.state, self.error = "failed", f"the judge failed: {type(exc).__name__}: {str(exc)[:300]}"
        finally:
            self.finished_at = time.monotonic()
            status = self.result.verdict.status if self.result is not None else "failed"
            judge_log.mark("verdict", self.token, self.who, status=status)
            self.finished.set()


@st.cache_resource(max_entries=1, show_spinner=False)
def jobs() -> Jobs[JudgeJob]:
    return Jobs()


def claim() -> dict[str, str]:
    """This session's hold on its judge: ``{"token": ...}`` until the verdict is kept. Changed in place only."""
    return st.session_state.setdefault(JUDGE_KEY, {})


def current() -> JudgeJob | None:
    """This session's judge whose verdict is not yet kept, or None."""
    return jobs().get(claim().get("token"))


def start(make: Callable[[], JudgeJob], requested: bool) -> JudgeJob | None:
    """Start ``make()`` (a JudgeJob) for a pending press (or ``requested``: Ctrl+Enter), unless this session has
    a judge whose verdict is not kept yet: the press then waits for it. Every press so far is handed to the job."""
    mine, pressed = claim(), clicks()  # the session's state first: a stopped run stops here, having started nothing
    with _START:
        if jobs().get(mine.get("token")) is not None or not (pressed.pending or requested):
            return None
        job = make()
        jobs().add(job)
        job.start()
        mine["token"], pressed.handled = job.token, pressed.pressed
    return job


def forget(job: JudgeJob, mine: dict[str, str] | None = None) -> None:
    """The job is finished and its verdict kept (by the caller): the session lets go of it. ``mine``: the session's
    ``claim()``, read before the verdict's analysis was started (so that nothing after it can stop this run)."""
    mine = claim() if mine is None else mine
    if mine.get("token") == job.token:
        mine.pop("token", None)


__all__ = ["CLICKS_KEY", "FOLLOW_S", "JUDGE_KEY", "RECOUNT_S", "Clicks", "JudgeJob", "clicks", "count_click", "current",
           "claim", "forget", "jobs", "start"]
