"""A judge's process started ahead of its submission (gpu/sandbox/warm.py): the same verdicts, a fresh process
per submission, never a spare started for other limits, a dead spare replaced, nothing left at close."""

from __future__ import annotations

import json
import threading
import time

import pytest

from gpu.sandbox import judging
from gpu.sandbox.isolation import Limits, SandboxStatus, sandbox_status
from gpu.sandbox.protocol import analysis_request, child_argv, judge_request, read_verdict
from gpu.sandbox.warm import SpareKeeper
from tests.test_sandbox_submit import GOOD, OFF  # the same correct kernel, the same sandbox switched off

LIMITS = Limits(wall_s=60.0, cpu_s=60)
WRONG = GOOD.replace("if i < a.size:", "if i < a.size - 1:")


def one_spare(monkeypatch, name: str):
    """A keeper of one spare in place of ``judging``'s ``name`` (KEEPER or ANALYSES), closed afterwards."""
    kept = SpareKeeper(capacity=1)
    kept.enable()
    monkeypatch.setattr(judging, name, kept)
    yield kept
    kept.close()


@pytest.fixture
def keeper(monkeypatch):
    yield from one_spare(monkeypatch, "KEEPER")


def argv(limits: Limits = LIMITS) -> list[str]:
    return child_argv(limits, True, warm=True)


def sandboxes() -> list[SandboxStatus]:
    works = sandbox_status(True)
    return [OFF, works] if works.works else [OFF]


@pytest.mark.parametrize("sandbox", sandboxes(), ids=lambda s: s.how)
def test_verdicts_through_a_spare_are_the_judges_verdicts(keeper, sandbox):
    first = judging.judge_in_child("vector-add", GOOD, limits=LIMITS, sandbox=sandbox)
    keeper.settle()
    assert keeper.spares() == 1  # the next one asked for as the first was handed out
    wrong = judging.judge_in_child("vector-add", WRONG, limits=LIMITS, sandbox=sandbox)
    good = judging.judge_in_child("vector-add", GOOD, limits=LIMITS, sandbox=sandbox)
    assert first.status == good.status == "passed", (first.message, good.message)
    assert wrong.status == "wrong" and "never written" in wrong.message, wrong.message


def test_each_submission_gets_the_spare_then_a_fresh_process(keeper):
    keeper.prime(argv(), LIMITS, True, OFF)
    keeper.settle()
    spare = keeper._spares[0][1]  # (which process waits is what this test is about)
    taken = keeper.take(argv(), LIMITS, True, OFF)
    assert taken is spare
    second = keeper.take(argv(), LIMITS, True, OFF)
    assert second is not taken and second.proc.pid != taken.proc.pid
    for child in (taken, second):
        verdict = read_verdict(child.finish(judge_request("vector-add", GOOD))["stdout"])
        assert verdict.status == "passed", verdict.message
        assert child.proc.poll() is not None  # used once, ended
    with pytest.raises(RuntimeError):
        taken.finish(judge_request("vector-add", GOOD))


def test_a_spare_for_other_limits_is_ended_not_used(keeper):
    keeper.prime(argv(), LIMITS, True, OFF)
    keeper.settle()
    old = keeper._spares[0][1]
    other = Limits(wall_s=30.0, cpu_s=30)
    taken = keeper.take(argv(other), other, True, OFF)
    assert taken is not old and old.proc.poll() is not None
    taken.discard()


def test_a_spare_that_died_is_replaced(keeper):
    keeper.prime(argv(), LIMITS, True, OFF)
    keeper.settle()
    dead = keeper._spares[0][1]
    dead.proc.kill()
    dead.proc.wait()
    taken = keeper.take(argv(), LIMITS, True, OFF)
    assert taken is not dead
    verdict = read_verdict(taken.finish(judge_request("vector-add", GOOD))["stdout"])
    assert verdict.status == "passed", verdict.message


@pytest.mark.skipif(not sandbox_status(True).works, reason="bubblewrap does not work here (its --die-with-parent)")
def test_a_spare_outlives_the_thread_that_asked_for_it(keeper):
    """Streamlit runs each page run in a thread that ends with it; bubblewrap's --die-with-parent kills a process
    when the *thread* that started it ends. Before the starter thread, every spare a page asked for died so."""
    sandbox = sandbox_status(True)
    def page_run():  # asks, and lives on a moment (past bubblewrap's prctl: a thread gone before it kills nothing)
        keeper.prime(argv(), LIMITS, True, sandbox)
        keeper.settle()
        time.sleep(0.5)

    asker = threading.Thread(target=page_run)
    asker.start()
    asker.join()
    time.sleep(0.5)  # the parent-death signal is immediate: a spare killed by it is gone by now
    spare = keeper._spares[0][1]
    assert spare.alive()
    verdict = judging.judge_in_child("vector-add", GOOD, limits=LIMITS, sandbox=sandbox)
    assert verdict.status == "passed", verdict.message


def test_the_wall_clock_counts_from_the_request(keeper):
    quick = Limits(wall_s=2.0, cpu_s=60)
    keeper.prime(argv(quick), quick, True, OFF)
    keeper.settle()
    time.sleep(2.5)  # longer than its whole limit, waiting for a request
    run = keeper.take(argv(quick), quick, True, OFF).finish(judge_request("vector-add", GOOD))
    assert not run["timed_out"] and read_verdict(run["stdout"]).status == "passed"


def test_a_warm_judge_refuses_any_other_request(keeper):
    child = keeper.take(argv(), LIMITS, True, OFF)
    request = analysis_request("vector-add", GOOD, threads=128, facts=False, trace=True, trace_test=None,
                               limits=LIMITS)
    run = child.finish(request)
    answer = json.loads(run["stdout"])
    assert answer["status"] == "error" and "another request" in answer["message"], answer


def test_close_ends_the_spare_and_keeps_none(keeper):
    keeper.prime(argv(), LIMITS, True, OFF)
    keeper.settle()
    spare = keeper._spares[0][1]
    keeper.close()
    assert spare.proc.poll() is not None and keeper.spares() == 0 and not keeper.enabled
    child = keeper.take(argv(), LIMITS, True, OFF)  # still works, cold, and starts no spare
    keeper.settle()
    assert keeper.spares() == 0
    child.discard()


def test_the_cli_keeps_no_spare():
    from gpu.sandbox.warm import KEEPER

    judging.judge_in_child("vector-add", GOOD, limits=LIMITS, sandbox=OFF)
    assert not KEEPER.enabled and KEEPER.spares() == 0


def test_spares_up_to_the_capacity_handed_out_oldest_first(monkeypatch):
    kept = SpareKeeper(capacity=2, quiet_s=0.0)
    kept.enable()
    try:
        kept.prime(argv(), LIMITS, True, OFF)
        kept.prime(argv(), LIMITS, True, OFF)  # asked again: still two
        kept.settle()
        assert kept.spares() == 2
        oldest = kept._spares[0][1]
        taken = kept.take(argv(), LIMITS, True, OFF)
        assert taken is oldest
        kept.settle()
        assert kept.spares() == 2  # its replacement
        taken.discard()
    finally:
        kept.close()
    assert kept.spares() == 0


def test_a_judges_replacement_waits_for_quiet_even_when_none_is_left():
    kept = SpareKeeper(capacity=2, quiet_s=60.0)
    kept.enable()
    try:
        kept.prime(argv(), LIMITS, True, OFF)
        kept.settle()
        with kept.activity.running():  # a judge at work
            kept.take(argv(), LIMITS, True, OFF).discard()
        with kept.activity.running():
            kept.take(argv(), LIMITS, True, OFF).discard()  # none left: still held, the burst may go on
        time.sleep(1.0)  # a replacement started at once is a spawned process by now
        assert kept.spares() == 0 and kept._asks.unfinished_tasks == 2
        kept.quiet_s = 0.0  # quiet: both follow
        kept.settle()
        assert kept.spares() == 2
    finally:
        kept.close()


def test_a_child_at_work_holds_a_judges_replacement_until_quiet():
    from gpu.sandbox.warm import Activity

    shared = Activity()
    judges = SpareKeeper(capacity=1, quiet_s=1.0, activity=shared)
    judges.enable()
    try:
        with shared.running():  # an analysis at work (the analyses' keeper shares the activity)
            judges.take(argv(), LIMITS, True, OFF).discard()  # no spare yet: started here; its replacement asked
            time.sleep(2.5)  # past the quiet time, but a child is at work
            assert judges.spares() == 0
        assert shared.quiet_for() < 0.5
        deadline = time.monotonic() + 60
        while judges.spares() == 0 and time.monotonic() < deadline:  # quiet now: the replacement starts
            time.sleep(0.05)
        assert judges.spares() == 1 and shared.quiet_for() >= 1.0
    finally:
        judges.close()


def test_with_none_left_a_replacement_waits_no_longer_than_its_longest_wait():
    """A class that never goes quiet still gets its spares back (each Run would otherwise start its own process)."""
    from gpu.sandbox.warm import Activity

    busy = Activity()
    kept = SpareKeeper(capacity=1, quiet_s=60.0, activity=busy, longest_wait_s=1.0)
    kept.enable()
    try:
        with busy.running():  # a child at work throughout
            kept.take(argv(), LIMITS, True, OFF).discard()  # none left
            deadline = time.monotonic() + 60
            while kept.spares() == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert kept.spares() == 1 and busy.quiet_for() == 0.0  # replaced though never quiet
    finally:
        kept.close()


def test_the_analyses_keeper_refills_at_once_when_none_is_left():
    kept = SpareKeeper(capacity=1, quiet_s=60.0, longest_wait_s=0.0)
    kept.enable()
    try:
        kept.take(argv(), LIMITS, True, OFF).discard()
        kept.settle()  # not held for the 60 s: none was left
        assert kept.spares() == 1
    finally:
        kept.close()


@pytest.fixture
def analyses(monkeypatch):
    yield from one_spare(monkeypatch, "ANALYSES")


RACY = GOOD.replace("out[i] = a[i] + b[i]", "out[0] = a[i] + b[i]")  # every thread writes one element


@pytest.mark.parametrize("source", [GOOD, RACY], ids=["correct", "racy"])
def test_a_trace_through_an_analysis_spare_is_the_cold_childs_trace(analyses, source):
    def trace() -> dict:
        result = judging.analyse_in_child("vector-add", source, threads=128, facts=False, trace=True,
                                          limits=LIMITS, sandbox=OFF)
        assert isinstance(result["trace"], dict), result
        return {k: v for k, v in result["trace"].items() if k not in ("picture", "sectors")}  # (values vary)

    analyses.prime(judging.analysis_argv(LIMITS), LIMITS, True, OFF)
    analyses.settle()
    spare = analyses._spares[0][1]
    warm = trace()
    assert spare.proc.poll() is not None  # the spare ran it, and ended
    analyses.close()  # off: the next analysis starts its own child
    cold = trace()
    assert warm == cold
    assert bool(warm["races"]) == (source is RACY), warm["headline"]


def test_an_analysis_spare_refuses_a_judges_request(analyses):
    child = analyses.take(judging.analysis_argv(LIMITS), LIMITS, True, OFF)
    answer = json.loads(child.finish(judge_request("vector-add", GOOD))["stdout"])
    assert answer["status"] == "error" and "another request" in answer["message"], answer


def test_an_analysis_without_a_trace_starts_its_own_child(analyses):
    """A spare's simulator is the trace's (chosen before its imports): the compiler's facts alone never take one."""
    analyses.prime(judging.analysis_argv(LIMITS), LIMITS, True, OFF)
    analyses.settle()
    spare = analyses._spares[0][1]
    judging.analyse_in_child("vector-add", "not python (", threads=128, facts=True, trace=False,
                             limits=LIMITS, sandbox=OFF)
    assert spare.alive() and analyses.spares() == 1


def test_how_many_spares_a_server_keeps(monkeypatch):
    from gpu.sandbox.warm import CLASS_SPARES, MAX_SPARES, default_spares

    for name in ("KERNEL_LAB_SPARE_JUDGES", "KERNEL_LAB_CLASS"):
        monkeypatch.delenv(name, raising=False)
    assert 1 <= default_spares() <= 4  # one per core, up to 4
    monkeypatch.setenv("KERNEL_LAB_CLASS", "1")
    assert default_spares() == CLASS_SPARES == 16  # a class presses Run together: one each
    monkeypatch.setenv("KERNEL_LAB_SPARE_JUDGES", "3")
    assert default_spares() == 3
    monkeypatch.setenv("KERNEL_LAB_SPARE_JUDGES", "1000")
    assert default_spares() == MAX_SPARES
    for bad in ("0", "-2", "many", "2.5"):  # as the submission limits: a malformed value keeps the default
        monkeypatch.setenv("KERNEL_LAB_SPARE_JUDGES", bad)
        assert default_spares() == CLASS_SPARES


def test_how_long_a_server_waits_for_quiet_before_replacing_a_spare(monkeypatch):
    from gpu.sandbox.warm import CLASS_QUIET_S, QUIET_S, SpareKeeper, default_quiet

    monkeypatch.delenv("KERNEL_LAB_CLASS", raising=False)
    assert default_quiet() == QUIET_S == 2.0  # one learner: their page draws the facts at once
    assert SpareKeeper(capacity=1).quiet_s == QUIET_S
    monkeypatch.setenv("KERNEL_LAB_CLASS", "1")
    assert default_quiet() == CLASS_QUIET_S == 8.0  # a class's 16 pages draw their facts first
    assert SpareKeeper(capacity=1).quiet_s == CLASS_QUIET_S
    assert SpareKeeper(capacity=1, quiet_s=0.0).quiet_s == 0.0  # as asked


def test_judges_and_analyses_count_as_at_work(monkeypatch):
    from gpu.sandbox.warm import Activity

    for run in (
        lambda: judging.judge_in_child("vector-add", GOOD, limits=LIMITS, sandbox=OFF),
        lambda: judging.analyse_in_child("vector-add", GOOD, facts=False, trace=False, limits=LIMITS, sandbox=OFF),
    ):
        seen = Activity()
        monkeypatch.setattr(judging, "AT_WORK", seen)
        assert seen.quiet_for() == float("inf")  # nothing has run yet
        run()
        assert seen.quiet_for() < 30.0  # it ran as a child at work, and ended
