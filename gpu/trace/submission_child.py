"""One learner's kernel traced in a sandboxed process.

``trace_checked`` is what ``gpu.sandbox.child``'s analysis mode calls (the one child that
gives a submission its compiler's facts and its trace, for the page, ``python -m gpu solve``
and ``python -m gpu trace FILE`` alike). ``python -m gpu.trace.submission_child LIMITS_JSON``
(request on stdin) still runs a trace alone, started like the other children through the
write-a-kernel sandbox's ``run_argv`` (bubblewrap where it works, resource limits, wall clock, capped output) and
only after the sandbox's checker has passed the source; the source is checked again
here by the sandbox's loader before its restricted exec. The order follows
``gpu.sandbox.child``: the real stdout is set aside for the report first (a kernel's
prints cannot forge it), then the limits, then the request.
"""

from __future__ import annotations

import json
import os
import sys

MAX_REQUEST_BYTES = 1 << 20
# The trace records accesses through numba-cuda's simulator (gpu/trace/record.py): this
# process runs kernels there whichever simulator the app uses (set before gpu is imported).
os.environ["KERNEL_LAB_SIMULATOR"] = "numba"


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


def trace(request: dict) -> dict:
    from gpu.problems import get

    return trace_source(get(request["problem"]), request["source"], int(request["seed"]))


def trace_checked(problem, source: str, seed: int) -> dict | str:
    """The trace of a source this process has already checked (``gpu.sandbox.child``'s analysis): the report's
    dict, or one line saying why there is none."""
    result = trace_source(problem, source, seed, checked=True)
    return result["problem"] if "problem" in result else result


def trace_source(problem, source: str, seed: int, checked: bool = False) -> dict:
    import linecache

    import numpy as np

    from gpu.sandbox.checker import Refusal
    from gpu.sandbox.harness import SOURCE_NAME, fresh_outputs
    from gpu.sandbox.loader import load_module
    from gpu.trace.record import DEFAULT_MAX_BLOCKS, trace_launch
    from gpu.trace.report import analyse

    try:
        scope = load_module(source, problem.kernel_name, len(problem.params), checked=checked)
        chosen = scope.get("THREADS_PER_BLOCK")
        threads = problem.threads_for(chosen if isinstance(chosen, int) else None)
    except Refusal as refusal:
        return {"problem": f"refused ({refusal.rule}, line {refusal.line}): {refusal.message}"}
    # the source was exec'd from a string: give the trace its lines to quote
    linecache.cache[SOURCE_NAME] = (len(source), None, source.splitlines(True), SOURCE_NAME)
    case = pick_case(problem, threads, DEFAULT_MAX_BLOCKS)
    inputs = problem.inputs(np.random.default_rng(seed), case.sizes)
    outputs = fresh_outputs(problem, case.sizes)
    grid, block = problem.launch(case.sizes, threads)
    args = [inputs[p] if p in inputs else outputs[p] for p in problem.params]
    raw = trace_launch(scope[problem.kernel_name], grid, block, args, names=problem.params)
    sizes = ", ".join(f"{k} = {v:,}" for k, v in case.sizes.items())
    return analyse(raw, label=f"{problem.kernel_name}, test “{case.name}” ({sizes})").to_dict()


def main(argv: list[str]) -> int:
    report_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")  # (the kernel's prints go nowhere)
    from gpu.sandbox.child import apply_limits

    apply_limits(json.loads(argv[1]) if len(argv) > 1 else {})
    request = json.loads(sys.stdin.buffer.read(MAX_REQUEST_BYTES) or b"{}")
    try:
        result = trace(request)
    except Exception as exc:  # one line, never a traceback
        result = {"problem": f"the trace could not run: {type(exc).__name__}: {str(exc).strip()[:300]}"}
    with os.fdopen(report_fd, "wb") as out:
        out.write(json.dumps(result, default=str).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
