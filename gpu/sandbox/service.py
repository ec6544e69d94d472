"""Submit one kernel: admission, the device lock, the sandboxed judge, its compiler's facts and trace, saving a pass.

``submit()`` is the one path the page (``ui/views/write_kernel.py``) and ``python -m gpu solve``
share, so both get the same verdict, compiler's facts and memory trace, a submission is
serialised with every other run (the same FIFO device lock as experiments) and bounded like
them (admission). Per submission: the checker once in this process (the precheck; a refused
source starts nothing), then at most two sandboxed children, each checking once more: the
judge, and for a verdict that ran, the analysis (compiler's facts in the simulator, and the
trace) in one process.

The verdict comes first (``judge``), and the analysis (``analyse``) then queues again, behind
every judge already waiting: when a class presses Run together, every learner gets a verdict
before anyone's facts and trace (keeping the judge's place for the analysis made the last of 16
wait behind 15 analyses too). The page runs the analysis in the background after drawing the
verdict (``ui/views/analysis.py``); ``submit`` runs both for ``python -m gpu solve``.

Under a class: one place in the queue per learner and a long judge yields its turn
(``gpu.sandbox.fairness``); the compiler's facts are cached by source and target
(``gpu.sandbox.facts.FactsCache``: the starter code is compiled once for the class); a named
learner's every verdict is kept in their progress (``gpu.sandbox.progress``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gpu.core.limits import InputError
from gpu.problems import get
from gpu.problems.base import Problem
from gpu.sandbox import isolation, judging
from gpu.sandbox.isolation import Limits, SandboxStatus
from gpu.sandbox.verdict import Verdict
from gpu.service.learners import LearnerId


def work_elements(problem: Problem, simulated: bool) -> int:
    """Elements a submission touches across its tests and (on a GPU) its timed runs: what admission bounds."""
    from gpu.sandbox.harness import GPU_SAMPLES

    def elements(sizes) -> int:
        return max(
            sum(int(np.prod(shape)) for shape, _ in problem.outputs(sizes).values()),
            sum(int(v) for v in sizes.values()),
        )

    total = sum(elements(c.sizes) for c in problem.tests)
    perf = problem.perf["simulator" if simulated else "gpu"]
    return total + elements(perf.sizes) * (1 if simulated else 2 * (GPU_SAMPLES + 1))


def admit_problem(problem: Problem, simulated: bool) -> int:
    from gpu.core.limits import load_config

    work = work_elements(problem, simulated)
    config = load_config()
    if work > config.max_work:
        raise InputError(
            f"the problem {problem.key!r} needs {work:,} element-passes, over this machine's budget of "
            f"{config.max_work:,} (KERNEL_LAB_MAX_WORK)"
        )
    return work


@contextmanager
def default_locks(label: str, device: bool = True):
    """The device lock, then the CPU lock, shared with the app's runs on this host (the simulator's
    kernels, and the harness's inputs and NumPy references, use the CPU that CPU benchmarks time).
    ``device=False``: the CPU lock alone (a trace on a GPU host is CPU work only)."""
    from contextlib import nullcontext

    from gpu.service.devicelock import FileFifoLock, default_lock_dir, usable_dir

    directory = usable_dir(default_lock_dir())
    with (
        FileFifoLock(name="gpu0", directory=directory).hold(label) if device else nullcontext(),
        FileFifoLock(name="cpu", directory=directory).hold(label),
    ):
        yield


@dataclass(frozen=True)
class Submission:
    """One submission's outcome: made by ``judge`` (no facts or trace yet); ``analyse`` makes a new one carrying the
    compiler's facts in its verdict and its trace. Never changed in place."""

    verdict: Verdict
    saved_id: str | None
    save_problem: str | None  # why a pass was not saved
    trace: Any = None  # the memory trace: a TraceReport, one line saying why there is none, or None (not asked)
    attempt_id: str | None = None  # the learner's progress row (``gpu.sandbox.progress``), when a learner was named


@dataclass(frozen=True)
class Queueing:
    """How one submission waits its turn, in one value: the lock its judge holds, the lock its analysis queues for
    again (made once no judge of this process is queued or holding the queue: ``fairness.JudgesFirst``), who hears
    of the verdict before the analysis queues, and who hears how many judges the analysis waits for. A lock left
    None is this host's device then CPU lock (``default_locks``)."""

    judge_lock: Callable[[], AbstractContextManager[Any]] | None = None
    analysis_lock: Callable[[], AbstractContextManager[Any]] | None = None
    on_verdict: Callable[[Submission], None] | None = None
    on_judges: Callable[[int], None] | None = None  # told, each second, how many judges an analysis waits for


HOST_QUEUE = Queueing()  # this host's locks, no one told of the verdict early


def judge(
    problem_key: str,
    source: str,
    *,
    name: str | None = None,
    learner: LearnerId | None = None,
    save: bool = True,
    queueing: Queueing = HOST_QUEUE,
    limits: Limits | None = None,
    sandbox: SandboxStatus | None = None,
) -> Submission:
    """The verdict of ``source`` for ``problem_key`` (the sandboxed judge), a pass saved to the leaderboard and, for a
    named ``learner``, the attempt kept in their progress. InputError for a bad problem name; LearnerBusy
    (``gpu.sandbox.fairness``) when ``learner`` already has a submission in the queue; never raises for the code.

    ``queueing.judge_lock()`` is held while the judge runs (default: this host's device then CPU lock); in the
    simulator it is held for at most ``fairness.QUANTUM_S`` of a long judge (``fairness.TimeSlice``).
    """
    from gpu.core.backend import BACKEND
    from gpu.sandbox.fairness import GATE, JUDGES, TimeSlice

    problem = get(problem_key)
    admit_problem(problem, BACKEND.simulated)
    if learner is not None:
        GATE.enter(learner.key)
    try:
        lock = (
            queueing.judge_lock() if queueing.judge_lock is not None else default_locks(f"write-a-kernel {problem.key}")
        )
        with JUDGES.judging() as done:  # analyses wait for this judge's turn to end (fairness.JudgesFirst)
            if BACKEND.simulated:  # on a GPU the device stays one kernel's while it is timed
                lock = TimeSlice(lock, on_yield=done)
            verdict = judging.judge_in_child(problem.key, source, limits=limits, sandbox=sandbox, lock=lock)
    finally:
        if learner is not None:
            GATE.leave(learner.key)
    shown = learner.name if learner is not None else name
    saved, why = _save(verdict, source, shown) if save else (None, None)
    attempt = _record(learner, verdict, source) if learner is not None and save else None
    return Submission(verdict, saved, why, attempt_id=attempt)


def analyse(
    problem_key: str,
    source: str,
    judged: Submission,
    *,
    facts: bool = True,
    trace: bool = True,
    queueing: Queueing = HOST_QUEUE,
    limits: Limits | None = None,
    sandbox: SandboxStatus | None = None,
    trace_test: str | None = None,
    attempt_id: str | None = None,
    cache: bool = True,
):
    """The compiler's facts (simulator) and the memory trace of a judged submission whose kernel ran: ``judged`` with
    its verdict carrying the facts and its ``trace`` (a TraceReport, one line saying why there is none, or None when
    not asked), as a new value. Never raises.

    The facts come from ``FactsCache`` when this source was compiled for this problem before (then the child only
    traces), and the trace from ``TRACES`` when this exact source was traced at this test before (then no child runs
    when the facts are known too). While another analysis of this source is being made (a class's starter code, the
    same right answer), this one waits for it beside the queue, then takes what it kept. ``queueing.analysis_lock()``
    makes the lock the analysis holds (default: the CPU lock, and in the simulator, whose kernels run on the same
    cores, the device lock before it). A race in the trace of a submission that did not pass is its failure kind in
    the learner's progress (``attempt_id``).
    """
    from gpu.core.backend import BACKEND
    from gpu.sandbox.facts import COMPILING, FactsCache
    from gpu.sandbox.trace_submission import TRACES, TraceCache
    from gpu.trace.report import TraceReport

    problem = get(problem_key)
    verdict = judged.verdict
    want_facts = facts and BACKEND.simulated  # on a GPU the timing says more
    if verdict.status not in ("passed", "wrong") or not (want_facts or trace):
        return judged
    limits = limits or Limits.from_env()
    key = None  # the facts' key in the cache (None: not cached)
    if want_facts and cache:
        try:
            key = FactsCache.key(problem, source, verdict.threads_per_block or problem.threads)
        except Exception:  # a launch the key cannot describe: compile without the cache rather than fail
            key = None
    trace_key = TraceCache.key(problem.key, source, trace_test) if trace and cache else None

    def kept(verdict: Verdict, report):
        """The facts and the trace the caches hold for what this analysis still lacks."""
        if key is not None and not has_facts(verdict):
            known = FactsCache().get(key)
            if known is not None:
                verdict = verdict.with_facts(*known)
        if trace_key is not None and report is None:
            report = TRACES.get(trace_key)
        return verdict, report

    verdict, report = kept(verdict, None)
    lacking = (trace and report is None) or (want_facts and not has_facts(verdict))
    whole = None  # this analysis's claim on its source, while it is being made
    if lacking and (key is not None or trace_key is not None):
        whole = f"analysis:{key or ''}:{trace_key or ''}"
        if not COMPILING.claim(whole, limits.wall_s, on_wait=lambda: queueing.on_judges(0) if queueing.on_judges
                               else None):
            whole = None  # the other analysis of this source ended: what it kept is this one's too
            verdict, report = kept(verdict, report)
    try:
        if (trace and report is None) or (want_facts and not has_facts(verdict)):
            verdict, report = _made(problem, source, verdict, report, key, trace_key, facts=want_facts, trace=trace,
                                    queueing=queueing, limits=limits, sandbox=sandbox, trace_test=trace_test,
                                    kept=kept)
    finally:
        if whole is not None:
            COMPILING.release(whole)
    if attempt_id and verdict.status != "passed" and isinstance(report, TraceReport) and report.races:
        _mark_race(attempt_id, str(report.races[0]))
    return replace(judged, verdict=verdict, trace=report)


def has_facts(verdict: Verdict) -> bool:
    """Whether ``verdict`` carries the compiler's facts, or says why there are none."""
    return verdict.compile_facts is not None or bool(verdict.compile_facts_status)


def _made(problem, source: str, verdict: Verdict, report, key: str | None, trace_key: str | None, *, facts: bool,
          trace: bool, queueing: Queueing, limits: Limits, sandbox: SandboxStatus | None, trace_test: str | None,
          kept):
    """The facts and the trace ``verdict`` and ``report`` still lack, made in a sandboxed child in the analyses'
    turn (and kept in the caches under ``key`` and ``trace_key``, when not None): (verdict, report)."""
    from gpu.core.backend import BACKEND
    from gpu.sandbox.facts import COMPILING, FactsCache
    from gpu.sandbox.fairness import judges_first
    from gpu.sandbox.trace_submission import TRACES, report_from

    def lock() -> AbstractContextManager[Any]:
        return (
            queueing.analysis_lock()
            if queueing.analysis_lock is not None
            else default_locks(f"write-a-kernel {problem.key} analysis", device=BACKEND.simulated)
        )

    # NVVM and the trace's simulator are CPU work: they queue again, verdicts first (fairness.judges_first); in the
    # simulator a slow compile yields the judges' queue after its quantum, as a long judge does
    again = judges_first(lock, queueing.on_judges, time_sliced=BACKEND.simulated)
    analysis_sandbox = sandbox if sandbox is not None and BACKEND.simulated else isolation.sandbox_status(True)
    compiling = False  # whether this analysis compiles the key (others of it wait for its facts)
    with again:
        if key is not None and not has_facts(verdict):  # compiled by an analysis ahead of this one in the queue?
            compiling = COMPILING.claim(key, wait_s=limits.wall_s)
        verdict, report = kept(verdict, report)  # (once this one's turn came, or another compile of it ended)
        need_facts, need_trace = facts and not has_facts(verdict), trace and report is None
        try:
            if need_facts or need_trace:
                data = judging.analyse_in_child(
                    problem.key,
                    source,
                    threads=verdict.threads_per_block or 0,
                    facts=need_facts,
                    trace=need_trace,
                    limits=limits,
                    sandbox=analysis_sandbox,
                    trace_test=trace_test,
                )
                if need_facts:
                    verdict = verdict.with_facts(*judging.facts_from(data))
                    if key is not None:
                        FactsCache().put(key, verdict.compile_facts, verdict.compile_facts_note,
                                         verdict.compile_facts_status)
                if need_trace:
                    report = report_from(data["trace"])
                    if trace_key:
                        TRACES.put(trace_key, report)  # before the queue's next analysis looks
        finally:
            if compiling and key is not None:
                COMPILING.release(key)
    return verdict, report


def submit(
    problem_key: str,
    source: str,
    *,
    name: str | None = None,
    learner: LearnerId | None = None,
    save: bool = True,
    queueing: Queueing = HOST_QUEUE,
    limits: Limits | None = None,
    sandbox: SandboxStatus | None = None,
    facts: bool = True,
    trace: bool = True,
    trace_test: str | None = None,
) -> Submission:
    """Judge ``source`` for ``problem_key``, add the compiler's facts (simulator) and the memory trace to a verdict
    that ran, and save it when it passes: ``judge`` then ``analyse``, in one call (``python -m gpu solve``). The page
    calls the two apart, so the analysis never holds the page after its verdict.

    ``queueing.on_verdict(submission)`` is called as soon as the judge ends, before the analysis queues, with the
    verdict and what was saved (a pass is saved then, so the leaderboard does not wait for the analysis) and no
    trace yet.
    """
    if trace and trace_test is not None:
        from gpu.sandbox.trace_child import test_case

        test_case(get(problem_key), trace_test)  # InputError naming the problem's tests, before anything runs
    done = judge(problem_key, source, name=name, learner=learner, save=save, queueing=queueing, limits=limits,
                 sandbox=sandbox)
    if queueing.on_verdict is not None:
        queueing.on_verdict(done)
    return analyse(problem_key, source, done, facts=facts, trace=trace, queueing=queueing, limits=limits,
                   sandbox=sandbox, trace_test=trace_test, attempt_id=done.attempt_id)


def _record(learner: LearnerId, verdict: Verdict, source: str) -> str | None:
    """The attempt kept in the learner's progress; None when the store cannot be written (the verdict stands)."""
    from gpu.sandbox.progress import ProgressStore
    from gpu.service.store import StoreError

    try:
        return ProgressStore().record(learner.key, learner.name, verdict, source)
    except StoreError:
        return None


def _mark_race(attempt_id: str, detail: str) -> None:
    from gpu.sandbox.progress import ProgressStore
    from gpu.service.store import StoreError

    try:
        ProgressStore().mark_race(attempt_id, detail)
    except StoreError:
        pass


def _save(verdict: Verdict, source: str, name: str | None) -> tuple[str | None, str | None]:
    """A pass saved to the leaderboard: (its id, None), or (None, why it was not saved); nothing for other verdicts."""
    if verdict.status != "passed":
        return None, None
    from gpu.sandbox.submissions import SubmissionStore
    from gpu.service.store import StoreError

    try:
        return SubmissionStore().save(verdict, source, name), None
    except StoreError as exc:
        return None, str(exc)


__all__ = [
    "HOST_QUEUE",
    "LearnerId",
    "Queueing",
    "Submission",
    "admit_problem",
    "analyse",
    "judge",
    "submit",
    "work_elements",
]
