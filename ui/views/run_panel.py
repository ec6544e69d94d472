"""Write a kernel's Run panel: the Run button, where the session's judge is, the verdict, the next problem and the
leaderboard, in one fragment that a press reruns alone (``run_panel``), and the following of a judge to its verdict
(``follow``). The widgets it draws with are in ``ui/views/write_kernel.py``.
"""

from __future__ import annotations

import time

import streamlit as st

import gpu
from gpu.problems import problems
from gpu.problems.base import Problem
from gpu.sandbox.isolation import SandboxStatus
from gpu.sandbox.service import Submission
from gpu.service import judge_log
from gpu.service.learners import LearnerId
from ui.components.code_editor import EditorResult
from ui.views import judge_job
from ui.views.judge_job import JudgeJob
from ui.views.write_kernel import (
    ANALYSIS_FOLLOWS,
    PROBLEM_KEY,
    analysed,
    marks_stale,
    show_leaderboard,
    show_verdict,
    submission_key,
    waited_key,
)


@st.fragment
def run_panel(problem: Problem, edited: EditorResult, learner: LearnerId | None, status: SandboxStatus,
              traced_test: str | None, can_run: bool, board: str) -> None:
    """The Run button, where the judge is, the verdict, the next problem and the leaderboard: a fragment, so that a
    press reruns this panel, not the page. A press that reran the whole page cost its browser 0.3-0.4 s of
    JavaScript before the verdict, and the server the page's script: in a class whose browsers draw on the server's
    own cores (``benchmarks/class_submit.py``), Submit → verdict p50 3.5, 3.6 and 3.1 s with the panel against 5.0,
    4.7 and 5.9 s without (three pairs of runs, alternating). The page above is drawn again when it must be: at once
    after a verdict the editor marks without facts (a refusal), with the facts and trace otherwise
    (``ui/views/analysis.py``).

    ``edited``: the editor as the page's last full run read it. Every change of the draft reaches the server as a
    rerun of the page (on a pause in typing, on leaving the editor), and a press's run of this panel comes after
    it: the press judges the text the editor shows. Its Ctrl+Enter (``edited.run_requested``) is that full run's
    own, acted on there only. ``learner``: whom the submission is filed under; ``board``: the leaderboard's device.
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    from ui.runner import fragment_lines
    from ui.views.progress import mark_stale, progress_of, show_next

    fragment_lines()  # the sidebar's device lines, which the judge's progress rewrites
    context = get_script_run_ctx()
    alone = bool(context is not None and context.fragment_ids_this_run)  # this panel's own rerun, not the page's
    st.button("Run", type="primary", icon=":material/play_arrow:", disabled=not can_run, key="write_kernel.run",
              on_click=judge_job.count_click)
    # The session's judge, if one is running (its queue place, then its verdict); then one for a pending press
    if run_submission(problem, edited.source, learner, status, traced_test,
                      requested=can_run and edited.run_requested and not alone):
        kept = st.session_state[submission_key(problem)].verdict
        if not analysed(kept) and (marks_stale(problem) or mark_stale()):
            st.rerun()  # the editor and the picker above were drawn before this verdict: draw the page again
        # a verdict followed by its facts and trace: the editor's marks are drawn once the verdict is seen, the
        # picker's solved / tried / new with the facts (ui/views/analysis.py), so a class's pages draw their verdicts
        # first (in a class of 16 a page redrawn here drew its verdict 9-15 s late)
    done = st.session_state.get(submission_key(problem))
    if done is not None:
        show_verdict(done, waited=st.session_state.get(waited_key(problem), ""))
        if done.verdict.status == "passed":  # on to the next unsolved problem
            show_next(problem, problems(), progress_of(learner), PROBLEM_KEY)
    show_leaderboard(problem, board)


def run_submission(
    problem: Problem, source: str, learner: LearnerId | None, status: SandboxStatus, trace_test: str | None = None,
    requested: bool = False,
) -> bool:
    """Follow this session's judge (``ui/views/judge_job.py``) to its verdict, then start one for a pending Run press
    (or ``requested``: Ctrl+Enter in the editor) and follow it. The judge queues on the shared device lock, then
    the CPU lock, like every run; one judge at a time per session and per learner. The compiler's facts and the
    trace then follow in the background (``ui/views/analysis.py``), never holding the page. ``learner``: whom the
    verdict and a pass are filed under (None: nobody's). ``trace_test`` names the functional test the trace runs
    (None: the default). Whether a verdict was kept in this run (the editor is then drawn again with its marks)."""
    from ui.resources import cpu_lock, device_lock

    kept = False
    job = judge_job.current()
    if job is not None:
        kept = follow(job)
    where = "the CUDA simulator" if gpu.BACKEND.simulated else "the GPU"
    locks = [(device_lock(0), where), (cpu_lock(), "the CPU benchmarks")]
    job = judge_job.start(lambda: JudgeJob(problem.key, source, learner, status, locks, trace_test), requested)
    if job is not None:
        kept = follow(job) or kept
    return kept


def follow(job: JudgeJob) -> bool:
    """Draw where ``job`` is (queued behind N runs, running) until its verdict, then keep the verdict in the session,
    start its analysis, and draw it. Whether a verdict was kept (False: the judge could not run; its message is
    drawn). A run stopped for a newer one stops here, at its next look; the newer run follows the same job."""
    from gpu.problems import get
    from ui.run_record import queue_message
    from ui.runner import refresh_sidebar
    from ui.views import analysis

    problem = get(job.problem)
    # The status box (a spinner) appears once the judge is not waiting behind other runs; the wait itself is one
    # still line that counts down. (A spinner animates for as long as it waits: in headless Chromium here, a page
    # waiting behind a status box's spinner spent about 7 % of a core, sixteen of them about a whole core.)
    head, waiting = st.empty(), st.empty()
    box = None
    seen, drawn_at = None, float("-inf")
    while not job.finished.wait(judge_job.FOLLOW_S):
        now = (job.state, job.waiting_for, job.ahead)
        recount = seen is not None and now[0] == seen[0] == "queued"  # only the place changed
        if now == seen or (recount and time.monotonic() - drawn_at < judge_job.RECOUNT_S):
            judge_job.clicks()  # a read of the session's state: where a run stopped for a newer one lets go
            continue
        seen, drawn_at = now, time.monotonic()
        refresh_sidebar()  # the sidebar's queue line, drawn before this run's judge queued, as the queue is now
        if job.state == "queued" and job.ahead:
            waiting.info(queue_message(job.ahead, job.waiting_for, finishes_anyway=True),
                         icon=":material/hourglass_top:")
        else:
            waiting.empty()
            box = box or judging_box(head, problem)
    waiting.empty()
    box = box or judging_box(head, problem)
    refresh_sidebar()
    if job.result is None:
        judge_job.forget(job)
        box.update(label="Not run" + (f" · {job.waited}" if job.waited else ""), state="error")
        st.error(job.error)
        return False
    # Kept before anything is drawn: a run stopped anywhere here leaves the token, and the next run keeps it again
    result, verdict = job.result, job.result.verdict
    st.session_state[waited_key(problem)] = job.waited
    st.session_state[submission_key(problem)] = result
    judge_log.mark("kept", job.token, job.who)
    claim = judge_job.claim()
    if analysed(verdict):
        analysis.start(problem.key, job.source, verdict, job.trace_test, result.attempt_id, (job.token, job.who))
    judge_job.forget(job, claim)
    box.update(
        label=f"Verdict: {verdict.status}" + (ANALYSIS_FOLLOWS if analysed(verdict) else ""),
        state="complete" if verdict.status == "passed" else "error",
    )
    saved_notice(result)
    return True


def judging_box(slot, problem: Problem):
    """The judge's status box, in ``slot`` (an ``st.empty``): running until the verdict updates it."""
    return slot.status(f"Checking your kernel for {problem.title} and running it in a fresh sandboxed process…",
                       expanded=False)


def saved_notice(result: Submission) -> None:
    """A toast for a pass saved to the leaderboard, or a warning saying why it was not."""
    if result.saved_id:
        ranked = "" if result.verdict.ranked else " It is kept but not ranked (faster than the memory roof allows)."
        st.toast(f"Saved to the leaderboard as {result.saved_id[:8]}.{ranked}", icon=":material/emoji_events:")
    elif result.save_problem:
        st.warning(f"Passed, but not saved: {result.save_problem}")


__all__ = ["follow", "judging_box", "run_panel", "run_submission", "saved_notice"]
