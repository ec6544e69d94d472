"""Vector add's ``gpu check`` sections: correctness at awkward sizes, the careful breakdown at the
article's N, and the article's own method."""

from __future__ import annotations

from gpu.catalog.checking import CheckContext, Section, runs_section
from gpu.core.backend import BACKEND
from gpu.core.timing import RepeatPolicy, format_factor, format_seconds

AWKWARD_SIZES = (1, 31, 32, 33, 255, 256, 257, 1_000_003, 10_000_000)
CHECK_BLOCK_SIZES = (32, 128, 256, 1024)


@runs_section("correctness")
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


# Of a budgeted breakdown (a verification plan's): the Python loop's share. At 10^7 one run took 2.6 s on the
# H200's host and its 15 s budget ran it 7 times, most of the section's 19.9 s; 3 runs say as much.
PYTHON_SHARE = 0.4


@runs_section("breakdown")
def breakdown_section(ctx: CheckContext) -> Section:
    """The careful breakdown at the article's N (scaled down when quick)."""
    from gpu.experiments.vector_add.experiment import run_vector_add

    n = ctx.breakdown_n
    ctx.say(f"breakdown at N={n:,}")
    policy = RepeatPolicy.count(3 if ctx.quick else 20)
    python_budget_s = 2.0 if ctx.quick else 15.0 if ctx.budget_s is None else min(15.0, PYTHON_SHARE * ctx.budget_s)
    run = run_vector_add(n, 256, policy, python_budget_s=python_budget_s, max_n=ctx.max_n)
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


@runs_section("article")
def article_section(ctx: CheckContext) -> Section:
    """The article's own method and printout, for comparison."""
    from gpu.experiments.vector_add.article import run_article_method

    n = ctx.breakdown_n
    ctx.say(f"the article's method at N={n:,}")
    article = run_article_method(n, 256, python_budget_s=2.0 if ctx.quick else 30.0, max_n=ctx.max_n)
    md = ["```", *article.lines(), "```"]
    return Section("article", "As in the article", article.results_match, {"article": article.to_dict()}, "\n".join(md))
