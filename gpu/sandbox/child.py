"""One submission's process: ``python -m gpu.sandbox.child LIMITS_JSON`` with the request on stdin.

Started fresh for every submission (by ``gpu.sandbox.runner``, inside bubblewrap when
available) and gone when it ends, so nothing a submission leaves behind (module state,
cached results, a poisoned CUDA context) reaches the next one. Order matters:

1. take the real stdout aside (the verdict goes there) and point fd 1 at /dev/null,
   so nothing a kernel prints can forge or corrupt the verdict;
2. apply the resource limits (``setrlimit``) before anything else runs;
3. read the request (problem, source, seed) from the pipe: the seed is never in a file
   or an environment variable the submission could read;
4. judge (``gpu.sandbox.harness``) and write one JSON verdict.
"""

from __future__ import annotations

import json
import os
import resource
import sys

MAX_REQUEST_BYTES = 1 << 20


def apply_limits(limits: dict) -> list[str]:
    """setrlimit for this process and its children; returns the limits that could not be set."""
    wanted = [
        ("cpu_s", resource.RLIMIT_CPU),
        ("file_bytes", resource.RLIMIT_FSIZE),
        ("core_bytes", resource.RLIMIT_CORE),
    ]
    if limits.get("address_space_bytes"):  # the simulator only: RLIMIT_AS breaks the CUDA driver's reservations
        wanted.append(("address_space_bytes", resource.RLIMIT_AS))
    if (
        limits.get("tasks") and os.geteuid() != 0
    ):  # root ignores RLIMIT_NPROC; the runner's pids cgroup covers that case
        wanted.append(("tasks", resource.RLIMIT_NPROC))
    missed = []
    for key, which in wanted:
        value = int(limits.get(key, 0) if key != "core_bytes" else 0)
        # CPU: the hard limit one second later, so SIGXCPU (which says why) arrives before SIGKILL
        hard = value + 1 if which == resource.RLIMIT_CPU else value
        try:
            resource.setrlimit(which, (value, hard))
        except (ValueError, OSError) as exc:
            missed.append(f"{key}: {exc}")
    return missed


def main(argv: list[str]) -> int:
    verdict_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")  # (Python-level prints go nowhere too)
    limits = json.loads(argv[1]) if len(argv) > 1 else {}
    missed = apply_limits(limits)
    request = json.loads(sys.stdin.buffer.read(MAX_REQUEST_BYTES) or b"{}")
    from gpu.problems import get
    from gpu.sandbox.harness import judge
    from gpu.sandbox.verdict import Verdict

    try:
        problem = get(request["problem"])
        if request.get("mode") == "facts":  # the compiler's facts, a second step after the verdict
            from gpu.sandbox.checker import check_source
            from gpu.sandbox.facts import compile_facts

            check_source(request["source"], problem.kernel_name, len(problem.params))  # exec'd by the compile worker
            facts, note, status = compile_facts(problem, request["source"], int(request["threads"]))
            with os.fdopen(verdict_fd, "wb") as out:
                out.write(json.dumps({"compile_facts": facts, "note": note, "status": status}).encode())
            return 0
        verdict = judge(problem, request["source"], int(request["seed"]))
    except Exception as exc:  # never a traceback: one line
        verdict = Verdict.start(str(request.get("problem")), "unknown").failed(
            f"the harness could not start: {type(exc).__name__}: {exc}"
        )
    if missed:
        verdict.sandbox = "limits not applied: " + "; ".join(missed)
    with os.fdopen(verdict_fd, "wb") as out:
        out.write(verdict.to_json().encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
