"""Cluster mode: GPU workers on a local Ray instance, the app's pages and History on this side.

The first tests need no Ray (the worker's queue runs in this process, the choices are
pure functions). The rest share one local Ray instance for the whole file (a
module-scoped fixture, started only when these tests run): two logical GPUs, no
hardware, the workers in Numba's CUDA simulator. Sessions are the real Vector add page
through AppTest with ``KERNEL_LAB_CLUSTER=local``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import gpu
from gpu.service.cluster import (
    ClusterUnavailable,
    GpuWorker,
    WorkerState,
    client_from_env,
    pick_worker,
    plain,
    wanted_workers,
)
from gpu.service.store import open_store

ROOT = Path(__file__).resolve().parent.parent
PAGE = "../pages/1_Vector_add.py"
SMALL = {"n": 64, "threads_per_block": 32, "repeats": 1, "cpu": ["numpy"], "python_budget_s": 10.0, "article": False}


# --- without Ray ------------------------------------------------------------------------


def _node(node_id: str, gpus: float, alive: bool = True) -> dict:
    return {"NodeID": node_id, "Alive": alive, "Resources": {"CPU": 8.0, "GPU": gpus} if gpus else {"CPU": 8.0}}


def test_one_worker_per_gpu_of_every_alive_node_and_a_node_joining_adds_its_gpus():
    nodes = [_node("a" * 56, 2), _node("b" * 56, 0), _node("c" * 56, 1, alive=False)]
    assert wanted_workers(nodes) == [("gpu-aaaaaaaaaaaa-0", "a" * 56), ("gpu-aaaaaaaaaaaa-1", "a" * 56)]
    joined = wanted_workers([*nodes, _node("d" * 56, 1)])
    assert [name for name, _ in joined] == ["gpu-aaaaaaaaaaaa-0", "gpu-aaaaaaaaaaaa-1", "gpu-dddddddddddd-0"]


def test_pick_takes_the_shortest_queue_or_the_users_choice_when_available():
    states = [WorkerState("w0", "n", running="x", waiting=2), WorkerState("w1", "n", running="y"),
              WorkerState("w2", "n", available=False, problem="restarting")]
    assert pick_worker(states).name == "w1"
    assert pick_worker(states, prefer="w0").name == "w0"
    assert pick_worker(states, prefer="w2").name == "w1"  # unavailable pick: shortest queue instead
    with pytest.raises(ClusterUnavailable, match="restarting"):
        pick_worker([states[2]])


def test_only_json_values_travel_to_a_worker():
    assert plain({"n": 64, "cpu": ("numpy",), "article": False}) == {"n": 64, "cpu": ["numpy"], "article": False}
    with pytest.raises(TypeError):
        plain({"n": lambda: 64})  # code never travels


def test_worker_queue_is_fifo_and_a_cancelled_place_is_given_up(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNEL_LAB_LOCK_DIR", str(tmp_path))
    worker = GpuWorker(warm=False)
    release = threading.Event()
    real_run = worker._execute
    worker._execute = lambda name, params, progress=None: release.wait(30) and name  # holds the GPU until released
    outs: dict[str, dict] = {}

    def submit(run_id: str) -> threading.Thread:
        t = threading.Thread(
            target=lambda: outs.__setitem__(run_id, worker.run(run_id, "vector-add", SMALL, label=run_id))
        )
        t.start()
        deadline = time.monotonic() + 10
        while worker.position(run_id)[0] is None:  # arrived and placed: arrival order is known
            assert time.monotonic() < deadline
            time.sleep(0.01)
        return t

    threads = [submit(run_id) for run_id in ("first", "second", "third")]
    assert worker.position("first") == (0, True, None)
    assert worker.position("second") == (1, False, None) and worker.position("third") == (2, False, None)
    started = time.monotonic()
    assert worker.watch("third", (2, False, None), timeout_s=0.2) == (2, False, None)  # no change: after the timeout
    assert time.monotonic() - started >= 0.2
    threading.Timer(0.1, worker.cancel, args=("second",)).start()
    assert worker.watch("third", (2, False, None), timeout_s=5) == (1, False, None)  # a change: at once
    assert worker.cancel("late") is False and worker.run("late", "vector-add", SMALL) == {"cancelled": True}
    release.set()
    for t in threads:
        t.join(30)
    assert outs["second"] == {"cancelled": True}
    assert [label for label, *_ in worker.recent_runs()] == ["first", "third"]
    assert worker.state()["runs_done"] == 2 and worker.state()["waiting"] == 0
    worker._execute = real_run
    out = worker.run("real", "vector-add", SMALL)  # the real experiment, from plain parameters
    assert out["result"].agree and out["arrived"] <= out["started"] <= out["ended"]


def test_no_ray_is_imported_in_the_embedded_mode():
    code = "import sys, ui.runner, ui.frame, gpu.service.cluster; print('ray' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != "KERNEL_LAB_CLUSTER"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-1500:]
    assert out.stdout.strip() == "False"


JOIN = """
import json, sys, threading, time
sys.path.insert(0, {root!r})
import gpu, ray
from ray.cluster_utils import Cluster
from gpu.service.cluster import NAMESPACE, ClusterClient
cluster = Cluster(initialize_head=True, head_node_args={{"num_cpus": 1, "num_gpus": 1}})
ray.init(address=cluster.address, namespace=NAMESPACE, log_to_driver=False)
client = ClusterClient(cluster.address, worker_env={{"NUMBA_ENABLE_CUDASIM": "1"}}, discovery_s=1.0)
params = {params!r}
before = [client.run("vector-add", params).worker.name]
cluster.add_node(num_cpus=1, num_gpus=1)  # a machine joins; the app is not restarted
deadline = time.monotonic() + 120
while len(client.states()) < 2 or not all(s.available for s in client.states()):
    assert time.monotonic() < deadline, client.states()
    time.sleep(0.5)
after = []
runs = [threading.Thread(target=lambda: after.append(client.run("vector-add", params).worker.name)) for _ in range(4)]
for t in runs: t.start()
for t in runs: t.join()
print(json.dumps({{"before": before, "after": sorted(after), "workers": [s.name for s in client.states()]}}))
ray.shutdown(); cluster.shutdown()
"""


@pytest.mark.slow
def test_a_machine_that_joins_later_gets_runs_without_restarting_the_app():
    pytest.importorskip("ray", reason="Ray is not installed: `make cluster-deps` (make test installs it)")
    script = JOIN.format(root=str(ROOT), params=SMALL)
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(seen["workers"]) == 2 and seen["before"][0] in seen["workers"]
    assert set(seen["after"]) == set(seen["workers"]), seen  # the new machine's GPU took runs


# --- a local Ray instance with two logical GPUs ----------------------------------------------


@pytest.fixture(scope="module")
def cluster():
    """One local Ray instance for this file: 2 logical GPUs, workers in the simulator; yields a client.

    It is started the way the app starts it (``KERNEL_LAB_CLUSTER=local``: ``auto`` without
    joining another instance running on this host; from a thread
    that then ends, as a Streamlit script thread does), so the instance must outlive that
    thread: Ray kills its local processes with the thread that started them.
    """
    ray = pytest.importorskip("ray", reason="Ray is not installed: `make cluster-deps` (make test installs it)")
    saved = {k: os.environ.get(k) for k in ("KERNEL_LAB_CLUSTER", "KERNEL_LAB_CLUSTER_GPUS")}
    os.environ.update(KERNEL_LAB_CLUSTER="local", KERNEL_LAB_CLUSTER_GPUS="2")
    tier = None
    if gpu.BACKEND.lab_simulator:  # workers inherit the tier: per thread, so the killed run lasts seconds
        from gpu.sim import vector

        tier = vector.tier_mode()
        vector.set_tier("thread")
    made: list = []
    script_thread = threading.Thread(target=lambda: made.append(client_from_env()))
    script_thread.start()
    script_thread.join(180)
    try:
        assert made, "the client was not created"
        client = made[0]
        deadline = time.monotonic() + 120
        while not all(s.available for s in client.states()) or len(client.states()) != 2:
            assert time.monotonic() < deadline, f"workers did not start: {client.states()}"
            time.sleep(0.5)
        yield client
    finally:
        from ui.cluster import cluster_client

        cluster_client.clear()
        ray.shutdown()
        if tier is not None:
            vector.set_tier(tier)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _session(n: int = 64, repeats: int = 1) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    assert not at.exception, at.exception
    at.text_input(key="n").set_value(str(n))
    at.text_input(key="repeats").input(str(repeats))
    at.multiselect(key="cpu_impls").set_value(["numpy"])
    at.checkbox(key="article").set_value(False)
    return at


def _submit(at: AppTest) -> None:
    at.get("form_submit_button")[0].click()
    at.run()


def _overlapping(runs: list[tuple[str, float, float]]) -> list:
    ordered = sorted(runs, key=lambda r: r[1])
    return [(a, b) for a, b in zip(ordered, ordered[1:]) if b[1] < a[2]]


def test_eight_sessions_spread_over_both_gpus_one_run_at_a_time_all_saved(cluster):
    sessions = [_session() for _ in range(8)]
    before = {r.run_id for r in open_store().runs()}
    barrier = threading.Barrier(len(sessions))

    def one(at: AppTest) -> None:
        barrier.wait()
        _submit(at)

    threads = [threading.Thread(target=one, args=(at,)) for at in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    ran_on = []
    for at in sessions:
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert "vector_add.result" in at.session_state
        last = at.session_state["runner.last"]
        assert len(last["run_ids"]) == 1
        ran_on.append((last["run_ids"][0], last["worker"]["name"]))
        assert any("Ran on" in c.value and "Saved to History" in c.value for c in at.caption)
    assert {name for _, name in ran_on} == set(cluster.discover()), "both GPU workers were used"
    saved = {r.run_id: r for r in open_store().runs() if r.run_id not in before}
    assert len(saved) == 8
    for run_id, name in ran_on:  # each row names the worker that ran it, with that machine's device facts
        assert saved[run_id].result["worker"]["name"] == name
        assert saved[run_id].device_name == saved[run_id].result["device"]["name"]
    for name in cluster.discover():
        runs = __import__("ray").get(cluster.handle(name).recent_runs.remote())
        assert runs and _overlapping(runs) == [], f"{name} ran two at once"
    sidebar = [c.value for c in sessions[0].sidebar.caption]
    assert any("Ray cluster (local): 2 GPU workers on 1 machine" in c for c in sidebar), sidebar


def test_a_worker_killed_mid_run_fails_only_that_run_and_the_queue_goes_on(cluster):
    import ray

    from gpu.core.backend import BACKEND

    # A run that lasts seconds in the simulator at hand (the lab's runs 4,096 elements in milliseconds).
    victim = _session(n=(1 << 20) if BACKEND.lab_simulator else 4096, repeats=4)
    others = [_session() for _ in range(3)]
    before = open_store().count()
    t_victim = threading.Thread(target=_submit, args=(victim,))
    t_victim.start()
    deadline = time.monotonic() + 120
    while not (busy := [s for s in cluster.states() if s.running is not None]):
        assert time.monotonic() < deadline and t_victim.is_alive(), "the long run never started"
        time.sleep(0.05)
    dying, pid_before = busy[0].name, busy[0].info.pid
    t_others = [threading.Thread(target=_submit, args=(at,)) for at in others]
    for t in t_others:
        t.start()
    time.sleep(1.0)  # the victim's page has seen its run start (the worker's watch() answered at once)
    ray.kill(cluster.handle(dying), no_restart=False)
    for t in [t_victim, *t_others]:
        t.join(300)
    assert "vector_add.result" not in victim.session_state
    errors = [e.value for e in victim.error]
    assert errors and "stopped while running your run" in errors[0] and "Nothing was saved" in errors[0], errors
    for at in others:
        assert not at.error and "vector_add.result" in at.session_state, [e.value for e in at.error]
    assert open_store().count() == before + 3  # nothing half-saved for the lost run
    follower = _session()
    _submit(follower)
    assert not follower.error and "vector_add.result" in follower.session_state
    deadline = time.monotonic() + 120
    while not (back := {s.name: s for s in cluster.states()}[dying]).available:  # Ray restarts the worker
        assert time.monotonic() < deadline, f"{dying} was not restarted: {back.problem}"
        time.sleep(0.5)
    assert back.info.pid != pid_before  # a new process
