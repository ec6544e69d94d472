"""Submit one kernel: admission, the device lock, the sandboxed judge, its compiler's facts and trace, saving a pass.

``submit()`` is the one path the page (``ui/views/write_kernel.py``) and ``python -m gpu solve``
share, so both get the same verdict, compiler's facts and memory trace, a submission is
serialised with every other run (the same FIFO device lock as experiments) and bounded like
them (admission). Per submission: the checker once in this process (the precheck; a refused
source starts nothing), then at most two sandboxed children, each checking once more: the
judge, and for a verdict that ran, the analysis (compiler's facts in the simulator, and the
trace) in one process.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
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


class _Kept:
    """``lock``, entered at the first ``with`` and held until ``close()``: in the simulator the analysis follows
    its judge under the same hold. Re-queuing there (device and CPU are the same host's cores) put the first of
    a class that pressed Run together behind every other judge before its verdict (issue 24)."""

    def __init__(self, lock):
        self._lock, self._stack, self.held = lock, ExitStack(), False

    def __enter__(self):
        if not self.held:
            self._stack.enter_context(self._lock)
            self.held = True
        return self

    def __exit__(self, *exc) -> None:
        return None

    def close(self) -> None:
        self._stack.close()


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
    trace_test: str | None = None,
) -> Submission:
    """Judge ``source`` for ``problem_key``, add the compiler's facts (simulator) and the memory trace to a verdict
    that ran, and save it when it passes. InputError for a bad problem name; never raises for the learner's code.

    ``lock`` is the context manager held while the judge runs (default: this host's device then CPU
    lock); ``relock()`` makes another for the analysis on a GPU (default: the CPU lock alone, the analysis
    being CPU work). In the simulator the analysis runs under the judge's own hold, without queuing again.
    """
    from gpu.core.backend import BACKEND

    problem = get(problem_key)
    admit_problem(problem, BACKEND.simulated)
    if trace and trace_test is not None:
        from gpu.trace.submission_child import test_case

        test_case(problem, trace_test)  # InputError naming the problem's tests, before anything runs
    if lock is None:
        lock = default_locks(f"write-a-kernel {problem.key}")
    kept = _Kept(lock) if BACKEND.simulated else None  # the simulator's analysis keeps the judge's place
    try:
        return _submit(problem, source, kept or lock, kept, name, save, limits, sandbox, facts, trace, relock,
                       trace_test)
    finally:
        if kept is not None:
            kept.close()


def _submit(
    problem, source, lock, kept, name, save, limits, sandbox, facts, trace, relock, trace_test=None
) -> Submission:
    from gpu.core.backend import BACKEND

    verdict = runner.judge_in_child(problem.key, source, limits=limits, sandbox=sandbox, lock=lock)
    want_facts = facts and BACKEND.simulated  # on a GPU the timing says more
    report = None
    if verdict.status in ("passed", "wrong") and (want_facts or trace):
        from gpu.trace.submission import report_from

        # NVVM and the trace's simulator are CPU work, so they queue again (a second child, one for both)
        again = (
            kept
            if kept is not None and kept.held
            else relock()
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
    saved, why = None, None
    if save and verdict.status == "passed":
        from gpu.sandbox.submissions import SubmissionStore
        from gpu.service.store import StoreError

        try:
            saved = SubmissionStore().save(verdict, source, name)
        except StoreError as exc:
            why = str(exc)
    return Submission(verdict, saved, why, report)


__all__ = ["Submission", "admit_problem", "submit", "work_elements"]
