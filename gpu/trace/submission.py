"""Trace a learner's write-a-kernel submission: in the sandbox, after the checker.

``trace_submission(problem, source)`` runs the sandbox's checker here (no process for a
source it refuses), then ``gpu.trace.submission_child`` through the sandbox's
``run_argv``: a fresh process, bubblewrap where it works, the same limits as a verdict,
and always the simulator (a trace needs it; it never touches the GPU, so it takes no
device lock). One test case of the problem is traced: the largest that launches at
most ``DEFAULT_MAX_BLOCKS`` blocks.
"""

from __future__ import annotations

import json
import secrets
import sys
from dataclasses import replace

from gpu.trace.report import TraceReport

TRACE_OUTPUT_BYTES = 4 << 20


def trace_submission(problem: str, source: str, *, limits=None, sandbox=None) -> TraceReport | str:
    """The trace of ``source`` solving ``problem``, or one line saying why there is none (refused, killed, crashed)."""
    from gpu.problems import get
    from gpu.sandbox.runner import Limits, precheck, run_argv, sandbox_status

    get(problem)  # InputError naming the problems
    # the report carries the access picture (up to ~3 MB of JSON): more room than a verdict's 256 kB
    limits = limits or replace(Limits(), output_bytes=TRACE_OUTPUT_BYTES)
    sandbox = sandbox or sandbox_status(True)
    if not sandbox.accepts:
        return f"not traced: the sandbox does not work here ({sandbox.reason})"
    refused = precheck(problem, source, "simulator")
    if refused is not None:
        return f"not traced: {refused.message}"
    request = json.dumps({"problem": problem, "source": source, "seed": secrets.randbits(62)}).encode()
    argv = [sys.executable, "-m", "gpu.trace.submission_child", json.dumps(limits.for_child(True))]
    run = run_argv(argv, request, limits, True, sandbox)
    if run["timed_out"]:
        return f"not traced: the trace ran past the {limits.wall_s:g} s wall-clock limit and was stopped"
    if run["output_over"]:
        return f"not traced: the trace's report was over {limits.output_bytes:,} bytes"
    try:
        data = json.loads(run["stdout"].decode())
    except (ValueError, UnicodeDecodeError):
        tail = run["stderr"].decode(errors="replace").strip().splitlines()
        last = tail[-1][:200] if tail else f"exit {run['rc']}"
        return f"not traced: the trace process ended without a report ({last})"
    if "problem" in data:
        return data["problem"]
    return TraceReport.from_dict(data)


__all__ = ["trace_submission"]
