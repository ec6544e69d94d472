"""Trace a learner's write-a-kernel submission: in the sandbox, after the checker.

``trace_submission(problem, source)`` runs the sandbox's checker here (no process for a
source it refuses), then the sandbox's analysis child (``gpu.sandbox.judging.analyse_in_child``,
the same one that gives a submission its compiler's facts) without the facts: a fresh
process, bubblewrap where it works, the same limits as a verdict, and always the
simulator (a trace needs it; it never touches the GPU, so it takes no device lock). One
test case of the problem is traced: the one the learner names (``test``), else the largest
that launches at most ``DEFAULT_MAX_BLOCKS`` blocks. ``gpu.sandbox.service.submit`` traces a submission the same
way, after its verdict.
"""

from __future__ import annotations

from gpu.trace.report import TraceReport


def report_from(data) -> TraceReport | str:
    """The analysis child's ``trace`` (a report's dict, or why there is none) as a TraceReport or one line."""
    if isinstance(data, str):
        return data if data.startswith("not traced") else f"not traced: {data}"
    if not isinstance(data, dict):
        return "not traced: the trace process returned no report"
    if "problem" in data and "kernel" not in data:
        return f"not traced: {data['problem']}"
    try:
        return TraceReport.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        return f"not traced: the trace's report could not be read ({type(exc).__name__}: {str(exc)[:100]})"


def trace_submission(problem: str, source: str, *, limits=None, sandbox=None, test: str | None = None
                     ) -> TraceReport | str:
    """The trace of ``source`` solving ``problem``, or one line saying why there is none (refused, killed, crashed).

    ``test`` names the problem's functional test to trace (the learner's choice of size; default: the smallest where
    every loop runs twice and full and partial blocks appear); a name the problem lacks is an InputError listing its
    tests.
    """
    from gpu.problems import get
    from gpu.sandbox import isolation, judging
    from gpu.sandbox.trace_child import test_case

    if test is not None:
        test_case(get(problem), test)
    get(problem)  # InputError naming the problems
    limits = limits or isolation.Limits()
    sandbox = sandbox or isolation.sandbox_status(True)
    if not sandbox.accepts:
        return f"not traced: the sandbox does not work here ({sandbox.reason})"
    refused = judging.precheck(problem, source, "simulator")
    if refused is not None:
        return f"not traced: {refused.message}"
    data = judging.analyse_in_child(problem, source, facts=False, trace=True, limits=limits, sandbox=sandbox,
                                    trace_test=test)
    return report_from(data["trace"])


__all__ = ["report_from", "trace_submission"]
