"""A ``gpu check`` section for any declared experiment, from its declaration alone.

An experiment with no section of its own declares ``CheckSection(key, at_defaults=True)`` in its
``check`` (gpu/report/check.py: ``section_run``): the check runs it at its defaults (the
simulator's defaults in a quick check), admitted like any run, and records whether it
passed, its headline measures, its JSON (with its report's prose) and its summary.
"""

from __future__ import annotations

from collections.abc import Callable

from gpu.catalog.base import checked_measures
from gpu.catalog.checking import CheckContext, Section
from gpu.catalog.registry import get
from gpu.catalog.render import summary, to_json
from gpu.core.backend import BACKEND
from gpu.service.admission import admit


def section(key: str) -> Callable[[CheckContext], Section]:
    """The check section of experiment ``key``: one run at its defaults."""

    def run_section(ctx: CheckContext) -> Section:
        experiment = get(key)
        params = experiment.parse({}, simulated=ctx.quick or BACKEND.simulated)
        admit(experiment, params)
        ctx.say(f"{experiment.title}: {params}")
        result = experiment.execute(params, ctx.say)
        passed = experiment.passed(result)
        data = {
            "params": params,
            "passed": passed,
            "measures": checked_measures(experiment, result),
            "run": to_json(result),
        }
        markdown = f"{'PASS' if passed else 'FAIL'}: {experiment.summary}\n\n```\n{summary(result)}\n```"
        return Section(key, f"{experiment.title}: {experiment.summary}", passed, data, markdown)

    run_section.__name__ = f"{key.replace('-', '_')}_section"
    return run_section


__all__ = ["section"]
