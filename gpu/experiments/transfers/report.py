"""The transfer strategies in words: which one wins at this N and by how much, and the
terminal summaries of the strategies and of the CLI's ``transfers`` run."""

from __future__ import annotations

from gpu.core.backend import BACKEND
from gpu.core.timing import format_factor, format_seconds
from gpu.core.words import format_gbps
from gpu.experiments.transfers.experiment import (
    STRATEGIES,
    StrategyComparison,
    StrategyRun,
    TransfersRun,
)
from gpu.experiments.transfers.strategy_timing import BREAKDOWN_PHASES


def verdict(result: StrategyComparison) -> str:
    """Which strategy wins at this N, and by how much, in words."""
    best = result.winner
    if not result.strategies or best is None:
        return "No strategy ran."
    baseline = result.strategies.get("article")

    def versus(run: StrategyRun) -> str:
        if baseline is None or run.key == "article":
            return ""
        return (f", {format_factor(baseline.cost_s / run.cost_s)} faster than as in the article "
                f"({format_seconds(baseline.cost_s)})")

    parts = []
    if best.key == "resident":
        parts.append(
            f"At N = {result.n:,}, keeping the data on the device wins: {format_seconds(best.cost_s)} per vector add "
            f"(copies amortised over {best.iterations} kernel runs){versus(best)}."
        )
        copying = result.copying_winner
        if copying is not None:
            parts.append(
                f"If the data must cross the link for every result, {copying.label.lower()} wins: "
                f"{format_seconds(copying.cost_s)}{versus(copying)}."
            )
    else:
        runner_up = result.ranking[1] if len(result.ranking) > 1 else None
        margin = (
            f"; the next best, {runner_up.label.lower()}, takes {format_seconds(runner_up.cost_s)} "
            f"({format_factor(runner_up.cost_s / best.cost_s)} as long)"
            if runner_up
            else ""
        )
        parts.append(
            f"At N = {result.n:,}, {best.label.lower()} wins: {format_seconds(best.cost_s)} per vector "
            f"add{versus(best)}{margin}."
        )
    speedup = result.chunked_speedup
    if speedup is not None:
        overlap = result.overlap
        seen = (
            f"; copies and kernels overlap for {overlap:.0%} of its timeline"
            if overlap is not None and not BACKEND.simulated
            else ""
        )
        word = "faster" if speedup >= 1 else "slower"
        parts.append(
            f"Chunked streams ({result.chunks} chunks on {result.streams} streams) are "
            f"{format_factor(speedup if speedup >= 1 else 1 / speedup)} "
            f"{word} than the same pinned copies in one chunk{seen}."
        )
    if result.backend == "simulator":
        parts.append("(Simulated: these timings are meaningless.)")
    return " ".join(parts)


def summary(result: StrategyComparison) -> str:
    lines = [
        f"vector add strategies, N = {result.n:,} float32, {result.threads_per_block} threads per block, "
        f"{result.device.name} ({result.backend}); {result.policy.describe()}; medians per vector add",
        f"results agree with NumPy: {'yes, every strategy bit for bit' if result.agree else 'NO'}",
    ]
    for s in result.ranking:
        parts = ", ".join(f"{p} {format_seconds(s.phase_cost_s(p))}" for p in BREAKDOWN_PHASES if p in s.phases)
        few = "*" if s.few_samples else ""
        lines.append(
            f"  {s.label:<38} {format_seconds(s.cost_s) + few:>10}  ({parts}; {s.host_memory}; n={s.total.n_samples})"
        )
    for key, why in result.skipped.items():
        lines.append(f"  {STRATEGIES[key]:<38} skipped: {why}")
    if any(s.few_samples for s in result.strategies.values()):
        lines.append("* fewer than 3 samples: spread unknown")
    lines.append(verdict(result))
    lines += list(result.notes)
    if result.telemetry is not None:
        from gpu.core.telemetry import describe

        lines.append(describe(result.telemetry))
    return "\n".join(lines)


def transfers_summary(run: TransfersRun) -> str:
    """The CLI's ``transfers``: the bandwidth curves (when measured), then the strategies."""
    return (f"{run.bandwidth}\n\n" if run.bandwidth is not None else "") + summary(run.strategies)


def _strategies_prose(result: StrategyComparison) -> dict:
    return {"verdict": verdict(result)}


# What gpu/catalog/render.py uses for these results (named by the transfers declaration's
# ``report``); the strategies are also downloaded and checked on their own.
SUMMARIES = {StrategyComparison: summary, TransfersRun: transfers_summary}
PROSE = {
    StrategyComparison: _strategies_prose,
    TransfersRun: lambda run: {"strategies": run.strategies.to_dict() | _strategies_prose(run.strategies)},
}


def transfers_sentence(curves, strategies) -> str:
    """Pinned against pageable copies, and what each strategy costs for one vector add."""
    parts = []
    if curves is not None:
        pinned, pageable = curves.plateau("h2d", "pinned"), curves.plateau("h2d", "pageable")
        if pinned and pageable:
            parts.append(
                f"host→device copies from pinned memory reach {format_gbps(pinned.peak_gbps)} against "
                f"{format_gbps(pageable.peak_gbps)} from pageable memory"
            )
    if strategies is not None:
        s = strategies.strategies
        costs = [
            f"{format_seconds(s[k].cost_s)} {label}"
            for k, label in (
                ("article", "as in the article"),
                ("pinned", "with pinned memory"),
                ("resident", "with the data kept on the device"),
            )
            if k in s
        ]
        if costs:
            parts.append(
                f"one vector add at N = {strategies.n:,} takes "
                + ", ".join(costs[:-1])
                + (f" and {costs[-1]}" if len(costs) > 1 else costs[0])
            )
    device = (curves or strategies).device.name if (curves or strategies) is not None else "GPU"
    return (
        f"On the {device}, " + "; ".join(parts) + "."
        if parts
        else f"No transfer figures were recorded on the {device}."
    )


def lesson(ref) -> str | None:
    """What each strategy costs for one vector add on the recorded GPU, for the page's lead."""
    strategies = StrategyComparison.recorded(ref)
    return transfers_sentence(None, strategies) if strategies is not None else None
