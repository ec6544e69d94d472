"""What crosses the pipe between the app and a submission's child (``python -m gpu.sandbox.child``).

The parent's side: the command line (the limits as JSON), the request written to the child's stdin
(problem, source and a fresh seed the submission cannot read from a file or the environment), and the
parsing of what comes back on stdout: one JSON verdict (judge mode) or one JSON analysis (the
compiler's facts and the memory trace). The child's side of the same shapes is ``gpu.sandbox.child``,
which cannot import this module: it must choose the simulator before ``gpu`` is imported.

Bounds: the child reads at most ``child.MAX_REQUEST_BYTES`` of request; this process keeps at most
``Limits.output_bytes`` of its stdout (``ANALYSIS_OUTPUT_BYTES`` for a trace) and refuses the rest
(``gpu.sandbox.isolation.run_argv``, ``gpu.sandbox.judging.interpret``).
"""

from __future__ import annotations

import json
import secrets
import sys

from gpu.sandbox.isolation import Limits
from gpu.sandbox.verdict import Verdict

ANALYSIS_OUTPUT_BYTES = 4 << 20  # a trace's report carries the access picture (up to ~3 MB of JSON)
CHILD_MODULE = "gpu.sandbox.child"
WARM_JUDGE = "warm-judge"  # = gpu.sandbox.child.WARM_JUDGE (the child cannot import this module)
WARM_ANALYSIS = "warm-analysis"  # = gpu.sandbox.child.WARM_ANALYSIS


def child_argv(limits: Limits, simulated: bool, warm: bool = False, analysis: bool = False) -> list[str]:
    """The child's command line: this Python, the child module and the limits it applies to itself; ``warm``: a
    child started before its request, which imports the lab while it waits (``gpu.sandbox.warm``), for a judge or,
    with ``analysis``, for an analysis that traces (the trace's simulator chosen before the imports)."""
    limits_json = json.dumps(limits.for_child(simulated))
    marker = [WARM_ANALYSIS if analysis else WARM_JUDGE] if warm else []
    return [sys.executable, "-m", CHILD_MODULE, limits_json, *marker]


def judge_request(problem: str, source: str) -> bytes:
    """The judge's request: the problem, the source and a fresh seed for the inputs."""
    return json.dumps({"problem": problem, "source": source, "seed": secrets.randbits(62)}).encode()


def analysis_request(
    problem: str,
    source: str,
    *,
    threads: int,
    facts: bool,
    trace: bool,
    trace_test: str | None,
    limits: Limits,
) -> bytes:
    """The analysis's request: the compiler's facts and/or the memory trace of a checked source."""
    return json.dumps(
        {
            "mode": "analysis",
            "problem": problem,
            "source": source,
            "threads": threads,
            "facts": facts,
            "trace": trace,
            "trace_test": trace_test,
            "seed": secrets.randbits(62),
            # NVVM runs first, without an address-space cap; the child lowers it before the learner's code runs
            "address_space_bytes": limits.for_child(True)["address_space_bytes"],
        }
    ).encode()


def read_verdict(stdout: bytes) -> Verdict:
    """The child's verdict from its stdout. ValueError, TypeError or UnicodeDecodeError when it is not one."""
    return Verdict.from_dict(json.loads(stdout.decode()))


def read_analysis(stdout: bytes) -> dict:
    """The child's analysis from its stdout: {"compile_facts", "note", "status", "trace"} with the types
    ``analysis_unavailable`` gives. ValueError, TypeError, AttributeError or UnicodeDecodeError when it is not one."""
    data = json.loads(stdout.decode())
    return {
        "compile_facts": data.get("compile_facts"),
        "note": str(data.get("note", "")),
        "status": str(data.get("status") or ""),
        "trace": data.get("trace"),
    }


def analysis_unavailable(why: str, trace: bool) -> dict:
    """The analysis when no child could give it: ``why`` in the facts' note and in place of the trace."""
    return {
        "compile_facts": None,
        "note": f"the compiler's facts are unavailable: {why}",
        "status": "unavailable",
        "trace": f"not traced: {why}" if trace else None,
    }


__all__ = [
    "ANALYSIS_OUTPUT_BYTES",
    "CHILD_MODULE",
    "analysis_request",
    "analysis_unavailable",
    "child_argv",
    "judge_request",
    "read_analysis",
    "read_verdict",
]
