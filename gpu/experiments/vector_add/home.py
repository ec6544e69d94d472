"""Home's face of this experiment (app.py): the article's story, and the headline from the recorded run
of its breakdown. Home is the article's page, and the article is vector add; no Streamlit here."""

from __future__ import annotations

from gpu.core.timing import format_seconds
from gpu.core.words import times_words
from gpu.experiments.vector_add.experiment import VectorAddRun
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


def headline_metrics(ref: ReferenceRun, article: PublishedFigures) -> list[tuple[str, str, str]]:
    """(label, value, help) for the home page's headline: the recorded run and the article's T4."""
    run = VectorAddRun.recorded(ref)
    if run is None:  # best("vector-add") holds one; a run without it has no headline
        return []
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
