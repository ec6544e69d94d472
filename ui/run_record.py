"""What a finished run leaves behind: its History row and this session's note of the run.

Shared by the two ways a page runs an experiment, on this host (ui/runner.py) and on a
Ray worker (ui/cluster.py), so that neither imports the other for it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gpu.catalog.base import checked_measures
from gpu.service.store import StoreError
from ui.resources import current_store, device_facts

if TYPE_CHECKING:
    from gpu.catalog.base import Experiment

log = logging.getLogger(__name__)

LAST_KEY = "runner.last"  # what the last run of this session waited for and saved
SESSION_KEY = "history.session_id"  # this browser session's id, saved with each of its runs ("Your runs")


def browser_session_id() -> str:
    """A random id for this browser session, made on first use and kept in ``st.session_state``.

    Every run this session saves carries it, so History's "Your runs" lists this session's
    runs only (the database is shared by every app under the user account). It lasts as
    long as the session: moving between pages keeps it, reloading the tab starts a new one.
    """
    import uuid

    import streamlit as st

    if not st.session_state.get(SESSION_KEY):
        st.session_state[SESSION_KEY] = uuid.uuid4().hex
    return str(st.session_state[SESSION_KEY])


def runs_ahead(ahead: int) -> str:
    """"1 run", "3 runs": how many runs a waiter is behind."""
    return f"{ahead} run{'s' if ahead != 1 else ''}"


def queue_message(ahead: int, resource: str, what: str | None = None, finishes_anyway: bool = False) -> str:
    """The line a waiting user sees; ``ahead`` counts the run in progress too. ``what`` names what waits when it
    is not the user's run (Write a kernel's compiler facts and trace, after its verdict). ``finishes_anyway``: the
    run goes on if the user leaves (Write a kernel's judge, in a thread of its own)."""
    runs = runs_ahead(ahead)
    if finishes_anyway:
        return (f"Queued behind {runs} on {resource} — your kernel is judged when it is free, "
                "even if you leave this page.")
    waits = f"Queued behind {runs} on {resource} — your run starts" if what is None else (
        f"{what}: queued behind {runs} on {resource} — they start")
    return f"{waits} when it is free. Leaving the page cancels your place; runs already saved stay in History."


def session_tag() -> str:
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        return ctx.session_id[:8] if ctx else "-"
    except Exception:
        return "-"


def save_result(
    experiment: Experiment,
    result: Any,
    index: int | None,
    params: Mapping[str, Any] | None,
    *,
    device: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> tuple[str | None, str | None]:
    """Save one run to History, told (not guessed) by its declaration: the experiment's
    key, the parameters it ran with and its headline measures.

    ``device`` defaults to this host's facts for device ``index`` (a cluster run passes
    the facts of the machine that ran it, and its worker's GPU index, None where it named none); ``extra`` adds
    fields (e.g. the worker).
    Returns (run id, problem); never raises: a history failure must not lose the run.
    """
    try:
        device = dict(device) if device is not None else device_facts(index or 0).to_dict()
        data = dict(result.to_dict())
        data.setdefault("device", device)
        data.setdefault("backend", device.get("backend"))
        data.update(extra or {})
        data["experiment"] = experiment.key
        data["measures"] = checked_measures(experiment, result)
        store = current_store()
        return store.save(
            data, experiment=experiment.key, params=params, device_index=index, session_id=browser_session_id()
        ), None
    except StoreError as exc:
        return None, f"This run is shown below but was not saved to History: {exc}"
    except Exception as exc:  # never lose a finished run over a history problem
        log.exception("saving %s to history failed", experiment.key)
        return None, f"This run is shown below but was not saved to History ({type(exc).__name__}: {exc})."
