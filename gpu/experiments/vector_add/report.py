"""Vector add in words: why the article's number differs from the careful one."""

from __future__ import annotations

from gpu.core.timing import format_seconds
from gpu.experiments.vector_add.article import ARTICLE_RUNS, ArticleRun
from gpu.experiments.vector_add.experiment import VectorAddRun
from gpu.report.words import times_words


def article_in_words(article: ArticleRun) -> str:
    """The article's four lines in one sentence.

    On a GPU its "GPU speedup" in words. In the simulator the GPU time is Python running
    each thread in turn, so a ratio against the CPU would be a simulated figure read as a
    GPU's: the sentence says the method ran, whether the results matched, and the CPU time.
    """
    if article.backend == "simulator":
        cpu = format_seconds(article.cpu_time_s) + (" (estimated)" if article.cpu_estimated else "")
        matched = "the results matched" if article.results_match else "the results did NOT match"
        return (
            f"In words: the article's method ran (in the CUDA simulator) and {matched}; the Python loop took {cpu}. "
            "The simulator times Python, not a GPU, so its “GPU speedup” line says nothing about a GPU."
        )
    return f"In words: the article's “GPU speedup” means the GPU was {times_words(article.speedup, 'the Python loop')}."


def explain_difference(article: ArticleRun, careful: VectorAddRun) -> str:
    """One or two sentences on why the article's GPU time differs from the careful one."""
    total_s = careful.gpu["total"].median_s
    kernel_s = careful.gpu["kernel"].median_s
    copies_s = careful.gpu["h2d"].median_s + careful.gpu["d2h"].median_s
    launch_s = careful.gpu["launch"].median_s if "launch" in careful.gpu else 0.0
    text = (
        f"The article's GPU time ({format_seconds(article.gpu_time_s)}) is the mean of "
        f"{ARTICLE_RUNS} wall-clock runs that also zero c on the host and copy it into the "
        f"device; the careful end-to-end median is {format_seconds(total_s)}, of which the "
        f"kernel is {format_seconds(kernel_s)} ({kernel_s / total_s:.0%}) and the copies "
        f"{format_seconds(copies_s)} ({copies_s / total_s:.0%})"
        + (
            f", and launching it from Python {format_seconds(launch_s)} ({launch_s / total_s:.0%})."
            if launch_s
            else "."
        )
    )
    vs_numpy = careful.speedup("numpy", "total")
    if vs_numpy is not None and careful.backend != "simulator":  # a simulated ratio is no GPU's
        text += (
            f" The article compares with a pure-Python loop, the slowest baseline; end to end "
            f"the GPU is {times_words(vs_numpy.factor, 'NumPy')}."
        )
    return text
