"""Results in words, for every surface: the terminal summary and the JSON with its prose.

A result (gpu/experiments/*) holds data; the sentences that explain it live in the
report layer. ``summary(result)`` is what the CLI prints; ``to_json(result)`` is
``result.to_dict()`` plus the prose fields a reader of a download or a check file
expects ("explanation", ...). Which function words which result is told by each experiment
folder's ``report`` module (``registry.faces("report")``): its ``SUMMARIES`` and ``PROSE``,
``{result type: function}`` (a result and the parts of it that are shown on their own, e.g.
the transfer strategies). Types without prose of their own fall back to ``str`` and ``to_dict``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpu.catalog.registry import faces


def _tables() -> tuple[dict[type, Callable[[Any], str]], dict[type, Callable[[Any], dict]]]:
    summaries: dict[type, Callable[[Any], str]] = {}
    prose: dict[type, Callable[[Any], dict]] = {}
    for module in faces("report"):
        summaries.update(getattr(module, "SUMMARIES", {}))
        prose.update(getattr(module, "PROSE", {}))
    return summaries, prose


def summary(result: Any) -> str:
    """The terminal summary of ``result``."""
    render = _tables()[0].get(type(result))
    return render(result) if render is not None else str(result)


def to_json(result: Any) -> dict:
    """``result.to_dict()`` with the prose fields of its report, JSON-ready."""
    from gpu.core.provenance import stamp

    prose = _tables()[1].get(type(result))
    return stamp(
        result.to_dict() | (prose(result) if prose is not None else {})
    )  # downloads and --json say which rules
