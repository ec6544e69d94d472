"""Judging: one submission's verdict, and its compiler's facts and memory trace, from sandboxed children.

One submission is at most two children (``gpu.sandbox.service.submit``): the judge
(``judge_in_child``), then, for a verdict that ran, the analysis (``analyse_in_child``: the
compiler's facts and the memory trace, in the simulator). The checker runs once in this
process before either starts (``precheck``) and once in each child. ``interpret`` turns a
run that was stopped (a limit, a signal, too much output, nothing readable) into the
sandbox's own refusal.

The process and its limits are ``gpu.sandbox.isolation``; what crosses the pipe is
``gpu.sandbox.protocol``.
"""

from __future__ import annotations

import signal
from contextlib import nullcontext
from dataclasses import replace

from gpu.core.safe_text import shown
from gpu.problems import get
from gpu.problems.base import Refusal
from gpu.sandbox import checker, isolation
from gpu.sandbox.isolation import Limits, SandboxStatus, format_bytes
from gpu.sandbox.protocol import (
    ANALYSIS_OUTPUT_BYTES,
    analysis_request,
    analysis_unavailable,
    child_argv,
    judge_request,
    read_analysis,
    read_verdict,
)
from gpu.sandbox.verdict import Verdict
from gpu.sandbox.warm import ANALYSES, AT_WORK, KEEPER


def _sandbox_refusal(problem: str, backend: str, message: str, rule: str = "sandbox") -> Verdict:
    return Verdict(
        problem=problem,
        backend=backend,
        status="refused",
        message=f"refused ({rule}): {message}",
        refusal={"rule": rule, "line": 0, "message": message},
    )


def _refused_before_running(problem: str, backend: str, refusal: Refusal) -> Verdict:
    return Verdict(
        problem=problem,
        backend=backend,
        status="refused",
        message=shown(str(refusal)),
        refusal=refusal.to_dict(),
        sandbox="not started: refused before running",
    )


def precheck(problem: str, source: str, backend: str) -> Verdict | None:
    """The checker in this process, before starting a child: a refused verdict, or None to go on."""
    declared = get(problem)
    try:
        checker.check_source(source, declared.kernel_name, len(declared.params))
    except Refusal as refusal:
        return _refused_before_running(problem, backend, refusal)
    except Exception as exc:  # the checker itself failed on this input: a refusal (nothing runs), never a traceback
        text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        failed = Refusal(
            "checker",
            0,
            f"the checker could not check this source ({type(exc).__name__}"
            + (f": {text}" if text else "")
            + "), so it was not run; please report it",
        )
        return _refused_before_running(problem, backend, failed)
    return None


def judge_in_child(
    problem: str,
    source: str,
    *,
    limits: Limits | None = None,
    simulated: bool | None = None,
    sandbox: SandboxStatus | None = None,
    lock=None,
) -> Verdict:
    """One submission from start to verdict: a fresh sandboxed process under the device lock (in the simulator,
    started ahead of it when the app keeps a spare: ``gpu.sandbox.warm``). Never raises."""
    if simulated is None:
        from gpu.core.backend import BACKEND

        simulated = BACKEND.simulated
    limits = limits or Limits.from_env()
    sandbox = sandbox or isolation.sandbox_status(simulated)
    backend = "simulator" if simulated else "cuda"
    if not sandbox.accepts:
        return _sandbox_refusal(
            problem, backend, f"submissions are off because the sandbox does not work here: {sandbox.reason}"
        )
    refused = precheck(problem, source, backend)
    if refused is not None:  # no process at all for a source the checker refuses (the child checks again)
        return refused
    with lock if lock is not None else nullcontext(), AT_WORK.running():
        request = judge_request(problem, source)
        if KEEPER.enabled and simulated:  # on a GPU no second process starts beside a timed kernel
            run = KEEPER.take(child_argv(limits, simulated, warm=True), limits, simulated, sandbox).finish(request)
        else:
            run = isolation.run_argv(child_argv(limits, simulated), request, limits, simulated, sandbox)
    verdict = interpret(run, problem, backend, limits)
    return replace(
        verdict,
        sandbox=(sandbox.how if sandbox.works else "none (the code ran as you)")
        + (f"; {verdict.sandbox}" if verdict.sandbox else "")
        + f"; {run['memory_bound']}",
        wall_s=run["wall_s"],
    )


def keep_warm(limits: Limits | None = None, sandbox: SandboxStatus | None = None) -> bool:
    """From now on keep a judge's process, and an analysis's, started ahead (``gpu.sandbox.warm``), and start them
    now: for a server (Write a kernel calls it on every run; cheap once the spares wait). The simulator only: on a
    GPU a second process never starts beside a timed kernel. Returns whether spares are kept."""
    from gpu.core.backend import BACKEND

    if not BACKEND.simulated:
        return False
    limits = limits or Limits.from_env()
    sandbox = sandbox or isolation.sandbox_status(True)
    if not sandbox.accepts:
        return False
    KEEPER.enable()
    KEEPER.prime(child_argv(limits, True, warm=True), limits, True, sandbox)
    ANALYSES.enable()
    ANALYSES.prime(analysis_argv(limits), limits, True, sandbox)
    return True


def analysis_argv(limits: Limits) -> list[str]:
    """An analysis's command line, for a spare (``warm.ANALYSES``): no address-space cap on the command line (NVVM
    runs first; the child lowers it before the learner's code runs)."""
    return child_argv(limits, False, warm=True, analysis=True)


def analyse_in_child(
    problem: str,
    source: str,
    *,
    threads: int = 0,
    facts: bool = True,
    trace: bool = True,
    limits: Limits | None = None,
    sandbox: SandboxStatus | None = None,
    trace_test: str | None = None,
) -> dict:
    """The compiler's facts and the memory trace of a checked source, in one sandboxed child (the simulator).

    ``trace_test`` names the problem's functional test to trace (default: the smallest where every loop
    runs twice and full and partial blocks appear, ``trace_child.default_case``); the caller checks it names
    one (``gpu.sandbox.trace_child.test_case``).

    Returns {"compile_facts": dict | None, "note": str, "trace": dict | str | None}: ``trace`` is the
    TraceReport's dict, or one line saying why there is none. Call only for a source the checker
    passed (the child checks it once more). Never raises.
    """
    limits = limits or Limits.from_env()
    if trace:
        limits = replace(limits, output_bytes=max(limits.output_bytes, ANALYSIS_OUTPUT_BYTES))
    sandbox = sandbox or isolation.sandbox_status(True)
    if not sandbox.accepts:
        return analysis_unavailable(f"the sandbox does not work here ({sandbox.reason})", trace)
    request = analysis_request(
        problem, source, threads=threads, facts=facts, trace=trace, trace_test=trace_test, limits=limits
    )
    with AT_WORK.running():
        if ANALYSES.enabled and trace:  # a spare started ahead (the app's), past Python's start and the lab's imports
            run = ANALYSES.take(analysis_argv(limits), limits, True, sandbox).finish(request)
        else:
            run = isolation.run_argv(child_argv(limits, False), request, limits, True, sandbox)
    try:
        return read_analysis(run["stdout"])
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError):
        if run["timed_out"]:
            why = f"it ran past the {limits.wall_s:g} s wall-clock limit"
        elif run.get("memory_exceeded"):
            why = f"it used more than its {format_bytes(limits.memory_bytes)} of memory"
        elif run["output_over"]:
            why = f"its report was over {limits.output_bytes:,} bytes"
        else:
            why = (run["stderr"].decode(errors="replace").strip().splitlines() or [f"exit {run['rc']}"])[-1][:200]
        return analysis_unavailable(why, trace)


def facts_in_child(
    verdict: Verdict, source: str, *, limits: Limits | None = None, sandbox: SandboxStatus | None = None
) -> Verdict:
    """The simulator verdict with the real compiler's facts (``analyse_in_child`` without the trace): a new Verdict,
    ``verdict`` is left as it was. Never raises."""
    if verdict.status not in ("passed", "wrong"):
        return verdict
    data = analyse_in_child(
        verdict.problem,
        source,
        threads=verdict.threads_per_block or 0,
        facts=True,
        trace=False,
        limits=limits,
        sandbox=sandbox,
    )
    return verdict.with_facts(*facts_from(data))


def facts_from(data: dict) -> tuple[dict | None, str, str]:
    """The compiler's facts, note and status in an analysis child's answer, as ``Verdict.with_facts`` takes them."""
    return data["compile_facts"], data["note"], data.get("status") or (
        "unavailable" if data["compile_facts"] is None else "")


def interpret(run: dict, problem: str, backend: str, limits: Limits) -> Verdict:
    """The child's verdict, or the sandbox's own refusal when the child was stopped or said nothing readable."""
    if run.get("memory_exceeded"):
        return _sandbox_refusal(
            problem,
            backend,
            f"the submission used more than its {format_bytes(limits.memory_bytes)} of memory and was stopped "
            "(the kernel's OOM killer, in its memory cgroup); the app and the other submissions are unaffected",
            "memory-limit",
        )
    if run["timed_out"]:
        return _sandbox_refusal(
            problem,
            backend,
            f"the submission ran past the {limits.wall_s:g} s wall-clock limit and was "
            "killed (a loop that never ends, on the host or in a kernel?)",
            "time-limit",
        )
    rc = run["rc"]
    # killed by a signal: Popen reports -SIG; bubblewrap passes its child's as 128 + SIG
    sig = -rc if rc is not None and rc < 0 else (rc - 128 if rc is not None and 128 < rc < 128 + 65 else None)
    if sig:
        if sig == signal.SIGXCPU:
            return _sandbox_refusal(
                problem, backend, f"the submission used more than {limits.cpu_s} s of CPU time", "cpu-limit"
            )
        if sig == signal.SIGXFSZ:
            return _sandbox_refusal(
                problem, backend, f"the submission wrote a file over {limits.file_bytes:,} bytes", "file-limit"
            )
        return _sandbox_refusal(
            problem, backend, f"the submission's process was killed by signal {signal.Signals(sig).name}", "crashed"
        )
    if run["output_over"]:
        return _sandbox_refusal(
            problem, backend, f"the submission's output was over {limits.output_bytes:,} bytes", "output-limit"
        )
    try:
        verdict = read_verdict(run["stdout"])
    except (ValueError, TypeError, UnicodeDecodeError):
        tail = run["stderr"].decode(errors="replace").strip().splitlines()
        last = tail[-1][:300] if tail else f"exit status {rc}"
        if "MemoryError" in last or "Cannot allocate memory" in last:
            return _sandbox_refusal(
                problem, backend, f"the submission ran out of its memory allowance: {last}", "memory-limit"
            )
        return _sandbox_refusal(
            problem, backend, f"the submission's process ended without a verdict: {last}", "crashed"
        )
    return verdict


__all__ = [
    "analyse_in_child",
    "facts_from",
    "facts_in_child",
    "interpret",
    "judge_in_child",
    "precheck",
]
