"""Cluster mode: experiments run on GPU workers of a Ray cluster; the app keeps History.

Set ``KERNEL_LAB_CLUSTER`` to a Ray address (``ray://head:10001`` or ``head:6379``), or
to ``auto`` for the Ray instance on this host (started in-process when none is
running, with ``KERNEL_LAB_CLUSTER_GPUS`` logical GPUs). Unset, the app is embedded
and nothing here imports Ray.

- **One worker per GPU.** For every alive node, one long-lived actor per GPU it offers
  (``num_gpus=1``, pinned to that node), named ``gpu-<node>-<slot>`` in the
  ``kernel-lab`` namespace and detached, so every app process shares the same workers
  and queues. Ray restarts a worker that dies (``max_restarts=-1``); its constructor
  imports the engine and compiles the kernels once, so they stay warm between runs.
  Nodes are looked up again every ``discovery_s`` at submission: a node that joins later
  gets its workers without restarting the app.
- **One run at a time per worker**, in arrival order (``GpuWorker``'s own queue); CPU
  baselines also hold the node's CPU lock (a ``FileFifoLock`` on that node), so two GPUs
  of one machine never time CPU code at once.
- **What travels**: the experiment's key and its parameters as JSON values, never code;
  back comes the frozen result (pickled; same Kernel Lab version on every node) and
  where it ran. Workers never write History: the app saves, on its own host.
- **Faults**: a run whose worker dies while running it ends with ``WorkerLost`` (a
  message for the user; nothing is saved). A run still queued on a worker that dies
  never started, so it is queued again once on another worker.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections import deque
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

log = logging.getLogger(__name__)

CLUSTER_ENV = "KERNEL_LAB_CLUSTER"
LOCAL_GPUS_ENV = "KERNEL_LAB_CLUSTER_GPUS"  # logical GPUs of a local instance started by ``auto``
SIMULATOR_ENV = "KERNEL_LAB_CLUSTER_SIMULATOR"  # "1": workers use Numba's CUDA simulator
NAMESPACE = "kernel-lab"
MAX_QUEUE = 128  # runs one worker holds (waiting threads); more would be an hour's queue
RESERVATION_S = 60.0  # a place taken by enqueue() whose run() never came is dropped after this
HEARTBEAT_S = 2.0  # a waiting user's callback runs at least this often (so a page that was left notices)
CALL_TIMEOUT_S = 5.0  # a control call (state, position) slower than this marks a worker unavailable


def cluster_address() -> str | None:
    """The configured Ray address (``auto`` included), or None for the embedded mode."""
    value = os.environ.get(CLUSTER_ENV, "").strip()
    return value or None


class ClusterUnavailable(RuntimeError):
    """No GPU worker can take runs (no cluster, no GPUs, or all of them unreachable)."""


class WorkerLost(RuntimeError):
    """The worker running this run died (its process or its machine); nothing was saved."""


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
    def from_dict(cls, data: Mapping[str, Any]) -> "WorkerInfo":
        return cls(str(data["name"]), str(data["node_id"]), str(data["host"]), str(data["ip"]),
                   tuple(str(g) for g in data["gpu_ids"]), dict(data["device"]), int(data["pid"]))


@dataclass(frozen=True)
class WorkerState:
    """One worker at one moment. ``available`` False: starting, restarting or unreachable (``problem`` says)."""

    name: str
    node_id: str
    info: WorkerInfo | None = None
    running: str | None = None
    running_s: float | None = None
    waiting: int = 0
    runs_done: int = 0
    available: bool = True
    problem: str | None = None

    @property
    def load(self) -> int:
        """Runs in front of a newcomer: the one running plus those waiting."""
        return self.waiting + (1 if self.running is not None else 0)


@dataclass(frozen=True)
class ClusterRun:
    """One finished run: its result, where it ran, and its timeline.

    Times are ``time.time()`` seconds: ``submitted``/``received`` on the app's clock,
    ``arrived``/``started``/``ended`` on the worker's (one clock when they share a host).
    """

    result: Any
    worker: WorkerInfo
    queued_behind: list[int]
    submitted: float
    arrived: float
    started: float
    ended: float
    received: float
    requeued: int = 0

    @property
    def waited_s(self) -> float:
        """Time queued behind other runs on the worker (seconds)."""
        return self.started - self.arrived

    @property
    def ran_s(self) -> float:
        return self.ended - self.started

    @property
    def overhead_s(self) -> float:
        """What Ray and the polling added: the app-side round trip minus the worker-side queue and run."""
        return (self.received - self.submitted) - (self.ended - self.arrived)


# --- the worker (a Ray actor) ----------------------------------------------------------


class GpuWorker:
    """The body of one GPU's actor: a FIFO queue of runs, one at a time, kernels kept warm.

    Plain Python (wrapped by ``ray.remote`` in ``worker_class``), so it can be tested
    without Ray. Called from several threads: ``enqueue``/``run``/``position``/``state``
    run concurrently; only the body of ``run`` touches the GPU, one at a time.
    """

    def __init__(self, warm: bool = True):
        import gpu  # noqa: F401  (decides the backend before numba.cuda is imported)
        from gpu.core.device import device_info
        from gpu.experiments import registry
        from gpu.service.devicelock import FileFifoLock, node_lock_dir, usable_dir

        registry.experiments()  # import every declaration once
        self._node_id, self._name, self._gpu_ids = _ray_context()
        self._facts = WorkerInfo(
            name=self._name, node_id=self._node_id, host=socket.gethostname(), ip=_node_ip(),
            gpu_ids=self._gpu_ids, device=device_info(0).to_dict(), pid=os.getpid(),
        )
        self._cpu_lock = FileFifoLock(f"cpu-node-{self._node_id[:12]}", usable_dir(node_lock_dir()))
        self._cond = threading.Condition()
        self._queue: list[str] = []
        self._reserved: dict[str, float] = {}  # run id -> when enqueue() placed it
        self._arrived: set[str] = set()
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

    def enqueue(self, run_id: str) -> int:
        """Take a place in the queue now (the run follows); return the runs ahead of it."""
        with self._cond:
            if len(self._queue) >= MAX_QUEUE:
                raise ClusterUnavailable(f"{self._facts.label} already has {MAX_QUEUE} runs queued; try again later")
            if run_id not in self._queue:
                self._queue.append(run_id)
                self._reserved[run_id] = time.time()
            return self._ahead(run_id)

    def position(self, run_id: str) -> tuple[int | None, bool, str | None]:
        """(runs ahead or None when unknown/finished, running now, its last progress message)."""
        with self._cond:
            if self._running == run_id:
                return 0, True, self._message
            if run_id in self._queue:
                return self._ahead(run_id), False, None
            return None, False, None

    def cancel(self, run_id: str) -> bool:
        """Leave the queue (the user went away). A run already running finishes; its result is dropped."""
        with self._cond:
            if run_id in self._queue:
                self._queue.remove(run_id)
                self._reserved.pop(run_id, None)
                self._cond.notify_all()
                return True
            return False

    # the run itself

    def run(self, run_id: str, experiment: str, params: Mapping[str, Any], label: str = "run") -> dict:
        """Wait for our turn, then parse, admit and run ``experiment`` with plain ``params``.

        Returns {"result": the frozen result, "arrived"/"started"/"ended": time.time()
        seconds}, or {"cancelled": True} when the run left the queue before its turn.
        """
        from gpu.experiments import registry

        arrived = time.time()
        with self._cond:
            if run_id not in self._queue:  # never enqueued, cancelled, or dropped as stale
                return {"cancelled": True}
            self._arrived.add(run_id)
            while True:
                self._drop_stale_reservations()
                if run_id not in self._queue:
                    self._arrived.discard(run_id)
                    return {"cancelled": True}
                if self._running is None and self._queue[0] == run_id:
                    self._queue.pop(0)
                    self._reserved.pop(run_id, None)
                    self._arrived.discard(run_id)
                    self._running, self._running_label, self._message = run_id, label, None
                    break
                self._cond.wait(0.5)
        try:
            declared = registry.get(experiment)
            with self._cpu_lock.hold(label) if declared.uses_cpu else nullcontext():
                started = time.time()
                with self._cond:
                    self._since = started
                result = registry.run(experiment, params, self._progress)
                ended = time.time()
            with self._cond:
                self._recent.append((label, started, ended))
            return {"result": result, "arrived": arrived, "started": started, "ended": ended}
        finally:
            with self._cond:
                self._running = self._running_label = self._since = self._message = None
                self._runs_done += 1
                self._cond.notify_all()

    def _progress(self, message: str) -> None:
        with self._cond:
            self._message = message

    def _ahead(self, run_id: str) -> int:
        return self._queue.index(run_id) + (1 if self._running is not None else 0)

    def _drop_stale_reservations(self) -> None:
        now = time.time()
        for run_id in [r for r in self._queue if r not in self._arrived]:
            if now - self._reserved.get(run_id, now) > RESERVATION_S:
                self._queue.remove(run_id)
                self._reserved.pop(run_id, None)


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
            max_concurrency=MAX_QUEUE + 8,  # waiting runs each hold a thread; control calls need a few
        )(GpuWorker)
    return _WORKER_CLASS


# --- which workers the cluster should have ---------------------------------------------


def worker_name(node_id: str, slot: int) -> str:
    return f"gpu-{node_id[:12]}-{slot}"


def wanted_workers(nodes: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(worker name, node id) for every GPU of every alive node, from ``ray.nodes()`` records."""
    wanted = []
    for node in nodes:
        if not node.get("Alive"):
            continue
        gpus = int(float(node.get("Resources", {}).get("GPU", 0)))
        wanted.extend((worker_name(node["NodeID"], slot), node["NodeID"]) for slot in range(gpus))
    return sorted(wanted)


def pick_worker(states: Sequence[WorkerState], prefer: str | None = None) -> WorkerState:
    """The preferred worker when it is available, else the available one with the shortest queue.

    Ties go to the worker that has done fewest runs, then by name, so a burst of
    submissions spreads out. Raises ClusterUnavailable when none is available.
    """
    available = [s for s in states if s.available]
    if not available:
        why = "; ".join(f"{s.name}: {s.problem}" for s in states if s.problem) or "the cluster has no GPU workers"
        raise ClusterUnavailable(f"No GPU worker can take runs now ({why}).")
    for state in available:
        if prefer is not None and state.name == prefer:
            return state
    return min(available, key=lambda s: (s.load, s.runs_done, s.name))


# --- the app's side --------------------------------------------------------------------


def _with_load(state: WorkerState, inflight: int) -> WorkerState:
    """``state`` with its queue counted as at least ``inflight`` runs (this process's own)."""
    if inflight <= state.load:
        return state
    return replace(state, waiting=inflight - (1 if state.running is not None else 0))


def plain(params: Mapping[str, Any]) -> dict:
    """The parameters as JSON values (tuples become lists): all that travels to a worker."""
    return json.loads(json.dumps(dict(params)))


def _unwrap(exc: BaseException) -> BaseException:
    """The worker's own exception inside Ray's RayTaskError (InputError stays InputError)."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


class ClusterClient:
    """The app's connection to the cluster: finds the workers, picks one, runs, follows the queue.

    One per app process; thread-safe (every Streamlit session calls ``run`` from its own
    thread). ``worker_env`` is set in each worker's environment (e.g. the simulator).
    """

    def __init__(self, address: str, *, worker_env: Mapping[str, str] | None = None,
                 local_gpus: int | None = None, poll_s: float = 0.5, discovery_s: float = 5.0,
                 start_timeout_s: float = 180.0):
        self.address = address
        self.worker_env = dict(worker_env or {})
        self.local_gpus = local_gpus
        self.poll_s = poll_s
        self.discovery_s = discovery_s
        self.start_timeout_s = start_timeout_s
        self._handles: dict[str, Any] = {}
        self._nodes: dict[str, str] = {}  # worker name -> node id
        self._discovered_at = float("-inf")
        self._discovery_lock = threading.Lock()
        self._choose_lock = threading.Lock()  # guards _inflight: pick and count as one step
        self._inflight: dict[str, int] = {}  # worker name -> runs this process has queued or running there
        self._states_lock = threading.Lock()
        self._states_cache: tuple[float, list[WorkerState]] = (float("-inf"), [])
        self._connect()

    # connection and discovery

    def _connect(self) -> None:
        import ray

        if ray.is_initialized():
            return
        if self.address == "auto":
            try:
                ray.init(address="auto", namespace=NAMESPACE, log_to_driver=False)
                return
            except ConnectionError:
                pass  # no instance on this host: start one
            ray.init(namespace=NAMESPACE, num_gpus=self.local_gpus, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=self.address, namespace=NAMESPACE, log_to_driver=False)

    def discover(self, force: bool = False) -> list[str]:
        """Worker names for the alive GPUs now, creating missing workers (every ``discovery_s``)."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        with self._discovery_lock:
            if not force and time.monotonic() - self._discovered_at < self.discovery_s:
                return sorted(self._handles)
            wanted = wanted_workers(ray.nodes())
            runtime_env = {"env_vars": self.worker_env} if self.worker_env else None
            handles = {}
            for name, node_id in wanted:
                handle = self._handles.get(name)
                if handle is None:
                    options: dict[str, Any] = dict(
                        name=name, namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
                        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                    )
                    if runtime_env:
                        options["runtime_env"] = runtime_env
                    handle = worker_class().options(**options).remote()
                handles[name] = handle
                self._nodes[name] = node_id
            self._handles = handles
            self._discovered_at = time.monotonic()
            return sorted(handles)

    def handle(self, name: str):
        self.discover()
        return self._handles[name]

    def states(self, timeout_s: float = CALL_TIMEOUT_S) -> list[WorkerState]:
        """Every worker's state, asked in parallel; one that does not answer in time is unavailable."""
        import ray

        names = self.discover()
        refs = {name: self._handles[name].state.remote() for name in names}
        done: set = set()
        if refs:  # all answer within milliseconds unless starting: do not let one starting worker hold up the rest
            ready, pending = ray.wait(list(refs.values()), num_returns=len(refs), timeout=min(timeout_s, 0.5))
            if not ready and pending:
                ready, _ = ray.wait(pending, num_returns=1, timeout=timeout_s)
            done = set(ready)
        states = []
        for name, ref in refs.items():
            node = self._nodes.get(name, "")
            if ref not in done:
                states.append(WorkerState(name, node, available=False, problem="starting or busy restarting"))
                continue
            try:
                s = ray.get(ref)
            except Exception as exc:  # restarting (ActorUnavailableError), dead, unschedulable
                states.append(WorkerState(name, node, available=False, problem=_short(exc)))
                continue
            states.append(WorkerState(name, node, WorkerInfo.from_dict(s["info"]), s["running"], s["running_s"],
                                      s["waiting"], s["runs_done"]))
        return states

    def _recent_states(self, max_age_s: float = 0.25) -> list[WorkerState]:
        """``states()``, shared by the submissions of one moment (one refresh at a time)."""
        with self._states_lock:
            taken_at, states = self._states_cache
            if time.monotonic() - taken_at > max_age_s:
                states = self.states()
                self._states_cache = (time.monotonic(), states)
            return states

    def _choose(self, prefer: str | None, run_id: str) -> tuple[WorkerState, int]:
        """Pick a worker and take a place in its queue; waits (up to ``start_timeout_s``) for starting workers.

        A worker's load is what it reported (every app process's runs, a moment ago) or
        the runs this process has on it now, whichever is larger; picking and counting
        happen under one lock, so a burst of submissions spreads over the workers.
        """
        import ray
        from ray.exceptions import RayTaskError

        deadline = time.monotonic() + self.start_timeout_s
        while True:
            states = self._recent_states()
            if not states:
                raise ClusterUnavailable(
                    f"The Ray cluster at {self.address} offers no GPUs: start its nodes with `ray start ... --num-gpus N`."
                )
            try:
                with self._choose_lock:
                    chosen = pick_worker([_with_load(s, self._inflight.get(s.name, 0)) for s in states], prefer)
                    self._inflight[chosen.name] = self._inflight.get(chosen.name, 0) + 1
                try:
                    ahead = ray.get(self._handles[chosen.name].enqueue.remote(run_id), timeout=CALL_TIMEOUT_S)
                except BaseException:
                    self._done_with(chosen.name)
                    raise
                return chosen, ahead
            except ClusterUnavailable:
                if time.monotonic() > deadline:
                    raise
            except RayTaskError as exc:  # the worker refused: its queue is full
                raise _unwrap(exc) from None
            except Exception as exc:  # it died or stalled between its state and the enqueue
                if time.monotonic() > deadline:
                    raise ClusterUnavailable(f"No GPU worker could take the run: {_short(exc)}") from exc
            time.sleep(0.5)
            self.discover(force=True)
            self._states_cache = (float("-inf"), [])

    def _done_with(self, name: str) -> None:
        with self._choose_lock:
            self._inflight[name] = max(0, self._inflight.get(name, 0) - 1)

    # a run

    def run(self, experiment: str, params: Mapping[str, Any], *, prefer: str | None = None, label: str = "run",
            on_wait: Callable[[int, WorkerInfo | None], None] | None = None,
            on_start: Callable[[WorkerInfo | None, str | None], None] | None = None) -> ClusterRun:
        """Run ``experiment`` with ``params`` on a worker; return the result and where it ran.

        ``on_wait(ahead, worker)`` is called when the number of runs ahead changes (it may
        raise to leave the queue), ``on_start(worker, message)`` when the run starts and as
        its progress messages change. Raises InputError (rejected by the worker's
        admission), WorkerLost (the worker died while running it), ClusterUnavailable.
        """
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

        payload = plain(params)
        submitted = time.time()
        positions: list[int] = []
        requeued = 0
        while True:
            run_id = uuid.uuid4().hex
            chosen, ahead = self._choose(prefer, run_id)
            handle, worker = self._handles[chosen.name], chosen.info
            try:
                ref = handle.run.remote(run_id, experiment, payload, label)
                out = self._follow(ref, handle, run_id, ahead, worker, positions, on_wait, on_start)
            except _Started as lost:  # the worker died while running it
                where = worker.label if worker else chosen.name
                log.warning("worker %s died during a run: %s", chosen.name, lost.cause)
                raise WorkerLost(
                    f"The GPU worker on {where} stopped while running your run (its process or machine went "
                    f"away: {type(lost.cause).__name__}). Nothing was saved. Ray is restarting that worker; "
                    "press Run again."
                ) from lost.cause
            except RayTaskError as exc:
                raise _unwrap(exc) from None
            except RayActorError as exc:  # died while this run was still queued: it never started
                if requeued >= 1:
                    raise WorkerLost(
                        f"Two GPU workers stopped while your run waited ({type(exc).__name__}). Nothing was saved; "
                        "press Run again."
                    ) from exc
                requeued += 1
                log.warning("worker %s lost a queued run; queuing it again: %s", chosen.name, _short(exc))
                continue
            except BaseException:
                try:
                    handle.cancel.remote(run_id)  # leave the queue; a run already running finishes unobserved
                except Exception:
                    pass
                raise
            finally:
                self._done_with(chosen.name)
            if out.get("cancelled"):
                raise ClusterUnavailable("The run lost its place in the worker's queue (held too long); press Run again.")
            info = worker or WorkerInfo.from_dict(ray.get(handle.info.remote(), timeout=CALL_TIMEOUT_S))
            return ClusterRun(out["result"], info, positions, submitted, out["arrived"], out["started"],
                              out["ended"], time.time(), requeued)

    def _follow(self, ref, handle, run_id: str, ahead: int, worker: WorkerInfo | None, positions: list[int],
                on_wait, on_start) -> dict:
        """Wait for the run's result, reporting its place in the queue and its progress.

        Raises ``_Started`` when the worker dies after the run was seen running.
        """
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError

        started = False
        last_message: str | None = None
        last_call = time.monotonic()
        if ahead > 0:
            positions.append(ahead)
            if on_wait is not None:
                on_wait(ahead, worker)
        try:
            while True:
                # ray.wait returns as soon as the result is there; next in line, look more often, so a
                # run that starts is seen started (a worker lost then is reported, not silently re-run)
                near = not started and (positions[-1] if positions else ahead) <= 1
                ready, _ = ray.wait([ref], timeout=min(self.poll_s, 0.1) if near else self.poll_s)
                if ready:
                    return ray.get(ref)
                try:
                    position, running, message = ray.get(handle.position.remote(run_id), timeout=CALL_TIMEOUT_S)
                except GetTimeoutError:
                    continue
                now = time.monotonic()
                if running:
                    if (not started or message != last_message) and on_start is not None:
                        on_start(worker, message)
                    started, last_message = True, message
                elif position:
                    changed = not positions or positions[-1] != position
                    if changed:
                        positions.append(position)
                    if on_wait is not None and (changed or now - last_call >= HEARTBEAT_S):
                        last_call = now
                        on_wait(position, worker)  # may raise: the user left
        except RayActorError as exc:
            if started:
                raise _Started(exc) from exc
            raise


class _Started(Exception):
    """The worker died after the run started (carries Ray's error)."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:160]}" if text else type(exc).__name__


def client_from_env() -> ClusterClient | None:
    """The client ``KERNEL_LAB_CLUSTER`` asks for, or None (embedded). Raises ClusterUnavailable."""
    address = cluster_address()
    if address is None:
        return None
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        raise ClusterUnavailable(
            f"{CLUSTER_ENV}={address} but Ray is not installed: run `make cluster-deps` (requirements-cluster.txt)."
        ) from exc
    import gpu

    env: dict[str, str] = {}
    local_gpus = None
    if address == "auto":
        from gpu.core.device import device_count

        local_gpus = int(os.environ.get(LOCAL_GPUS_ENV) or device_count())
        if gpu.BACKEND.simulated:  # workers on this host share its backend
            env["NUMBA_ENABLE_CUDASIM"] = "1"
    if os.environ.get(SIMULATOR_ENV) == "1":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    try:
        return ClusterClient(address, worker_env=env, local_gpus=local_gpus)
    except Exception as exc:
        raise ClusterUnavailable(f"Could not connect to the Ray cluster at {address!r}: {_short(exc)}") from exc
