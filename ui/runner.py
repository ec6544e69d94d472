"""Run an experiment for a page: queue for the device, show progress, report errors, save.

Every page's GPU (and CPU benchmark) work goes through ``run_experiment`` so that runs
never overlap, waiting users see their place in the queue, a failure becomes a message
instead of a traceback, and every completed run is saved to the history database.
"""

from __future__ import annotations

import logging
import re
import time
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, TypeVar

import streamlit as st

import gpu
from gpu.core.limits import InputError, load_config, max_vector_n
from gpu.service.admission import admit, is_out_of_memory, out_of_memory_message, release_device_memory
from gpu.service.admission import describe as describe_limits
from gpu.service.cluster import cluster_address
from gpu.service.locks import FifoLock, least_loaded
from gpu.service.store import StoreError
from ui.resources import cpu_lock, current_store, device_facts, device_lock, devices

if TYPE_CHECKING:
    from gpu.experiments.base import Experiment

T = TypeVar("T")
log = logging.getLogger(__name__)

DEVICE_KEY = "runner.device"  # sidebar choice: "auto" or a device index
LAST_KEY = "runner.last"  # what the last run of this session waited for and saved
AUTO = "auto"


def queue_message(ahead: int, resource: str) -> str:
    """The line a waiting user sees; ``ahead`` counts the run in progress too."""
    runs = f"{ahead} run{'s' if ahead != 1 else ''}"
    return f"⏳ Queued behind {runs} on {resource} — your run starts when it is free. Leaving the page cancels your place; runs already saved stay in History."


def _session_tag() -> str:
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        return ctx.session_id[:8] if ctx else "-"
    except Exception:
        return "-"


def choose_device(preferred: int | str | None = None) -> int:
    """The device a run uses: an explicit index, the sidebar's pick, else the first free one."""
    count = devices()
    choice = preferred if preferred is not None else st.session_state.get(DEVICE_KEY, AUTO)
    if isinstance(choice, int) and 0 <= choice < count:
        return choice
    if count == 1:
        return 0
    return least_loaded([device_lock(i) for i in range(count)])


@contextmanager
def on_device(index: int) -> Iterator[None]:
    """Make device ``index`` current for the work (a no-op choice in the simulator's single device)."""
    from gpu.core.backend import cuda

    with cuda.gpus[index]:
        yield


def _history_experiment(experiment: str, obj: Any) -> str:
    words = re.sub(r"(?<!^)(?=[A-Z])", "-", type(obj).__name__).lower()
    return f"{re.sub(r'[^a-z0-9]+', '-', experiment.lower()).strip('-')}/{words}"


def save_results(experiment: str, result: Any, index: int, declared: "Experiment | None" = None,
                 params: Mapping[str, Any] | None = None) -> tuple[list[str], str | None]:
    """Save the result (or each element of a tuple/list result) that has to_dict().

    For a declared experiment the row is told, not guessed: its key, the parameters it
    ran with and its headline measures. Returns (run ids, problem); never raises: a
    history failure must not lose the run.
    """
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    savable = [item for item in items if hasattr(item, "to_dict")]
    if not savable:
        return [], None
    ids: list[str] = []
    try:
        store = current_store()
        device = device_facts(index).to_dict()
        for item in savable:
            data = dict(item.to_dict())
            data.setdefault("device", device)
            data.setdefault("backend", device["backend"])
            if declared is not None:
                data["experiment"] = declared.key
                data["measures"] = declared.measures(item)
            name = data.get("experiment") or _history_experiment(experiment, item)
            ids.append(store.save(data, experiment=name, params=params, device_index=index))
    except StoreError as exc:
        return ids, f"This run is shown below but was not saved to History: {exc}"
    except Exception as exc:  # never lose a finished run over a history problem
        log.exception("saving %s to history failed", experiment)
        return ids, f"This run is shown below but was not saved to History ({type(exc).__name__}: {exc})."
    return ids, None


def run_declared(experiment: "Experiment", params: Mapping[str, Any], *, device: int | None = None) -> Any:
    """Run a declared experiment with parsed ``params``: admission, queue, progress, History.

    Admission runs again here (the form already ran it) so that no caller can queue a
    run over the budget. Returns the result, or None after showing why there is none.
    """
    if cluster_address() is not None:  # cluster mode: a Ray GPU worker runs it (ui/cluster.py)
        from ui.cluster import run_on_cluster

        return run_on_cluster(experiment, params)
    try:
        admit(experiment, params)
    except InputError as exc:
        st.error(str(exc))
        return None
    return run_experiment(
        experiment.title, lambda progress: experiment.run(params, progress),
        device=device, uses_cpu=experiment.uses_cpu, declared=experiment, params=params,
    )


def run_experiment(
    experiment: str,
    work: Callable[[Callable[[str], None]], T],
    *,
    device: int | None = None,
    uses_cpu: bool = True,
    declared: "Experiment | None" = None,
    params: Mapping[str, Any] | None = None,
) -> T | None:
    """Call ``work(progress)`` while holding the device lock (and the CPU lock); return its result.

    ``progress(message)`` updates a status line. The device is ``device``, else the one
    picked in the sidebar, else the first free one; the work runs with it current.
    ``uses_cpu=False`` skips the CPU lock for work that times nothing on the CPU.
    Returns None (after showing why) when the inputs were rejected or the run failed;
    the app keeps serving. A completed run is saved to History (a failure to save is a
    warning, never an error).
    """
    index = choose_device(device)
    facts = device_facts(index)
    where = "the CUDA simulator" if facts.backend == "simulator" else f"GPU {index} ({facts.name})"
    locks: list[tuple[FifoLock, str]] = [(device_lock(index), where)]
    if uses_cpu:
        locks.append((cpu_lock(), "the CPU benchmarks"))
    status = st.empty()
    positions: list[int] = []
    label = f"{experiment} · session {_session_tag()}"
    queued_at = time.perf_counter()

    def waiting_for(resource: str) -> Callable[[int], None]:
        def on_wait(ahead: int) -> None:
            if not positions or positions[-1] != ahead:
                positions.append(ahead)
            status.info(queue_message(ahead, resource))

        return on_wait

    try:
        with ExitStack() as held:
            for lock, resource in locks:  # always device first, then CPU: no lock-order cycles
                held.enter_context(lock.hold(label, on_wait=waiting_for(resource)))
            waited_s = time.perf_counter() - queued_at
            status.empty()
            with st.status(f"Running {experiment} on {where}…", expanded=False) as box, on_device(index):
                result = work(lambda message: box.update(label=f"Running {experiment}: {message}…"))
                box.update(label=f"{experiment} finished", state="complete")
    except InputError as exc:
        status.error(str(exc))
        return None
    except Exception as exc:  # CUDA errors, out of memory: report, keep serving
        if is_out_of_memory(exc):
            log.warning("%s ran out of memory: %s", experiment, exc)
            release_device_memory()
            status.error(out_of_memory_message(exc, where))
        else:
            log.exception("%s failed", experiment)
            status.error(f"The run failed: {exc}. The GPU has been released; try a smaller size or try again.")
        return None
    run_ids, problem = save_results(experiment, result, index, declared, params)
    st.session_state[LAST_KEY] = {
        "experiment": experiment,
        "device_index": index,
        "queued_behind": positions,
        "waited_s": waited_s,
        "run_ids": run_ids,
        "history_problem": problem,
    }
    if problem:
        st.warning(problem, icon="⚠️")
    elif run_ids:
        waited = f" after waiting {waited_s:.1f} s in the queue" if positions else ""
        st.caption(f"Saved to History as run {', '.join(r[:8] for r in run_ids)}{waited}.")
    return result


def sidebar_status() -> None:
    """Sidebar lines: the device picker (several GPUs only), queue state, admission limits, history."""
    count = 0 if cluster_address() else devices()  # cluster mode: the workers' lines instead
    if not count:
        from ui.cluster import cluster_sidebar

        cluster_sidebar()
    if count > 1:
        options = [AUTO, *range(count)]
        st.selectbox(
            "GPU for your runs",
            options,
            key=DEVICE_KEY,
            format_func=lambda o: "First free GPU" if o == AUTO else f"GPU {o}: {device_facts(o).name}",
            help="Runs on one GPU never overlap; with 'first free' your run takes the GPU with the shortest queue.",
        )
    for i in range(count):
        state = device_lock(i).snapshot()
        name = "Simulator" if gpu.BACKEND.simulated else f"GPU {i}"
        if state.holder is None:
            st.caption(f"{name}: free")
        else:
            st.caption(f"{name}: busy for {state.held_s or 0:.0f} s, {state.waiting} queued")
    config = load_config()
    st.caption(f"Limits per run: {describe_limits(config, max_vector_n())}.")
    store = current_store()
    if store.problem:
        st.caption(f"⚠️ {store.problem}")
