"""Submit one kernel: admission, the device lock, the sandboxed judge, its compiler's facts and trace, saving a pass.

``submit()`` is the one path the page (``ui/views/write_kernel.py``) and ``python -m gpu solve``
share, so both get the same verdict, compiler's facts and memory trace, a submission is
serialised with every other run (the same FIFO device lock as experiments) and bounded like
them (admission). Per submission: the checker once in this process (the precheck; a refused
source starts nothing), then at most two sandboxed children, each checking once more: the
judge, and for a verdict that ran, the analysis (compiler's facts in the simulator, and the
trace) in one process.

The verdict comes first: ``on_verdict`` receives it as soon as the judge ends, and the
analysis then queues again, behind every judge already waiting. When a class presses Run
together, every learner gets a verdict before anyone's facts and trace (issue 24: keeping
the judge's place for the analysis made the last of 16 wait behind 15 analyses too).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu.core.limits import InputError
from gpu.problems import get
from gpu.problems.base import Problem
from gpu.sandbox import runner
from gpu.sandbox.runner import Limits, SandboxStatus
from gpu.sandbox.verdict import Verdict


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


@dataclass
class Submission:
    verdict: Verdict
    saved_id: str | None
    save_problem: str | None  # why a pass was not saved
    trace: Any = None  # the memory trace: a TraceReport, one line saying why there is none, or None (not asked)


def submit(
    problem_key: str,
    source: str,
    *,
    name: str | None = None,
    save: bool = True,
    lock=None,
    limits: Limits | None = None,
    sandbox: SandboxStatus | None = None,
    facts: bool = True,
    trace: bool = True,
    relock=None,
    on_verdict: Callable[[Submission], None] | None = None,
    trace_test: str | None = None,
) -> Submission:
    """Judge ``source`` for ``problem_key``, add the compiler's facts (simulator) and the memory trace to a verdict
    that ran, and save it when it passes. InputError for a bad problem name; never raises for the learner's code.

    ``lock`` is the context manager held while the judge runs (default: this host's device then CPU
    lock); ``relock()`` makes another for the analysis (default: the CPU lock, and in the simulator, whose
    kernels run on the same cores, the device lock before it). ``on_verdict(submission)`` is called as soon
    as the judge ends, before the analysis queues, with the verdict and what was saved (a pass is saved then,
    so the leaderboard does not wait for the analysis) and no trace yet.
    """
    from gpu.core.backend import BACKEND

    problem = get(problem_key)
    admit_problem(problem, BACKEND.simulated)
    if trace and trace_test is not None:
        from gpu.sandbox.trace_child import test_case

        test_case(problem, trace_test)  # InputError naming the problem's tests, before anything runs
    if lock is None:
        lock = default_locks(f"write-a-kernel {problem.key}")
    verdict = runner.judge_in_child(problem.key, source, limits=limits, sandbox=sandbox, lock=lock)
    saved, why = _save(verdict, source, name) if save else (None, None)
    if on_verdict is not None:
        on_verdict(Submission(verdict, saved, why))
    want_facts = facts and BACKEND.simulated  # on a GPU the timing says more
    report = None
    if verdict.status in ("passed", "wrong") and (want_facts or trace):
        from gpu.sandbox.trace_submission import report_from

        # NVVM and the trace's simulator are CPU work: they queue again, behind the judges waiting now
        again = (
            relock()
            if relock is not None
            else default_locks(f"write-a-kernel {problem.key} analysis", device=BACKEND.simulated)
        )
        analysis_sandbox = sandbox if sandbox is not None and BACKEND.simulated else runner.sandbox_status(True)
        with again:
            data = runner.analyse_in_child(
                problem.key,
                source,
                threads=verdict.threads_per_block or 0,
                facts=want_facts,
                trace=trace,
                limits=limits,
                sandbox=analysis_sandbox,
                trace_test=trace_test,
            )
        if want_facts:
            verdict.compile_facts, verdict.compile_facts_note = data["compile_facts"], data["note"]
            verdict.compile_facts_status = data.get("status") or (
                "unavailable" if data["compile_facts"] is None else ""
            )
        if trace:
            report = report_from(data["trace"])
    return Submission(verdict, saved, why, report)


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


__all__ = ["Submission", "admit_problem", "submit", "work_elements"]
