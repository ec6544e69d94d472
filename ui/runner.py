"""Run an experiment for a page: queue for the device, show progress, report errors.

Every page's GPU (and CPU benchmark) work goes through ``run_experiment`` so that runs
never overlap, waiting users see their place in the queue, and a failure becomes a
message instead of a traceback.
"""

from __future__ import annotations

import logging
from typing import Callable, TypeVar

import streamlit as st

from gpu.limits import InputError
from ui.resources import device_lock

T = TypeVar("T")
log = logging.getLogger(__name__)


def run_experiment(experiment: str, work: Callable[[Callable[[str], None]], T]) -> T | None:
    """Call ``work(progress)`` while holding the device lock; return its result.

    ``progress(message)`` updates a status line. Returns None (after showing why)
    when the inputs were rejected or the run failed; the app keeps serving.
    """
    lock = device_lock()
    status = st.empty()

    def queued(ahead: int) -> None:
        status.info(f"⏳ Queued behind {ahead} run{'s' if ahead != 1 else ''} on the GPU — your run starts when it is free. You can leave; nothing is lost.")

    try:
        with lock.hold(experiment, on_wait=queued):
            with st.status(f"Running {experiment}…", expanded=False) as box:
                result = work(lambda message: box.update(label=f"Running {experiment}: {message}…"))
                box.update(label=f"{experiment} finished", state="complete")
    except InputError as exc:
        status.error(str(exc))
        return None
    except Exception as exc:  # CUDA errors, out of memory: report, keep serving
        log.exception("%s failed", experiment)
        status.error(f"The run failed: {exc}. The GPU has been released; try a smaller size or try again.")
        return None
    status.empty()
    return result
