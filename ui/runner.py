"""Run an experiment for a page: queue for the device, show progress, report errors, save.

Every page's GPU (and CPU benchmark) work goes through ``run_declared`` so that runs
never overlap, waiting users see their place in the queue, a failure becomes a message
instead of a traceback, and every completed run is saved to the history database.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import streamlit as st

import gpu
from gpu.catalog.base import Progress
from gpu.core.limits import InputError, load_config, max_vector_n, release_device_memory
from gpu.service.admission import admit, is_out_of_memory, out_of_memory_message
from gpu.service.admission import describe as describe_limits
from gpu.service.cluster import cluster_address
from gpu.service.locks import QueueLock, least_loaded
from ui.progress import ESTIMATE_SHOWN_FROM_S, PhaseProgress, estimate_text
from ui.resources import cpu_lock, current_store, device_facts, device_lock, devices
from ui.run_record import LAST_KEY, queue_message, save_result, session_tag

if TYPE_CHECKING:
    from gpu.catalog.base import Experiment

T = TypeVar("T")
log = logging.getLogger(__name__)

DEVICE_KEY = "runner.device"  # sidebar choice: "auto" or a device index
SLOTS_KEY = "runner.sidebar_slots"  # this session's sidebar device-state lines, by device index
HOLDERS_KEY = "runner.sidebar_holders"  # where a page's fragment draws those lines (``fragment_lines``), by index
AUTO = "auto"


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


def partial_key(experiment: Experiment) -> str:
    return f"{experiment.key}.partial"  # the last snapshot of a running, stoppable experiment


def stop_key(experiment: Experiment) -> str:
    return f"{experiment.key}.stop_requested"


def run_declared(
    experiment: Experiment,
    params: Mapping[str, Any],
    *,
    device: int | None = None,
    show_partial: Callable[[Any], None] | None = None,
) -> Any:
    """Run a declared experiment with parsed ``params``: admission, queue, progress, History.

    Admission runs again here (the form already ran it) so that no caller can queue a
    run over the budget. Experiments that report steps get a progress bar; those that
    can be stopped get a Stop button (the partial result is kept: ``recover_stopped``).
    With ``show_partial``, each partial result the run hands ``progress.partial`` is drawn
    by it in one place under the bar, redrawn at the next and cleared when the run ends
    (History saves only the completed run). Returns the result, or None after showing why
    there is none.
    """
    if cluster_address() is not None:  # cluster mode: a Ray GPU worker runs it (ui/cluster.py)
        from ui.cluster import run_on_cluster

        return run_on_cluster(experiment, params)
    try:
        admit(experiment, params)
    except InputError as exc:
        st.error(str(exc))
        return None
    state = st.session_state
    state[stop_key(experiment)] = False
    state[partial_key(experiment)] = None
    state[f"{experiment.key}.params"] = dict(params)  # for saving a stopped run on the rerun
    left, right = st.columns([5, 1])
    bar = left.empty()
    stop_slot = right.empty()
    live = st.empty() if show_partial is not None else None  # the partial results, redrawn in place
    if experiment.mark_stopped is not None:
        stop_slot.button(
            "Stop",
            key=f"{experiment.key}.stop",
            on_click=lambda: state.__setitem__(stop_key(experiment), True),
            help="Stops between two steps; what was measured stays and is saved.",
        )

    def step(fraction: float, partial: Any) -> None:
        state[partial_key(experiment)] = partial  # kept if a Stop press interrupts the next call
        bar.progress(min(max(fraction, 0.0), 1.0))

    tracker = None
    if experiment.plan is not None:
        tracker = PhaseProgress(bar, experiment.plan(params, gpu.BACKEND.simulated), gpu.BACKEND.simulated)
        bar.progress(0.0, text=tracker.start_text())
    elif experiment.estimate is not None:  # no steps to name: the estimate stays up while the run's status line moves
        estimate_s = experiment.estimate(params, gpu.BACKEND.simulated)
        if estimate_s >= ESTIMATE_SHOWN_FROM_S:
            bar.progress(0.0, text=estimate_text(estimate_s, gpu.BACKEND.simulated))

    def work(say: Callable[[str], None]) -> Any:
        def say_and_track(message: str) -> None:
            say(message)
            if tracker is not None:
                tracker(message)

        def draw_partial(partial: Any) -> None:
            if show_partial is not None and live is not None:
                with live.container():
                    show_partial(partial)

        progress = Progress(say=say_and_track, step=step, should_stop=lambda: bool(state.get(stop_key(experiment))),
                            started=tracker.started if tracker is not None else (lambda _step_id: None),
                            partial=draw_partial)
        return experiment.execute(params, progress)

    result = run_experiment(
        experiment.title, work, device=device, uses_cpu=experiment.uses_cpu, experiment=experiment, params=params
    )
    state[partial_key(experiment)] = None
    stop_slot.empty()
    bar.empty()
    if live is not None:
        live.empty()
    return result


def recover_stopped(experiment: Experiment) -> Any:
    """A run interrupted by its Stop button left a partial result: save it to History, marked, and return it."""
    state = st.session_state
    partial = state.get(partial_key(experiment))
    if partial is None or experiment.mark_stopped is None:
        return None
    state[partial_key(experiment)] = None
    state[stop_key(experiment)] = False
    result = experiment.mark_stopped(partial, "cancelled")
    params = state.get(f"{experiment.key}.params")
    run_id, problem = save_result(experiment, result, choose_device(), params)
    if problem:
        st.warning(problem)
    elif run_id:
        st.caption(f"The stopped run was saved to History as run {run_id[:8]}, marked stopped.")
    return result


def run_experiment(
    title: str,
    work: Callable[[Callable[[str], None]], T],
    *,
    device: int | None = None,
    uses_cpu: bool = True,
    experiment: Experiment | None = None,
    params: Mapping[str, Any] | None = None,
) -> T | None:
    """Call ``work(progress)`` while holding the device lock (and the CPU lock); return its result.

    ``progress(message)`` updates a status line. The device is ``device``, else the one
    picked in the sidebar, else the first free one; the work runs with it current.
    ``uses_cpu=False`` skips the CPU lock for work that times nothing on the CPU. ``title``
    names the work in the queue and status lines; ``experiment`` (with ``params``), when
    the work is a declared experiment, is what History saves it under.
    Returns None (after showing why) when the inputs were rejected or the run failed;
    the app keeps serving. A completed run is saved to History (a failure to save is a
    warning, never an error).
    """
    index = choose_device(device)
    facts = device_facts(index)
    where = "the CUDA simulator" if facts.backend == "simulator" else f"GPU {index} ({facts.name})"
    locks: list[tuple[QueueLock, str]] = [(device_lock(index), where)]
    if uses_cpu:
        locks.append((cpu_lock(), "the CPU benchmarks"))
    status = st.empty()
    positions: list[int] = []
    label = f"{title} · session {session_tag()}"
    queued_at = time.perf_counter()

    def waiting_for(resource: str) -> Callable[[int], None]:
        def on_wait(ahead: int) -> None:
            if not positions or positions[-1] != ahead:
                positions.append(ahead)
            status.info(queue_message(ahead, resource), icon=":material/hourglass_top:")

        return on_wait

    try:
        with ExitStack() as held:
            for lock, resource in locks:  # always device first, then CPU: no lock-order cycles
                held.enter_context(lock.hold(label, on_wait=waiting_for(resource)))
            waited_s = time.perf_counter() - queued_at
            status.empty()
            _sidebar_state(index, f":material/hourglass_top: {device_name(index)}: busy — your {title} is running")
            try:
                with st.status(f"Running {title} on {where}…", expanded=False) as box, on_device(index):
                    result = work(lambda message: box.update(label=f"Running {title}: {message}…"))
                    box.update(label=f"{title} finished", state="complete")
            finally:
                _sidebar_state(index, f"{device_name(index)}: free")
    except InputError as exc:
        status.error(str(exc))
        return None
    except Exception as exc:  # CUDA errors, out of memory: report, keep serving
        if is_out_of_memory(exc):
            log.warning("%s ran out of memory: %s", title, exc)
            release_device_memory()
            status.error(out_of_memory_message(exc, where))
        else:
            log.exception("%s failed", title)
            status.error(f"The run failed: {exc}. The GPU has been released; try a smaller size or try again.")
        return None
    run_id, problem = save_result(experiment, result, index, params) if experiment is not None else (None, None)
    run_ids = [run_id] if run_id else []
    st.session_state[LAST_KEY] = {
        "experiment": title,
        "device_index": index,
        "queued_behind": positions,
        "waited_s": waited_s,
        "run_ids": run_ids,
        "history_problem": problem,
    }
    if problem:
        st.warning(problem, icon=":material/warning:")
    elif run_ids:
        waited = f" after waiting {waited_s:.1f} s in the queue" if positions else ""
        st.caption(f"Saved to History as run {', '.join(r[:8] for r in run_ids)}{waited}.")
    return result


def device_name(index: int) -> str:
    return "Simulator" if gpu.BACKEND.simulated else f"GPU {index}"


def queue_line(index: int) -> str:
    """The sidebar's line for device ``index``, as its queue is now: free, or busy for how long and how many wait."""
    state = device_lock(index).snapshot()
    if state.holder is None:
        return f"{device_name(index)}: free"
    return f"{device_name(index)}: busy for {state.held_s or 0:.0f} s, {state.waiting} queued"


def refresh_sidebar(index: int = 0) -> None:
    """Draw this session's sidebar line for device ``index`` again from its queue (a page that follows a run of its
    own drawn elsewhere: Write a kernel's judge), so the sidebar never contradicts the page's own line."""
    _sidebar_state(index, queue_line(index))


def fragment_lines() -> None:
    """Draw the sidebar's device lines from a fragment that follows a run of its own (Write a kernel's Run panel), on
    every run of it, full or its own, so that ``refresh_sidebar`` can rewrite them while the fragment reruns alone.
    Streamlit lets a fragment's own rerun write to a container outside it only where the fragment wrote in the last
    full run: the page's frame left the places (``sidebar_status(lines_in_fragment=True)``), the fragment fills them."""
    slots = {}
    for i, holder in (st.session_state.get(HOLDERS_KEY) or {}).items():
        slots[i] = holder.empty()
        slots[i].caption(queue_line(i))
    st.session_state[SLOTS_KEY] = slots


def _sidebar_state(index: int, text: str) -> None:
    """Rewrite this session's sidebar line for device ``index`` (drawn by sidebar_status)."""
    slot = (st.session_state.get(SLOTS_KEY) or {}).get(index)
    if slot is not None:
        try:
            slot.caption(text)
        except Exception:  # the sidebar of an earlier rerun: nothing to update
            pass


def sidebar_status(lines_in_fragment: bool = False) -> None:
    """Sidebar lines: the device picker (several GPUs only), queue state, admission limits, history.

    ``lines_in_fragment``: the page's fragment draws the device lines (``fragment_lines``); here, only their places.
    """
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
    slots, holders = {}, {}
    for i in range(count):
        if lines_in_fragment:
            holders[i] = st.container()
        else:
            slots[i] = st.empty()
            slots[i].caption(queue_line(i))
    st.session_state[SLOTS_KEY], st.session_state[HOLDERS_KEY] = slots, holders
    config = load_config()
    st.caption(f"Limits per run: {describe_limits(config, max_vector_n())}.")
    store = current_store()
    if store.problem:
        st.caption(f":material/warning: {store.problem}")
