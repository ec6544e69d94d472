"""The simulator's work limit: all the loops of a launch, in all its threads, take at most ``work_limit(args)`` turns.

A never-ending loop whose every turn is a long loop of its own escapes the loop limit (it counts each run of each
loop: hours to reach); the work limit counts every turn of every loop, so the launch faults in a fraction of a second
instead of running until the wall clock, and the same kernel gets the same verdict however busy the machine is. Both
tiers count the same turns (the vectorised one: each lane of a turn), exactly: a ``break``, a ``return`` and a
``while``'s ``else`` charge only the turns taken.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu.core.backend import BACKEND
from gpu.sim import KernelFault, loops, vector
from gpu.sim import device as device_api
from gpu.sim.loops import WORK_TURNS_MIN, WORK_TURNS_PER_ELEMENT_SQUARED, work_limit
from tests.conftest import SIM_TIERS
from tests.test_sim_hostile import line_of, run

pytestmark = pytest.mark.skipif(not BACKEND.lab_simulator, reason="the lab's simulator's work limit")

SENTENCE = ("the loops of this launch took more than 2,097,152 turns in all its threads together, the simulator's "
            "work limit")
GPU = "(a GPU has none: it would run on until the wall-clock limit)"

# Each never ends; each run of each loop stays under the loop limit (65,536 turns), the launch's total does not.
NESTED = {
    "for in while": ("""
@cuda.jit
def spin(out):
    i = cuda.grid(1)
    while i >= 0:
        for j in range(60000):
            i += 1
    out[0] = i
""", "        for j in range(60000):"),
    "while in while": ("""
@cuda.jit
def spin(out):
    i = cuda.grid(1)
    while i >= 0:
        j = 0
        while j < 60000:
            j += 1
        i += 1
    out[0] = i
""", "        while j < 60000:"),
    "for in for": ("""
@cuda.jit
def spin(out):
    i = cuda.grid(1)
    for k in range(60000):
        for j in range(60000):
            i += 1
    out[0] = i
""", "        for j in range(60000):"),
}


def test_the_limit_is_the_larger_of_its_floor_and_four_turns_per_element_squared():
    assert work_limit(()) == WORK_TURNS_MIN == 2_097_152
    assert work_limit((np.zeros(700), 3)) == WORK_TURNS_MIN  # vector add's largest test: 4 x 700² is less
    assert work_limit((np.zeros((300, 200)),)) == WORK_TURNS_PER_ELEMENT_SQUARED * 60_000**2 == 14_400_000_000
    assert work_limit((np.zeros(10), 5000, True)) == 100_000_000  # a whole-number argument counts; a bool does not


def test_every_problems_own_solution_takes_at_most_a_quarter_of_the_limit_at_every_test():
    """The limit must never stop a kernel compiled Numba runs: the lab's own solutions, tests and the simulator's
    performance size, take at most a quarter of it (the most: the register-tiled matmul's 128 x 128 tiles on a 33 x 33
    matrix, 969,984 turns of 4,743,684; every other problem's at most a two-hundredth)."""
    from gpu.problems import problems
    from gpu.sandbox.harness import run_case
    from gpu.sandbox.loader import solution_kernel

    vector.set_tier("thread")  # the exact count, thread by thread
    try:
        for problem in problems():
            kernel = solution_kernel(problem.solution, problem.kernel_name)
            launch = problem.solution.launch or (lambda sizes, p=problem: p.launch(sizes, p.threads))
            for index, case in enumerate([*problem.tests, problem.perf["simulator"]]):
                _, mismatch = run_case(problem, kernel, case, index, 1, launch)
                assert mismatch is None, (problem.key, case.name, mismatch)
                used = device_api.STATE.work_turns - device_api.STATE.work_left
                assert used <= device_api.STATE.work_turns / (4 if problem.key == "matmul" else 200), (
                    problem.key, case.name, used)
    finally:
        vector.set_tier("auto")


@pytest.mark.parametrize("case", NESTED)
def test_a_nested_loop_that_never_ends_faults_naming_its_thread_and_line(case, tier):
    source, line = NESTED[case]
    out = np.zeros(1, np.int64)
    with pytest.raises(KernelFault) as caught:
        run(source, "spin", 8, 256, out)  # many lanes: the vectorised tier reaches the limit in fewer turns
    fault = caught.value
    assert fault.kind == "loop limit"  # the class view counts it as a time limit, as the loop limit
    assert (fault.block, fault.thread) == ((0, 0, 0), (0, 0, 0))  # one thread runs at a time: the first gets there
    assert fault.line == line_of(source, line)
    assert SENTENCE in fault.sentence and GPU in fault.sentence
    assert out[0] == 0


@pytest.mark.parametrize("case", NESTED)
def test_both_tiers_give_the_same_fault_word_for_word(case):
    said = []
    for mode in SIM_TIERS:
        vector.set_tier(mode)
        try:
            with pytest.raises(KernelFault) as caught:
                run(NESTED[case][0], "spin", 8, 256, np.zeros(1, np.int64))
        finally:
            vector.set_tier("auto")
        said.append(str(caught.value))
    assert said[0] == said[1]


SMALL = 1 << 14  # the limit in the exact tests below


@pytest.fixture
def small_limit(monkeypatch):
    """A floor of 16,384 turns instead of 2,097,152 (and 1 turn per element squared: 64² is less), so that a launch of
    exactly the limit takes milliseconds. The engine's launch lock held throughout (it is reentrant: the test's own
    launches take it too), so no launch of another thread of this process sees the small limit or the test's state."""
    from gpu.sim import engine

    with engine._LAUNCH_LOCK:
        monkeypatch.setattr(loops, "WORK_TURNS_MIN", SMALL)
        monkeypatch.setattr(loops, "WORK_TURNS_PER_ELEMENT_SQUARED", 1)
        assert work_limit((np.zeros(64),)) == SMALL
        yield
        monkeypatch.undo()


# Thread t takes m[t] turns of the while loop and 16 of the for loop in each: 17 * m[t]; thread 0 then ``rest`` more.
# The lanes leave the while loop at different turns, so the vectorised tier must count each turn's lanes, not the
# loop's longest lane times the threads.
UNEVEN = """
@cuda.jit
def work(m, out, rest):
    t = cuda.grid(1)
    j = 0
    while j < m[t]:
        for k in range(16):
            out[t] += 1
        j += 1
    if t == 0:
        for k in range(rest):
            out[0] += 1
"""


def _uneven() -> tuple[np.ndarray, int]:
    """64 uneven counts with 17 * sum + rest == the (small) limit exactly, 0 <= rest < 17."""
    m = np.array([8 + (t * 37) % 13 for t in range(64)], np.int64)
    total = SMALL // 17
    m[-1] += total - int(m.sum())
    return m, SMALL - 17 * total


def test_a_launch_of_exactly_the_limit_runs_in_either_tier_and_one_turn_more_faults(tier, small_limit):
    m, rest = _uneven()
    out = np.zeros(64, np.int64)
    run(UNEVEN, "work", 1, 64, m, out, rest)
    assert 17 * int(m.sum()) + rest == SMALL and m.min() > 0
    assert list(out) == [16 * m[0] + rest] + [16 * v for v in m[1:]]
    if tier == "auto":  # the vectorised tier counted exactly the limit: it ran the launch itself, no fall-back
        assert vector.last_tier().name == "vector", vector.last_tier().reason
    with pytest.raises(KernelFault, match="work limit"):
        run(UNEVEN, "work", 1, 64, m, np.zeros(64, np.int64), rest + 1)


# Each loop below would be charged far past the limit if its whole range counted; only the turns taken do.
LEAVING = {
    "break": """
@cuda.jit
def leave(out):
    t = cuda.grid(1)
    for k in range(1000000):
        if k == 10:
            break
        out[t] += 1
""",
    "return in a for": """
@cuda.jit
def leave(out):
    t = cuda.grid(1)
    for k in range(1000000):
        if k == 10:
            return
        out[t] += 1
""",
    "return in a while": """
@cuda.jit
def leave(out):
    t = cuda.grid(1)
    k = 0
    while k < 1000000:
        j = 0
        while True:
            if j == 10:
                return
            out[t] += 1
            j += 1
        k += 1
""",
    "while with an else": """
@cuda.jit
def leave(out):
    t = cuda.grid(1)
    k = 0
    while k < 10:
        out[t] += 1
        k += 1
    else:
        out[t] += 0
""",
}


@pytest.mark.parametrize("case", LEAVING)
def test_a_loop_that_leaves_early_is_charged_only_the_turns_it_took(case, tier):
    out = np.zeros(4096, np.int64)
    run(LEAVING[case], "leave", 16, 256, out)  # 4,096 threads x 1,000,000 if the ranges counted whole
    assert (out == 10).all()


def test_the_charges_add_up_across_loops_left_every_way(small_limit):
    """A ``while`` left by its condition, by a ``break`` (with an ``else``), a ``for`` by a ``break``, a ``while`` by a
    ``return``: each charges the turns it took, so 64 threads of 4 x 64 turns are exactly the limit and 4 x 65 are
    past it (the count comes in an array, so that it does not raise the limit as a whole-number argument would)."""
    source = """
@cuda.jit
def mixed(out, m):
    t = cuda.grid(1)
    n = m[0]
    k = 0
    while k < n:
        k += 1
    k = 0
    while True:
        k += 1
        if k == n:
            break
    else:
        out[t] = -1
    for j in range(n):
        if j == n - 1:
            break
    k = 0
    while True:
        k += 1
        if k == n:
            out[t] = 1
            return
"""
    for mode in SIM_TIERS:
        vector.set_tier(mode)
        try:
            out = np.zeros(64, np.int64)
            run(source, "mixed", 2, 32, out, np.array([64]))
            assert (out == 1).all(), mode
            with pytest.raises(KernelFault, match="work limit"):
                run(source, "mixed", 2, 32, np.zeros(64, np.int64), np.array([65]))
        finally:
            vector.set_tier("auto")


def test_a_loop_closed_after_its_launch_ended_charges_no_later_launch(small_limit):
    """A ``for`` counted turn by turn charges its turns when its generator closes: at the loop's end, a ``break``, a
    ``return``, or, for a thread left suspended (a fault at a barrier), whenever the garbage collector gets to it.
    That late charge must not land on the launch running then."""
    loops.start_counting(())
    loop = loops.within(range(10), line=1, leaves=True)  # a loop with a break in it: counted as it goes
    assert [next(loop) for _ in range(5)] == [0, 1, 2, 3, 4]
    loops.start_counting(())  # the next launch begins; the old loop is still open
    loop.close()  # ...and closes now
    assert device_api.STATE.work_left == SMALL
    loop = loops.within(range(10), line=1, leaves=True)
    assert list(loop) == list(range(10))  # within its own launch, every turn taken is charged
    assert device_api.STATE.work_left == SMALL - 10
