"""One learner's kernel traced, inside the sandbox's analysis child (``gpu.sandbox.child``).

``trace_checked`` is what that child calls (the one child that gives a submission its
compiler's facts and its trace, for the page, ``python -m gpu solve`` and ``python -m gpu
trace FILE`` alike), started through the write-a-kernel sandbox's ``run_argv`` (bubblewrap
where it works, resource limits, wall clock, capped output) only after the app's checker
passed the source, and after the child checked it once more. The child chooses Kernel Lab's
simulator (``KERNEL_LAB_SIMULATOR=lab``, whose recording hooks gpu/trace/record.py uses) before
``gpu`` is imported. The recorder is never reachable from the learner's kernel (its globals,
its arguments, ``cuda``), so the kernel cannot forge its own trace.
"""

from __future__ import annotations

import warnings


def pick_case(problem, threads: int, max_blocks: int):
    """The functional test to trace: the largest that launches at most ``max_blocks`` blocks (else the smallest)."""
    import numpy as np

    def blocks(case) -> int:
        grid, _ = problem.launch(case.sizes, threads)
        return int(np.prod(grid))

    def size(case) -> int:
        return sum(int(v) for v in case.sizes.values())

    fitting = [c for c in problem.tests if blocks(c) <= max_blocks]
    return max(fitting, key=size) if fitting else min(problem.tests, key=size)


def default_case(problem, kernel, threads: int, seed: int):
    """The functional test to trace by default: the smallest where every loop of the kernel runs at least twice in
    some thread and every block shape (full, partial) of the problem's tests appears (gpu/sim/coverage.py measures
    each test in a plain launch). Where no test has all of that, the one with the most loops run twice, then the
    most shapes, then the smallest; without the lab's simulator, ``pick_case``."""
    import numpy as np

    from gpu.sandbox.harness import fresh_outputs

    if type(kernel).__name__ != "SimKernel":
        from gpu.trace.record import DEFAULT_MAX_BLOCKS

        return pick_case(problem, threads, DEFAULT_MAX_BLOCKS)
    from gpu.sim.coverage import coverage

    def size(case) -> int:
        return sum(int(v) for v in case.sizes.values())

    measured = []
    for case in sorted(problem.tests, key=size):
        inputs = problem.args(np.random.default_rng(seed), case.sizes)
        outputs = fresh_outputs(problem, case.sizes)
        grid, block = problem.launch(case.sizes, threads)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a wrapped index warns: the verdict says so, not this measurement
            seen = coverage(kernel, grid, block, [inputs[p] if p in inputs else outputs[p] for p in problem.params])
        measured.append((case, seen))
        if seen.cut:  # watched to its limit (a loop that would not end): a larger test would take as long
            break
    shapes = frozenset().union(*(seen.shapes for _, seen in measured))
    for case, seen in measured:
        if all(trips >= 2 for trips in seen.loops.values()) and seen.shapes >= shapes:
            return case
    return max(measured, key=lambda m: (m[1].loops_twice, len(m[1].shapes), -size(m[0])))[0]


def test_case(problem, name: str):
    """The functional test of ``problem`` named ``name`` (the learner's choice of the traced size), or InputError
    naming the tests there are. Every test is small: the choice is bounded by the problem's own tests."""
    from gpu.core.limits import InputError

    for case in problem.tests:
        if case.name == name:
            return case
    names = "; ".join(f"{c.name!r}" for c in problem.tests)
    raise InputError(f"the problem {problem.key!r} has no test {name!r} to trace; its tests are {names}.")


def trace_checked(problem, source: str, seed: int, test: str | None = None) -> dict | str:
    """The trace of a source this process has already checked (``gpu.sandbox.child``'s analysis): the report's
    dict, or one line saying why there is none. ``test`` names the functional test to trace (default: ``pick_case``)."""
    result = trace_source(problem, source, seed, checked=True, test=test)
    return result["problem"] if "problem" in result else result


def trace_source(problem, source: str, seed: int, checked: bool = False, test: str | None = None) -> dict:
    import linecache

    import numpy as np

    from gpu.sandbox.checker import Refusal
    from gpu.sandbox.harness import SOURCE_NAME, fresh_outputs
    from gpu.sandbox.loader import load_module
    from gpu.trace.record import trace_launch
    from gpu.trace.report import analyse

    try:
        scope = load_module(source, problem.kernel_name, len(problem.params), checked=checked)
        chosen = scope.get("THREADS_PER_BLOCK")
        threads = problem.threads_for(chosen if isinstance(chosen, int) else None)
    except Refusal as refusal:
        return {"problem": f"refused ({refusal.rule}, line {refusal.line}): {refusal.message}"}
    # the source was exec'd from a string: give the trace its lines to quote
    linecache.cache[SOURCE_NAME] = (len(source), None, source.splitlines(True), SOURCE_NAME)
    kernel = scope[problem.kernel_name]
    case = default_case(problem, kernel, threads, seed) if test is None else test_case(problem, test)
    inputs = problem.args(np.random.default_rng(seed), case.sizes)  # arrays and scalars
    outputs = fresh_outputs(problem, case.sizes)
    grid, block = problem.launch(case.sizes, threads)
    args = [inputs[p] if p in inputs else outputs[p] for p in problem.params]
    raw = trace_launch(kernel, grid, block, args, names=problem.params)
    sizes = ", ".join(f"{k} = {v:,}" for k, v in case.sizes.items())
    return analyse(raw, label=f"{problem.kernel_name}, test “{case.name}” ({sizes})").to_dict()


__all__ = ["default_case", "pick_case", "test_case", "trace_checked", "trace_source"]
