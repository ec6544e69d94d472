"""A class on one demo: names kept without passwords, progress kept in SQLite, the compiler's facts compiled once per
source, and a queue where one learner's long judge does not hold everyone behind it."""

from __future__ import annotations

import csv
import io
import threading
import time
from contextlib import contextmanager

import pytest

from gpu.sandbox import fairness, judging
from gpu.sandbox.facts import FactsCache
from gpu.sandbox.isolation import Limits, SandboxStatus
from gpu.sandbox.progress import (
    CSV_COLUMNS,
    STUCK_AFTER,
    ProgressStore,
    class_summary,
    csv_text,
    failure_kind,
    latest_per_learner,
)
from gpu.sandbox.service import LearnerId, Queueing, analyse, judge
from gpu.sandbox.verdict import Verdict
from gpu.service.learners import LearnerStore, NameRefused, new_secret
from gpu.trace.report import TraceReport

OFF = SandboxStatus(False, "none", "switched off for this test", False)
LIMITS = Limits(wall_s=90.0, cpu_s=90)
GOOD = """from numba import cuda

@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + b[i]
"""


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "h.sqlite3"
    monkeypatch.setenv("KERNEL_LAB_DB", str(path))
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path / "locks"))
    return path


# --- names ----------------------------------------------------------------------------------------------------------


def test_a_name_is_kept_by_its_secret_and_refused_to_another_browser(db):
    mine, theirs = new_secret(), new_secret()
    assert LearnerStore(db).claim("Ada L", mine).key == "ada l"
    assert LearnerStore(db).claim("ada   l", mine).name == "Ada L"  # a restart, another spelling: the same learner
    with pytest.raises(NameRefused, match="taken"):
        LearnerStore(db).claim("ADA L", theirs)
    assert LearnerStore(db).known("Ada L", theirs) is None and LearnerStore(db).known("Ada L", mine) is not None


@pytest.mark.parametrize("name", ["", "   ", "you", "Anonymous", "<script>", "x" * 41, "a\u202eb"])
def test_a_malformed_or_reserved_name_is_refused_with_what_is_allowed(db, name):
    with pytest.raises(NameRefused):
        LearnerStore(db).claim(name, new_secret())


def test_a_malformed_secret_claims_nothing(db):
    with pytest.raises(NameRefused, match="key"):
        LearnerStore(db).claim("Grace", "not-hex")
    assert LearnerStore(db).names() == {}


# --- progress -------------------------------------------------------------------------------------------------------


def verdict(status: str, **fields) -> Verdict:
    return Verdict(problem="vector-add", backend="simulator", status=status, message=fields.pop("message", status),
                   **fields)


@pytest.mark.parametrize(
    ("made", "kind"),
    [
        (verdict("passed"), "passed"),
        (verdict("wrong", mismatch={"output": "out", "index": [3]}), "wrong result"),
        (verdict("wrong", mismatch={"error": "the kernel failed: out of bounds (thread (0,0,0)...)"}), "out of bounds"),
        (verdict("wrong", mismatch={"error": "the kernel raised ZeroDivisionError"}), "kernel error"),
        (verdict("wrong", mismatch={"error": "the kernel failed: loop limit (thread (0, 0, 0) ...)"}), "time limit"),
        (verdict("wrong", mismatch={"error": "the kernel failed: undefined (thread (0, 0, 0) ...): 1 << 64: ..."}),
         "undefined behaviour"),
        (verdict("refused", refusal={"rule": "import", "line": 1}), "refused by the checker"),
        (verdict("refused", refusal={"rule": "time-limit", "line": 0}), "time limit"),
        (verdict("refused", refusal={"rule": "memory-limit", "line": 0}), "memory limit"),
        (verdict("error"), "lab error"),
    ],
)
def test_each_verdict_has_its_failure_kind(made, kind):
    assert failure_kind(made) == kind


def test_progress_survives_a_new_store_and_is_only_the_learners_own(db):
    store = ProgressStore(db)
    store.record("ada", "Ada", verdict("wrong", mismatch={"output": "out"}), "src-a1")
    store.record("ada", "Ada", verdict("passed"), "src-a2")
    store.record("bob", "Bob", verdict("wrong", mismatch={"output": "out"}), "src-b1")
    again = ProgressStore(db)  # a restarted server
    assert again.progress("ada") == {"vector-add": "solved"}
    assert again.progress("bob") == {"vector-add": "tried"}
    assert again.progress("cy") == {}
    assert {a.source for a in again.attempts("bob")} == {"src-b1"}  # never another learner's code


def test_hints_are_recorded_once_per_stage(db):
    store = ProgressStore(db)
    assert store.hints_opened("ada", "vector-add") == 0
    store.open_hint("ada", "vector-add", 1)
    store.open_hint("ada", "vector-add", 1)
    store.open_hint("ada", "vector-add", 2)
    assert store.hints_opened("ada", "vector-add") == 2 and store.hints_opened("bob", "vector-add") == 0
    assert ProgressStore(db).hint_counts()["vector-add"][2] == 1


def test_the_class_summary_counts_solved_tried_stuck_and_kinds_with_an_example(db):
    store = ProgressStore(db)
    store.record("ada", "Ada", verdict("passed"), "s")
    for _ in range(STUCK_AFTER):
        store.record("bob", "Bob", verdict("wrong", mismatch={"error": "the kernel failed: out of bounds (x)"},
                                           message="out of bounds at line 5"), "s")
    store.record("cy", "Cy", verdict("refused", refusal={"rule": "import"}, message="refused (import)"), "s")
    attempts = store.every_attempt()
    (row,) = class_summary(attempts, ["vector-add"])
    assert (row.solved, row.tried, row.stuck) == (1, 2, 1)
    assert row.kinds[0][:3] == ("out of bounds", STUCK_AFTER, "Bob") and "line 5" in row.kinds[0][3]
    assert [k for k, *_ in row.kinds] == ["out of bounds", "refused by the checker"]
    assert [a.name for a in latest_per_learner(attempts)][0] in {"Ada", "Bob", "Cy"}
    rows = list(csv.reader(io.StringIO(csv_text(attempts))))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 1 + len(attempts)
    assert [r[1] for r in rows[1:]] == [a.name for a in attempts]


def test_a_named_learners_verdict_is_kept_and_a_pass_goes_on_the_leaderboard_under_their_name(db):
    from gpu.sandbox.submissions import SubmissionStore

    done = judge("vector-add", GOOD, learner=LearnerId("ada", "Ada"), limits=LIMITS, sandbox=OFF)
    assert done.verdict.status == "passed" and done.attempt_id
    assert ProgressStore(db).progress("ada") == {"vector-add": "solved"}
    assert [e.name for e in SubmissionStore(db).leaderboard("vector-add")] == ["Ada"]


# --- the compiler's facts, once per source ---------------------------------------------------------------------------


def test_the_same_source_is_compiled_once_and_a_changed_one_again(db, monkeypatch):
    asked = []
    original = judging.analyse_in_child

    def counting(problem, source, **kwargs):
        asked.append(kwargs["facts"])
        return original(problem, source, **kwargs)

    monkeypatch.setattr(judging, "analyse_in_child", counting)
    judged = judge("vector-add", GOOD, limits=LIMITS, sandbox=OFF, save=False)
    first = analyse("vector-add", GOOD, judged, trace=False, limits=LIMITS, sandbox=OFF).verdict
    assert first.compile_facts and first.compile_facts_status == "compiled"
    assert judged.verdict.compile_facts is None  # a new value: the judged one is unchanged
    again = judge("vector-add", GOOD, limits=LIMITS, sandbox=OFF, save=False)
    second = analyse("vector-add", GOOD, again, trace=False, limits=LIMITS, sandbox=OFF).verdict
    assert second.compile_facts == first.compile_facts
    assert asked == [True]  # the second asked no child at all: facts from the cache, no trace wanted
    changed = GOOD.replace("out[i] = a[i] + b[i]", "out[i] = b[i] + a[i]")
    third = judge("vector-add", changed, limits=LIMITS, sandbox=OFF, save=False)
    analyse("vector-add", changed, third, trace=True, limits=LIMITS, sandbox=OFF)
    assert asked == [True, True]


def test_the_same_source_is_traced_once_and_another_text_or_test_again(db, monkeypatch):
    """A class's identical kernels are traced once (``TRACES``): the eighth right answer's trace comes without a child.
    The exact text is the key (a trace names lines), and the traced test."""
    asked = []
    original = judging.analyse_in_child

    def counting(problem, source, **kwargs):
        asked.append((kwargs["facts"], kwargs["trace"], kwargs.get("trace_test")))
        return original(problem, source, **kwargs)

    monkeypatch.setattr(judging, "analyse_in_child", counting)
    judged = judge("vector-add", GOOD, limits=LIMITS, sandbox=OFF, save=False)
    first = analyse("vector-add", GOOD, judged, limits=LIMITS, sandbox=OFF)
    assert isinstance(first.trace, TraceReport) and first.verdict.compile_facts
    second = analyse("vector-add", GOOD, judge("vector-add", GOOD, limits=LIMITS, sandbox=OFF, save=False),
                     limits=LIMITS, sandbox=OFF)
    assert second.trace is first.trace and second.verdict.compile_facts == first.verdict.compile_facts
    assert asked == [(True, True, None)]  # the second started no child at all
    commented = "# my answer\n" + GOOD  # the same compile (facts kept), other line numbers (traced again)
    third = analyse("vector-add", commented, judge("vector-add", commented, limits=LIMITS, sandbox=OFF, save=False),
                    limits=LIMITS, sandbox=OFF)
    assert [s.line for s in third.trace.sectors] == [s.line + 1 for s in first.trace.sectors]  # its own lines
    analyse("vector-add", GOOD, judged, limits=LIMITS, sandbox=OFF, trace_test="one element")
    assert asked == [(True, True, None), (False, True, None), (False, True, "one element")]
    analyse("vector-add", GOOD, judged, limits=LIMITS, sandbox=OFF, cache=False)  # no cache: compiled and traced again
    assert asked[-1] == (True, True, None)


def test_the_trace_cache_is_bounded_by_reports_and_picture_rows_and_keeps_no_failure():
    from dataclasses import replace

    from gpu.sandbox.trace_submission import TraceCache

    report = analyse_report()
    cache = TraceCache(entries=2, rows=10**6)
    for k in ("a", "b", "c"):
        cache.put(k, report)
    assert len(cache) == 2 and cache.get("a") is None and cache.get("c") is report
    cache.put("why", "not traced: it ran past the 20 s wall-clock limit")
    assert cache.get("why") is None
    rows = TraceCache(entries=10, rows=3)
    rows.put("small", replace(report, picture=({},)))
    rows.put("big", replace(report, picture=({},) * 3))  # the two together are past 3 rows: the older goes
    assert rows.get("small") is None and rows.get("big") is not None and len(rows) == 1


def analyse_report() -> TraceReport:
    import numpy as np

    from gpu.core.backend import cuda
    from gpu.trace.record import trace_launch
    from gpu.trace.report import analyse as analyse_trace

    @cuda.jit
    def copy(a, out):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = a[i]

    return analyse_trace(trace_launch(copy, 1, 32, [np.ones(8, np.float32), np.zeros(8, np.float32)]))


def test_the_facts_cache_is_bounded_and_never_keeps_an_unavailable_compiler(db):
    cache = FactsCache(db, entries=3)
    for i in range(5):
        cache.put(f"k{i}", {"registers_per_thread": i}, "note", "compiled")
    assert cache.count() == 3 and cache.get("k0") is None and cache.get("k4")[0] == {"registers_per_thread": 4}
    cache.put("gone", None, "the compiler could not run", "unavailable")
    assert cache.get("gone") is None


# --- the queue ------------------------------------------------------------------------------------------------------


def test_a_learner_has_one_place_in_the_queue():
    gate = fairness.LearnerGate()
    gate.enter("ada")
    with pytest.raises(fairness.LearnerBusy, match="still queued"):
        gate.enter("ada")
    gate.enter("bob")  # another learner is not held up
    gate.leave("ada")
    gate.enter("ada")


@contextmanager
def held(lock: threading.Lock):
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


def test_a_long_judge_yields_the_lock_after_its_quantum_and_keeps_running():
    lock, lane = threading.Lock(), threading.BoundedSemaphore(1)
    order = []

    def long_judge():
        with fairness.TimeSlice(held(lock), quantum_s=0.2, lane=lane) as turn:
            finished.wait(5)
            order.append(("long ends", turn.yielded))

    finished = threading.Event()
    first = threading.Thread(target=long_judge)
    first.start()
    time.sleep(0.05)
    with fairness.TimeSlice(held(lock), quantum_s=0.2, lane=lane):  # the next learner gets the lock meanwhile
        order.append("short runs")
    finished.set()
    first.join()
    assert order == ["short runs", ("long ends", True)]
    assert lane.acquire(blocking=False)  # the lane's slot came back


def test_with_the_lane_full_a_long_judge_keeps_its_turn():
    lock, lane = threading.Lock(), threading.BoundedSemaphore(1)
    lane.acquire()  # someone else's long judge runs in the lane
    with fairness.TimeSlice(held(lock), quantum_s=0.05, lane=lane) as turn:
        time.sleep(0.3)
        assert lock.locked()
    assert not turn.yielded and not lock.locked()


def test_a_long_judge_that_found_the_lane_full_yields_once_a_place_frees():
    """Once, a never-ending kernel looked once, found the lane full of analyses, and held a class's queue for its whole
    wall-clock limit: it looks again every ``RETRY_S`` until it can yield."""
    lock, lane = threading.Lock(), threading.BoundedSemaphore(1)
    lane.acquire()  # someone else's long judge runs in the lane
    with fairness.TimeSlice(held(lock), quantum_s=0.05, lane=lane) as turn:
        time.sleep(0.2)
        assert lock.locked() and not turn.yielded  # the lane is full: it keeps the turn
        lane.release()  # that judge ends
        deadline = time.monotonic() + 30
        while lock.locked():
            assert time.monotonic() < deadline, "never yielded once the lane had room"
            time.sleep(0.01)
        assert turn.yielded
    assert not lock.locked()
    assert lane.acquire(blocking=False)  # its place in the lane given back at the end
    lane.release()


def test_a_comment_or_layout_does_not_compile_again_but_a_changed_line_does():
    from gpu.problems import get

    problem = get("vector-add")
    key = FactsCache.key(problem, GOOD, 128)
    assert FactsCache.key(problem, "# my answer\n\n" + GOOD.replace("    if", "    # guard\n    if"), 128) == key
    assert FactsCache.key(problem, GOOD.replace("a[i] + b[i]", "b[i] + a[i]"), 128) != key
    assert FactsCache.key(problem, GOOD, 256) != key  # another block size: other occupancy


@pytest.mark.parametrize("trace", [False, True], ids=["facts", "facts and trace"])
def test_analyses_queued_together_compile_and_trace_the_same_source_once(db, monkeypatch, trace):
    asked = []
    original = judging.analyse_in_child

    def counting(problem, source, **kwargs):
        asked.append(kwargs["facts"])
        return original(problem, source, **kwargs)

    monkeypatch.setattr(judging, "analyse_in_child", counting)
    judged = judge("vector-add", GOOD, limits=LIMITS, sandbox=OFF, save=False)
    queue = threading.Lock()  # the CPU lock the analyses share

    def one() -> None:
        analyse("vector-add", GOOD, judged, trace=trace, limits=LIMITS, sandbox=OFF,
                queueing=Queueing(analysis_lock=lambda: held(queue)))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert asked == [True]  # the two behind it found its facts once their turn came


def test_an_analysis_of_a_source_being_analysed_waits_for_it_without_a_turn_in_the_queue(db, monkeypatch):
    """A class's identical kernels (the starter code, the same right answer): the first analysis takes a turn, and
    the others wait for its facts and trace beside the queue, not in it behind the class's other analyses."""
    original = judging.analyse_in_child
    started = threading.Event()

    def slow(problem, source, **kwargs):
        started.set()
        time.sleep(0.5)  # the first is still being made when the second asks
        return original(problem, source, **kwargs)

    monkeypatch.setattr(judging, "analyse_in_child", slow)
    judged = judge("vector-add", GOOD, limits=LIMITS, sandbox=OFF, save=False)
    queue, turns = threading.Lock(), []

    @contextmanager
    def turn():
        turns.append(threading.current_thread().name)
        with held(queue):
            yield

    done = {}

    def one(name: str) -> None:
        done[name] = analyse("vector-add", GOOD, judged, limits=LIMITS, sandbox=OFF,
                             queueing=Queueing(analysis_lock=turn))

    first = threading.Thread(target=one, args=("first",), name="first")
    first.start()
    assert started.wait(60)
    second = threading.Thread(target=one, args=("second",), name="second")
    second.start()
    first.join()
    second.join()
    assert turns == ["first"]
    assert isinstance(done["second"].trace, TraceReport) and done["second"].verdict.compile_facts is not None


def test_a_second_compile_of_the_same_key_waits_for_the_first():
    from gpu.sandbox.facts import CompileOnce

    once = CompileOnce()
    assert once.claim("k", wait_s=5)
    waited = []
    second = threading.Thread(target=lambda: waited.append(once.claim("k", wait_s=5)))
    second.start()
    time.sleep(0.1)
    assert second.is_alive()  # waiting for the first compile, not compiling beside it
    once.release("k")
    second.join()
    assert waited == [False] and once.claim("k", wait_s=0)  # after it ended, the key is free again


def test_an_analysis_waits_until_no_judge_is_queued_or_holding_the_queue():
    judges = fairness.JudgesFirst()
    order, told = [], []
    first_in, release_first, release_second = threading.Event(), threading.Event(), threading.Event()

    def judge(name, entered, release):
        with judges.judging():
            entered.set()
            release.wait(5)
            order.append(f"{name} verdict")

    def analysis():
        judges.wait_clear(told.append, poll_s=0.05)
        order.append("analysis")

    second_in = threading.Event()
    threads = [threading.Thread(target=judge, args=("first", first_in, release_first)),
               threading.Thread(target=judge, args=("second", second_in, release_second))]
    for t in threads:
        t.start()
    first_in.wait(5)
    second_in.wait(5)
    waiting = threading.Thread(target=analysis)
    waiting.start()
    release_first.set()
    threads[0].join()
    time.sleep(0.2)
    assert "analysis" not in order  # one judge still counted
    release_second.set()
    for t in (threads[1], waiting):
        t.join(5)
    assert order == ["first verdict", "second verdict", "analysis"]
    assert told and told[0] == 2 and judges.pending() == 0


def test_a_judge_that_yielded_its_turn_no_longer_holds_the_analyses():
    judges, lock, lane = fairness.JudgesFirst(), threading.Lock(), threading.BoundedSemaphore(1)
    finished = threading.Event()

    def never_ending_judge():
        with judges.judging() as done, fairness.TimeSlice(held(lock), quantum_s=0.1, lane=lane, on_yield=done):
            finished.wait(5)

    t = threading.Thread(target=never_ending_judge)
    t.start()
    time.sleep(0.05)
    assert judges.pending() == 1
    judges.wait_clear(poll_s=0.05)  # returns once the quantum passed: the judge runs on beside the queue
    assert t.is_alive() and judges.pending() == 0
    finished.set()
    t.join(5)
    assert judges.pending() == 0  # done() is idempotent: not counted below zero


def test_a_child_past_its_share_of_cpu_lowers_its_own_priority_and_a_waiting_one_does_not():
    """gpu.sandbox.child.lower_priority_after: the main thread's nice value, from a watching thread, once the
    process has used its CPU; a process that only waits (for the cores, here for a sleep) keeps its priority."""
    import os
    import subprocess
    import sys

    code = ("import os, time\n"
            "from gpu.sandbox.child import lower_priority_after\n"
            "lower_priority_after(0.2)\n"
            "before = os.getpriority(os.PRIO_PROCESS, os.getpid())\n"
            "time.sleep(0.6)\n"
            "waited = os.getpriority(os.PRIO_PROCESS, os.getpid())\n"
            "start = time.process_time()\n"
            "while time.process_time() - start < 0.4: pass\n"
            "deadline = time.monotonic() + 30\n"  # the watcher looks every 0.05 s, when it gets a core
            "while os.getpriority(os.PRIO_PROCESS, os.getpid()) != 19 and time.monotonic() < deadline:\n"
            "    time.sleep(0.02)\n"
            "print(before, waited, os.getpriority(os.PRIO_PROCESS, os.getpid()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         start_new_session=True)  # as the app starts every child: a session of its own
    before, waited, after = map(int, out.stdout.split())
    assert before < 19 and waited == before and after == 19, out.stdout


def test_only_a_judge_yields_the_cores_past_its_turn_and_only_in_the_simulator():
    """An analysis keeps the children's priority: the class's other analyses of its source wait for its compile."""
    from gpu.sandbox.child import yields_when_late

    assert yields_when_late(None, simulated=True)  # a judge's request has no mode
    assert not yields_when_late("analysis", simulated=True)
    assert not yields_when_late("facts", simulated=True)
    assert not yields_when_late(None, simulated=False)  # on a GPU nothing yields


def test_an_analysis_compiles_at_the_childrens_priority_and_its_trace_yields_past_its_share(monkeypatch):
    """The trace runs the learner's kernel again (a loop to the simulator's limit takes seconds): past its share it
    leaves the cores to the judges, as a judge does; the compile before it (no learner's code runs) does not."""
    from gpu.problems import get
    from gpu.sandbox import child, trace_child

    calls = []
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.setattr(child, "lower_priority_after", lambda seconds, *a: calls.append(("lower", seconds)))
    monkeypatch.setattr(child, "lower_address_space", lambda _bytes: None)
    monkeypatch.setattr(trace_child, "trace_checked", lambda *a: calls.append(("trace",)) or "traced")
    result = child.analysis(get("vector-add"), {"source": GOOD, "facts": False, "trace": True, "seed": 1})
    assert result["trace"] == "traced"
    assert [c[0] for c in calls] == ["lower", "trace"]  # its share of CPU counted from the trace's start
    assert calls[0][1] == fairness.LATE_CPU_S
    calls.clear()
    child.analysis(get("vector-add"), {"source": GOOD, "facts": False, "trace": False})
    assert calls == []  # facts alone: nothing yields


def test_a_child_in_someone_elses_session_leaves_that_sessions_priority_alone():
    """The autogroup's nice is the whole session's: only a child that leads its own session sets it. (A child run
    inside the test runner's session once set the runner's, and every server and browser started after it, to nice
    19.) Checked in a throwaway session: its leader starts a child that lowers its priority, then reads its own."""
    import os
    import subprocess
    import sys

    if not os.path.exists("/proc/self/autogroup"):
        pytest.skip("this kernel groups no tasks by session (no /proc/self/autogroup)")
    inner = "from gpu.sandbox.child import lower_priority; lower_priority(19)"
    leader = ("import subprocess, sys\n"
              f"subprocess.run([sys.executable, '-c', {inner!r}], check=True)\n"
              "print(open('/proc/self/autogroup').read().split()[-1])\n")
    out = subprocess.run([sys.executable, "-c", leader], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), start_new_session=True)
    assert int(out.stdout) == 0, out.stdout  # a fresh session's nice, untouched by the child inside it


def test_an_autogroup_change_the_kernel_defers_is_made_again(monkeypatch):
    """Without CAP_SYS_ADMIN (the sandbox's user namespace) the kernel lets one autogroup change through per 0.1 s on
    the whole host and answers EAGAIN to the rest: a class's children starting together tried once, and those
    refused kept their session at the server's own weight. The child tries again until it is let through."""
    import errno
    import io

    from gpu.sandbox import child

    written: list[str] = []
    refusals = [2]

    class Autogroup(io.StringIO):
        def close(self) -> None:
            written.append(self.getvalue())
            super().close()

    def fake_open(path, mode="r", *args, **kwargs):
        assert path == "/proc/self/autogroup" and mode == "w"
        if refusals[0]:
            refusals[0] -= 1
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return Autogroup()

    monkeypatch.setattr(child, "open", fake_open, raising=False)
    monkeypatch.setattr(child, "AUTOGROUP_RETRY_S", 0.001)
    monkeypatch.setattr(child.os, "setpriority", lambda *a: None)
    monkeypatch.setenv(child.OWN_SESSION, "1")
    child.lower_priority(19)
    deadline = time.monotonic() + 10
    while not written and time.monotonic() < deadline:
        time.sleep(0.01)
    assert written == ["19"] and refusals == [0]
    monkeypatch.delenv(child.OWN_SESSION)
    child.lower_priority(10)  # not started by the lab in a session of its own: the session's nice is left alone
    time.sleep(0.05)
    assert written == ["19"]
    monkeypatch.setattr(child, "open", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOENT, "no autogroup")),
                        raising=False)
    assert child._set_autogroup(10)  # no autogroup here: nothing to try again
