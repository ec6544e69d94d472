"""Launch config's ``gpu check`` section: the block-size sweep, the indexing probe and the inspector."""

from __future__ import annotations

from gpu.catalog.checking import CheckContext, Section, runs_section
from gpu.core.timing import RepeatPolicy, format_seconds

LAUNCH_SWEEP_N = 2**26  # 805 MB moved per kernel: well past every cache, so memory bound
INDEXING_CASES = ((1, 32), (31, 32), (33, 32), (257, 32), (257, 100), (257, 256), (1000, 1024))


@runs_section("launch")
def launch_section(ctx: CheckContext) -> Section:
    """Block-size sweep at a large N, the indexing probe at awkward sizes, and the inspector."""
    from gpu.catalog.render import to_json
    from gpu.experiments.launch.experiment import run_launch_sweep
    from gpu.experiments.launch.indexing import run_indexing
    from gpu.experiments.launch.report import explanation
    from gpu.kernels.inspect import inspect_vector_add

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
