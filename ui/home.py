"""Pieces of the home page: the headline recorded result and the article's reference text."""

from __future__ import annotations

import os
from pathlib import Path

from gpu.core.timing import format_seconds
from gpu.report.words import times_words
from gpu.service.references import PublishedFigures, ReferenceRun

ROOT = Path(__file__).resolve().parent.parent
ARTICLE_ENV = "KERNEL_LAB_ARTICLE"
ARTICLE_NAME = "first-gpu-kernel-article.txt"


def article_path() -> Path | None:
    """The article's reference text: $KERNEL_LAB_ARTICLE, else reference/ in or beside the checkout."""
    env = os.environ.get(ARTICLE_ENV, "").strip()
    candidates = [Path(env).expanduser()] if env else []
    candidates += [
        ROOT / "reference" / ARTICLE_NAME,
        *(parent / "shared" / "reference" / ARTICLE_NAME for parent in ROOT.parents),
    ]
    return next((p for p in candidates if p.is_file()), None)


def article_text(limit_bytes: int = 200_000) -> tuple[str | None, str | None]:
    """(text, where) of the article, or (None, None) when it is not on this machine."""
    path = article_path()
    if path is None:
        return None, None
    try:
        return path.read_bytes()[:limit_bytes].decode("utf-8", errors="replace"), path.name
    except OSError:
        return None, None


def headline_metrics(ref: ReferenceRun, article: PublishedFigures) -> list[tuple[str, str, str]]:
    """(label, value, help) for the home page's headline: the recorded run and the article's T4."""
    run = ref.vector_add()
    numpy = run.cpu.get("numpy")
    kernel_s, total_s = run.gpu["kernel"].median_s, run.gpu["total"].median_s
    out = [
        (
            "Kernel alone",
            format_seconds(kernel_s),
            f"Median of {run.gpu['kernel'].n_samples} samples at N = {run.n:,} (CUDA events, kernel alone).",
        )
    ]
    if numpy is not None and numpy.stats is not None:
        out.append(
            (
                "Kernel alone vs NumPy",
                times_words(numpy.median_s / kernel_s, "NumPy").removeprefix("about ").replace(" than NumPy", ""),
                f"NumPy median {format_seconds(numpy.median_s)} ÷ kernel median {format_seconds(kernel_s)}.",
            )
        )
        out.append(
            (
                "With copies vs NumPy",
                times_words(numpy.median_s / total_s, "NumPy").removeprefix("about ").replace(" than NumPy", ""),
                f"NumPy median {format_seconds(numpy.median_s)} ÷ GPU end to end {format_seconds(total_s)} (copies in "
                "and out included).",
            )
        )
    printed = ref.article()
    if printed is not None:
        out.append(
            (
                "Article's method",
                f"{printed['speedup']:.2f}x",
                "The article's own printout on this GPU: Python loop ÷ gpu_add, mean of 3 wall-clock runs.",
            )
        )
    out.append(
        (
            "Article's T4 (published)",
            f"{article.speedup:.2f}x",
            f"As printed in the article: Python loop {format_seconds(article.cpu_time_s)}, GPU "
            f"{format_seconds(article.gpu_time_s)} including copies.",
        )
    )
    return out
