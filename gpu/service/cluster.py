"""Cluster mode: experiments run on GPU workers of a Ray cluster; the app keeps History.

Set ``KERNEL_LAB_CLUSTER`` to a Ray address (``head:6379``, the head's GCS), to
``auto`` for the Ray instance on this host (started in-process when none is running,
with ``KERNEL_LAB_CLUSTER_GPUS`` logical GPUs), or to ``local`` for a new in-process
instance even when one is running (tests, demos). Unset, the app is embedded
and nothing here imports Ray.

- **One worker per GPU.** For every alive node, one long-lived actor per GPU it offers
  (``num_gpus=1``, pinned to that node), named ``gpu-<node>-<slot>`` in the
  ``kernel-lab`` namespace and detached, so every app process shares the same workers
  and queues. Ray restarts a worker that dies (``max_restarts=-1``); its constructor
  imports the engine and compiles the kernels once, so they stay warm between runs.
  Nodes are looked up again every ``discovery_s`` at submission: a node that joins later
  gets its workers without restarting the app.
- **One run at a time per worker**, in arrival order (``GpuWorker``'s own queue, in
  gpu/service/cluster_worker.py); CPU baselines also hold the node's CPU lock (a
  ``FileFifoLock`` on that node), so two GPUs of one machine never time CPU code at once.
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
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpu.core import settings as _settings
from gpu.service.cluster_worker import (
    MAX_QUEUE,
    WATCH_S,
    ClusterUnavailable,
    GpuWorker,
    WorkerInfo,
    worker_class,
)

__all__ = [
    "CLUSTER_ENV", "NAMESPACE", "MAX_QUEUE", "ClusterClient", "ClusterRun", "ClusterUnavailable", "GpuWorker",
    "WorkerInfo", "WorkerLost", "WorkerState", "client_from_env", "cluster_address", "pick_worker", "plain",
    "wanted_workers",
]

log = logging.getLogger(__name__)

CLUSTER_ENV = _settings.CLUSTER.name
LOCAL_GPUS_ENV = _settings.CLUSTER_GPUS.name  # logical GPUs of a local instance started by ``auto``
SIMULATOR_ENV = _settings.CLUSTER_SIMULATOR.name  # "1": workers use Numba's CUDA simulator
NAMESPACE = "kernel-lab"
LOCAL = ("auto", "local")  # auto: this host's running instance, else a new one; local: always a new one
CALL_TIMEOUT_S = 5.0  # a control call (state, info) slower than this marks a worker unavailable


def cluster_address() -> str | None:
    """The configured Ray address (``auto`` included), or None for the embedded mode."""
    return _settings.settings().cluster


class WorkerLost(RuntimeError):
    """The worker running this run died (its process or its machine); nothing was saved."""

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
        """What Ray added: the app-side round trip minus the worker-side queue and run (seconds)."""
        return (self.received - self.submitted) - (self.ended - self.arrived)

# --- which workers the cluster should have ---------------------------------------------


def worker_name(node_id: str, slot: int) -> str:
    return f"gpu-{node_id[:12]}-{slot}"


def wanted_workers(nodes: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(worker name, node id) for every GPU of every alive node, from ``ray.nodes()`` records."""
    wanted: list[tuple[str, str]] = []
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


def _init_in_keeper(**options: Any) -> None:
    """``ray.init(**options)`` from a thread that lives as long as the process.

    Ray starts a local instance's processes (GCS, raylet) with PR_SET_PDEATHSIG, so they
    are killed when the *thread* that started them ends, and a Streamlit script thread
    ends after every rerun. Connecting from a long-lived thread keeps them alive.
    """
    import ray

    done = threading.Event()
    failure: list[BaseException] = []

    def keeper() -> None:
        try:
            ray.init(**options)
        except BaseException as exc:  # handed to the caller below
            failure.append(exc)
        finally:
            done.set()
        if not failure:
            threading.Event().wait()  # forever: this thread is the parent of Ray's local processes

    threading.Thread(target=keeper, name="kernel-lab-ray", daemon=True).start()
    done.wait()
    if failure:
        raise failure[0]


class ClusterClient:
    """The app's connection to the cluster: finds the workers, picks one, runs, follows the queue.

    One per app process; thread-safe (every Streamlit session calls ``run`` from its own
    thread). ``worker_env`` is set in each worker's environment (e.g. the simulator).
    """

    def __init__(self, address: str, *, worker_env: Mapping[str, str] | None = None,
                 local_gpus: int | None = None, discovery_s: float = 5.0,
                 start_timeout_s: float = 180.0):
        self.address = address
        self.worker_env = dict(worker_env or {})
        self.local_gpus = local_gpus
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
        if self.address in LOCAL:
            if self.address == "auto":
                try:
                    _init_in_keeper(address="auto", namespace=NAMESPACE, log_to_driver=False)
                    return
                except ConnectionError:
                    pass  # no instance on this host: start one
            _init_in_keeper(namespace=NAMESPACE, num_gpus=self.local_gpus, include_dashboard=False, log_to_driver=False)
        else:
            _init_in_keeper(address=self.address, namespace=NAMESPACE, log_to_driver=False)

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

    def _recent_states(self, max_age_s: float = 1.0) -> list[WorkerState]:
        """``states()``, shared by the submissions of one moment (one refresh at a time)."""
        with self._states_lock:
            taken_at, states = self._states_cache
            if time.monotonic() - taken_at > max_age_s:
                states = self.states()
                self._states_cache = (time.monotonic(), states)
            return states

    def _choose(self, prefer: str | None) -> WorkerState:
        """Pick a worker for one run and count it as this process's; waits (up to ``start_timeout_s``) for starting
        workers.

        A worker's load is what it reported (every app process's runs, up to a second ago)
        or the runs this process has on it now, whichever is larger; picking and counting
        happen under one lock, so a burst of submissions spreads over the workers.
        """
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            states = self._recent_states()
            if not states:
                raise ClusterUnavailable(
                    f"The Ray cluster at {self.address} offers no GPUs: start its nodes with `ray start ... --num-gpus "
                    "N`."
                )
            try:
                with self._choose_lock:
                    chosen = pick_worker([_with_load(s, self._inflight.get(s.name, 0)) for s in states], prefer)
                    self._inflight[chosen.name] = self._inflight.get(chosen.name, 0) + 1
                return chosen
            except ClusterUnavailable:
                if time.monotonic() > deadline:
                    raise
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
        from ray.exceptions import RayActorError, RayTaskError

        payload = plain(params)
        submitted = time.time()
        positions: list[int] = []
        requeued = 0
        while True:
            run_id = uuid.uuid4().hex
            chosen = self._choose(prefer)
            handle, worker = self._handles[chosen.name], chosen.info
            try:
                ref = handle.run.remote(run_id, experiment, payload, label)
                out = self._follow(ref, handle, run_id, worker, positions, on_wait, on_start)
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
                raise ClusterUnavailable(
                    "The run lost its place in the worker's queue (held too long); press Run again."
                )
            info = worker or WorkerInfo.from_dict(ray.get(handle.info.remote(), timeout=CALL_TIMEOUT_S))
            return ClusterRun(out["result"], info, positions, submitted, out["arrived"], out["started"],
                              out["ended"], time.time(), requeued)

    def _follow(self, ref, handle, run_id: str, worker: WorkerInfo | None, positions: list[int],
                on_wait, on_start) -> dict:
        """Wait for the run's result, reporting its place in the queue and its progress.

        One ``watch`` call is outstanding at a time: the worker answers it when the run's
        place changes (or after WATCH_S, the heartbeat that lets a left page notice), so
        queue moves and the start are seen at once without polling. Raises ``_Started``
        when the worker dies after the run was seen running.
        """
        import ray
        from ray.exceptions import RayActorError

        started = False
        watch = handle.watch.remote(run_id, (None, False, None))  # answers once the run has its place
        try:
            while True:
                ready, _ = ray.wait([ref, watch], num_returns=1, timeout=WATCH_S + CALL_TIMEOUT_S)
                if ref in ready or ray.wait([ref], timeout=0)[0]:
                    return ray.get(ref)
                if watch not in ready:
                    continue  # the worker is slow to answer (busy restarting?); the result decides
                position, running, message = known = tuple(ray.get(watch))
                watch = handle.watch.remote(run_id, known)
                if running:
                    if on_start is not None:
                        on_start(worker, message)
                    started = True
                elif position:
                    if not positions or positions[-1] != position:
                        positions.append(position)
                    if on_wait is not None:
                        on_wait(position, worker)  # also the heartbeat; may raise: the user left
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
    if address in LOCAL:
        from gpu.core.device import device_count

        configured = _settings.settings().cluster_gpus
        local_gpus = device_count() if configured is None else configured
        if gpu.BACKEND.simulated:  # workers on this host share its backend
            env["NUMBA_ENABLE_CUDASIM"] = "1"
        if gpu.BACKEND.lab_simulator:  # and the lab simulator's tier in force (KERNEL_LAB_SIM_TIER)
            from gpu.sim import vector

            env[vector.TIER_ENV] = vector.tier_mode()
    if _settings.settings().cluster_simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    try:
        return ClusterClient(address, worker_env=env, local_gpus=local_gpus)
    except Exception as exc:
        raise ClusterUnavailable(f"Could not connect to the Ray cluster at {address!r}: {_short(exc)}") from exc
