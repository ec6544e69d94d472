"""Submit one kernel: admission, the device lock, the sandboxed judge, and saving a pass.

The one path the page and the CLI share, so a submission is serialised with every other
run (the same FIFO device lock as experiments) and bounded like them (admission).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from gpu.core.limits import InputError
from gpu.problems import get
from gpu.problems.base import Problem
from gpu.sandbox.runner import Limits, SandboxStatus, facts_in_child, judge_in_child
from gpu.sandbox.verdict import Verdict


def work_elements(problem: Problem, simulated: bool) -> int:
    """Elements a submission touches across its tests and (on a GPU) its timed runs: what admission bounds."""
    from gpu.sandbox.harness import GPU_SAMPLES

    def elements(sizes) -> int:
        return max(sum(int(np.prod(shape)) for shape, _ in problem.outputs(sizes).values()),
                   sum(int(v) for v in sizes.values()))

    total = sum(elements(c.sizes) for c in problem.tests)
    perf = problem.perf["simulator" if simulated else "gpu"]
    return total + elements(perf.sizes) * (1 if simulated else 2 * (GPU_SAMPLES + 1))


def admit_problem(problem: Problem, simulated: bool) -> int:
    from gpu.core.limits import load_config

    work = work_elements(problem, simulated)
    config = load_config()
    if work > config.max_work:
        raise InputError(f"the problem {problem.key!r} needs {work:,} element-passes, over this machine's budget of "
                         f"{config.max_work:,} (KERNEL_LAB_MAX_WORK)")
    return work


@contextmanager
def default_locks(label: str):
    """The device lock, then the CPU lock, shared with the app's runs on this host (the simulator's
    kernels, and the harness's inputs and NumPy references, use the CPU that CPU benchmarks time)."""
    from gpu.service.devicelock import FileFifoLock, default_lock_dir, usable_dir

    directory = usable_dir(default_lock_dir())
    with (
        FileFifoLock(name="gpu0", directory=directory).hold(label),
        FileFifoLock(name="cpu", directory=directory).hold(label),
    ):
        yield


@dataclass
class Submission:
    verdict: Verdict
    saved_id: str | None
    save_problem: str | None  # why a pass was not saved


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
    relock=None,
) -> Submission:
    """Judge ``source`` for ``problem_key`` and save it when it passes. InputError for a bad problem name.

    ``lock`` is the context manager held while the submission runs (default: this host's device
    then CPU lock); ``relock()`` makes another for the compiler's facts (default: the same locks).
    """
    from gpu.core.backend import BACKEND

    problem = get(problem_key)
    admit_problem(problem, BACKEND.simulated)
    if lock is None:
        lock = default_locks(f"write-a-kernel {problem.key}")
    verdict = judge_in_child(problem.key, source, limits=limits, sandbox=sandbox, lock=lock)
    if facts and BACKEND.simulated and verdict.status in ("passed", "wrong"):
        # in the simulator only (on a GPU the timing says more); NVVM is CPU work, so it queues again
        with default_locks(f"write-a-kernel {problem.key} compile") if relock is None else relock():
            verdict = facts_in_child(verdict, source, limits=limits, sandbox=sandbox)
    saved, why = None, None
    if save and verdict.status == "passed":
        from gpu.sandbox.submissions import SubmissionStore
        from gpu.service.store import StoreError

        try:
            saved = SubmissionStore().save(verdict, source, name)
        except StoreError as exc:
            why = str(exc)
    return Submission(verdict, saved, why)


__all__ = ["Submission", "admit_problem", "submit", "work_elements"]
