"""A run that may take over ~2 s states its estimate before it starts and shows progress while it runs.

Every experiment on a page declares how long it takes (``plan`` or ``estimate``); the catalog's
plan names each part of the run by the id the engine begins it with; an estimate is within a
stated factor of the measured time at a small size; the Kernels page states it under the form
when it is 2 s or more, and says nothing for a run clearly under that.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import gpu
from gpu.catalog.base import Progress
from gpu.catalog.declare import KERNELS
from gpu.catalog.estimate import PROBE_N
from gpu.catalog.registry import experiments, get
from ui.forms import run_estimate
from ui.progress import ESTIMATE_SHOWN_FROM_S

ROOT = Path(__file__).resolve().parent.parent
SIMULATED = gpu.BACKEND.simulated
# How far an estimate may be from the measured time. The measured side is this thread's CPU time, the
# simulator's: on a shared CI machine other processes' load stretches the wall clock, not the work.
FACTOR = 3.0
ESTIMATE_CAPTION = "At these settings a run takes about"


def test_every_experiment_on_a_page_declares_how_long_it_takes():
    """The rule applies to every page's runs, not only Vector add's and Scaling's."""
    for experiment in experiments():
        if experiment.page is None:
            continue
        seconds = run_estimate(experiment, {}, SIMULATED)
        assert seconds is not None, f"{experiment.key} declares neither a plan nor an estimate"
        assert math.isfinite(seconds) and seconds >= 0, (experiment.key, seconds)


@pytest.mark.parametrize("key", KERNELS)
def test_the_catalog_plan_names_every_part_the_run_begins_in_its_order(key):
    """The page's progress bar moves by these ids: a part missing from the plan would fail the run."""
    experiment = get(key)
    params = experiment.parse({"repeats": 1, "cpu": "numpy,python"}, SIMULATED)
    planned = [step_id for step_id, _ in experiment.plan(params, SIMULATED)]
    begun: list[str] = []
    experiment.execute(params, Progress(started=begun.append))
    assert begun and all(step_id in planned for step_id in begun), (begun, planned)
    assert begun == sorted(begun, key=planned.index), "parts begun out of the plan's order"
    timed = ("step:", "cpu:")  # every step and chosen CPU implementation runs in the simulator; libraries need a GPU
    assert [s for s in planned if s.startswith(timed)] == [s for s in begun if s.startswith(timed)]


@pytest.mark.slow  # each runs a kernel twice for a few seconds of simulated threads
@pytest.mark.skipif(not SIMULATED, reason="the sizes here are the simulator's; on a GPU see scripts/gpu_pages.py")
@pytest.mark.parametrize(
    "key, raw",
    [
        ("reduction", {"n": 65536, "cpu": "numpy,python"}),  # 1-D, barriers and shuffles: about 3 s
        ("matmul", {"n": 48, "cpu": "numpy,python"}),  # 3-D cost, the register-tiled step dominates
        ("transfers", {}),
        ("launch-sweep", {}),
    ],
)
def test_an_estimate_is_within_a_factor_of_the_measured_time(key, raw, monkeypatch):
    """The estimate's one measured input (this machine's Python speed, the unit of a simulated kernel's
    cost) and the run it is compared with are timed on one clock, this thread's CPU time (which other
    processes' load does not stretch), in one window: the probes, then the run. A probe on the wall
    clock before the run saw another load ("matmul: estimated 14.54 s, measured 1.24 s" on a busy machine)."""
    from gpu.core import cpu

    experiment = get(key)
    params = experiment.parse(raw, SIMULATED)
    experiment.execute(params, Progress())  # the first run in a process loads what later runs reuse
    ones = np.ones(PROBE_N, dtype=np.float32)
    out = np.empty_like(ones)
    probes = []
    for _ in range(3):  # as the estimate does: the quickest of three short probes
        start = time.thread_time()
        cpu.python_loop(ones, ones, out)
        probes.append(time.thread_time() - start)
    probe_s = min(probes)
    start = time.thread_time()
    experiment.execute(params, Progress())
    measured_s = time.thread_time() - start
    monkeypatch.setattr(cpu, "estimate_python_loop_s", lambda n, probe_n=PROBE_N: n * probe_s / PROBE_N)
    estimate_s = run_estimate(experiment, raw, SIMULATED)
    slack_s = 0.2  # runs of a few tens of milliseconds: the clock's resolution
    assert measured_s / FACTOR - slack_s <= estimate_s <= measured_s * FACTOR + slack_s, (
        f"{key}: estimated {estimate_s:.2f} s, measured {measured_s:.2f} s of CPU"
    )


def _kernels_page(n: str) -> AppTest:
    """The Kernels page showing the reduction with ``n`` in its form (a form's values reach the script on submit,
    so the page is opened with them, as after a run at that size)."""
    at = AppTest.from_file(str(ROOT / "pages/7_Kernels.py"), default_timeout=60)
    at.session_state["kernels.kernel"] = "reduction"
    at.session_state["reduction.n"] = n
    at.run()
    assert not at.exception, at.exception
    assert at.text_input(key="reduction.n").value == n
    return at


@pytest.fixture
def per_thread_tier():
    """The lab simulator's per-thread tier for the test (its runs are long enough to need an estimate)."""
    if not gpu.BACKEND.lab_simulator:
        yield
        return
    from gpu.sim import vector

    vector.set_tier("thread")
    try:
        yield
    finally:
        vector.set_tier("auto")


@pytest.mark.skipif(not SIMULATED, reason="the sizes here are the simulator's")
def test_the_kernels_page_states_a_long_runs_estimate_under_the_form_and_none_for_a_short_one(per_thread_tier,
                                                                                             monkeypatch):
    # The estimate probes this machine's Python loop when it is made: pinned here to a quiet machine's rate
    # (0.1 µs an element), so the answer depends on the declaration, not on what else the cores are doing.
    from gpu.core import cpu

    monkeypatch.setattr(cpu, "estimate_python_loop_s", lambda n, probe_n=20_000: 1e-7 * n)
    long_run = _kernels_page("2^20")  # about a minute of simulated threads, per thread
    captions = [c.value for c in long_run.caption if ESTIMATE_CAPTION in c.value]
    assert captions and "progress bar names each step" in captions[0], [c.value for c in long_run.caption]
    estimate_s = run_estimate(get("reduction"), {"n": 2**20}, SIMULATED)
    assert estimate_s is not None and estimate_s > 10 * ESTIMATE_SHOWN_FROM_S
    short_run = _kernels_page("1024")
    assert run_estimate(get("reduction"), {"n": 1024}, SIMULATED) < ESTIMATE_SHOWN_FROM_S / 2
    assert not [c.value for c in short_run.caption if ESTIMATE_CAPTION in c.value]


@pytest.mark.skipif(not SIMULATED, reason="the simulator's defaults")
def test_the_transfers_page_says_nothing_of_time_for_its_quick_default_runs():
    """Its simulated defaults take a fraction of a second: no estimate is shown there."""
    for key in ("transfers", "transfers-bandwidth"):
        assert run_estimate(get(key), {}, SIMULATED) < ESTIMATE_SHOWN_FROM_S / 4, key
    at = AppTest.from_file(str(ROOT / "pages/4_Transfers.py"), default_timeout=60).run()
    assert not at.exception
    assert not [c.value for c in at.caption if ESTIMATE_CAPTION in c.value]


def _gpu_estimate(experiment, params) -> float:
    """The declaration's estimate at these (typed) parameters on a GPU: its plan's sum, or its estimate."""
    if experiment.plan is not None:
        return sum(seconds for _, seconds in experiment.plan(params, False))
    return experiment.estimate(params, False)


def test_the_gpu_side_of_every_estimate_is_a_finite_time_that_grows_with_the_work(monkeypatch):
    """What a GPU machine's form would say at its defaults (computed without a GPU; the defaults are not parsed,
    since a GPU's sizes need not fit this machine): finite, and more for four times the repeats.

    The Python loop's speed is probed each time an estimate is made; here it is fixed (1 µs an element), so the
    two estimates compared differ only by the work (two live probes on a busy machine differed by more)."""
    from gpu.core import cpu

    monkeypatch.setattr(cpu, "estimate_python_loop_s", lambda n, probe_n=20_000: n * 1e-6)
    for experiment in experiments():
        if experiment.page is None:
            continue
        params = experiment.defaults(False)
        seconds = _gpu_estimate(experiment, params)
        assert math.isfinite(seconds) and seconds > 0, (experiment.key, seconds)
        for name in ("repeats", "samples"):
            if name in params:
                more = _gpu_estimate(experiment, {**params, name: params[name] * 4})
                assert more > seconds, (experiment.key, seconds, more)
