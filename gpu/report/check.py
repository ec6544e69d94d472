"""``python -m gpu check``: the validation run for a real GPU (also runs, scaled down,
in the simulator). Each section is a function of a ``CheckContext`` returning a
``Section``; a section that raises is recorded as failed and the run goes on. The
report is rewritten after every section, so a run cut short keeps what it found."""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpu.catalog.base import CheckSection, Experiment
from gpu.catalog.checking import CheckContext, Section, SectionRun, registered_run
from gpu.catalog.registry import experiments, faces
from gpu.core.backend import BACKEND
from gpu.core.device import device_info, host_info, library_versions
from gpu.core.limits import SIMULATOR_MAX_N, max_vector_n
from gpu.core.provenance import SIMULATOR_WARNING as SIMULATED_WARNING
from gpu.core.telemetry import TelemetryMonitor
from gpu.core.timing import utc_timestamp
from gpu.report import declared_check


@dataclass
class CheckReport:
    started_at: str
    quick: bool
    sections: list[Section] = field(default_factory=list)
    telemetry: dict | None = None
    expected: int | None = None  # how many sections this run declared; None: unknown (a report built by hand)
    finished: bool = True  # False while the run is going (or was stopped): the files on disk are partial
    plan: str | None = None  # the verification plan that chose and budgeted the sections (gpu/report/plan.py)

    @property
    def passed(self) -> bool:
        """Every section passed, and the run got to its end: a check stopped half-way never passes."""
        return self.finished and all(s.passed for s in self.sections)

    def _result_line(self) -> str:
        if self.finished:
            return f"- result: **{'PASS' if self.passed else 'FAIL'}**"
        so_far = "every one passed so far" if all(s.passed for s in self.sections) else "a section FAILED"
        of = f" of {self.expected}" if self.expected else ""
        return (
            f"- result: **INCOMPLETE**: {len(self.sections)}{of} sections written ({so_far}); "
            "the run is still going or was stopped before its end"
        )

    def to_dict(self) -> dict:
        from gpu.core.provenance import METHODOLOGY_KEY, METHODOLOGY_VERSION

        return {
            METHODOLOGY_KEY: METHODOLOGY_VERSION,  # which rules of "How it measures" these figures follow
            "started_at": self.started_at,
            "backend": BACKEND.kind,
            "quick": self.quick,
            **({"plan": self.plan} if self.plan else {}),
            "passed": self.passed,
            "finished": self.finished,
            "device": device_info().to_dict(),
            "host": host_info().to_dict(),
            "versions": library_versions(),
            "telemetry": self.telemetry,
            "sections": {
                s.key: {"title": s.title, "passed": s.passed, "duration_s": s.duration_s,
                        **({"budget_s": s.budget_s} if s.budget_s is not None else {}), **s.data}
                for s in self.sections
            },
        }

    def markdown(self) -> str:
        dev = device_info()
        versions = ", ".join(f"{k} {v}" for k, v in library_versions().items() if v)
        from gpu.core.provenance import METHODOLOGY_VERSION

        lines = [
            *([f"**{SIMULATED_WARNING}**", ""] if BACKEND.simulated else []),
            "# Kernel Lab GPU check",
            "",
            f'- measurement rules: version {METHODOLOGY_VERSION} (README, "How it measures")',
            f"- started: {self.started_at} ({'quick' if self.quick else 'full'} run)",
            f"- backend: {BACKEND.label}; device: {dev.name}"
            + (
                f", compute capability {dev.compute_capability}, {dev.multiprocessors} SMs"
                if dev.compute_capability
                else ""
            ),
            f"- driver: {dev.driver_version}, runtime: {dev.runtime_version}"
            if dev.driver_version
            else "- driver: none (simulator)",
            f"- host: {host_info().cpu}, {host_info().logical_cores} logical cores",
            f"- versions: {versions}",
            self._result_line(),
        ]
        if BACKEND.simulated:
            lines.append("- **simulated: these timings are not GPU performance**")
        if self.telemetry is not None:
            from gpu.core.telemetry import describe as describe_telemetry

            lines.append(f"- {describe_telemetry(self.telemetry)}")
        for s in self.sections:
            budget = f" of its {s.budget_s:g} s" if s.budget_s is not None else ""
            over = " — OVER its budget" if s.budget_s is not None and s.duration_s > s.budget_s else ""
            lines += ["", f"## {s.title} — {'pass' if s.passed else 'FAIL'} ({s.duration_s:.1f} s{budget}{over})", "",
                      s.markdown]
        return "\n".join(lines) + "\n"

    def write(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "check.json").write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        (out_dir / "check.md").write_text(self.markdown())


# --- sections ------------------------------------------------------------------------


SECTION_KEY = "section_key"  # the attribute a declared section function carries its key in


def methodology_section(ctx: CheckContext) -> Section:
    """Flushed vs warm L2, hold verification, launch overhead, telemetry, sample counts."""
    from gpu.report.methodology import methodology

    telemetry = ctx.telemetry.summary() if isinstance(ctx.telemetry, TelemetryMonitor) else None
    passed, data, markdown = methodology(ctx.quick, ctx.max_n, ctx.say, ctx.sections, telemetry, ctx.budget_s)
    return Section(
        "methodology", "Methodology: L2, stream hold, launch overhead, telemetry, samples", passed, data, markdown
    )


def declared_sections() -> list[Callable[[CheckContext], Section]]:
    """Every declaration's ``check`` sections, in the experiments' order, then the methodology (which reads them)."""
    return [
        _keyed(section_run(experiment, section), section.key)
        for experiment in experiments()
        for section in experiment.check_sections()
    ] + [methodology_section]


def section_run(experiment: Experiment, section: CheckSection) -> SectionRun:
    """The function that runs ``section`` (``CheckSection`` says which); LookupError naming it when there is none."""
    if section.run is not None:
        return section.run
    if section.at_defaults:
        return declared_check.section(section.key)
    run = registered_run(section.key)
    if run is None:
        faces("check")  # each folder's check.py registers the sections it runs (checking.runs_section)
        run = registered_run(section.key)
    if run is None:
        raise LookupError(
            f"nothing runs the check section {section.key!r} of {experiment.key!r}: its folder's check.py registers "
            f"a function with @runs_section({section.key!r}) (gpu/catalog/checking.py), or the declaration names one"
        )
    return run


def _keyed(section_fn: Callable[[CheckContext], Section], key: str) -> Callable[[CheckContext], Section]:
    """``section_fn`` marked with its declared key: a section that raises is written under it (and reads back)."""
    setattr(section_fn, SECTION_KEY, key)  # a function attribute: read back by section_key()
    return section_fn


def section_key(section_fn: Callable[[CheckContext], Section]) -> str:
    """The key a section function writes under (its declared key, or its name less ``_section``)."""
    return getattr(section_fn, SECTION_KEY, None) or section_fn.__name__.removesuffix("_section")


def planned_sections(plan: str) -> tuple[list[Callable[[CheckContext], Section]], dict[str, float]]:
    """(the section functions of ``plan``, in its order; their budgets in seconds by key).

    Raises ValueError naming a planned section no experiment declares, and, for "verify", any declared one
    the plan leaves out (a verification that silently dropped a section would verify less than it claims)."""
    from gpu.report.plan import SECTIONS

    if plan not in SECTIONS:
        raise ValueError(f"unknown plan {plan!r}; choose from {', '.join(SECTIONS)} (gpu/report/plan.py)")
    planned = SECTIONS[plan]
    declared = {section_key(fn): fn for fn in declared_sections()}
    unknown = [key for key in planned if key not in declared]
    left_out = [key for key in declared if key not in planned] if plan == "verify" else []
    if unknown or left_out:
        raise ValueError(f"the plan {plan!r} and the declared check sections differ: planned but not declared: "
                         f"{unknown or 'none'}; declared but not planned: {left_out or 'none'}")
    return [declared[key] for key in planned], dict(planned)


def __getattr__(name: str):
    if name == "SECTIONS":  # derived on each use, so an experiment registered later has its section
        return declared_sections()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_check(
    out_dir: str | Path | None = None,
    *,
    quick: bool | None = None,
    sections: list[Callable[[CheckContext], Section]] | None = None,
    on_progress: Callable[[str], None] | None = None,
    plan: str | None = None,
) -> CheckReport:
    """Run every section; write check.json and check.md into ``out_dir`` after each.

    ``quick`` (default: True in the simulator) keeps sizes small. ``plan`` ("verify"): the
    sections in the plan's order, each given its budget (``CheckContext.budget_s``) and
    recorded with it.
    """
    quick = BACKEND.simulated if quick is None else quick
    ctx = CheckContext(
        quick=quick,
        max_n=min(max_vector_n(), SIMULATOR_MAX_N) if quick else max_vector_n(),
        say=on_progress or (lambda _m: None),
    )
    budgets: dict[str, float] = {}
    if plan is not None:
        chosen, budgets = planned_sections(plan)
    else:
        chosen = sections or declared_sections()
    report = CheckReport(started_at=utc_timestamp(), quick=quick, expected=len(chosen), finished=False, plan=plan)
    ctx.telemetry = TelemetryMonitor().start()  # clocks and throttling over the whole check
    if not BACKEND.simulated:  # before any section launches it (see CheckContext.first_compile_s)
        from gpu.kernels.vector_add import compile_vector_add

        ctx.first_compile_s = compile_vector_add()
    ctx.sections = report.sections
    out = Path(out_dir) if out_dir is not None else None
    for section_fn in chosen:
        start = time.perf_counter()
        ctx.budget_s = budgets.get(section_key(section_fn))
        try:
            section = section_fn(ctx)
        except Exception as exc:  # record and go on: one broken section must not hide the rest
            name = section_key(section_fn)
            section = Section(
                name, name, False, {"error": repr(exc)}, f"error: `{exc!r}`\n\n```\n{traceback.format_exc()}```"
            )
        report.sections.append(
            Section(**{**section.__dict__, "duration_s": time.perf_counter() - start, "budget_s": ctx.budget_s})
        )
        if out is not None:
            report.write(out)
    report.telemetry = ctx.telemetry.stop()
    report.finished = True
    if out is not None:
        report.write(out)
    return report


__all__ = [  # noqa: F822  (SECTIONS: __getattr__)
    "CheckContext", "CheckReport", "SECTIONS", "Section", "declared_sections", "planned_sections", "run_check",
    "section_key",
]
