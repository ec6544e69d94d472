"""FifoLock: first come first served, visible queue positions, abandonment, no overlap."""

from __future__ import annotations

import threading
import time

import pytest

from gpu.service.locks import FifoLock, Interval, least_loaded, overlaps


def _wait_until(predicate, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


def _queue(
    lock: FifoLock, n: int, order: list[str], seen: dict[str, list[int]], hold_s: float = 0.01
) -> list[threading.Thread]:
    """Start n waiters one after another (each enqueued before the next starts)."""
    threads = []
    for i in range(n):
        name = f"w{i}"
        seen[name] = []

        def body(name=name):
            with lock.hold(name, on_wait=seen[name].append):
                order.append(name)
                time.sleep(hold_s)

        t = threading.Thread(target=body)
        before = lock.waiting
        t.start()
        _wait_until(lambda before=before: lock.waiting == before + 1)
        threads.append(t)
    return threads


def test_waiters_are_served_in_arrival_order():
    lock, order, seen = FifoLock(poll_s=0.01), [], {}
    with lock.hold("first"):
        threads = _queue(lock, 6, order, seen)
    for t in threads:
        t.join(5)
    assert order == [f"w{i}" for i in range(6)]


def test_queue_position_counts_the_holder_and_counts_down():
    lock, order, seen = FifoLock(poll_s=0.01), [], {}
    with lock.hold("first"):
        threads = _queue(lock, 3, order, seen, hold_s=0.05)
        assert lock.snapshot().waiting == 3 and lock.snapshot().holder == "first"
    for t in threads:
        t.join(5)
    # w2 starts behind the holder, w0 and w1, and sees its position fall as they finish
    assert seen["w0"][0] == 1
    assert seen["w2"][0] == 3
    assert seen["w2"] == sorted(seen["w2"], reverse=True) and seen["w2"][-1] == 1


def test_every_place_is_reported_even_when_runs_end_before_a_waiter_looks():
    # runs that take no time end before a woken waiter gets to look: the places it
    # missed are still reported in order, ending at 1 before its own run
    lock, order, seen = FifoLock(poll_s=0.5), [], {}
    with lock.hold("first"):
        threads = _queue(lock, 4, order, seen, hold_s=0.0)
    for t in threads:
        t.join(5)
    assert seen == {"w0": [1], "w1": [2, 1], "w2": [3, 2, 1], "w3": [4, 3, 2, 1]}


def test_heartbeat_calls_on_wait_while_the_position_is_unchanged():
    lock, calls = FifoLock(poll_s=0.01, heartbeat_s=0.02), []
    with lock.hold("first"):
        t = threading.Thread(target=lambda: lock.hold("second", on_wait=calls.append).__enter__())
        t.start()
        _wait_until(lambda: len(calls) >= 4)
    t.join(5)
    assert set(calls) == {1}


def test_abandoned_waiter_leaves_the_queue_without_blocking_others():
    lock, order = FifoLock(poll_s=0.01), []

    class Gone(Exception):
        pass

    def leaver(_ahead):
        raise Gone  # like Streamlit's StopException when the user leaves

    with lock.hold("first"):
        failures = []

        def abandon():
            try:
                with lock.hold("leaver", on_wait=leaver):
                    order.append("leaver")
            except Gone:
                failures.append("left")

        t1 = threading.Thread(target=abandon)
        t1.start()
        t1.join(5)
        t2 = threading.Thread(target=lambda: (lock.hold("stayer").__enter__(), order.append("stayer")))
        t2.start()
        _wait_until(lambda: lock.waiting == 1)
    t2.join(5)
    assert failures == ["left"] and order == ["stayer"]


def test_an_exception_inside_the_hold_releases_the_lock():
    lock = FifoLock()
    with pytest.raises(MemoryError):
        with lock.hold("oom"):
            raise MemoryError("out of memory")
    assert not lock.busy
    with lock.hold("next"):
        assert lock.busy


def test_many_threads_never_overlap():
    lock, inside, max_inside = FifoLock(poll_s=0.005), [0], [0]
    guard = threading.Lock()

    def body(i):
        with lock.hold(f"t{i}"):
            with guard:
                inside[0] += 1
                max_inside[0] = max(max_inside[0], inside[0])
            time.sleep(0.002)
            with guard:
                inside[0] -= 1

    threads = [threading.Thread(target=body, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert max_inside[0] == 1
    assert len(lock.intervals()) == 24 and overlaps(lock.intervals()) == []


def test_overlaps_finds_a_contained_interval():
    a, b, c = Interval("a", 0.0, 10.0), Interval("b", 1.0, 2.0), Interval("c", 11.0, 12.0)
    assert overlaps([c, b, a]) == [(a, b)]
    assert overlaps([Interval("x", 0, 1), Interval("y", 1, 2)]) == []


def test_least_loaded_prefers_a_free_lock_then_the_shortest_queue():
    locks = [FifoLock(f"gpu{i}", poll_s=0.01) for i in range(3)]
    assert least_loaded(locks) == 0
    with locks[0].hold("busy"):
        assert least_loaded(locks) == 1
        with locks[1].hold("busy"), locks[2].hold("busy"):
            t = threading.Thread(target=lambda: locks[1].hold("queued").__enter__())
            t.daemon = True
            t.start()
            _wait_until(lambda: locks[1].waiting == 1)
            assert least_loaded(locks) == 0  # 0 and 2 each have one run; lowest index wins
    with pytest.raises(ValueError):
        least_loaded([])
