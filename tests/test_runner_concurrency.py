"""Several AppTest sessions at once: runs are serialised, queued users see their place, nothing overlaps.

Each session is the real Vector add page at a tiny size (N = 64, one repeat, NumPy only)
so the simulator keeps this fast; the GPU lock is the one every session shares through
``st.cache_resource``.
"""

from __future__ import annotations

import threading
import time

from streamlit.testing.v1 import AppTest

from gpu.service.locks import overlaps
from gpu.service.store import open_store
from ui.resources import cpu_lock, device_lock

PAGE = "../pages/1_Vector_add.py"


def _session() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    at.text_input(key="n").set_value("64")
    at.text_input(key="repeats").input("1")
    at.multiselect(key="cpu_impls").set_value(["numpy"])
    at.checkbox(key="article").set_value(False)
    return at


def _submit(at: AppTest) -> None:
    at.get("form_submit_button")[0].click()
    at.run()


def _wait_until(predicate, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def test_concurrent_sessions_are_serialised_and_all_saved():
    sessions = [_session() for _ in range(4)]
    lock = device_lock(0)
    since = time.perf_counter()  # the lock keeps a bounded history: select by time, not count
    before_rows = open_store().count()
    threads = [threading.Thread(target=_submit, args=(at,)) for at in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    for at in sessions:
        assert not at.exception, at.exception
        assert not at.error, [e.value for e in at.error]
        assert "vector_add.result" in at.session_state
        assert len(at.session_state["runner.last"]["run_ids"]) == 1
    new = [iv for iv in lock.intervals() if iv.start_s >= since]
    assert len(new) == 4 and overlaps(new) == []
    assert overlaps([iv for iv in cpu_lock().intervals() if iv.start_s >= since]) == []
    assert open_store().count() == before_rows + 4


def test_queued_sessions_see_their_position_count_down():
    lock = device_lock(0)
    sessions = [_session() for _ in range(3)]
    threads = []
    with lock.hold("test holds the GPU"):
        for at in sessions:  # enqueue one at a time so arrival order is known
            waiting = lock.waiting
            t = threading.Thread(target=_submit, args=(at,))
            t.start()
            _wait_until(lambda waiting=waiting: lock.waiting == waiting + 1)
            threads.append(t)
        assert lock.snapshot().waiting == 3
    for t in threads:
        t.join(180)
    for position, at in enumerate(sessions, start=1):
        assert not at.exception
        seen = at.session_state["runner.last"]["queued_behind"]
        # behind the test's hold and everyone who arrived earlier, then counting down to 1
        assert seen[0] == position, seen
        assert seen == sorted(seen, reverse=True) and seen[-1] == 1, seen
        assert at.session_state["runner.last"]["waited_s"] > 0


def test_a_failing_run_releases_the_lock_for_the_next_session():
    script = '''
import streamlit as st
from ui.runner import run_experiment

def work(progress):
    raise RuntimeError("[2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")

run_experiment("oom probe", work)
'''
    at = AppTest.from_string(script, default_timeout=60).run()
    assert not at.exception
    assert any("Out of memory on the CUDA simulator" in e.value for e in at.error)
    assert not device_lock(0).busy and not cpu_lock().busy
    follower = _session()
    _submit(follower)
    assert not follower.exception and "vector_add.result" in follower.session_state


def test_a_run_takes_the_picked_gpu_or_the_first_free_one(monkeypatch):
    from ui import runner

    monkeypatch.setattr(runner, "devices", lambda: 3)
    assert runner.choose_device(2) == 2
    with device_lock(0).hold("busy elsewhere"):
        assert runner.choose_device(runner.AUTO) == 1
        with device_lock(1).hold("busy too"):
            assert runner.choose_device(runner.AUTO) == 2
    assert runner.choose_device(7) == 0  # out of range: back to the first free GPU
    with runner.on_device(0):  # the simulator's one device can be made current
        pass
