"""Cluster mode in the app: a declared experiment runs on a Ray GPU worker; History stays here.

``ui.runner.run_declared`` sends a run here when ``KERNEL_LAB_CLUSTER`` is set. The
page sees the same things as in the embedded mode — "Queued behind N runs", a status
line, a result, "Saved to History" — plus on which machine and GPU the run happened.
Only the experiment's key and parameter values go to the worker; the frozen result and
the worker's facts come back, and this process saves them (workers never write History).
Experiments that pages still run as closures (``run_experiment``) stay on this host.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import streamlit as st

from gpu.core.limits import InputError
from gpu.service.admission import admit, is_out_of_memory, out_of_memory_message
from gpu.service.cluster import (
    CLUSTER_ENV,
    ClusterClient,
    ClusterRun,
    ClusterUnavailable,
    WorkerInfo,
    WorkerLost,
    client_from_env,
    cluster_address,
)

if TYPE_CHECKING:
    from gpu.catalog.base import Experiment

log = logging.getLogger(__name__)

WORKER_KEY = "runner.worker"  # sidebar choice: "auto" or a worker's name
AUTO = "auto"


@st.cache_resource(max_entries=1, show_spinner="Connecting to the Ray cluster…")
def cluster_client(address: str) -> ClusterClient:
    """This process's one connection to the cluster at ``address`` (a failure is not cached: retried next run)."""
    client = client_from_env()
    if client is None or client.address != address:
        raise ClusterUnavailable(
            f"{CLUSTER_ENV} changed while the app ran (now {cluster_address()!r}); restart the app"
        )
    return client


def where(worker: WorkerInfo | None) -> str:
    return worker.label if worker is not None else "a GPU worker"


def run_on_cluster(experiment: Experiment, params: Mapping[str, Any]) -> Any:
    """Admit, submit to the chosen (or least busy) worker, follow the queue, save here; the result or None."""
    from ui.run_record import LAST_KEY, queue_message, session_tag

    status = st.empty()
    try:
        admit(experiment, params)  # this app's limits, before anything is submitted
        client = cluster_client(cluster_address() or "")
    except (InputError, ClusterUnavailable) as exc:
        status.error(str(exc))
        return None
    pick = st.session_state.get(WORKER_KEY, AUTO)

    def on_wait(ahead: int, worker: WorkerInfo | None) -> None:
        status.info(queue_message(ahead, where(worker)))

    def on_start(worker: WorkerInfo | None, message: str | None) -> None:
        status.info(f"Running {experiment.title} on {where(worker)}" + (f": {message}…" if message else "…"))

    try:
        run = client.run(experiment.key, params, prefer=None if pick == AUTO else pick,
                         label=f"{experiment.title} · session {session_tag()}", on_wait=on_wait, on_start=on_start)
    except (InputError, WorkerLost, ClusterUnavailable) as exc:
        status.error(str(exc))
        return None
    except Exception as exc:  # the experiment failed on the worker: report, keep serving
        if is_out_of_memory(exc):
            status.error(out_of_memory_message(exc, "the cluster worker's GPU"))
        else:
            log.exception("%s failed on the cluster", experiment.title)
            status.error(f"The run failed on its GPU worker: {exc}. Try a smaller size or try again.")
        return None
    status.empty()
    run_id, problem = save_run(experiment, run, params)
    run_ids = [run_id] if run_id else []
    st.session_state[LAST_KEY] = {
        "experiment": experiment.title,
        "device_index": run.worker.gpu_index,
        "worker": run.worker.to_dict(),
        "queued_behind": run.queued_behind,
        "waited_s": run.waited_s,
        "run_ids": run_ids,
        "history_problem": problem,
    }
    if problem:
        st.warning(problem, icon=":material/warning:")
    else:
        waited = f" after waiting {run.waited_s:.1f} s in its queue" if run.queued_behind else ""
        saved = f" Saved to History as run {', '.join(r[:8] for r in run_ids)}." if run_ids else ""
        st.caption(f"Ran on {run.worker.label}{waited}.{saved}")
    return run.result


def save_run(experiment: Experiment, run: ClusterRun, params: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """Save a cluster run to this host's History, with the worker and its machine's device facts.

    Returns (run id, problem); never raises: a history failure must not lose the run.
    """
    from ui.run_record import save_result

    worker = {k: v for k, v in run.worker.to_dict().items() if k != "device"}
    return save_result(
        experiment, run.result, run.worker.gpu_index, params, device=run.worker.device, extra={"worker": worker}
    )


def cluster_sidebar() -> None:
    """Sidebar lines in cluster mode: the worker picker, each GPU's queue, where your last run ran."""
    from ui.run_record import LAST_KEY

    address = cluster_address() or ""
    try:
        client = cluster_client(address)
        states = client.states(timeout_s=0.5)
    except Exception as exc:  # never break a page over the sidebar
        st.caption(f":material/warning: Cluster {address}: {exc}")
        return
    machines = {s.node_id for s in states}
    st.caption(f"Ray cluster ({address}): {len(states)} GPU worker{'s' if len(states) != 1 else ''} "
               f"on {len(machines)} machine{'s' if len(machines) != 1 else ''}.")
    labels = {s.name: s.info.label for s in states if s.info is not None}
    if len(states) > 1:
        options = [AUTO, *sorted(labels)]
        if st.session_state.get(WORKER_KEY, AUTO) not in options:
            st.session_state[WORKER_KEY] = AUTO  # the picked worker's machine left the cluster
        st.selectbox(
            "GPU for your runs", options, key=WORKER_KEY,
            format_func=lambda o: "Shortest queue" if o == AUTO else labels.get(o, o),
            help="Each GPU runs one experiment at a time. 'Shortest queue' takes the GPU with the fewest runs "
                 "ahead; a picked GPU that is unavailable is replaced by the shortest queue.",
        )
    for s in states:
        name = s.info.label if s.info is not None else s.name
        if not s.available:
            st.caption(f"{name}: unavailable ({s.problem})")
        elif s.running is None:
            st.caption(f"{name}: free")
        else:
            st.caption(f"{name}: busy for {s.running_s or 0:.0f} s, {s.waiting} queued")
    last = st.session_state.get(LAST_KEY)
    if last and last.get("worker"):
        st.caption(f"Your last run ran on {last['worker']['label']}.")
