"""The GPU worker of cluster mode: one Ray actor per GPU, one run at a time, kernels kept warm.

``GpuWorker`` is plain Python (``worker_class()`` wraps it with ``ray.remote`` on first
use, so importing this module never imports Ray, and the queue can be tested without
it). Runs wait in its own first-come, first-served queue; ``run`` parses, admits and
runs a declared experiment from its key and plain parameters (``admit_and_run``), under
the node's CPU lock when the experiment times CPU code. Control calls (``state``,
``watch``, ``cancel``) are answered from other threads while a run goes on;
``watch`` returns when a run's place changes, so the app follows the queue without polling.
See gpu/service/cluster.py for the app's side and docs/cluster.md for operators.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import deque
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

MAX_QUEUE = 128  # runs one worker holds (waiting threads); more would be an hour's queue
WATCH_S = 2.0  # the longest a watch() call waits for a change (the app's heartbeat)


class ClusterUnavailable(RuntimeError):
    """No GPU worker can take runs (no cluster, no GPUs, or all of them unreachable)."""


@dataclass(frozen=True)
class WorkerInfo:
    """Where a run happened: the worker, its machine and its GPU (device facts of that machine)."""

    name: str
    node_id: str
    host: str
    ip: str
    gpu_ids: tuple[str, ...]
    device: dict
    pid: int

    @property
    def gpu_index(self) -> int | None:
        try:
            return int(self.gpu_ids[0])
        except (IndexError, ValueError):
            return None

    @property
    def label(self) -> str:
        """e.g. ``gpu-host-b · GPU 1 (NVIDIA H200)``."""
        gpu = f"GPU {self.gpu_ids[0]}" if self.gpu_ids else "no GPU"
        return f"{self.host} · {gpu} ({self.device.get('name', 'unknown device')})"

    def to_dict(self) -> dict:
        return {"name": self.name, "node_id": self.node_id, "host": self.host, "ip": self.ip,
                "gpu_ids": list(self.gpu_ids), "device": dict(self.device), "pid": self.pid, "label": self.label}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkerInfo:
        return cls(str(data["name"]), str(data["node_id"]), str(data["host"]), str(data["ip"]),
                   tuple(str(g) for g in data["gpu_ids"]), dict(data["device"]), int(data["pid"]))



class GpuWorker:
    """The body of one GPU's actor: a FIFO queue of runs, one at a time, kernels kept warm.

    Called from several threads: ``run``/``watch``/``state``/``cancel`` run
    concurrently; only the body of ``run`` touches the GPU, one at a time.
    """

    def __init__(self, warm: bool = True):
        import gpu  # noqa: F401  (decides the backend before numba.cuda is imported)
        from gpu.catalog import registry
        from gpu.core.device import device_info
        from gpu.service.devicelock import FileFifoLock, node_lock_dir, usable_dir

        registry.experiments()  # import every declaration once
        from gpu.service.admission import admit_and_run

        self._execute = admit_and_run
        self._node_id, self._name, self._gpu_ids = _ray_context()
        self._facts = WorkerInfo(
            name=self._name, node_id=self._node_id, host=socket.gethostname(), ip=_node_ip(),
            gpu_ids=self._gpu_ids, device=device_info(0).to_dict(), pid=os.getpid(),
        )
        self._cpu_lock = FileFifoLock(f"cpu-node-{self._node_id[:12]}", usable_dir(node_lock_dir()))
        # One lock, two conditions: ``_cond`` for queue changes (a run starts, ends, leaves),
        # which every waiting run and watcher wakes for; ``_said`` for the running run's
        # progress messages, which only its own watcher waits for. So a progress message
        # does not wake thirty waiting threads and take the GIL from the run.
        lock = threading.Lock()
        self._cond = threading.Condition(lock)
        self._said = threading.Condition(lock)
        self._queue: list[str] = []
        self._cancelled: deque[str] = deque(maxlen=1024)  # cancels that arrived before their run
        self._running: str | None = None
        self._running_label: str | None = None
        self._since: float | None = None
        self._message: str | None = None
        self._runs_done = 0
        self._recent: deque[tuple[str, float, float]] = deque(maxlen=256)  # (label, started, ended) of finished runs
        if warm:
            self._warm_up()

    def _warm_up(self) -> None:
        """Compile the kernels now, so the first user's run does not pay for it."""
        from gpu.kernels.vector_add import compile_vector_add

        compile_vector_add()

    # control calls: cheap, answered while a run is in progress

    def info(self) -> dict:
        return self._facts.to_dict()

    def state(self) -> dict:
        with self._cond:
            return {
                "info": self._facts.to_dict(),
                "running": self._running_label,
                "running_s": None if self._since is None else time.time() - self._since,
                "waiting": len(self._queue),
                "runs_done": self._runs_done,
            }

    def recent_runs(self) -> list[tuple[str, float, float]]:
        """(label, started, ended) of the last finished runs, time.time() seconds: proof that runs never overlapped."""
        with self._cond:
            return list(self._recent)

    def position(self, run_id: str) -> tuple[int | None, bool, str | None]:
        """(runs ahead, or None when unknown or finished; running now; its last progress message)."""
        with self._cond:
            return self._position(run_id)

    def watch(
        self, run_id: str, known: tuple | list | None = None, timeout_s: float = WATCH_S
    ) -> tuple[int | None, bool, str | None]:
        """``position(run_id)`` as soon as it differs from ``known``, or after ``timeout_s`` (a long poll)."""
        known = tuple(known) if known is not None else None
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                now = self._position(run_id)
                left = deadline - time.monotonic()
                if now != known or left <= 0:
                    return now
                (self._said if now[1] else self._cond).wait(left)

    def _position(self, run_id: str) -> tuple[int | None, bool, str | None]:
        if self._running == run_id:
            return 0, True, self._message
        if run_id in self._queue:
            return self._ahead(run_id), False, None
        return None, False, None

    def cancel(self, run_id: str) -> bool:
        """Leave the queue (the user went away). A run already running finishes; its result is dropped.

        A cancel that overtakes its run (calls to a threaded actor may run out of order) is
        remembered, and the run is dropped when it arrives.
        """
        with self._cond:
            if run_id in self._queue:
                self._queue.remove(run_id)
                self._cond.notify_all()
                return True
            if run_id != self._running:
                self._cancelled.append(run_id)
            return False

    # the run itself

    def run(self, run_id: str, experiment: str, params: Mapping[str, Any], label: str = "run") -> dict:
        """Wait for our turn, then parse, admit and run ``experiment`` with plain ``params``.

        Returns {"result": the frozen result, "arrived"/"started"/"ended": time.time()
        seconds}, or {"cancelled": True} when the run left the queue before its turn.
        """
        from gpu.catalog import registry

        arrived = time.time()
        with self._cond:
            if run_id in self._cancelled:
                return {"cancelled": True}
            if len(self._queue) >= MAX_QUEUE:
                raise ClusterUnavailable(f"{self._facts.label} already has {MAX_QUEUE} runs queued; try again later")
            self._queue.append(run_id)
            self._cond.notify_all()  # its watcher may be waiting for it to arrive
            while True:
                if run_id not in self._queue:
                    return {"cancelled": True}
                if self._running is None and self._queue[0] == run_id:
                    self._queue.pop(0)
                    self._running, self._running_label, self._message = run_id, label, None
                    self._cond.notify_all()  # watchers: this run started, the others moved up
                    break
                self._cond.wait()  # woken by every queue change
        try:
            declared = registry.get(experiment)
            with self._cpu_lock.hold(label) if declared.uses_cpu else nullcontext():
                started = time.time()
                with self._cond:
                    self._since = started
                result = self._execute(experiment, params, self._progress)
                ended = time.time()
            with self._cond:
                self._recent.append((label, started, ended))
            return {"result": result, "arrived": arrived, "started": started, "ended": ended}
        finally:
            with self._cond:
                self._running = self._running_label = self._since = self._message = None
                self._runs_done += 1
                self._cond.notify_all()
                self._said.notify_all()

    def _progress(self, message: str) -> None:
        with self._cond:
            self._message = message
            self._said.notify_all()

    def _ahead(self, run_id: str) -> int:
        return self._queue.index(run_id) + (1 if self._running is not None else 0)


def _ray_context() -> tuple[str, str, tuple[str, ...]]:
    """(node id, actor name, GPU ids) of this worker; placeholders outside Ray (unit tests)."""
    try:
        import ray

        if ray.is_initialized():
            ctx = ray.get_runtime_context()
            return ctx.get_node_id(), ctx.get_actor_name() or "worker", tuple(str(g) for g in ray.get_gpu_ids())
    except ImportError:
        pass
    return "local" + "0" * 11, "gpu-local-0", ("0",)


def _node_ip() -> str:
    try:
        import ray

        return ray.util.get_node_ip_address()
    except Exception:
        return "127.0.0.1"


_WORKER_CLASS = None


def worker_class():
    """``GpuWorker`` as a Ray actor class (built once, on first use: Ray is imported only here)."""
    global _WORKER_CLASS
    if _WORKER_CLASS is None:
        import ray

        _WORKER_CLASS = ray.remote(
            num_gpus=1, num_cpus=0,  # the GPU is the resource; CPU work is serialised by the node's CPU lock
            max_restarts=-1,  # Ray brings a dead worker back (constructor again: kernels compiled again)
            max_task_retries=0,  # a run is never silently repeated: a lost run is reported
            max_concurrency=2 * MAX_QUEUE + 8,  # a waiting run holds a thread, and so does its watch()
        )(GpuWorker)
    return _WORKER_CLASS
