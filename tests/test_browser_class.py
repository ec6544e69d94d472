"""A class at once: 8 browsers press Run on one `make demo` server together.

3 correct kernels, 2 wrong (the last element never written), 2 that never end (one stopped by
the simulator's loop limit, one by the wall-clock limit) and an undefined shift (the simulator
faults where compiled Numba is undefined), all for vector add (tests/classroom.py: TEST_CLASS;
benchmarks/class_submit.py runs the whole class of 16 with the same code): each page shows its own
verdict and, when it waited, behind how many runs; Home loads in another browser throughout
(its speed is benchmarks/class_submit.py's); the leaderboard holds exactly the passing rows; a kernel
stopped at a limit delays the others by no more than its own slot. The scenario is in tests/classroom.py
(benchmarks/class_submit.py measures the latencies with it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.classroom import (
    ANALYSED,
    KINDS,
    LEARNERS_NICENESS,
    TEST_CLASS,
    VERDICT_TEXTS,
    VISITOR_NICENESS,
    WALL_S,
    chromium,
    demo_server,
    leaderboard_names,
    run_class,
)

# In `make test`; `make test-class` runs it alone. The learners' browsers run niced, their sessions too
# (tests/classroom.py: LEARNERS_NICENESS), standing in for their own machines. The whole class is one
# module-scoped fixture, which the first test's timeout covers: hence the longer limit.
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.classroom, pytest.mark.timeout(600)]
HEADERS = {"correct": "Passed:", "wrong": "Wrong result:", "endless": "Wrong result:", "nested": "Wrong result:",
           "time-limit": "Refused (", "undefined": "Wrong result:"}
QUEUE_LINE = re.compile(r"Queued behind (\d+) runs? on the CUDA simulator")
WAITED = re.compile(r"waited (\d+\.\d) s in the queue, behind (\d+) runs?")


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian's chromium is not at /usr/bin/chromium; `make test` installs it")
    with (
        demo_server(tmp_path_factory.mktemp("class")) as server,
        chromium(LEARNERS_NICENESS, VISITOR_NICENESS) as (browser, home),
    ):
        run = run_class(browser, server.url, kinds=TEST_CLASS, home_browser=home)
        yield run, leaderboard_names(server.db)


def test_each_page_shows_its_own_verdict(class_run):
    run, _ = class_run
    for learner in run.learners:
        assert learner.latency_s is not None, f"{learner.name}: no verdict"
        header = HEADERS[learner.kind]
        assert header in learner.verdict and KINDS[learner.kind][1] in learner.verdict, (
            f"{learner.name}: {learner.verdict[-600:]}"
        )
        others = [t for t in VERDICT_TEXTS if t != header and t in learner.verdict]
        assert not others, f"{learner.name} shows {others}"
    wrong = [lr for lr in run.learners if lr.kind == "wrong"]
    assert all("never written" in lr.verdict for lr in wrong)  # the first mismatch: out[n-1]
    assert all(f"{WALL_S:g} s wall-clock limit" in lr.verdict for lr in run.learners if lr.kind == "time-limit")
    endless = [lr for lr in run.learners if lr.kind == "endless"]
    assert all("loop limit (thread (0, 0, 0) of block (0, 0, 0), line 9)" in lr.verdict for lr in endless)
    nested = [lr for lr in run.learners if lr.kind == "nested"]  # the inner loop's line; the work limit, not the clock
    assert all("loop limit (thread (0, 0, 0) of block (0, 0, 0), line 10)" in lr.verdict for lr in nested)
    undefined = [lr for lr in run.learners if lr.kind == "undefined"]
    assert all("undefined (thread (0, 0, 0) of block (0, 0, 0), line 13)" in lr.verdict for lr in undefined)


def test_every_waiting_page_showed_its_place_in_the_queue(class_run):
    """Who waited was told its place, and its place never went up.

    Whether a page waited is the server's fact, and its verdict's line says it: "waited 2.1 s in the queue,
    behind 5 runs". The live line ("Queued behind 3 runs…") is sampled by each page every 50 ms, but these 8
    browsers share two cores with the server, niced: a renderer seconds behind draws only the last of a page's
    updates, so a wait of a few seconds can pass between two of its frames. That the line is drawn while a page
    waits is tests/test_browser_write_kernel.py's (one browser, the queue held); here: with 8 presses together
    someone waited, everyone who waited says behind how many, and what each page was seen at only went down,
    never below 1 nor above its verdict's count.
    """
    run, _ = class_run
    places = {lr.name: [int(m.group(1)) for q in lr.queued for m in [QUEUE_LINE.search(q)] if m]
              for lr in run.learners}
    waited = {lr.name: int(m.group(2)) for lr in run.learners for m in [WAITED.search(lr.verdict)] if m}
    assert waited, f"8 presses together and no page waited: the class never queued ({places})"
    for name, seen in places.items():
        if seen:
            assert name in waited, f"{name} was seen queued ({seen}) but its verdict does not say it waited"
            assert 1 <= min(seen) and max(seen) <= waited[name], (name, seen, waited[name])
        firsts = seen[: seen.index(min(seen)) + 1] if seen else []
        assert firsts == sorted(firsts, reverse=True), f"{name}'s place went up while it waited: {seen}"


def test_home_is_served_while_the_class_submits(class_run):
    """A visitor opens Home in a new tab while the class's verdicts are pending, and again after: every load
    draws Home's content (within the load's 30 s wait), so the class never holds the server.

    How fast is a benchmark's question, not a unit test's (this machine is shared and its load varies): the
    issue's target, Home under 2 s throughout, is measured by benchmarks/class_submit.py and stands in
    benchmarks/class_submit.md.
    """
    run, _ = class_run
    assert run.home_during, "Home was never loaded while verdicts were pending"
    assert all(s is not None for s in run.home_s), f"a load of Home did not draw within 30 s: {run.home_s}"


def test_the_leaderboard_has_exactly_the_passing_rows(class_run):
    run, names = class_run
    assert sorted(names) == sorted(lr.name for lr in run.learners if lr.kind == "correct")


def test_a_learners_time_out_does_not_hold_the_class(class_run):
    """A judge still running after its quantum yields the queue (gpu/sandbox/fairness.py). Before, a never-ending
    kernel held everyone pressed after it for its whole wall-clock limit: their verdicts came after its own. Now the
    kernels that ran and were pressed just after it get their verdicts before its limit ends it (the order of events
    in the pages, not a duration: it holds on a loaded machine too)."""
    run, _ = class_run
    for index, timed_out in enumerate(run.learners):
        if timed_out.kind != "time-limit":
            continue
        after = [lr for lr in run.learners[index + 1:index + 4] if lr.kind in ANALYSED]
        first = [lr.name for lr in after if lr.verdict_at is not None and lr.verdict_at < timed_out.verdict_at]
        assert len(first) >= 2, (timed_out.name, [(lr.name, lr.latency_s) for lr in after], timed_out.latency_s)


def test_every_kernel_that_ran_got_its_facts_and_trace_or_why_not(class_run):
    run, _ = class_run
    missing = [lr.name for lr in run.learners if lr.kind in ANALYSED and lr.analysis_at is None]
    assert not missing, missing


def test_a_limit_costs_only_its_own_slot(class_run):
    """Every verdict came; the class finished within the sum of its slots (the limit's own included) plus slack."""
    run, _ = class_run
    limited = [lr for lr in run.learners if lr.kind == "time-limit"]
    assert all(lr.latency_s is not None for lr in limited)
    # a correct kernel's whole submission is a few seconds here; a never-ending one its wall-clock limit
    budget = sum(WALL_S if lr.kind == "time-limit" else 8.0 for lr in run.learners)
    assert run.wall_s < budget, f"the class took {run.wall_s:.0f} s, over {budget:.0f} s"
