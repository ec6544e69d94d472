"""Vector add in words: why the article's number differs from the careful one."""

from __future__ import annotations

from gpu.core.timing import format_seconds
from gpu.core.words import few_samples, times_words
from gpu.experiments.vector_add.article import ARTICLE_RUNS, ArticleRun
from gpu.experiments.vector_add.result import VectorAddRun


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
        own = "this machine's NumPy"  # a live run: the GPU and the NumPy of the same machine
        text += (
            f" The article compares with a pure-Python loop, the slowest baseline; end to end "
            f"the GPU is {times_words(vs_numpy.factor, own)}."
        )
    return text


def vector_add_sentence(run, pinned_s: float | None = None) -> str:
    """What the recorded vector add shows: the kernel against NumPy, then end to end with copies."""
    numpy = run.cpu.get("numpy")
    kernel, total = run.gpu["kernel"].median_s, run.gpu["total"].median_s
    k_few, t_few = few_samples(run.gpu["kernel"]), few_samples(run.gpu["total"])
    if numpy is None or numpy.stats is None:
        return (f"On the {run.device.name} at N = {run.n:,} the kernel alone takes {format_seconds(kernel)}{k_few} and "
                f"the whole GPU add with copies {format_seconds(total)}{t_few}.")
    np_s, np_few = numpy.median_s, few_samples(numpy.stats)
    host = f"the {run.device.name} host's NumPy"  # both sides recorded in the same run: not the reader's NumPy
    text = (
        f"On the {run.device.name} at N = {run.n:,} the kernel alone takes {format_seconds(kernel)}{k_few}, "
        f"{times_words(np_s / kernel, host)} ({format_seconds(np_s)}{np_few}), but with pageable copies "
        "the whole GPU add takes "
        f"{format_seconds(total)}{t_few}, {times_words(np_s / total, host)}"
    )
    if pinned_s is not None:
        text += f"; with pinned host memory it takes {format_seconds(pinned_s)} (Transfers page)"
    return text + "."


def recorded_pinned_s(ref) -> float | None:
    """One vector add with pinned host memory in the same recorded run, at the breakdown's N (None: not there)."""
    from gpu.experiments.transfers.result import StrategyComparison

    run, strategies = VectorAddRun.recorded(ref), StrategyComparison.recorded(ref)
    if run is None or strategies is None or strategies.n != run.n or "pinned" not in strategies.strategies:
        return None
    return strategies.strategies["pinned"].cost_s


def lesson(ref) -> str | None:
    """The recorded run's lesson in one sentence, for the lead of the page in the simulator."""
    run = VectorAddRun.recorded(ref)
    return vector_add_sentence(run, recorded_pinned_s(ref)) if run is not None else None
