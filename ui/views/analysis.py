"""Write a kernel's compiler facts and memory trace, after the verdict, without holding the page.

The verdict is drawn as soon as the judge ends; the analysis (``gpu.sandbox.service.analyse``: the compiler's
facts, cached by source and target, and the trace) then runs in a background thread of this process, queued on the
same CPU (and, in the simulator, device) locks as every run. It is launched once the verdict is on the learner's
screen: at the page's next look (the fragment's first, a second after the browser drew the verdict, or any later
run of the page), not by the run that kept it. In a class whose browsers draw on the server's own cores
(``benchmarks/class_submit.py``), analyses launched with their verdicts took the cores the other learners' pages
needed to draw theirs (Submit → verdict p50 9.5-11.1 s launched at once, 8.2-8.8 s once seen: three classes each,
alternating); and the analysis of a learner who left is never run. Once launched, an analysis that needs a child
(the caches lack its facts or trace) waits before its turn while other learners' verdicts are still unseen (kept at
most ``VERDICTS_FIRST_S`` before) and while two other analyses' children are at work (``AnalysisJob.verdicts_first``):
side by side, three pairs of class runs, Submit → verdict p50 2.5-3.0 s and p95 2.9-3.4 s held, against 2.8-4.3 s
and 6.9-7.9 s launched as seen; Home's worst load 0.98-1.19 s against 1.08-2.92 s; the facts' p50 14.8-18.1 s
after the verdict against 12.7-17.8 s.

The page shows where it is in a fragment that looks again every second for at most ``BOUND_S`` after the verdict;
then it stops looking and says why the facts are not there (still queued behind N runs, or still running), with a
button to look again. A finished analysis replaces the verdict in the session and reruns the page once (the
editor's line marks).

The jobs are process-wide (``ui/jobs.py``), bounded (``MAX_JOBS``, the oldest finished
dropped; one never looked at again within ``UNSEEN_S`` is dropped as finished), and a newer
submission of the same session cancels its older analysis still queued or not launched.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from gpu.sandbox.verdict import Verdict
from gpu.service import judge_log
from ui.jobs import Jobs

BOUND_S = 20.0  # the page looks for the facts and trace this long after the verdict, then says why they are not there
# An analysis's child waits while another learner's verdict, kept at most this long ago, is not yet on its screen, and
# while this many other analyses' children are at work (``AnalysisJob.verdicts_first``)
VERDICTS_FIRST_S = 5.0
BESIDE_AT_ONCE = 2
POLL_S = 1.0
UNSEEN_S = 600.0  # an analysis not launched this long after its verdict (its learner left) is forgotten
JOB_KEY = "write_kernel.analysis"  # problem key -> this session's analysis token
SENT_KEY = "write_kernel.analysis.sent"  # the judge of the analysis whose panels the next run draws (judge log)


class Cancelled(Exception):
    """A newer submission of the same session took this analysis's place."""


@dataclass
class AnalysisJob:
    """One submission's analysis in a background thread: ``state`` is queued, running, done or failed."""

    problem: str
    source: str
    verdict: Verdict  # the judge's; the thread replaces it with the one carrying the compiler's facts
    trace_test: str | None
    attempt_id: str | None
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    state: str = "queued"
    ahead: int | None = None  # runs ahead in the queue, as the lock last said
    trace: Any = None
    error: str = ""
    started_at: float = field(default_factory=time.monotonic)
    finished_at: float | None = None
    cancelled: bool = False
    launched: bool = False
    looks: int = 0  # runs of the page that drew where it is (``look``)
    judge: tuple[str, str | None] = ("", None)  # the judge's token and learner, for the judge log's milestones
    others: Jobs | None = None  # every session's analyses (``jobs()``): ``unseen`` and ``beside`` count among them

    def mark(self, event: str) -> None:
        if self.judge[0]:
            judge_log.mark(event, self.judge[0], self.judge[1])

    def start(self) -> None:
        self.launched = True
        self.mark("analysis-launched")
        threading.Thread(target=self._run, name=f"analysis-{self.token[:8]}", daemon=True).start()

    def cancel(self, why: str) -> None:
        """A newer submission took its place: a queued one leaves the queue at its next look, one not launched
        ends here."""
        if not self.launched:
            self.state, self.error, self.finished_at = "failed", why, time.monotonic()
        elif self.state == "queued":
            self.cancelled = True

    def look(self) -> bool:
        """A run drew where it is. The first such run is the one that drew its verdict; every later one (the
        fragment's next poll, a second after, or any later run of the page) comes after the browser had the verdict:
        it is then launched, if it was not yet. Whether this look is such a later one. (Counted, not told by the
        kind of run: the verdict itself is drawn by a rerun of Write a kernel's Run panel, a fragment too.)"""
        self.looks += 1
        if self.looks > 1 and not self.launched:
            self.start()
        return self.looks > 1

    def _waiting(self, ahead: int) -> None:  # the lock's countdown; raising leaves the queue cleanly
        if self.cancelled:
            raise Cancelled()
        self.ahead = ahead

    def unseen(self) -> int:
        """Other learners' verdicts kept less than ``VERDICTS_FIRST_S`` ago whose pages have not looked again (their
        analyses not yet launched): verdicts still being drawn."""
        if self.others is None:
            return 0
        now = time.monotonic()
        return self.others.count(lambda j: j is not self and not j.launched and j.state == "queued"
                                 and now - j.started_at < VERDICTS_FIRST_S)

    def beside(self) -> int:
        """Other analyses whose child is at work (holding the queue or gone on beside it)."""
        if self.others is None:
            return 0
        return self.others.count(lambda j: j is not self and j.state == "running")

    def verdicts_first(self, poll_s: float = 0.2) -> None:
        """Before this analysis's child takes the cores: wait while ``unseen()`` verdicts are being drawn, and while
        ``BESIDE_AT_ONCE`` other analyses' children are at work. An analysis's child runs at a higher priority than
        a class's browsers where they share the server's cores (``benchmarks/class_submit.py``): launched as each
        verdict was seen, the analyses took the cores the later verdicts' pages needed; held until every verdict was
        seen, five children then ran side by side and Home's loads slowed past 2 s. Bounded by ``VERDICTS_FIRST_S``
        per verdict (a page whose learner left stops counting then) and by the children's own limits. Raises
        ``Cancelled`` when a newer submission took this one's place."""
        self.state = "queued"  # (again, after a turn given back to a judge: not at work meanwhile)
        while self.unseen() or self.beside() >= BESIDE_AT_ONCE:
            if self.cancelled:
                raise Cancelled()
            time.sleep(poll_s)

    def _relock(self):
        from contextlib import ExitStack, contextmanager

        import gpu
        from gpu.service.devicelock import FileFifoLock, default_lock_dir, usable_dir

        @contextmanager
        def held():
            self.verdicts_first()  # (only an analysis that needs a child gets here: the caches' answers do not wait)
            directory = usable_dir(default_lock_dir())
            label = f"write-a-kernel {self.problem} analysis"
            with ExitStack() as stack:
                if gpu.BACKEND.simulated:  # the simulator's kernels use the cores CPU benchmarks time
                    stack.enter_context(FileFifoLock(name="gpu0", directory=directory).hold(label, self._waiting))
                stack.enter_context(FileFifoLock(name="cpu", directory=directory).hold(label, self._waiting))
                self.state = "running"
                self.mark("analysis-turn")
                yield

        return held()

    def _run(self) -> None:
        from gpu.sandbox.service import Queueing, Submission, analyse

        try:
            queueing = Queueing(analysis_lock=self._relock, on_judges=self._waiting)  # verdicts first, then its turn
            judged = Submission(self.verdict, None, None, attempt_id=self.attempt_id)
            done = analyse(self.problem, self.source, judged, queueing=queueing, trace_test=self.trace_test,
                           attempt_id=self.attempt_id)
            self.verdict, self.trace = done.verdict, done.trace
            self.state = "done"
        except Cancelled:
            self.state, self.error = "failed", "a newer submission took its place"
        except Exception as exc:  # never lose the page over the analysis: say why
            self.state, self.error = "failed", f"{type(exc).__name__}: {str(exc)[:200]}"
        self.finished_at = time.monotonic()
        self.mark(f"analysis-{self.state}")


@st.cache_resource(max_entries=1, show_spinner=False)
def jobs() -> Jobs[AnalysisJob]:
    return Jobs()


def start(problem: str, source: str, verdict: Verdict, trace_test: str | None, attempt_id: str | None,
          judge: tuple[str, str | None] = ("", None)) -> None:
    """The analysis of this session's verdict for ``problem``, launched once the verdict is seen (``show``),
    cancelling its older one still queued or not launched. ``judge``: the judge's token and learner, under which
    the judge log (``gpu/service/judge_log.py``) gets the analysis's milestones."""
    mine = st.session_state.setdefault(JOB_KEY, {})
    older = jobs().get(mine.get(problem))
    if older is not None:
        older.cancel("a newer submission took its place")
    now = time.monotonic()
    jobs().forget(lambda j: not j.launched and now - j.started_at > UNSEEN_S)
    job = AnalysisJob(problem, source, verdict, trace_test, attempt_id, judge=judge, others=jobs())
    jobs().add(job)
    mine[problem] = job.token


def sent() -> None:
    """The run that drew an analysis's panels has sent them to the browser: the judge log's ``analysis-sent``."""
    token, learner = st.session_state.pop(SENT_KEY, None) or ("", None)
    if token:
        judge_log.mark("analysis-sent", token, learner)


def pending(problem: str) -> AnalysisJob | None:
    """This session's analysis for ``problem`` not yet shown, or None."""
    return jobs().get(st.session_state.get(JOB_KEY, {}).get(problem))


def show(problem: str, on_done, stale: Callable[[], bool] | None = None) -> None:
    """Where the analysis of ``problem``'s verdict is; when done, ``on_done(job)`` keeps it and the page reruns.
    ``stale``: whether the page drew parts of itself before this verdict (the editor's line marks): at the
    first look after the run that drew the verdict (the browser has it), the page is drawn again. (The rest, such as the
    problem picker's solved / tried / new, is drawn again with the facts.)"""
    job = pending(problem)
    if job is None:
        return
    polling = time.monotonic() - job.started_at < BOUND_S and job.state not in ("done", "failed")

    def body() -> None:
        seen = job.look()
        if seen and stale is not None and stale():
            st.rerun(scope="app")
        if job.state in ("done", "failed"):
            st.session_state.get(JOB_KEY, {}).pop(problem, None)
            job.mark("analysis-seen")
            st.session_state[SENT_KEY] = job.judge  # marked once the page's rerun has drawn them (``sent``)
            on_done(job)
            st.rerun(scope="app")
        if polling and time.monotonic() - job.started_at >= BOUND_S:
            st.rerun(scope="app")  # the bound passed: draw the page again without looking every second
        if job.state == "queued":
            runs = f"{job.ahead} run{'s' if job.ahead != 1 else ''}" if job.ahead else "the runs"
            line = f"The compiler's facts and the memory trace are queued behind {runs} on this server"
        else:
            line = "The compiler's facts and the memory trace are being made"
        if time.monotonic() - job.started_at < BOUND_S:
            st.info(f"{line} — they appear here when ready (at most {BOUND_S:.0f} s after the verdict, or this "
                    "says why not).", icon=":material/hourglass_top:")
        else:
            st.warning(f"**Not ready within {BOUND_S:.0f} s**: {line.lower()[0] + line[1:]} (a class is submitting). "
                       "They are still coming: press the button to look again.", icon=":material/schedule:")
            st.button("Look again", key=f"write_kernel.analysis.again.{problem}", icon=":material/refresh:")

    st.fragment(body, run_every=POLL_S if polling else None)()


__all__ = ["BOUND_S", "UNSEEN_S", "AnalysisJob", "jobs", "pending", "sent", "show", "start"]
