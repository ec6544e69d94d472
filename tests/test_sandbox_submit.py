"""One ``submit()`` for the page and ``python -m gpu solve``: verdict, compiler facts and trace together,
with the checker run once in the app and once per child, and two sandboxed processes per submission at most.
Also the memory bound of every process that runs learner code (a cgroup where the host allows one)."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from dataclasses import replace

import pytest

from gpu.sandbox import checker, isolation, judging
from gpu.sandbox.isolation import Limits, SandboxStatus, run_argv, sandbox_status
from gpu.sandbox.service import Queueing, Submission, submit
from gpu.sandbox.verdict import Verdict
from gpu.trace.report import TraceReport

SANDBOX = sandbox_status(True)
OFF = SandboxStatus(False, "none", "switched off for this test", False)
LIMITS = Limits(wall_s=90.0, cpu_s=90)
GOOD = """from numba import cuda

@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + b[i]
"""
COUNTER = textwrap.dedent("""
    import os, runpy, sys
    import gpu.sandbox.checker as c
    calls = [0]
    original = c.check_source
    def counting(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)
    c.check_source = counting
    real_exit = os._exit
    def reporting_exit(code):  # the child ends by os._exit once its answer is written: atexit never runs
        os.write(2, f"\\nCHECKS={calls[0]}\\n".encode())
        real_exit(code)
    os._exit = reporting_exit
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
""")


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """Count the checker's runs in this process and in every child, and the children started."""
    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "h.sqlite3"))
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))
    counts = {"app": 0, "children": [], "child_checks": []}
    original_check, original_run = checker.check_source, isolation.run_argv

    def check(*args, **kwargs):
        counts["app"] += 1
        return original_check(*args, **kwargs)

    def run(argv, stdin, limits, simulated, sandbox):
        assert argv[1] == "-m"
        counts["children"].append(argv[2])
        done = original_run([argv[0], "-c", COUNTER, *argv[2:]], stdin, limits, simulated, sandbox)
        tail = done["stderr"].decode(errors="replace").strip().splitlines()
        counts["child_checks"].append(int(tail[-1].split("=")[1]) if tail and tail[-1].startswith("CHECKS=") else -1)
        done["stderr"] = b"\n".join(x.encode() for x in tail if not x.startswith("CHECKS="))
        return done

    monkeypatch.setattr(checker, "check_source", check)
    monkeypatch.setattr(isolation, "run_argv", run)
    return counts


def test_one_submission_checks_three_times_in_two_processes_with_verdict_facts_and_trace(counted):
    result = submit("vector-add", GOOD, save=False, limits=LIMITS, sandbox=OFF)
    assert isinstance(result, Submission) and result.verdict.status == "passed", result.verdict.message
    assert result.verdict.compile_facts and result.verdict.compile_facts["registers_per_thread"] > 0
    assert isinstance(result.trace, TraceReport) and not result.trace.problems
    # before the fix: three processes (judge, facts, trace) and five checker runs (two here, three in children)
    assert counted["children"] == ["gpu.sandbox.child", "gpu.sandbox.child"]
    assert counted["app"] == 1 and counted["child_checks"] == [1, 1]


def test_a_refused_source_starts_no_process_and_checks_once(counted):
    result = submit("vector-add", "import os\n" + GOOD, save=False, limits=LIMITS, sandbox=OFF)
    assert result.verdict.status == "refused" and result.trace is None
    assert counted["app"] == 1 and counted["children"] == []


def test_without_facts_and_trace_one_process(counted):
    result = submit("vector-add", GOOD, save=False, limits=LIMITS, sandbox=OFF, facts=False, trace=False)
    assert result.verdict.status == "passed" and result.trace is None and result.verdict.compile_facts is None
    assert counted["children"] == ["gpu.sandbox.child"] and counted["child_checks"] == [1]


def test_a_race_is_in_the_submissions_trace(tmp_path, monkeypatch):
    from gpu.problems import get

    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "h.sqlite3"))
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))
    solution = get("shared").solution.source
    racy = solution.replace("    cuda.syncthreads()\n    stride", "    stride")
    result = submit("shared", racy, save=False, limits=LIMITS, sandbox=OFF, facts=False)
    assert isinstance(result.trace, TraceReport) and result.trace.races


# --- memory: a per-submission cgroup where the host allows it ------------------------------------------


def test_the_memory_bound_that_applies_is_named_in_the_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))
    result = submit("vector-add", GOOD, save=False, limits=LIMITS, sandbox=OFF, facts=False, trace=False)
    memory = isolation.memory_bound_here(LIMITS, simulated=True)
    assert "memory:" in result.verdict.sandbox and memory in result.verdict.sandbox
    on_gpu = isolation.memory_bound_here(LIMITS, simulated=False)
    assert on_gpu != memory or "cgroup" in memory  # never RLIMIT_AS on a GPU
    if not isolation.MemoryCgroup.available():
        assert "RLIMIT_AS" in memory


@pytest.mark.skipif(not isolation.MemoryCgroup.available(), reason="no writable memory cgroup on this host")
@pytest.mark.parametrize("sandbox", [SANDBOX, OFF], ids=["sandbox", "no-sandbox"])
def test_an_allocation_far_beyond_the_memory_limit_is_contained(sandbox, tmp_path, monkeypatch):
    if sandbox is SANDBOX and not SANDBOX.works:
        pytest.skip(f"bubblewrap does not work here: {SANDBOX.reason}")
    # no RLIMIT_AS at all (as on a GPU): only the cgroup stands between this and the host's memory
    limits = replace(Limits(wall_s=30.0, cpu_s=30), memory_bytes=256 << 20)
    code = "block = b'x' * (2 << 30)\nprint('allocated', len(block))\n"
    run = run_argv([sys.executable, "-c", code], b"", limits, False, sandbox)
    assert run["memory_exceeded"], run
    verdict = judging.interpret(run, "vector-add", "cuda", limits)
    assert verdict.status == "refused" and verdict.refusal["rule"] == "memory-limit"
    assert "256 MiB" in verdict.message and "memory" in verdict.message
    # the app is still here, and the next submission runs
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))
    assert submit("vector-add", GOOD, save=False, limits=LIMITS, sandbox=sandbox, facts=False,
                  trace=False).verdict.status == "passed"


def test_memory_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_SUBMIT_MEMORY_MB", "512")
    assert Limits.from_env().memory_bytes == 512 << 20


def test_every_waiting_judge_gives_its_verdict_before_an_earlier_analysis(tmp_path, monkeypatch):
    """A class presses Run together: the first learner's analysis (facts, trace) waits for the judges already
    waiting, and each learner's verdict reaches the page (``Queueing.on_verdict``) before its own analysis starts."""
    import threading
    import time
    from contextlib import contextmanager

    from gpu.sandbox.verdict import Verdict
    from gpu.service.devicelock import FileFifoLock

    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "h.sqlite3"))
    fifo = FileFifoLock("gpu0", tmp_path / "locks", poll_s=0.01, queue_poll_s=0.01)
    events: list[str] = []
    b_queued = threading.Event()

    def judge(problem, source, limits=None, sandbox=None, lock=None):
        with lock:
            if source == "A":
                b_queued.wait(10)  # B arrives while A's judge runs
            else:  # a judge takes a while: A's analysis, were it not for the judges first, would queue meanwhile
                time.sleep(0.3)
            events.append(f"{source} judged")
        return Verdict(problem=problem, status="wrong", backend="simulator", message="", threads_per_block=64)

    def analyse(problem, source, threads, facts, trace, limits=None, sandbox=None, trace_test=None):
        events.append(f"{source} analysed")
        return {"compile_facts": None, "note": "", "status": "unavailable", "trace": None}

    monkeypatch.setattr(judging, "judge_in_child", judge)
    monkeypatch.setattr(judging, "analyse_in_child", analyse)

    @contextmanager
    def held(label):
        with fifo.hold(label):
            yield

    def one(label: str) -> None:
        queueing = Queueing(judge_lock=lambda: held(label), analysis_lock=lambda: held(f"{label} analysis"),
                            on_verdict=lambda s: events.append(f"{label} shown"))
        submit("vector-add", label, queueing=queueing, trace=False)

    deadline = time.monotonic() + 10
    a = threading.Thread(target=one, args=("A",))
    a.start()
    while not fifo.busy and time.monotonic() < deadline:
        time.sleep(0.01)
    b = threading.Thread(target=one, args=("B",))
    b.start()
    while fifo.waiting < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    b_queued.set()
    a.join(30)
    b.join(30)
    # both analyses wait until no judge is left, then queue together (in either order)
    assert events[:4] == ["A judged", "A shown", "B judged", "B shown"], events
    assert sorted(events[4:]) == ["A analysed", "B analysed"], events


def test_an_analysis_whose_turn_comes_gives_it_to_a_judge_that_queued_behind_it(tmp_path):
    """Someone else's run holds the queue; an analysis queues; then a learner presses Run. When the run ends, the
    analysis's turn comes first by the lock's order, and it hands the turn to the judge (fairness.judges_first)."""
    import threading
    import time
    from contextlib import contextmanager

    from gpu.sandbox import fairness
    from gpu.service.devicelock import FileFifoLock

    fifo = FileFifoLock("cpu", tmp_path / "locks", poll_s=0.01, queue_poll_s=0.01)
    judges = fairness.JudgesFirst()
    events: list[str] = []

    @contextmanager
    def held(label):
        with fifo.hold(label):
            yield

    other_started, other_ends = threading.Event(), threading.Event()

    def someone_elses_run():
        with held("a CPU benchmark"):
            other_started.set()
            other_ends.wait(10)
            events.append("run ends")

    def analysis():
        with fairness.judges_first(lambda: held("analysis"), judges=judges):
            events.append("analysed")

    def judge():
        with judges.judging(), held("judge"):
            events.append("judged")

    threads = [threading.Thread(target=someone_elses_run)]
    threads[0].start()
    other_started.wait(5)
    threads.append(threading.Thread(target=analysis))
    threads[1].start()
    deadline = time.monotonic() + 10
    while fifo.waiting < 1 and time.monotonic() < deadline:  # the analysis is in the queue
        time.sleep(0.01)
    threads.append(threading.Thread(target=judge))
    threads[2].start()
    while fifo.waiting < 2 and time.monotonic() < deadline:  # and the judge behind it
        time.sleep(0.01)
    other_ends.set()
    for t in threads:
        t.join(10)
    assert events == ["run ends", "judged", "analysed"], events


def test_a_submission_is_one_value_its_trace_joined_by_building_a_new_one():
    judged = Submission(Verdict(problem="vector-add", backend="simulator"), None, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        judged.trace = "not traced: set afterwards"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Queueing().on_verdict = print  # type: ignore[misc]
