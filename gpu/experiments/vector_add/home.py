"""Home's face of this experiment (app.py): the article's story, and the headline from the recorded run
of its breakdown. Home is the article's page, and the article is vector add; no Streamlit here."""

from __future__ import annotations

from gpu.core.timing import format_seconds
from gpu.core.words import times_words
from gpu.experiments.vector_add.result import VectorAddRun
from gpu.service.references import PublishedFigures, ReferenceRun

ARTICLE_TITLE = "Writing Your First GPU Kernel in Python with Numba and CUDA"
ARTICLE_AUTHOR = "Kanwal Mehreen"


def article_story(article: PublishedFigures) -> str:
    """The article's story in the lab's own words, with its published T4 figures as facts (Markdown)."""
    return (
        f"*{ARTICLE_TITLE}*, by {ARTICLE_AUTHOR}, is the tutorial Kernel Lab grew from. It explains why writing "
        "CUDA in C is hard for a Python programmer and how Numba's `@cuda.jit` compiles a Python function into a "
        "GPU kernel instead. Its one example is vector addition, `c = a + b`, written twice:\n\n"
        "- **on the CPU**, as a plain Python `for` loop over the elements;\n"
        "- **on the GPU**, as a kernel in which each thread computes its own index, "
        "`threadIdx.x + blockIdx.x * blockDim.x`, checks it against the array's length (the last block runs past "
        "the end) and adds one pair of elements. The host copies `a` and `b` to the device, launches "
        f"`ceil(N / {article.threads_per_block})` blocks of {article.threads_per_block} threads and copies `c` back."
        "\n\n"
        f"It checks that the two results match (`np.allclose`), times each with `timeit` (the mean of 3 runs, "
        f"at N = {article.n:,} float32 elements) and prints their ratio. On a T4 on Colab the article printed: "
        f"CPU {article.cpu_time_s:.2f} s, GPU {article.gpu_time_s * 1e3:.1f} ms — **“GPU speedup: "
        f"{article.speedup:.2f}x”**.\n\n"
        "What that number compares, the lab shows page by page: a Python loop (NumPy is hundreds of times faster "
        "than it), and a GPU time that includes copying 80 MB to the device and 40 MB back over PCIe, which "
        "costs far more than the kernel itself. *Vector add* runs the same experiment with both and splits the "
        "GPU's time into its parts; the lab checks results bit for bit, where the article's `allclose` allowed a "
        "tolerance."
    )


def host_numpy(ref: ReferenceRun) -> str:
    """Whose NumPy a recorded ratio divides by, in words: "the NVIDIA H200 host's NumPy"."""
    return f"the {ref.provenance.device} host's NumPy"


def headline_intro(ref: ReferenceRun, n: int) -> str:
    """The sentence above Home's headline: what was recorded, when, and under which rules (Markdown)."""
    rules = f"**{ref.caveat}**" if ref.caveat else "under today's measurement rules"
    return (
        f"The article's experiment (N = {n:,} float32) recorded on an **{ref.provenance.device}** by `python -m gpu "
        f"check` on {ref.provenance.when}, {rules}; every ratio divides by {host_numpy(ref)}, measured in the same "
        "run (not your NumPy). Beside it, the article's own T4 figure (published in the article, not measured here):"
    )


def headline_metrics(ref: ReferenceRun, article: PublishedFigures) -> list[tuple[str, str, str]]:
    """(label, value, help) for the home page's headline: the recorded run and the article's T4.

    Each ratio's label names both sides: the recorded GPU and the NumPy of that GPU's host."""
    run = VectorAddRun.recorded(ref)
    if run is None:  # best("vector-add") holds one; a run without it has no headline
        return []
    numpy = run.cpu.get("numpy")
    kernel_s, total_s = run.gpu["kernel"].median_s, run.gpu["total"].median_s
    device = ref.provenance.device.removeprefix("NVIDIA ")
    host = host_numpy(ref).removeprefix("the NVIDIA ")
    caveat = f" Recorded {ref.caveat}." if ref.caveat else ""
    out = [
        (
            f"{device} kernel alone",
            format_seconds(kernel_s),
            f"Median of {run.gpu['kernel'].n_samples} samples at N = {run.n:,} (CUDA events, kernel alone).{caveat}",
        )
    ]
    if numpy is not None and numpy.stats is not None:
        out.append(
            (
                f"{device} kernel vs {host}",
                times_words(numpy.median_s / kernel_s, "NumPy").removeprefix("about ").replace(" than NumPy", ""),
                f"NumPy on the {device}'s host, median {format_seconds(numpy.median_s)} ÷ the {device}'s kernel "
                f"median {format_seconds(kernel_s)}: both sides from the same recorded run, not your NumPy.{caveat}",
            )
        )
        out.append(
            (
                f"{device} + copies vs {host}",
                times_words(numpy.median_s / total_s, "NumPy").removeprefix("about ").replace(" than NumPy", ""),
                f"NumPy on the {device}'s host, median {format_seconds(numpy.median_s)} ÷ the {device} end to end "
                f"{format_seconds(total_s)} (copies in and out included): both sides from the same recorded run, "
                f"not your NumPy.{caveat}",
            )
        )
    printed = ref.article()
    if printed is not None:
        out.append(
            (
                f"Article's method on the {device}",
                f"{printed['speedup']:.2f}x",
                f"The article's own printout on the {device}: its host's Python loop ÷ gpu_add, mean of 3 wall-clock "
                f"runs.{caveat}",
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
