"""The simulator's loop limit: a loop that never ends is a fault naming its thread and line, in both tiers.

One run of one loop in one thread may take ``loop_limit(args)`` turns (gpu/sim/loops.py): 65,536, or 4 per
element of the launch's largest array (or unit of its largest whole-number argument) where that is more. The
turn past it is a KernelFault; everything below it runs as before. A GPU has no such limit, and the fault says so.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu.core.backend import BACKEND
from gpu.sim import KernelFault, vector
from gpu.sim.loops import LOOP_TURNS_MIN, LOOP_TURNS_PER_ELEMENT, loop_limit
from tests.conftest import SIM_TIERS
from tests.test_sim_hostile import HEADER, line_of, run

pytestmark = pytest.mark.skipif(not BACKEND.lab_simulator, reason="the lab's simulator's loop limit")

NEVER_ENDS = """
@cuda.jit
def spin(out):
    i = cuda.grid(1)
    while i >= 0:
        i += 1
    out[0] = i
"""


def test_the_limit_is_the_larger_of_its_floor_and_four_turns_per_element():
    assert loop_limit(()) == LOOP_TURNS_MIN == 65_536
    assert loop_limit((np.zeros(100), 7)) == LOOP_TURNS_MIN
    assert loop_limit((np.zeros((300, 200)), 3)) == LOOP_TURNS_PER_ELEMENT * 60_000
    assert loop_limit((np.zeros(10), 100_000, True)) == 400_000  # a whole-number argument counts; a bool does not
    assert loop_limit((np.zeros(10), -100_000)) == 400_000


def test_a_loop_that_never_ends_faults_naming_its_thread_and_line(tier):
    out = np.zeros(1, np.int64)
    with pytest.raises(KernelFault) as caught:
        run(NEVER_ENDS, "spin", 2, 32, out)
    fault = caught.value
    assert fault.kind == "loop limit"
    assert (fault.block, fault.thread, fault.line) == ((0, 0, 0), (0, 0, 0), line_of(NEVER_ENDS, "    while i >= 0:"))
    assert "this while loop ran 65,536 turns in one thread without ending" in fault.sentence
    assert "the simulator's loop limit for this launch (a GPU has none" in fault.sentence
    assert out[0] == 0  # nothing after the loop ran


def test_both_tiers_give_the_same_fault_word_for_word():
    said = []
    for mode in SIM_TIERS:
        vector.set_tier(mode)
        try:
            with pytest.raises(KernelFault) as caught:
                run(NEVER_ENDS, "spin", 2, 32, np.zeros(1, np.int64))
        finally:
            vector.set_tier("auto")
        said.append(str(caught.value))
    assert said[0] == said[1]


COUNTED = """
@cuda.jit
def count(out, turns):
    t = 0
    while t < turns:
        t += 1
    out[0] = t
"""


def test_a_loop_of_exactly_the_limit_runs_and_one_turn_more_faults(tier):
    out = np.zeros(1, np.int64)
    run(COUNTED, "count", 1, 1, out, 1)  # the whole-number argument 1 leaves the floor as the limit
    assert out[0] == 1
    # ``turns`` itself raises the limit; pass it as a float so that only the floor counts
    run(COUNTED, "count", 1, 1, out, float(LOOP_TURNS_MIN))
    assert out[0] == LOOP_TURNS_MIN
    with pytest.raises(KernelFault, match="loop limit"):
        run(COUNTED, "count", 1, 1, out, float(LOOP_TURNS_MIN + 1))


def test_one_thread_walking_a_large_array_is_within_the_limit(tier):
    source = """
@cuda.jit
def total(a, out):
    if cuda.grid(1) == 0:
        s = 0.0
        k = 0
        while k < a.size:
            s += a[k]
            k += 1
        out[0] = s
"""
    a = np.ones(100_000, np.float64)  # more turns than the floor, within 4 per element
    out = np.zeros(1, np.float64)
    run(source, "total", 1, 32, a, out)
    assert out[0] == 100_000


def test_the_limit_counts_one_run_of_one_loop_not_the_threads_total(tier):
    source = """
@cuda.jit
def nested(out):
    if cuda.grid(1) == 0:
        s = 0
        for i in range(400):
            for j in range(400):
                s += 1
        out[0] = s
"""
    out = np.zeros(1, np.int64)
    run(source, "nested", 1, 32, out)  # 160,000 turns of the inner loop in all, 400 in each run of it
    assert out[0] == 160_000


def test_a_for_loop_over_a_huge_range_faults(tier):
    source = """
@cuda.jit
def far(out):
    s = 0
    for k in range(10**12):
        s += 1
    out[0] = s
"""
    with pytest.raises(KernelFault, match=r"this for loop ran 65,536 turns") as caught:
        run(source, "far", 1, 32, np.zeros(1, np.int64))
    assert caught.value.line == line_of(source, "    for k in range(10**12):")


def test_continue_cannot_skip_the_count(tier):
    source = """
@cuda.jit
def skipping(out):
    k = 0
    while True:
        k += 1
        if k > 0:
            continue
        out[0] = k
"""
    with pytest.raises(KernelFault, match="loop limit"):
        run(source, "skipping", 1, 1, np.zeros(1, np.int64))


def test_a_loop_in_a_device_function_and_around_a_barrier_faults_with_its_line():
    source = """
@cuda.jit(device=True)
def wait_for(flag):
    while flag[0] == 0:
        pass


@cuda.jit
def kern(flag, out):
    tile = cuda.shared.array(32, float32)
    tile[cuda.threadIdx.x] = 1.0
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        wait_for(flag)
    out[cuda.threadIdx.x] = tile[cuda.threadIdx.x]
"""
    # One thread runs at a time in the simulator: a spin-wait for a flag no thread sets never ends here
    with pytest.raises(KernelFault) as caught:
        run(source, "kern", 1, 32, np.zeros(1, np.int32), np.zeros(32, np.float32))
    assert caught.value.kind == "loop limit" and caught.value.line == line_of(source, "    while flag[0] == 0:")


def test_after_a_loop_past_the_limit_the_kernels_later_launches_skip_the_vectorised_tier():
    """The vectorised tier takes every lane to the limit (about 0.5 s); the thread tier faults in the first thread in
    milliseconds. A judge launches a kernel once per test: only the first pays the vectorised tier's cost."""
    from tests.test_sim_hostile import kernels_from

    vector.set_tier("auto")
    spin = kernels_from(HEADER + NEVER_ENDS)["spin"]
    tiers = []
    for _ in range(2):
        with pytest.raises(KernelFault, match="loop limit"):
            spin[1, 8](np.zeros(1, np.int64))  # 8 lanes x 65,536 turns: within the work limit
        tiers.append(vector.last_tier())
    assert tiers[0].name == "thread" and "a loop past the simulator's limit of 65,536 turns" in tiers[0].reason
    assert tiers[1].name == "thread" and tiers[1].reason == tiers[0].reason  # not tried again
    assert not vector.runs_vectorised(spin)
