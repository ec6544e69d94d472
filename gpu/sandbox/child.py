"""One submission's process: ``python -m gpu.sandbox.child LIMITS_JSON`` with the request on stdin.

Started fresh for every submission (by ``gpu.sandbox.judging`` through ``gpu.sandbox.isolation``, inside bubblewrap when
available) and gone when it ends, so nothing a submission leaves behind (module state,
cached results, a poisoned CUDA context) reaches the next one. Order matters:

1. take the real stdout aside (the verdict goes there) and point fd 1 at /dev/null,
   so nothing a kernel prints can forge or corrupt the verdict;
2. apply the resource limits (``setrlimit``) before anything else runs;
3. read the request (problem, source, seed) from the pipe: the seed is never in a file
   or an environment variable the submission could read (a judge started ahead of its request,
   ``gpu.sandbox.warm``, imports the lab first and then waits here: no learner's code is in it yet);
4. judge (``gpu.sandbox.harness``) and write one JSON verdict; or, in the ``analysis`` mode
   (after a verdict that ran, or for ``python -m gpu trace FILE``), the compiler's facts and
   the memory trace in one process: the source is checked once, NVVM runs (in its own
   subprocess, with no address-space cap), then the address space is lowered and the
   learner's module is exec'd and traced in Kernel Lab's simulator (gpu/sim/recording.py).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import time

MAX_REQUEST_BYTES = 1 << 20
WARM_JUDGE = "warm-judge"  # the command line's third word for a judge started before its request (gpu.sandbox.warm)
WARM_ANALYSIS = "warm-analysis"  # ... for an analysis that traces, started before its request


CHILD_NICENESS = 10  # below the app's server: a class's submissions queue for the cores, the pages stay quick
LATE_NICENESS = 19  # a child past its share of CPU (``lower_priority_after``)
OWN_SESSION = "KERNEL_LAB_OWN_SESSION"  # "1": started by the lab in a session of its own (gpu/core/settings.py)


def lower_priority(niceness: int = CHILD_NICENESS) -> None:
    """Run this process, and what it starts, at ``niceness`` below the app, autogroup included.

    The child starts a session of its own (``isolation.run_argv``'s ``start_new_session``, bubblewrap's
    ``--new-session``), and where the kernel groups tasks by session (autogroup, on by
    default on desktop and server Linux) a process's nice value only weighs against the
    processes of its own session: measured here, four spinning processes, three of them
    ``nice 10`` in sessions of their own, each got the same CPU time. The session's own
    weight is its autogroup's nice (``/proc/self/autogroup``, sched(7)), set here too;
    raising either needs no privilege.

    The autogroup only where the lab started this process in a session of its own (``OWN_SESSION``, set by
    ``isolation.child_env``; under bubblewrap the session's leader is the sandbox's init, this process's parent):
    the autogroup is the whole session's, and a process started inside another's session (a test's plain
    ``subprocess.run``) once set the session of the shell that ran the tests to nice 19, and with it every server,
    browser and benchmark started from that shell after.
    """
    try:  # the main thread (the process's id): from another thread, os.nice would change that thread only
        os.setpriority(os.PRIO_PROCESS, os.getpid(), max(niceness, os.getpriority(os.PRIO_PROCESS, os.getpid())))
    except OSError:
        pass
    if os.environ.get(OWN_SESSION) != "1":
        return
    if not _set_autogroup(niceness):  # another process changed its autogroup's nice in the last 0.1 s: again, soon
        import threading

        threading.Thread(target=_set_autogroup_soon, args=(niceness,), daemon=True).start()


AUTOGROUP_RETRY_S = 0.05
AUTOGROUP_TRIES = 100  # the kernel lets one change through per 0.1 s, host-wide: a class's burst of 16 fits


def _set_autogroup(niceness: int) -> bool:
    """Write this session's autogroup nice; False when the kernel said "again" (EAGAIN: without CAP_SYS_ADMIN, as in
    the sandbox's user namespace, one change per 0.1 s is let through on the whole host, kernel/sched/autogroup.c).
    True otherwise, done or not possible here (no autogroup: the process's own nice suffices)."""
    import errno

    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(niceness))
    except OSError as exc:
        return exc.errno != errno.EAGAIN
    return True


def _set_autogroup_soon(niceness: int) -> None:
    for _ in range(AUTOGROUP_TRIES):
        time.sleep(AUTOGROUP_RETRY_S)
        if _set_autogroup(niceness):
            return


def lower_priority_after(cpu_s: float, niceness: int = LATE_NICENESS, poll_s: float = 0.05) -> None:
    """Once this process has used ``cpu_s`` more seconds of CPU (``gpu.sandbox.fairness.LATE_CPU_S``), it runs at
    ``niceness`` (the lowest): a judge or a trace still running leaves the cores to the judges that follow. Measured
    in a class of 16, two never-ending kernels at the judges' own priority took two of every three slices of CPU from
    them for their whole wall-clock limit.

    CPU used, not time passed: on a loaded machine a kernel that needs 0.6 s of CPU (a loop stopped at the
    simulator's limit) got part of it in its first 2 s, was lowered then (the rule was 2 s of wall clock), and
    crawled at the lowest priority behind 16 pages for up to 20 s more; waiting for the cores is not holding them."""
    import threading

    start = time.process_time()  # every thread of this process

    def watch() -> None:
        while time.process_time() - start < cpu_s:
            time.sleep(poll_s)
        lower_priority(niceness)

    threading.Thread(target=watch, name="kernel-lab-late", daemon=True).start()


def in_simulator() -> bool:
    """Whether this child's kernels run in the CUDA simulator (read from the environment the judge set: importing
    ``gpu`` to ask would decide the simulator before the child has chosen its flavour)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def yields_when_late(mode: str | None, simulated: bool) -> bool:
    """Whether a child of request ``mode`` drops to the lowest priority past its share of CPU
    (``lower_priority_after``).

    A judge does, in the simulator (on a GPU nothing yields: ``gpu.sandbox.fairness``). An analysis ("facts",
    "analysis") does not from its start: its compile is bounded work that the class's other analyses of the same
    source wait for (``gpu.sandbox.facts.COMPILING``); at the lowest priority, a class's first compile took 20 s
    behind the pages while every other learner's facts waited on it (in a class of 16, ``benchmarks/
    class_submit.py``, three classes each, alternating: 1-4 of 15 facts arrived within 20 s of their verdict with
    analyses yielding, 15 of 15 without). Its trace, which runs the learner's kernel again (a loop to the
    simulator's limit takes seconds), yields past its share as a judge does (``analysis``): at the children's
    priority, such traces held the yielded judges of never-ending kernels back (their verdicts 13.5 s from the
    press, against 5.4 s).
    """
    return simulated and mode not in ("facts", "analysis")


def apply_limits(limits: dict) -> list[str]:
    """setrlimit for this process and its children, at a lower CPU priority than the app (``lower_priority``:
    the server that draws every learner's pages keeps the cores first); returns the limits that could not be set."""
    lower_priority()
    wanted = [
        ("cpu_s", resource.RLIMIT_CPU),
        ("file_bytes", resource.RLIMIT_FSIZE),
        ("core_bytes", resource.RLIMIT_CORE),
    ]
    if limits.get("address_space_bytes"):  # the simulator only: RLIMIT_AS breaks the CUDA driver's reservations
        wanted.append(("address_space_bytes", resource.RLIMIT_AS))
    if (
        limits.get("tasks") and os.geteuid() != 0
    ):  # root ignores RLIMIT_NPROC; the pids cgroup (``gpu.sandbox.isolation``) covers that case
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


def lower_address_space(limit: int) -> str | None:
    """RLIMIT_AS down to ``limit`` (0: leave it); the reason where it could not be set."""
    if not limit:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError) as exc:
        return f"address_space_bytes: {exc}"
    return None


def analysis(problem, request: dict) -> dict:
    """The compiler's facts and the trace of ``request["source"]``: one check, then NVVM, then the trace. The trace,
    which runs the learner's kernel, yields the cores past ``LATE_CPU_S`` of its own CPU as a judge does
    (``yields_when_late``); the compile does not."""
    from gpu.sandbox.checker import Refusal, check_source

    source = request["source"]
    result: dict = {"compile_facts": None, "note": "", "status": "", "trace": None}
    try:
        check_source(source, problem.kernel_name, len(problem.params))  # the one check in this process
    except Refusal as refusal:
        why = str(refusal)
        return {"compile_facts": None, "note": f"not compiled: {why}", "status": "", "trace": f"not traced: {why}"}
    if request.get("facts", True):
        from gpu.sandbox.facts import compile_facts

        # exec'd by the compile worker (a subprocess of this sandboxed one), after the check above
        facts, note, status = compile_facts(problem, source, int(request.get("threads") or 0))
        result["compile_facts"], result["note"], result["status"] = facts, note, status
    if request.get("trace"):
        if in_simulator():
            from gpu.sandbox.fairness import LATE_CPU_S

            lower_priority_after(LATE_CPU_S)  # the trace's own CPU (the compile ran in a process of its own)
        lower_address_space(int(request.get("address_space_bytes") or 0))
        from gpu.sandbox.trace_child import trace_checked

        try:
            result["trace"] = trace_checked(problem, source, int(request["seed"]), request.get("trace_test"))
        except Exception as exc:  # one line, never a traceback
            result["trace"] = f"the trace could not run: {type(exc).__name__}: {str(exc).strip()[:300]}"
    return result


def import_judge():
    """What a judge needs from the lab (importing it imports numba and decides the simulator): about 0.4 s here."""
    from gpu.problems import get
    from gpu.sandbox.harness import judge
    from gpu.sandbox.verdict import Verdict

    return get, judge, Verdict


def imported_quickly(trace: bool) -> None:
    """The lab's imports (and, for an analysis that traces, the recording simulator's) with the cyclic garbage
    collector off, then frozen out of its way: numba's import makes hundreds of thousands of objects, none of them
    garbage, and collecting them cost about a tenth of a spare's 0.5 s of CPU."""
    gc.disable()
    try:
        import_judge()
        if trace:
            import gpu.sandbox.trace_child  # noqa: F401  (the recording simulator)
    finally:
        gc.freeze()  # what the imports made is never collected, nor looked at again by a collection
        gc.enable()


def main(argv: list[str]) -> int:
    verdict_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")  # (Python-level prints go nowhere too)
    limits = json.loads(argv[1]) if len(argv) > 1 else {}
    warm = argv[2] if len(argv) > 2 and argv[2] in (WARM_JUDGE, WARM_ANALYSIS) else None
    missed = apply_limits(limits)
    if warm == WARM_ANALYSIS:
        os.environ["KERNEL_LAB_SIMULATOR"] = "lab"  # as below, for the trace: before gpu is imported
    if warm:  # started ahead of its request (gpu.sandbox.warm): the lab's imports first, then wait for it
        imported_quickly(warm == WARM_ANALYSIS)
    request = json.loads(sys.stdin.buffer.read(MAX_REQUEST_BYTES) or b"{}")
    mode = request.get("mode")
    if mode in ("facts", "analysis") and request.get("trace"):
        # the trace records accesses through Kernel Lab's simulator's hooks: chosen before gpu is imported
        # (the name by hand: gpu.core.settings declares it, but importing it would import gpu, and so decide, first)
        os.environ["KERNEL_LAB_SIMULATOR"] = "lab"
    get, judge, Verdict = import_judge()
    if yields_when_late(mode, in_simulator()):
        from gpu.sandbox.fairness import LATE_CPU_S  # (after the simulator is chosen: importing gpu decides it)

        lower_priority_after(LATE_CPU_S)

    try:
        if warm == WARM_JUDGE and mode is not None:
            raise ValueError("a child started for a judge was sent another request")
        if warm == WARM_ANALYSIS and not (mode == "analysis" and request.get("trace")):
            raise ValueError("a child started for an analysis that traces was sent another request")
        problem = get(request["problem"])
        if mode in ("facts", "analysis"):  # the second step after a verdict: the compiler's facts and the trace
            try:
                result = analysis(problem, request)
            except Exception as exc:  # never a traceback: one line
                why = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
                result = {
                    "compile_facts": None,
                    "note": f"the compiler's facts are unavailable: {why}",
                    "status": "unavailable",
                    "trace": f"not traced: {why}" if request.get("trace") else None,
                }
            with os.fdopen(verdict_fd, "wb") as out:
                out.write(json.dumps(result, default=str).encode())
            return 0
        verdict = judge(problem, request["source"], int(request["seed"]))
    except Exception as exc:  # never a traceback: one line
        verdict = Verdict.start(str(request.get("problem")), "unknown").failed(
            f"the harness could not start: {type(exc).__name__}: {exc}"
        )
    if missed:
        from dataclasses import replace

        verdict = replace(verdict, sandbox="limits not applied: " + "; ".join(missed))
    with os.fdopen(verdict_fd, "wb") as out:
        out.write(verdict.to_json().encode())
    return 0


if __name__ == "__main__":
    # The verdict is written and closed: end now. Python's own shutdown (numba, llvmlite, the simulator's threads)
    # took about 0.1 s more here, and this process holds nothing anyone reads afterwards.
    code = main(sys.argv)
    sys.stderr.flush()
    os._exit(code)
