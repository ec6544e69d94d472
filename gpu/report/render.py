"""Results in words, for every surface: the terminal summary and the JSON with its prose.

A result (gpu/experiments/*) holds data; the sentences that explain it live in the
report layer. ``summary(result)`` is what the CLI prints; ``to_json(result)`` is
``result.to_dict()`` plus the prose fields a reader of a download or a check file
expects ("explanation", ...). Types without prose of their own fall back to ``str``
and ``to_dict``.
"""

from __future__ import annotations

from typing import Any, Callable

from gpu.experiments.launch import LaunchSweepRun
from gpu.experiments.scaling_result import SweepRun
from gpu.experiments.transfers import StrategyComparison, TransfersRun
from gpu.report import launch, scaling, transfers

_SUMMARY: dict[type, Callable[[Any], str]] = {
    LaunchSweepRun: launch.summary,
    SweepRun: scaling.summary,
    StrategyComparison: transfers.summary,
    TransfersRun: transfers.transfers_summary,
}
_PROSE: dict[type, Callable[[Any], dict]] = {
    LaunchSweepRun: lambda run: {"explanation": launch.explanation(run)},
    SweepRun: lambda run: {"crossover_sentences": scaling.crossover_sentences(run)},
    StrategyComparison: lambda result: {"verdict": transfers.verdict(result)},
    TransfersRun: lambda run: {"strategies": to_json(run.strategies)},
}


def summary(result: Any) -> str:
    """The terminal summary of ``result``."""
    render = _SUMMARY.get(type(result))
    return render(result) if render is not None else str(result)


def to_json(result: Any) -> dict:
    """``result.to_dict()`` with the prose fields of its report, JSON-ready."""
    from gpu.core.provenance import stamp

    prose = _PROSE.get(type(result))
    return stamp(result.to_dict() | (prose(result) if prose is not None else {}))  # downloads and --json say which rules
