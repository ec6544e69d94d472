"""``python -m gpu check``: the validation run for a real GPU (also runs, scaled down,
in the simulator). Each section is a function of a ``CheckContext`` returning a
``Section``; a section that raises is recorded as failed and the run goes on. The
report is rewritten after every section, so a run cut short keeps what it found."""

from __future__ import annotations

import json
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable


from gpu.backend import BACKEND
from gpu.device import device_info, host_info, library_versions
from gpu.limits import SIMULATOR_MAX_N, max_vector_n
from gpu.timing import RepeatPolicy, format_factor, format_seconds

AWKWARD_SIZES = (1, 31, 32, 33, 255, 256, 257, 1_000_003, 10_000_000)
CHECK_BLOCK_SIZES = (32, 128, 256, 1024)
ARTICLE_N = 10_000_000


@dataclass
class CheckContext:
    """What every section may use: scale, size limit, and a progress printer."""

    quick: bool
    max_n: int
    say: Callable[[str], None]

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


@dataclass
class CheckReport:
    started_at: str
    quick: bool
    sections: list[Section] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.sections)

    def to_dict(self) -> dict:
        return {
            "started_at": self.started_at,
            "backend": BACKEND.kind,
            "quick": self.quick,
            "passed": self.passed,
            "device": device_info().to_dict(),
            "host": host_info().to_dict(),
            "versions": library_versions(),
            "sections": {
                s.key: {"title": s.title, "passed": s.passed, "duration_s": s.duration_s, **s.data}
                for s in self.sections
            },
        }

    def markdown(self) -> str:
        dev = device_info()
        versions = ", ".join(f"{k} {v}" for k, v in library_versions().items() if v)
        lines = [
            "# Kernel Lab GPU check",
            "",
            f"- started: {self.started_at} ({'quick' if self.quick else 'full'} run)",
            f"- backend: {BACKEND.label}; device: {dev.name}"
            + (f", compute capability {dev.compute_capability}, {dev.multiprocessors} SMs" if dev.compute_capability else ""),
            f"- driver: {dev.driver_version}, runtime: {dev.runtime_version}" if dev.driver_version else "- driver: none (simulator)",
            f"- host: {host_info().cpu}, {host_info().logical_cores} logical cores",
            f"- versions: {versions}",
            f"- result: **{'PASS' if self.passed else 'FAIL'}**",
        ]
        if BACKEND.simulated:
            lines.append("- **simulated: these timings are not GPU performance**")
        for s in self.sections:
            lines += ["", f"## {s.title} — {'pass' if s.passed else 'FAIL'} ({s.duration_s:.1f} s)", "", s.markdown]
        return "\n".join(lines) + "\n"

    def write(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "check.json").write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        (out_dir / "check.md").write_text(self.markdown())


# --- sections ------------------------------------------------------------------------


def correctness_section(ctx: CheckContext) -> Section:
    """The kernel against NumPy, bit for bit, at awkward sizes and block sizes."""
    from gpu.vector_add import check_agreement, gpu_vector_add, make_inputs

    rows, skipped = [], []
    for n in AWKWARD_SIZES:
        if n > ctx.max_n or (ctx.quick and n > 4096):
            skipped.append(n)
            continue
        a, b = make_inputs(n, seed=n)
        reference = a + b
        for tpb in CHECK_BLOCK_SIZES:
            ctx.say(f"correctness: N={n:,}, {tpb} threads per block")
            agreement = check_agreement("gpu", gpu_vector_add(a, b, tpb), reference)
            rows.append({"n": n, "threads_per_block": tpb, **agreement.to_dict()})
    passed = bool(rows) and all(r["passed"] for r in rows)
    failures = [r for r in rows if not r["passed"]]
    md = [
        f"{len(rows)} launches ({len(rows) - len(failures)} bit-identical to NumPy) over sizes "
        f"{', '.join(f'{n:,}' for n in AWKWARD_SIZES if n not in skipped)} "
        f"× block sizes {', '.join(map(str, CHECK_BLOCK_SIZES))}."
    ]
    if skipped:
        md.append(f"Skipped sizes (over this backend's limit of {ctx.max_n:,}): {', '.join(f'{n:,}' for n in skipped)}.")
    for r in failures:
        md.append(f"- FAIL N={r['n']}, {r['threads_per_block']} threads: {r['mismatches']} mismatches, max |diff| {r['max_abs_diff']:g}")
    return Section("correctness", "Correctness against NumPy", passed, {"launches": rows, "skipped_sizes": skipped}, "\n".join(md))


def breakdown_section(ctx: CheckContext) -> Section:
    """The careful breakdown at the article's N (scaled down when quick)."""
    from gpu.vector_add import run_vector_add

    n = ctx.breakdown_n
    ctx.say(f"breakdown at N={n:,}")
    policy = RepeatPolicy.count(3 if ctx.quick else 20)
    run = run_vector_add(n, 256, policy, python_budget_s=2.0 if ctx.quick else 15.0, max_n=ctx.max_n)
    md = [
        f"N = {n:,} float32, 256 threads per block, {policy.describe()}; medians.",
        "",
        "| measure | median | min | max | samples |",
        "|---|---|---|---|---|",
        f"| kernel compile (once) | {format_seconds(run.compile_s)} | | | 1 |",
    ]
    for phase, stats in run.gpu.items():
        md.append(f"| GPU {phase} | {format_seconds(stats.median_s)} | {format_seconds(stats.min_s)} | {format_seconds(stats.max_s)} | {stats.n_samples} |")
    for name, t in run.cpu.items():
        if t.stats is None:
            md.append(f"| CPU {name} | skipped: {t.skipped} | | | 0 |")
        else:
            md.append(f"| CPU {name} | {format_seconds(t.stats.median_s)} | {format_seconds(t.stats.min_s)} | {format_seconds(t.stats.max_s)} | {t.stats.n_samples} |")
    md += ["", f"Kernel effective bandwidth: {run.kernel_bandwidth_gbps:,.4g} GB/s (12 bytes per element)."]
    for s in run.speedups:
        if s.baseline in ("python", "numpy"):
            md.append(f"- GPU {s.gpu_measure} vs {s.baseline}: {format_factor(s.factor)}{' (estimated baseline)' if s.estimated else ''}")
    md.append(f"- agreement: {'all bit-identical' if run.agree else 'MISMATCH'}")
    return Section("breakdown", f"Vector add breakdown at N = {n:,}", run.agree, {"run": run.to_dict()}, "\n".join(md))


def article_section(ctx: CheckContext) -> Section:
    """The article's own method and printout, for comparison."""
    from gpu.vector_add import run_article_method

    n = ctx.breakdown_n
    ctx.say(f"the article's method at N={n:,}")
    article = run_article_method(n, 256, python_budget_s=2.0 if ctx.quick else 30.0, max_n=ctx.max_n)
    md = ["```", *article.lines(), "```"]
    return Section("article", "As in the article", article.results_match, {"article": article.to_dict()}, "\n".join(md))


SECTIONS: list[Callable[[CheckContext], Section]] = [correctness_section, breakdown_section, article_section]


def run_check(
    out_dir: str | Path | None = None,
    *,
    quick: bool | None = None,
    sections: list[Callable[[CheckContext], Section]] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> CheckReport:
    """Run every section; write check.json and check.md into ``out_dir`` after each.

    ``quick`` (default: True in the simulator) keeps sizes small.
    """
    quick = BACKEND.simulated if quick is None else quick
    ctx = CheckContext(quick=quick, max_n=min(max_vector_n(), SIMULATOR_MAX_N) if quick else max_vector_n(), say=on_progress or (lambda _m: None))
    report = CheckReport(started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), quick=quick)
    out = Path(out_dir) if out_dir is not None else None
    for section_fn in sections or SECTIONS:
        start = time.perf_counter()
        try:
            section = section_fn(ctx)
        except Exception as exc:  # record and go on: one broken section must not hide the rest
            name = section_fn.__name__.removesuffix("_section")
            section = Section(name, name, False, {"error": repr(exc)}, f"error: `{exc!r}`\n\n```\n{traceback.format_exc()}```")
        report.sections.append(Section(**{**section.__dict__, "duration_s": time.perf_counter() - start}))
        if out is not None:
            report.write(out)
    return report


__all__ = ["CheckContext", "CheckReport", "SECTIONS", "Section", "run_check"]
