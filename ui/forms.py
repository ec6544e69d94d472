"""A page form derived from an experiment's declaration.

``experiment_form`` draws one widget per declared parameter (keys
``<experiment>.<param>``, or the keys a page has always used), and on submit parses
every value with the declaration's parsers and runs admission, so a page cannot skip
either. It returns the parsed parameters, or None when nothing was submitted or the
input was rejected; a rejection says what is allowed and marks any result on the page
as belonging to earlier inputs (``stale_key``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

import gpu
from gpu.catalog.base import Experiment, Param
from gpu.core.limits import InputError, load_config
from gpu.service.admission import admit
from ui.glossary import help_for
from ui.progress import ESTIMATE_SHOWN_FROM_S, eta_text

SCALARS = ("text", "int", "float")
# Widgets laid out three to a row (a select box is as short as a text box); multiselects and checkboxes take the
# whole width. Three to a row keeps every page's Run button in the first screen (tests/test_browser_first_look.py).
GRID = (*SCALARS, "select")


def stale_key(experiment: Experiment) -> str:
    """Session key set when the shown result no longer matches the form's inputs."""
    return f"{experiment.key}.stale"


def _widget(container, experiment: Experiment, param: Param, default: Any, overrides: Mapping[str, Any]) -> Any:
    key = experiment.widget_key(param.name)
    label = overrides.get("label", param.label)
    help_text = help_for(label, overrides.get("help", param.help))  # jargon in a label explained where it appears
    if param.widget == "checkbox":
        return container.checkbox(label, value=bool(default), key=key, help=help_text)
    if param.widget == "multiselect":
        return container.multiselect(label, options=list(param.options), default=list(default), key=key,
                                     format_func=param.option_label, help=help_text)
    if param.widget == "select":
        options = list(param.options)
        return container.selectbox(label, options, index=options.index(default) if default in options else 0,
                                   key=key, format_func=param.option_label, help=help_text)
    # Numbers are typed as text and parsed by the declaration: "1e3", "2^20" and "1,000"
    # mean what they say, and a bad value gets the parser's message instead of a silent clamp.
    return container.text_input(label, value=_as_text(default), key=key, help=help_text)


def _as_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    return "" if value is None else str(value)


def run_estimate(experiment: Experiment, raw: Mapping[str, Any], simulated: bool) -> float | None:
    """Seconds the run at these form values should take (its declared plan), or None without a plan or valid values."""
    if experiment.plan is None and experiment.estimate is None:
        return None
    try:
        params = experiment.parse(dict(raw), simulated)
        if experiment.plan is None:
            return float(experiment.estimate(params, simulated))  # type: ignore[misc]
        return float(sum(seconds for _, seconds in experiment.plan(params, simulated)))
    except Exception:  # the form shows the parse error on submit; an estimate is only a courtesy
        return None


def experiment_form(
    experiment: Experiment,
    *,
    submit_label: str = "Run",
    defaults: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    limits_caption: Callable[[], str] | None = None,
) -> dict[str, Any] | None:
    """Draw the experiment's form; on submit return parsed, admitted parameters, else None.

    ``defaults`` replace declared defaults on this page (e.g. a size that fits memory
    now); ``overrides`` change a widget's label or help by parameter name.
    """
    simulated = gpu.BACKEND.simulated
    values = experiment.defaults(simulated) | dict(defaults or {})
    overrides = overrides or {}
    shown = [p for p in experiment.params if p.page]
    scalars = [p for p in shown if p.widget in GRID]
    others = [p for p in shown if p.widget not in GRID]
    raw: dict[str, Any] = {}
    with st.form(experiment.key):
        for row in range(0, len(scalars), 3):
            columns = st.columns(3)
            for column, param in zip(columns, scalars[row:row + 3]):
                raw[param.name] = _widget(column, experiment, param, values[param.name], overrides.get(param.name, {}))
        for param in others:
            raw[param.name] = _widget(st, experiment, param, values[param.name], overrides.get(param.name, {}))
        submitted = st.form_submit_button(submit_label, type="primary")
    hidden = {p.name: values[p.name] for p in experiment.params if not p.page}
    for param in shown:  # an empty box means "none" only where the declaration allows none
        if raw[param.name] == "" and param.default_for(simulated) is None:
            raw[param.name] = None
    if not submitted:
        estimate = run_estimate(experiment, raw | hidden, simulated)
        if estimate is not None and estimate >= ESTIMATE_SHOWN_FROM_S:
            during = (
                "a progress bar names each step while it runs" if experiment.plan is not None
                else "a status line says what it measures while it runs"
            )
            st.caption(f":material/schedule: At these settings a run takes about {eta_text(estimate)} here (an "
                       f"estimate); {during}.")
    if limits_caption is not None:
        st.caption(limits_caption())
    if not submitted:
        return None
    try:
        params = experiment.parse(raw | hidden, simulated)
        admit(experiment, params, load_config())
    except InputError as exc:
        st.error(str(exc))
        st.session_state[stale_key(experiment)] = True
        return None
    st.session_state[stale_key(experiment)] = False
    return params
