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

from gpu.core.backend import BACKEND
from gpu.core.device import device_info, host_info, library_versions
from gpu.core.limits import SIMULATOR_MAX_N, max_vector_n
from gpu.core.provenance import SIMULATOR_WARNING as SIMULATED_WARNING
from gpu.core.timing import RepeatPolicy, format_factor, format_seconds, utc_timestamp
from gpu.experiments.registry import experiments

AWKWARD_SIZES = (1, 31, 32, 33, 255, 256, 257, 1_000_003, 10_000_000)
CHECK_BLOCK_SIZES = (32, 128, 256, 1024)
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
    telemetry: dict | None = None

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.sections)

    def to_dict(self) -> dict:
        from gpu.core.provenance import METHODOLOGY_KEY, METHODOLOGY_VERSION

        return {
            METHODOLOGY_KEY: METHODOLOGY_VERSION,  # which rules of "How it measures" these figures follow
            "started_at": self.started_at,
            "backend": BACKEND.kind,
            "quick": self.quick,
            "passed": self.passed,
            "device": device_info().to_dict(),
            "host": host_info().to_dict(),
            "versions": library_versions(),
            "telemetry": self.telemetry,
            "sections": {
                s.key: {"title": s.title, "passed": s.passed, "duration_s": s.duration_s, **s.data}
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
            f"- result: **{'PASS' if self.passed else 'FAIL'}**",
        ]
        if BACKEND.simulated:
            lines.append("- **simulated: these timings are not GPU performance**")
        if self.telemetry is not None:
            from gpu.core.telemetry import describe as describe_telemetry

            lines.append(f"- {describe_telemetry(self.telemetry)}")
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
    from gpu.core.agreement import check_bits
    from gpu.core.arrays import vector_inputs
    from gpu.kernels.vector_add_timing import gpu_vector_add

    rows, skipped = [], []
    for n in AWKWARD_SIZES:
        if n > ctx.max_n or (ctx.quick and n > 4096):
            skipped.append(n)
            continue
        a, b = vector_inputs(n, seed=n)
        reference = a + b
        for tpb in CHECK_BLOCK_SIZES:
            ctx.say(f"correctness: N={n:,}, {tpb} threads per block")
            agreement = check_bits("gpu", gpu_vector_add(a, b, tpb), reference)
            rows.append({"n": n, "threads_per_block": tpb, **agreement.to_dict()})
    passed = bool(rows) and all(r["passed"] for r in rows)
    failures = [r for r in rows if not r["passed"]]
    md = [
        f"{len(rows)} launches ({len(rows) - len(failures)} bit-identical to NumPy) over sizes "
        f"{', '.join(f'{n:,}' for n in AWKWARD_SIZES if n not in skipped)} "
        f"× block sizes {', '.join(map(str, CHECK_BLOCK_SIZES))}."
    ]
    if skipped:
        md.append(
            f"Skipped sizes (over this backend's limit of {ctx.max_n:,}): {', '.join(f'{n:,}' for n in skipped)}."
        )
    for r in failures:
        md.append(
            f"- FAIL N={r['n']}, {r['threads_per_block']} threads: {r['mismatches']} mismatches, max |diff| "
            f"{r['max_abs_diff']:g}"
        )
    return Section(
        "correctness", "Correctness against NumPy", passed, {"launches": rows, "skipped_sizes": skipped}, "\n".join(md)
    )


def breakdown_section(ctx: CheckContext) -> Section:
    """The careful breakdown at the article's N (scaled down when quick)."""
    from gpu.experiments.vector_add.experiment import run_vector_add

    n = ctx.breakdown_n
    ctx.say(f"breakdown at N={n:,}")
    policy = RepeatPolicy.count(3 if ctx.quick else 20)
    run = run_vector_add(n, 256, policy, python_budget_s=2.0 if ctx.quick else 15.0, max_n=ctx.max_n)
    first_compile_s = ctx.first_compile_s if ctx.first_compile_s is not None else run.compile_s
    md = [
        f"N = {n:,} float32, 256 threads per block, {policy.describe()}; medians.",
        "",
        "| measure | median | min | max | samples |",
        "|---|---|---|---|---|",
        # the simulator compiles nothing: "0 ns" would read as a measured compile
        f"| kernel compile (or cache load), first in this check | "
        f"{'n/a (simulator)' if BACKEND.simulated else format_seconds(first_compile_s)} | | | "
        f"{'—' if BACKEND.simulated else 1} |",
    ]
    for phase, stats in run.gpu.items():
        flag = " (fewer than 3: spread unknown)" if stats.few_samples else ""
        retried = f", {stats.retries} retried" if stats.retries else ""
        md.append(
            f"| GPU {phase} | {format_seconds(stats.median_s)} | {format_seconds(stats.min_s)} | "
            f"{format_seconds(stats.max_s)} | {stats.n_samples}{flag}{retried} |"
        )
    for name, t in run.cpu.items():
        if t.stats is None:
            md.append(f"| CPU {name} | skipped: {t.skipped} | | | 0 |")
        else:
            flag = " (fewer than 3: spread unknown)" if t.stats.few_samples else ""
            md.append(
                f"| CPU {name} | {format_seconds(t.stats.median_s)} | {format_seconds(t.stats.min_s)} | "
                f"{format_seconds(t.stats.max_s)} | {t.stats.n_samples}{flag} |"
            )
    sim = " (simulated: not GPU performance)" if BACKEND.simulated else ""
    md += ["", f"Kernel effective bandwidth: {run.kernel_bandwidth_gbps:,.4g} GB/s (12 bytes per element){sim}."]
    for s in run.speedups:
        if s.baseline in ("python", "numpy"):
            md.append(
                f"- GPU {s.gpu_measure} vs {s.baseline}: "
                f"{format_factor(s.factor)}{' (estimated baseline)' if s.estimated else ''}{sim}"
            )
    md.append(f"- agreement: {'all bit-identical' if run.agree else 'MISMATCH'}")
    return Section("breakdown", f"Vector add breakdown at N = {n:,}", run.agree, {"run": run.to_dict()}, "\n".join(md))


def article_section(ctx: CheckContext) -> Section:
    """The article's own method and printout, for comparison."""
    from gpu.experiments.vector_add.article import run_article_method

    n = ctx.breakdown_n
    ctx.say(f"the article's method at N={n:,}")
    article = run_article_method(n, 256, python_budget_s=2.0 if ctx.quick else 30.0, max_n=ctx.max_n)
    md = ["```", *article.lines(), "```"]
    return Section("article", "As in the article", article.results_match, {"article": article.to_dict()}, "\n".join(md))


def scaling_section(ctx: CheckContext) -> Section:
    """Size sweep with crossovers, bandwidth against the physical limits, and CuPy/PyTorch."""
    from gpu.experiments.scaling.check import check_sweep

    passed, data, markdown = check_sweep(ctx.quick, ctx.max_n, ctx.say)
    return Section("scaling", "Scaling: sweep, crossovers, bandwidth and references", passed, data, markdown)


LAUNCH_SWEEP_N = 2**26  # 805 MB moved per kernel: well past every cache, so memory bound
INDEXING_CASES = ((1, 32), (31, 32), (33, 32), (257, 32), (257, 100), (257, 256), (1000, 1024))


def launch_section(ctx: CheckContext) -> Section:
    """Block-size sweep at a large N, the indexing probe at awkward sizes, and the inspector."""
    from gpu.core.inspect import inspect_vector_add
    from gpu.experiments.launch.experiment import run_launch_sweep
    from gpu.experiments.launch.indexing import run_indexing
    from gpu.experiments.launch.report import explanation
    from gpu.report.render import to_json

    # the probe against NumPy's index arithmetic, one thread per element and grid-stride
    cases = INDEXING_CASES[:4] if ctx.quick else INDEXING_CASES
    probes = []
    for n, tpb in cases:
        ctx.say(f"indexing probe: N={n}, {tpb} threads per block")
        probes.append(run_indexing(n, tpb))
    for n, tpb, blocks in ((1000, 64, 3), (100, 32, 8)):
        ctx.say(f"grid-stride probe: N={n}, {blocks} blocks x {tpb}")
        probes.append(run_indexing(n, tpb, blocks))
    probes_ok = all(p.probed and p.passed for p in probes)

    # the sweep
    n = min(LAUNCH_SWEEP_N, ctx.max_n) if not ctx.quick else min(512, ctx.max_n)
    if ctx.quick:
        sweep = run_launch_sweep(
            n, (32, 256), grid_stride_multiples=(1,), policy=RepeatPolicy.count(2), max_n=ctx.max_n, on_progress=ctx.say
        )
    else:
        sweep = run_launch_sweep(
            n, extra_block_size=100, policy=RepeatPolicy.count(30), max_n=ctx.max_n, on_progress=ctx.say
        )

    # the inspector
    ctx.say("inspecting the compiled kernel")
    inspection = inspect_vector_add()
    needed = {"bounds check", "load", "add", "store"}
    inspector_ok = not inspection.available or (
        inspection.ptx_found and (inspection.regs_per_thread or 0) > 0 and needed <= set(inspection.roles_found)
    )
    sizes = ", ".join(
        f"N={p.summary.n}/{p.summary.threads_per_block}" + ("gs" if p.summary.grid_stride else "") for p in probes
    )

    md = [
        f"Indexing probe: {sum(p.passed for p in probes)} of {len(probes)} launches recorded exactly the NumPy index "
        "arithmetic (sizes "
        f"{sizes}); "
        f"grid-stride coverage exactly once: {all(p.coverage_ok is not False for p in probes)}.",
        "",
        f"Block-size sweep at N = {sweep.n:,} float32 ({sweep.bytes_moved / 1e6:,.0f} MB moved per kernel), "
        f"{sweep.policy.describe()}; kernel alone (CUDA events behind a stream-holding kernel).",
        "",
        "| configuration | blocks | median | min | max | n | GB/s (median) | occupancy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in sweep.configs:
        occ = f"{c.occupancy.fraction:.0%} ({c.occupancy.source})" if c.occupancy else "—"
        best = " **best**" if c.label == sweep.best.label else ""
        marks = ("*" if c.kernel.few_samples else "") + ("°" if sweep.l2_resident else "")
        md.append(
            f"| {c.label}{best} | {c.blocks:,} | {format_seconds(c.kernel.median_s)}{marks} | "
            f"{format_seconds(c.kernel.min_s)} | "
            f"{format_seconds(c.kernel.max_s)} | {c.kernel.n_samples} | {sweep.bandwidth_gbps(c.kernel.median_s):,.4g} "
            f"| {occ} |"
        )
    if any(c.kernel.few_samples for c in sweep.configs):
        md += ["", "\\* fewer than 3 samples: spread unknown."]
    if sweep.l2_resident:
        md += ["", f"° a, b and c fit in the {sweep.l2_bytes:,}-byte L2: times may be served partly from cache."]
    md += ["", explanation(sweep), "", f"- agreement: {'all bit-identical' if sweep.agree else 'MISMATCH'}"]
    if inspection.available:
        md += [
            f"- inspector: {inspection.regs_per_thread} registers per thread, {inspection.local_mem_per_thread_bytes} "
            "B local "
            f"memory per thread, {inspection.shared_mem_per_block_bytes} B shared per block, max "
            f"{inspection.max_threads_per_block} "
            f"threads per block; PTX {'found' if inspection.ptx_found else 'MISSING'} "
            f"({len(inspection.ptx.splitlines()) if inspection.ptx else 0} lines), "
            f"roles pointed out: {', '.join(inspection.roles_found) or 'none'}"
            + (f"; not found: {', '.join(inspection.roles_missing)}" if inspection.roles_missing else "")
            + f"; SASS: {'yes' if inspection.sass else inspection.sass_note}",
            "",
            "```",
            *[f"{h.line_no:>4}  {h.text:<48} // {h.role}: {h.note}" for h in inspection.highlights if h.code == "PTX"],
            "```",
        ]
    else:
        md.append(f"- inspector: {inspection.reason}")
    data = {
        "probes": [
            {k: v for k, v in p.to_dict().items() if k not in ("records", "handled_by", "device")} for p in probes
        ],
        "sweep": to_json(sweep),
        "inspector": {k: v for k, v in inspection.to_dict().items() if k not in ("sass", "device")},
    }
    passed = probes_ok and sweep.agree and inspector_ok
    return Section("launch", f"Launch configuration at N = {sweep.n:,}", passed, data, "\n".join(md))

def transfers_section(ctx: CheckContext) -> Section:
    """Copy bandwidth curves against a library's pinned copy, and the vector-add strategies."""
    from gpu.experiments.transfers.check import check_transfers

    passed, data, markdown = check_transfers(ctx.quick, ctx.max_n, ctx.say)
    return Section("transfers", "Transfers: host-link bandwidth and vector-add strategies", passed, data, markdown)


def catalog_section(key: str) -> Callable[[CheckContext], Section]:
    """The ``gpu check`` section of one catalog kernel (gpu/catalog/declare.py: ``check_kernel``)."""

    def section(ctx: CheckContext) -> Section:
        from gpu.catalog.declare import check_kernel

        title, passed, data, markdown = check_kernel(key, ctx.quick, ctx.say)
        return Section(key, title, passed, data, markdown)

    section.__name__ = f"{key}_section"
    return section



def methodology_section(ctx: CheckContext) -> Section:
    """Flushed vs warm L2, hold verification, launch overhead, telemetry, sample counts."""
    from gpu.report.methodology import methodology

    telemetry = ctx.telemetry.summary() if ctx.telemetry is not None else None
    passed, data, markdown = methodology(ctx.quick, ctx.max_n, ctx.say, ctx.sections, telemetry)
    return Section(
        "methodology", "Methodology: L2, stream hold, launch overhead, telemetry, samples", passed, data, markdown
    )


def declared_sections() -> list[Callable[[CheckContext], Section]]:
    """Every declaration's ``check`` sections, in the experiments' order, then the methodology (which reads them)."""
    return [
        _keyed(section.run.resolve(), section.key)
        for experiment in experiments()
        for section in experiment.check_sections()
    ] + [methodology_section]


def _keyed(section_fn: Callable[[CheckContext], Section], key: str) -> Callable[[CheckContext], Section]:
    """``section_fn`` marked with its declared key: a section that raises is written under it (and reads back)."""
    section_fn.section_key = key
    return section_fn


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
) -> CheckReport:
    """Run every section; write check.json and check.md into ``out_dir`` after each.

    ``quick`` (default: True in the simulator) keeps sizes small.
    """
    quick = BACKEND.simulated if quick is None else quick
    ctx = CheckContext(
        quick=quick,
        max_n=min(max_vector_n(), SIMULATOR_MAX_N) if quick else max_vector_n(),
        say=on_progress or (lambda _m: None),
    )
    report = CheckReport(started_at=utc_timestamp(), quick=quick)
    from gpu.core.telemetry import TelemetryMonitor

    ctx.telemetry = TelemetryMonitor().start()  # clocks and throttling over the whole check
    if not BACKEND.simulated:  # before any section launches it (see CheckContext.first_compile_s)
        from gpu.kernels.vector_add import compile_vector_add

        ctx.first_compile_s = compile_vector_add()
    ctx.sections = report.sections
    out = Path(out_dir) if out_dir is not None else None
    for section_fn in sections or declared_sections():
        start = time.perf_counter()
        try:
            section = section_fn(ctx)
        except Exception as exc:  # record and go on: one broken section must not hide the rest
            name = getattr(section_fn, "section_key", None) or section_fn.__name__.removesuffix("_section")
            section = Section(
                name, name, False, {"error": repr(exc)}, f"error: `{exc!r}`\n\n```\n{traceback.format_exc()}```"
            )
        report.sections.append(Section(**{**section.__dict__, "duration_s": time.perf_counter() - start}))
        if out is not None:
            report.write(out)
    report.telemetry = ctx.telemetry.stop()
    if out is not None:
        report.write(out)
    return report


__all__ = ["CheckContext", "CheckReport", "SECTIONS", "Section", "declared_sections", "run_check"]  # noqa: F822  (SECTIONS: __getattr__)
