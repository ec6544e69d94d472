"""What a check section is given and what it returns (``python -m gpu check``, gpu/report/check.py).

Each experiment's ``check.py`` writes sections against this contract and registers each under the key its
declaration gives the section (``@runs_section("scaling")``: the declaration, part of the engine, cannot import
its folder's ``check.py``, which imports the engine); the report that runs them, rewrites check.json and check.md
after each and judges the whole stands above, in gpu/report/check.py, which imports every folder's ``check.py``
(``registry.faces``). Kept here, beside the declarations, so an experiment's folder needs nothing from the report
layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

ARTICLE_N = 10_000_000


@dataclass
class CheckContext:
    """What every section may use: scale, size limit, and a progress printer."""

    quick: bool
    max_n: int
    say: Callable[[str], None]
    sections: list = field(default_factory=list)  # those finished so far (the methodology section reads them)
    telemetry: object = None  # a gpu.core.telemetry.TelemetryMonitor over the whole check
    # the vector-add kernel's compile (or load from Numba's disk cache), timed before any
    # section runs it: the breakdown's own compile_vector_add() finds it already compiled
    first_compile_s: float | None = None
    # the running section's budget in seconds, from a verification plan (gpu/report/plan.py); None: unbudgeted
    budget_s: float | None = None

    @property
    def breakdown_n(self) -> int:
        return min(ARTICLE_N, self.max_n) if not self.quick else min(4096, self.max_n)


@dataclass(frozen=True)
class Section:
    """One part of the report: pass/fail, JSON-ready data and a markdown summary."""

    key: str
    title: str
    passed: bool
    data: dict
    markdown: str
    duration_s: float = 0.0
    budget_s: float | None = None  # what a verification plan allowed it (check.json: the section's "budget_s")


SectionRun = Callable[[CheckContext], Section]
_RUNS: dict[str, SectionRun] = {}  # section key -> the function that runs it, as the check faces register them


def runs_section(key: str) -> Callable[[SectionRun], SectionRun]:
    """Decorator: the function runs the ``gpu check`` section declared under ``key`` (a ``CheckSection`` of an
    experiment's declaration whose ``run`` it leaves out). A second function for one key is refused."""

    def register(run: SectionRun) -> SectionRun:
        known = _RUNS.get(key)
        if known is not None and (known.__module__, known.__qualname__) != (run.__module__, run.__qualname__):
            raise ValueError(f"check section {key!r} is run by {known.__module__}.{known.__qualname__} already")
        _RUNS[key] = run
        return run

    return register


def registered_run(key: str) -> SectionRun | None:
    """The function a check face registered for section ``key``, if any (import the faces first)."""
    return _RUNS.get(key)


__all__ = ["ARTICLE_N", "CheckContext", "Section", "SectionRun", "registered_run", "runs_section"]
