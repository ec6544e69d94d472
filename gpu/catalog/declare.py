"""The kernel catalog: every kernel declared once on top of the steps engine.

``declare(spec, ...)`` turns a ``KernelSpec`` into an ``Experiment`` (so each kernel gets
its CLI subcommand, page form, admission, History row and ``gpu check`` section from
one declaration). ``step_sources`` gives each step's source with what changed from the
previous step marked; ``check_kernel`` is the ``gpu check`` section of one kernel,
including the targets a real GPU is measured against.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from gpu.catalog.base import CheckSection, Experiment, PageLink, Param, PerBackend, Progress
from gpu.catalog.checking import CheckContext, Section, SectionRun
from gpu.catalog.estimate import catalog_plan
from gpu.catalog.registry import register
from gpu.catalog.step_result import KernelRun
from gpu.catalog.steps import DEFAULT_CPU_BUDGET_S, KernelSpec, run_kernel
from gpu.core import series
from gpu.core.backend import BACKEND
from gpu.core.limits import (
    InputError,
    check_n,
    check_repeats,
    max_vector_n,
    parse_seconds,
    parse_size,
)
from gpu.core.timing import RepeatPolicy, format_factor
from gpu.sim import pyast

# The catalog's page: every kernel declared with ``declare`` links to it, and the catalog's
# kernels are the experiments on it (``kernel_keys``), in their declared order.
PAGE = PageLink("Kernels", ":material/view_timeline:", 50,
                "the kernels after vector add, each from naive to near the hardware, checked and timed side by side",
                "pages/7_Kernels.py")
# Admission counts work in element-passes (one thread moving one element once). A
# multiply-add-heavy kernel is charged 1 element-pass per 64 FLOPs: an H200 does about
# 67 TFLOP/s of FP32 while moving about 1.2 T float32/s, so ~56 FLOPs cost what moving one
# float costs; 64 rounds that up.
FLOPS_PER_ELEMENT_PASS = 64


# --- parameters shared by the catalog ----------------------------------------------


def policy(repeats: int) -> RepeatPolicy:
    """``repeats`` timed runs after one warm-up; no warm-up in the simulator, which has no
    compiler, caches or clocks to warm up and costs about 0.1 ms per simulated thread."""
    return RepeatPolicy.count(repeats, warmup=0 if BACKEND.simulated else 1)


def parse_count(value: Any, name: str = "N") -> int:
    """An element count the device runs at: ``gpu.core.limits.check_n`` (one notion of a device N)."""
    return check_n(value, name=name)


def parse_side(value: Any, name: str = "N") -> int:
    """The side of an N × N matrix whose N² elements fit free memory now (and the simulator's cap)."""
    n = parse_size(value, name)
    limit = max_vector_n()
    if n * n > limit:
        side = int(limit**0.5)
        raise InputError(
            f"{name} = {n:,} is too large: an N × N matrix may have at most {limit:,} elements here, so N ≤ {side:,}."
        )
    return n


def _cpu_parser(spec: KernelSpec) -> Callable[[Any], tuple[str, ...]]:
    def parse(value) -> tuple[str, ...]:
        names = [p.strip() for p in value.split(",")] if isinstance(value, str) else [str(v) for v in value]
        names = [n for n in dict.fromkeys(names) if n]
        for name in names:
            spec.cpu_impl(name)  # InputError naming the choices
        return tuple(names)

    return parse


def declare(
    spec: KernelSpec,
    summary: str,
    size: Param,
    extra: Sequence[Param] = (),
    repeats: PerBackend = PerBackend(10, 3),  # at least 3 everywhere: no default figure is marked n<3
    elements: Callable[[dict], int] | None = None,
    *,
    order: int,
) -> Experiment:
    """Register ``spec`` as an experiment: size, extra parameters, repeats, CPU choices, CPU budget.

    ``elements(params)`` is the problem's element count for admission (threads launched);
    ``order`` its place in the catalog (and the CLI).
    """
    cpu_keys = tuple(impl.key for impl in spec.cpu)
    labels = {impl.key: impl.label for impl in spec.cpu}
    count = elements or (lambda p: p["n"])
    # on a GPU each step runs twice per sample: end to end, then the kernel alone behind the
    # hold (its own series); the simulator has no hold, so once. + 1: the CPU implementations
    per_step = 1 if BACKEND.simulated else 2
    gpu_runs = per_step * len(spec.steps) + len(spec.libraries) + 1

    def run(params, progress: Progress) -> KernelRun:
        problem = {k: v for k, v in params.items() if k not in ("repeats", "cpu", "cpu_budget_s")}
        return run_kernel(spec, problem, policy(params["repeats"]), params["cpu"],
                          cpu_budget_s=params["cpu_budget_s"], on_progress=progress)

    def work(params) -> int:
        units = max(count(params), spec.flops(params) // FLOPS_PER_ELEMENT_PASS)
        return int(units * (params["repeats"] + policy(params["repeats"]).warmup) * gpu_runs)

    params = (
        size,
        *extra,
        Param("repeats", "Repeats", check_repeats, repeats,
              "Timed runs of each step, after one warm-up run on a GPU (none in the simulator).", widget="int"),
        Param("cpu", "CPU implementations", _cpu_parser(spec), cpu_keys,
              f"Comma-separated, from {','.join(cpu_keys)}.", widget="multiselect",
              options=cpu_keys, option_label=lambda key: labels[key]),
        Param("cpu_budget_s", "CPU budget (s)", lambda v: parse_seconds(v, "the CPU budget"), DEFAULT_CPU_BUDGET_S,
              "Seconds a slow CPU implementation may take per run before it is only estimated.", widget="float",
              flag="--cpu-budget", page=False),
    )
    names = {p.name for p in params}
    return register(Experiment(
        key=spec.key, title=spec.title, summary=summary, params=params, run=run, work=work,
        measures=measures, result_type=KernelRun, page=PAGE, order=order,
        history_columns=tuple(c for c in ("n", "threads_per_block", "repeats") if c in names),
        check=(CheckSection(spec.key, catalog_section(spec.key)),),
        samples=samples,
        plan=catalog_plan(spec, lambda p: p["repeats"] + policy(p["repeats"]).warmup),
    ))


def kernel_keys() -> tuple[str, ...]:
    """The catalog's kernels, in their declared order: the experiments on the catalog's page."""
    from gpu.catalog.registry import on_page

    return tuple(e.key for e in on_page(PAGE.script))


def kernel_module(key: str) -> ModuleType:
    """The module declaring catalog kernel ``key``: its folder's ``experiment`` (``SPEC``, ``EXPERIMENT``,
    ``targets``, ``check_problems``)."""
    import importlib

    return importlib.import_module(f"gpu.experiments.{key}.experiment")


def __getattr__(name: str):
    if name == "KERNELS":  # derived from the declarations on each use: no list to keep in step
        return kernel_keys()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def measures(run: KernelRun) -> dict[str, float]:
    """History's headline numbers: each implementation's seconds, and the best step's GB/s and GFLOP/s."""
    out = {f"{r.key}_s": r.seconds for r in run.results if r.measured and r.seconds is not None}
    best = run.best_step
    if best is not None and best.seconds is not None:
        out["best_step_s"] = best.seconds
        if (gbps := run.gbps(best)) is not None:
            out["best_step_gbps"] = gbps
        if run.flops and (gflops := run.gflops(best)) is not None:
            out["best_step_gflops"] = gflops
    return out


def samples(saved: Mapping[str, Any]) -> dict[str, list[float]]:
    """Where a saved catalog run keeps its samples (``Experiment.samples``, for History):
    "<implementation> · <phase>" -> seconds, e.g. "2 · shared memory · Kernel", "NumPy · CPU".
    ``kernel_timing`` holds the kernel phase's samples again (with their holds): read once."""
    out: dict[str, list[float]] = {}
    for impl in saved["implementations"].values():
        for phase, stats in (impl.get("phases") or {}).items():
            if isinstance(stats, Mapping) and stats.get("samples_s"):
                name = "CPU" if phase == "cpu" else (series.label(phase) if phase in series.SERIES else phase)
                out[f"{impl['label']} · {name}"] = list(stats["samples_s"])
    return out


# --- sources -----------------------------------------------------------------------


@dataclass(frozen=True)
class StepSource:
    """A step's kernel source (docstring removed: it is shown as prose) and its diff to the previous step.

    ``lines`` are (tag, text): " " unchanged, "+" new or changed, "-" removed from the previous step.
    """

    key: str
    label: str
    why: str  # the kernel's docstring: what changed and why
    source: str
    lines: tuple[tuple[str, str], ...]
    helpers: str  # device functions the kernel calls

    @property
    def changed(self) -> int:
        return sum(1 for tag, _ in self.lines if tag != " ")

    def as_diff(self) -> str:
        """The source with each line prefixed by its tag (render with language="diff")."""
        return "\n".join(f"{tag} {text}" for tag, text in self.lines)


def _python_function(kernel) -> Callable:
    return getattr(kernel, "py_func", None) or getattr(kernel, "fn", None) or kernel


def split_source(kernel) -> tuple[str, str]:
    """(docstring, source without the docstring) of a kernel or device function."""
    fn = _python_function(kernel)
    source = textwrap.dedent(inspect.getsource(fn))
    doc = inspect.getdoc(fn) or ""
    node = pyast.parse(source).body[0]
    body = node.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else []
    if doc and body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        lines = source.splitlines()
        del lines[body[0].lineno - 1:body[0].end_lineno]
        source = "\n".join(lines)
    return doc, source.rstrip() + "\n"


def step_sources(spec: KernelSpec) -> list[StepSource]:
    """Every step's source and what changed from the step before (the first step: all new)."""
    out: list[StepSource] = []
    previous: list[str] | None = None
    for step in spec.steps:
        why, source = split_source(step.kernel)
        lines = source.splitlines()
        head = next(i for i, line in enumerate(lines) if line.startswith("def ")) + 1
        body = lines[head:]  # compared without the decorator and def line: renaming is not a change
        if previous is None:
            tagged = [("+", line) for line in body]
        else:
            tagged = [(line[0], line[2:]) for line in difflib.ndiff(previous, body) if not line.startswith("? ")]
        later = "".join(f"# then, on the same stream:\n{split_source(p.kernel)[1]}\n" for p in step.then)
        helpers = later + "\n".join(split_source(h)[1] for h in step.helpers)
        out.append(
            StepSource(step.key, step.label, why, source, (*((" ", line) for line in lines[:head]), *tagged), helpers)
        )
        previous = body
    return out


# --- gpu check ---------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One of the issue's targets for a real GPU: measured value, threshold, and whether it was met."""

    name: str
    measured: float | None
    threshold: float
    higher_is_better: bool = True
    unit: str = ""
    source: str = ""  # where the threshold comes from: a published figure, or why it is the lab's own

    @property
    def met(self) -> bool | None:
        if self.measured is None:
            return None
        return self.measured >= self.threshold if self.higher_is_better else self.measured <= self.threshold

    def to_dict(self) -> dict:
        return {"name": self.name, "measured": self.measured, "threshold": self.threshold,
                "higher_is_better": self.higher_is_better, "met": self.met,
                **({"source": self.source} if self.source else {})}

    def describe(self) -> str:
        sign = "≥" if self.higher_is_better else "≤"
        value = "not measured" if self.measured is None else f"{self.measured:.3g}{self.unit}"
        verdict = {True: "met", False: "NOT met", None: "not measurable here"}[self.met]
        source = f" [target: {self.source}]" if self.source else ""
        return f"{self.name}: {value} (target {sign} {self.threshold:g}{self.unit}) — {verdict}{source}"


def ratio(run: KernelRun, slower: str, faster: str) -> float | None:
    """How many times longer ``slower`` took than ``faster`` (None unless both were measured)."""
    a, b = run.get(slower), run.get(faster)
    if not (a.measured and b.measured) or a.seconds is None or not b.seconds:
        return None
    return a.seconds / b.seconds


def run_markdown(run: KernelRun) -> list[str]:
    """A markdown table of one run: one row per implementation."""
    md = [
        f"{run.title}, {run.size}: {run.bytes_moved:,} bytes, {run.flops:,} FLOPs (intensity {run.intensity:.3g} "
        "FLOP/byte); "
        f"{run.policy.describe()}; agreement {run.agreement_mode}.",
        "",
        "| implementation | launch | time (median) | n | hold | GB/s | GFLOP/s | % of peak | × best library's time | "
        "agreement |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    sim = " (simulated)" if run.backend == "simulator" else ""
    for row in run.summary_rows():
        if row["seconds"] is None:
            md.append(f"| {row['label']} | {row['launch'] or '—'} | {row['skipped']} | | | | | | | |")
            continue
        cell = lambda v, f: "—" if v is None else format(v, f)  # noqa: E731
        gpu_sim = sim if row["kind"] != "cpu" else ""  # the CPU rows are real CPU timings
        time_s = (
            "estimated " if row["estimated"] else ""
        ) + f"{row['seconds'] * 1e3:.4g} ms{row['marks'].replace('*', chr(92) + '*')}{gpu_sim}"
        hold = (
            "—"
            if row["kind"] == "cpu" or row["held"] is None
            else (
                ("held" if row["held"] else "none: launch included")
                + (f", {row['retries']} retried" if row["retries"] else "")
            )
        )
        notes = (" · ".join(x for x in (row["agreement"], row["note"]) if x) or "—").replace(
            "|", "\\|"
        )  # |error| in a table cell
        md.append(
            f"| {row['label']} | {row['launch'] or '—'} | {time_s} | {row['samples']} | {hold} | "
            f"{cell(row['gbps'], ',.4g')} | "
            f"{cell(row['gflops'], ',.4g')} | {cell(row['fraction_of_peak'], '.1%')} | "
            f"{'—' if row['vs_best_library'] is None else format_factor(row['vs_best_library'])} | {notes} |"
        )
    from gpu.core.telemetry import describe

    legend = [m.replace("*", "\\*", 1) if m.startswith("*") else m for m in run.marks_legend()]
    return (md + [f"- note: {n}" for n in run.notes] + [f"- warning: {w}" for w in run.warnings]
            + [f"- {m}" for m in legend] + [f"- {describe(run.telemetry)}"])


# Of a budgeted section's seconds: the share its GPU series may spend sampling past their minimum, and the CPU rows'.
GPU_SHARE, CPU_SHARE = 0.5, 0.15


def budgeted_policy(spec, problems: int, budget_s: float, repeats: int) -> tuple[RepeatPolicy, float]:
    """(the GPU series' policy, the CPU budget per implementation) for a check section of ``budget_s`` seconds.

    Every GPU series samples until its spread is stable (2%), as nvbench stops on noise, or its share of the
    budget is spent, after at least 3 samples and at most ``repeats``; each CPU row gets an equal part of
    ``CPU_SHARE`` (at least 3 samples, then stop: ``time_cpu``).
    """
    series = problems * (2 * len(spec.steps) + len(spec.libraries))  # end to end and kernel alone per step
    policy = RepeatPolicy.until_stable(0.02, max(GPU_SHARE * budget_s / max(series, 1), 1e-3),
                                       max_repeat=max(repeats, 3), warmup=0 if BACKEND.simulated else 1)
    return policy, CPU_SHARE * budget_s / max(problems * len(spec.cpu), 1)


def catalog_section(key: str) -> SectionRun:
    """The ``gpu check`` section of catalog kernel ``key`` (``check_kernel``), as its declaration names it."""

    def section(ctx: CheckContext) -> Section:
        title, passed, data, markdown = check_kernel(key, ctx.quick, ctx.say, ctx.budget_s)
        return Section(key, title, passed, data, markdown)

    section.__name__ = f"{key}_section"
    return section


def check_kernel(
    key: str, quick: bool, say: Callable[[str], None], budget_s: float | None = None
) -> tuple[str, bool, dict, str]:
    """The ``gpu check`` section of catalog kernel ``key``: (title, passed, data, markdown).

    Runs the kernel's check problems (tiny in quick mode and the simulator, the issue's
    large sizes otherwise), passes when every implementation agrees, and reports each
    target as met or not without failing the check on it. With ``budget_s`` (a verification
    plan's, full runs only) sampling stops when the spread is stable or the budget's share
    is spent (``budgeted_policy``), and the CPU rows are held to their part of it.
    """
    module = kernel_module(key)
    experiment = module.EXPERIMENT
    problems = module.check_problems(quick)
    runs = []
    for raw in problems:
        params = experiment.parse(raw, BACKEND.simulated)
        say(f"{experiment.title}: {params}")
        if budget_s is None or quick:
            runs.append(experiment.execute(params, say))
            continue
        sampling, cpu_budget_s = budgeted_policy(module.SPEC, len(problems), budget_s, params["repeats"])
        problem = {k: v for k, v in params.items() if k not in ("repeats", "cpu", "cpu_budget_s")}
        runs.append(run_kernel(module.SPEC, problem, sampling, params["cpu"],
                               cpu_budget_s=min(cpu_budget_s, params["cpu_budget_s"]), on_progress=Progress.of(say)))
    targets = module.targets(runs)
    md: list[str] = []
    for run in runs:
        md += run_markdown(run) + [""]
    md += ["Targets (best step, same run):", *[f"- {t.describe()}" for t in targets]]
    data = {"runs": [r.to_dict() for r in runs], "targets": [t.to_dict() for t in targets]}
    return f"{experiment.title}: {', '.join(r.size for r in runs)}", all(r.agree for r in runs), data, "\n".join(md)


def load_kernels() -> list[Experiment]:
    """Every catalog kernel's experiment (importing the modules registers them)."""
    from gpu.catalog.registry import get

    return [get(key) for key in kernel_keys()]


__all__ = [
    "FLOPS_PER_ELEMENT_PASS",
    "KERNELS",  # noqa: F822  (served by the module's __getattr__)
    "PAGE",
    "StepSource",
    "Target",
    "check_kernel",
    "declare",
    "kernel_keys",
    "kernel_module",
    "load_kernels",
    "measures",
    "parse_count",
    "parse_side",
    "ratio",
    "run_markdown",
    "samples",
    "step_sources",
]
