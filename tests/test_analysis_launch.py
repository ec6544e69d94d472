"""Write a kernel's facts and trace are launched once the verdict is on screen (ui/views/analysis.py), not by the run
that kept it: in a class the verdicts are drawn before the analyses take the cores, and a learner who left costs
nothing."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gpu.sandbox.verdict import Verdict
from tests.analysis_wait import wait_for_analysis
from ui.jobs import Jobs
from ui.views.analysis import BESIDE_AT_ONCE, JOB_KEY, UNSEEN_S, VERDICTS_FIRST_S, AnalysisJob, Cancelled

WRITE = str(Path(__file__).resolve().parent.parent / "pages/9_Write_a_kernel.py")


def _job(monkeypatch) -> tuple[AnalysisJob, list[str]]:
    launched: list[str] = []
    monkeypatch.setattr(AnalysisJob, "_run", lambda self: launched.append(self.token))
    job = AnalysisJob("vector-add", "source", Verdict.start("vector-add", "simulator"), None, None)
    return job, launched


def _settle(launched: list[str], count: int) -> None:
    deadline = time.monotonic() + 10
    while len(launched) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def test_the_run_that_drew_the_verdict_does_not_launch_it_the_next_look_does(monkeypatch):
    job, launched = _job(monkeypatch)
    # the run that drew the verdict: a full run, or (a press) the Run panel's own rerun, a fragment like the poll
    assert job.look() is False
    assert not job.launched and launched == []
    assert job.look() is True  # the next look, full run or the fragment's poll: the browser had the verdict
    _settle(launched, 1)
    assert job.launched and launched == [job.token]


def test_later_looks_do_not_launch_it_again(monkeypatch):
    job, launched = _job(monkeypatch)
    for _ in range(5):
        job.look()
    _settle(launched, 1)
    time.sleep(0.1)
    assert launched == [job.token]  # once


def test_a_newer_submission_ends_one_never_launched_and_stops_one_queued(monkeypatch):
    waiting, _ = _job(monkeypatch)
    waiting.cancel("a newer submission took its place")
    assert (waiting.state, waiting.error) == ("failed", "a newer submission took its place")
    assert waiting.finished_at is not None  # finished: the bounded list may drop it
    queued, _ = _job(monkeypatch)
    queued.launched = True
    queued.cancel("a newer submission took its place")
    assert queued.cancelled and queued.state == "queued"  # its thread leaves the queue at its next look


def test_jobs_forget_the_stale_and_keep_the_rest(monkeypatch):
    jobs: Jobs[AnalysisJob] = Jobs()
    left, _ = _job(monkeypatch)
    left.started_at -= UNSEEN_S + 1
    kept, _ = _job(monkeypatch)
    for job in (left, kept):
        jobs.add(job)
    now = time.monotonic()
    jobs.forget(lambda j: not j.launched and now - j.started_at > UNSEEN_S)
    assert jobs.get(left.token) is None and jobs.get(kept.token) is kept and len(jobs) == 1


def _class(monkeypatch, count: int) -> tuple[list[AnalysisJob], Jobs[AnalysisJob]]:
    """``count`` analyses of one server, each knowing the others (as ``analysis.start`` makes them)."""
    everyone: Jobs[AnalysisJob] = Jobs()
    made = []
    for _ in range(count):
        job, _ = _job(monkeypatch)
        job.others = everyone
        everyone.add(job)
        made.append(job)
    return made, everyone


def test_an_analysis_counts_the_other_verdicts_still_being_drawn(monkeypatch):
    (mine, drawing, seen, replaced, old), _ = _class(monkeypatch, 5)
    seen.launched = True  # its page looked again: the browser had the verdict
    replaced.cancel("a newer submission took its place")  # never launched: ended
    old.started_at -= VERDICTS_FIRST_S + 1  # kept long ago and never seen: its learner left
    assert mine.unseen() == 1  # ``drawing`` alone; never itself
    drawing.launched = True
    assert mine.unseen() == 0
    lone, _ = _job(monkeypatch)  # one that knows no others (a test's, a CLI's)
    assert lone.unseen() == 0


def test_an_analysis_waits_for_the_verdicts_being_drawn_then_goes(monkeypatch):
    (mine, drawing), _ = _class(monkeypatch, 2)
    went = threading.Event()
    waiter = threading.Thread(target=lambda: (mine.verdicts_first(poll_s=0.01), went.set()), daemon=True)
    waiter.start()
    assert not went.wait(0.2)  # the other page has not drawn its verdict yet
    drawing.launched = True  # now it has, and looked again
    assert went.wait(10)


def test_an_analysis_waits_while_two_others_are_at_work(monkeypatch):
    (mine, first, second), _ = _class(monkeypatch, 3)
    for other in (first, second):
        other.launched, other.state = True, "running"  # seen, and their children at work
    assert mine.unseen() == 0 and mine.beside() == BESIDE_AT_ONCE
    went = threading.Event()
    threading.Thread(target=lambda: (mine.verdicts_first(poll_s=0.01), went.set()), daemon=True).start()
    assert not went.wait(0.2)
    first.state = "done"
    assert went.wait(10)


def test_an_analysis_that_gave_its_turn_back_is_not_counted_at_work_while_it_waits_again(monkeypatch):
    """A judge queued while an analysis waited for its turn: the analysis gives the turn back (fairness.judges_first)
    and waits again, no longer at work. Counted as at work, three such would wait for each other for ever."""
    (mine, other), _ = _class(monkeypatch, 2)
    mine.launched = other.launched = True
    mine.state = other.state = "running"  # their turns came, then each gave it back to a judge
    mine.verdicts_first(poll_s=0.01)  # waits for nothing: one other "at work" is under BESIDE_AT_ONCE
    assert mine.state == "queued" and other.beside() == 0


def test_an_analysis_waiting_for_the_verdicts_leaves_when_replaced(monkeypatch):
    (mine, _drawing), _ = _class(monkeypatch, 2)
    mine.launched = True
    mine.cancel("a newer submission took its place")
    with pytest.raises(Cancelled):
        mine.verdicts_first(poll_s=0.01)


def test_a_submissions_analysis_waits_for_the_page_to_look_again(isolated):
    from ui.views.analysis import jobs

    at = AppTest.from_file(WRITE, default_timeout=120).run()
    at.button(key="write_kernel.run").click().run()
    assert not at.exception, at.exception
    assert any(e.value.startswith("**Wrong result**") for e in at.error)  # the starter leaves the sum to you
    job = jobs().get(at.session_state[JOB_KEY]["vector-add"])
    assert job is not None and not job.launched
    assert not [t for t in threading.enumerate() if t.name == f"analysis-{job.token[:8]}"]
    wait_for_analysis(at)  # its next run launches it; then the facts and trace arrive
    assert job.launched and job.state == "done"
    assert any("What the compiler says" in m.value for m in at.markdown)
