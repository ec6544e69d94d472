"""Trace a learner's write-a-kernel submission: in the sandbox, after the checker.

``trace_submission(problem, source)`` runs the sandbox's checker here (no process for a
source it refuses), then the sandbox's analysis child (``gpu.sandbox.judging.analyse_in_child``,
the same one that gives a submission its compiler's facts) without the facts: a fresh
process, bubblewrap where it works, the same limits as a verdict, and always the
simulator (a trace needs it; it never touches the GPU, so it takes no device lock). One
test case of the problem is traced: the one the learner names (``test``), else the largest
that launches at most ``DEFAULT_MAX_BLOCKS`` blocks. ``gpu.sandbox.service.submit`` traces a submission the same
way, after its verdict, and keeps each report in ``TRACES``: a class's identical kernels are traced once.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict

from gpu.trace.report import TraceReport

# The traces ``TRACES`` keeps: at most this many reports, and this many rows of their pictures in all (a picture has up
# to 20,000 rows of a few hundred bytes each; the reports of a problem set's tests have a few hundred).
TRACE_CACHE_ENTRIES = 64
TRACE_CACHE_ROWS = 100_000


class TraceCache:
    """The traces this process made, by problem, exact source and traced test: a class's identical kernels (the
    starter code, the same right answer) are traced once, as their compiler's facts are compiled once.

    The key is the exact text, not the compiler cache's normalised one: a trace names lines. The inputs are the
    problem's, drawn afresh for each trace; a kept report is a trace of this very source on one such draw. Only
    reports are kept: a "not traced" line may be a loaded machine's time limit, and is tried again. Bounded by
    ``entries`` reports and ``rows`` picture rows in all; the least recently used goes first."""

    def __init__(self, entries: int = TRACE_CACHE_ENTRIES, rows: int = TRACE_CACHE_ROWS) -> None:
        self._entries, self._rows = entries, rows
        self._kept: OrderedDict[str, TraceReport] = OrderedDict()
        self._mutex = threading.Lock()

    @staticmethod
    def key(problem: str, source: str, test: str | None) -> str:
        return hashlib.sha256(json.dumps([problem, source, test]).encode()).hexdigest()

    def get(self, key: str) -> TraceReport | None:
        with self._mutex:
            report = self._kept.get(key)
            if report is not None:
                self._kept.move_to_end(key)
            return report

    def put(self, key: str, report: TraceReport | str) -> None:
        if not isinstance(report, TraceReport):
            return
        with self._mutex:
            self._kept[key] = report
            self._kept.move_to_end(key)
            while len(self._kept) > 1 and (len(self._kept) > self._entries or self._weight() > self._rows):
                self._kept.popitem(last=False)

    def _weight(self) -> int:
        return sum(len(r.picture or ()) for r in self._kept.values())

    def __len__(self) -> int:
        with self._mutex:
            return len(self._kept)


TRACES = TraceCache()  # one per process: the sessions of one server share it


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


__all__ = ["TRACES", "TRACE_CACHE_ENTRIES", "TRACE_CACHE_ROWS", "TraceCache", "report_from", "trace_submission"]
