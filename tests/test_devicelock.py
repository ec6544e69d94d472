"""The cross-process device lock: FIFO across threads and processes, visible queue, crash-safe.

The last test starts two app processes (the real Vector add page through AppTest, in
two Python processes sharing one lock folder and one History) while this process holds
the GPU lock, so their queue positions are known: the first sees 1 run ahead, the
second 2 (then 1), their GPU intervals never overlap, and both runs are saved.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from gpu.service.devicelock import FileFifoLock
from gpu.service.locks import Interval, overlaps
from gpu.service.store import open_store

ROOT = Path(__file__).resolve().parent.parent


def _wait_until(predicate, timeout_s: float = 120.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in {timeout_s} s"
        time.sleep(0.02)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_threads_are_served_in_arrival_order_and_never_overlap(tmp_path):
    lock = FileFifoLock(
        "gpu0", tmp_path, queue_poll_s=0.02
    )  # every waiter looks often: no step of the countdown missed
    order: list[str] = []
    seen: dict[str, list[int]] = {}
    threads = []

    def one(label: str) -> None:
        with lock.hold(label, on_wait=lambda ahead: seen.setdefault(label, []).append(ahead)):
            order.append(label)
            time.sleep(0.05)

    with lock.hold("holder"):
        for i, label in enumerate("abc"):
            t = threading.Thread(target=one, args=(label,))
            t.start()
            _wait_until(lambda i=i: lock.waiting == i + 1, what=f"{label} queued")
            threads.append(t)
        state = lock.snapshot()
        assert (state.holder, state.waiting, state.load) == ("holder", 3, 4)
    for t in threads:
        t.join(30)
    assert order == ["a", "b", "c"]
    assert [seen["a"][0], seen["b"][0], seen["c"][0]] == [1, 2, 3], seen
    assert seen["c"][-1] == 1  # counted down as the queue moved
    assert overlaps(lock.intervals()) == [] and len(lock.intervals()) == 4
    assert not lock.busy and lock.waiting == 0


def test_a_waiter_of_this_process_is_woken_when_a_run_leaves_not_at_its_next_poll(tmp_path):
    """Polls that would take a minute: every hand-over below is the wake-up's, between threads of one process, and
    between two lock objects of one lock (the app makes one per page run)."""
    slow = {"poll_s": 60.0, "queue_poll_s": 60.0}
    holder, first, second = (FileFifoLock("gpu0", tmp_path, **slow) for _ in range(3))
    order: list[str] = []

    def one(lock: FileFifoLock, label: str) -> None:
        with lock.hold(label):
            order.append(label)

    with holder.hold("holder"):
        threads = []
        for i, (lock, label) in enumerate(((first, "first"), (second, "second"))):
            threads.append(threading.Thread(target=one, args=(lock, label)))
            threads[-1].start()
            _wait_until(lambda i=i: holder.waiting == i + 1, what=f"{label} queued")
    for t in threads:
        t.join(20)  # far inside one poll
        assert not t.is_alive(), f"still waiting: {order}"
    assert order == ["first", "second"]


def test_a_place_never_goes_up_when_two_arrive_together(tmp_path, monkeypatch):
    # Seen in the 16-browser class test: a waiter's place read [3, 4, 2, 1]. A took its ticket
    # number and was descheduled before its place in the queue became visible; B, arriving then,
    # counted only the holder ahead of it, then saw A appear ahead. Made certain here: A stops right
    # after taking its ticket until B has reported its first place. B's place must count A from the
    # start and never rise.
    lock = FileFifoLock("gpu0", tmp_path, queue_poll_s=0.02)
    original = FileFifoLock._next_ticket
    b_reported = threading.Event()
    seen: dict[str, list[int]] = {}

    def next_ticket(self, label):
        got = original(self, label)
        if label == "a":
            b_reported.wait(10)
        return got

    monkeypatch.setattr(FileFifoLock, "_next_ticket", next_ticket)

    def one(label: str) -> None:
        def on_wait(ahead: int) -> None:
            seen.setdefault(label, []).append(ahead)
            if label == "b":
                b_reported.set()

        with lock.hold(label, on_wait=on_wait):
            pass

    with lock.hold("holder"):
        a = threading.Thread(target=one, args=("a",))
        a.start()
        _wait_until(lambda: lock.waiting == 1, what="a's ticket taken")
        b = threading.Thread(target=one, args=("b",))
        b.start()
        _wait_until(b_reported.is_set, what="b's first place")
        _wait_until(lambda: lock.waiting == 2, what="both queued")
    a.join(30)
    b.join(30)
    assert seen["b"][0] == 2, seen  # the holder and a
    assert seen["b"] == sorted(seen["b"], reverse=True), seen


def test_the_countdown_reaches_1_even_when_every_run_ends_between_two_polls(tmp_path):
    # Waiters behind the first look only every 0.5 s and each run takes no time, so a
    # waiter never sees the run ahead of it in progress: its place must still count
    # down one run at a time to 1 before it runs (the flaky-test case, made certain).
    lock = FileFifoLock("gpu0", tmp_path, queue_poll_s=0.5)
    seen: dict[str, list[int]] = {}
    threads = []

    def one(label: str) -> None:
        with lock.hold(label, on_wait=lambda ahead: seen.setdefault(label, []).append(ahead)):
            pass

    with lock.hold("holder"):
        for i, label in enumerate("abc"):
            t = threading.Thread(target=one, args=(label,))
            t.start()
            _wait_until(lambda i=i: lock.waiting == i + 1, what=f"{label} queued")
            threads.append(t)
    for t in threads:
        t.join(30)
    assert seen == {"a": [1], "b": [2, 1], "c": [3, 2, 1]}


def test_a_waiter_that_gives_up_leaves_the_queue(tmp_path):
    lock = FileFifoLock("gpu0", tmp_path)

    class Left(Exception):
        pass

    def leave(_ahead: int) -> None:
        raise Left

    with lock.hold("holder"):
        with pytest.raises(Left):
            with lock.hold("impatient", on_wait=leave):
                pass
        assert lock.waiting == 0
    with lock.hold("next"):
        assert lock.snapshot().holder == "next"


def test_tickets_and_holder_of_dead_processes_do_not_block(tmp_path):
    lock = FileFifoLock("gpu0", tmp_path)
    dead = _dead_pid()
    (tmp_path / "gpu0.queue" / f"{0:012d}.{dead}").write_text("killed while waiting")
    (tmp_path / "gpu0.holder").write_text(json.dumps({"pid": dead, "label": "killed", "since": 0}))
    assert lock.waiting == 0 and not lock.busy  # both recognised as stale and removed
    with lock.hold("alive"):
        assert lock.snapshot().holder == "alive"


def test_a_killed_holder_releases_the_lock(tmp_path):
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from gpu.service.devicelock import FileFifoLock
        with FileFifoLock("gpu0", {str(tmp_path)!r}).hold("doomed"):
            print("held", flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        lock = FileFifoLock("gpu0", tmp_path)
        assert lock.snapshot().holder == "doomed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        started = time.monotonic()
        with lock.hold("survivor"):  # at once, not after the holder's 60 s sleep (room for a loaded machine)
            assert time.monotonic() - started < 30.0
    finally:
        if proc.poll() is None:
            proc.kill()


APP_PROCESS = """
import json, os, sys, time
sys.path.insert(0, {root!r})
import gpu
from streamlit.testing.v1 import AppTest
from ui.resources import device_lock

at = AppTest.from_file({page!r}, default_timeout=300).run()
at.text_input(key="n").set_value("64")
at.text_input(key="repeats").input("1")
at.multiselect(key="cpu_impls").set_value(["numpy"])
at.checkbox(key="article").set_value(False)
at.get("form_submit_button")[0].click()
at.run()
last = at.session_state["runner.last"] if "runner.last" in at.session_state else {{}}
print(json.dumps({{
    "errors": [e.value for e in at.error] + [str(e.value) for e in at.exception],
    "queued_behind": last.get("queued_behind"),
    "run_ids": last.get("run_ids"),
    "intervals": [(iv.label, iv.start_s, iv.end_s) for iv in device_lock(0).intervals()],
}}))
"""


@pytest.mark.slow
def test_two_app_processes_share_the_gpu_queue(tmp_path):
    env = {
        **os.environ,
        "KERNEL_LAB_LOCK_DIR": str(tmp_path / "locks"),
        "KERNEL_LAB_DB": str(tmp_path / "history.sqlite3"),
        "NUMBA_ENABLE_CUDASIM": "1",
    }
    script = APP_PROCESS.format(root=str(ROOT), page=str(ROOT / "pages" / "1_Vector_add.py"))
    lock = FileFifoLock("gpu0", tmp_path / "locks")  # the same files the app processes use for device 0
    procs = []
    try:
        with lock.hold("this test holds the GPU"):
            for queued in (1, 2):  # one at a time, so arrival order is known
                procs.append(subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
                _wait_until(
                    lambda queued=queued: lock.waiting == queued, timeout_s=180, what=f"app process {queued} queued"
                )
        outputs = []
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-2000:]
            outputs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    first, second = outputs
    assert first["errors"] == [] and second["errors"] == [], outputs
    assert first["queued_behind"] == [1], first
    # second in line: 2, then 1 while the first runs (a waiter behind the first looks every
    # 0.25 s, so on a loaded machine it may miss that step; it never sees a wrong number)
    assert second["queued_behind"] in ([2, 1], [2]), second
    intervals = [Interval(*iv) for out in outputs for iv in out["intervals"]] + lock.intervals()
    assert len(intervals) == 3 and overlaps(intervals) == []  # perf_counter is one clock for the host
    assert max(iv.start_s for iv in lock.intervals()) < min(
        Interval(*iv).start_s for out in outputs for iv in out["intervals"]
    )
    assert open_store(tmp_path / "history.sqlite3").count() == 2
