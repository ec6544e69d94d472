"""The lab's jargon in one place: each term a newcomer meets on the pages, in a sentence or two.

Home shows the whole glossary; pages explain a term where it appears (a help tooltip) and
take the sentence from here (``explain(term)``, or ``help_for(text)`` for every term a label
or a line holds), so the two never disagree. ``MARKS`` says how each term shows up in a
page's text; tests/test_glossary_on_pages.py opens every page after its default run and
fails where a marked term appears in a metric, an input, a line of text or a table column
without its sentence in that element's help.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

GLOSSARY: dict[str, str] = {
    "kernel": "A function that runs on the GPU, once per thread; here written in Python with Numba's `@cuda.jit`.",
    "thread, block, grid": "A kernel launch starts a grid of blocks, each of the same number of threads; a thread "
    "finds its element from `threadIdx`, `blockIdx` and `blockDim`.",
    "warp": "32 threads of a block that the GPU issues together; a warp shuffle passes values between them.",
    "kernel alone": "The kernel's own time on the GPU (CUDA events, behind a stream hold), without copies or the "
    "launch from Python.",
    "end to end": "Everything the GPU path costs for one result: copy the inputs in, launch, run, copy the output "
    "back.",
    "pageable / pinned memory": "Ordinary host memory must be staged before a copy to the GPU; pinned "
    "(page-locked) memory is copied directly, so it is faster.",
    "L2 flushed": "The GPU's L2 cache is overwritten before each timed sample, so a small input is not served from "
    "cache and timed unrealistically fast.",
    "stream hold": "A small kernel that keeps the GPU's queue waiting until every launch of a sample is queued, so "
    "the timed kernel runs back to back, not at Python's pace.",
    "n<3": "A figure from fewer than 3 samples: its spread is unknown, so it is marked and should be read with care.",
    "sm_90": "The compute capability the compiler targets: sm_90 is NVIDIA's H100/H200 (Hopper), sm_75 a T4, "
    "sm_100/sm_120 Blackwell.",
    "registers, spills": "Each thread's fastest storage; a kernel that needs more than the hardware allows spills "
    "them to slower local memory.",
    "occupancy": "How many warps a multiprocessor keeps resident out of the most it could (limited by registers, "
    "shared memory and block size); more warps hide memory latency better.",
    "sectors per request": "How many 32-byte pieces of memory one warp's load touches: 4 when 32 threads read 32 "
    "neighbouring floats (coalesced), up to 32 when they are scattered.",
    "barrier interval": "The stretch of a kernel between two `syncthreads`; two threads touching one address in the "
    "same interval, one of them writing, is a race.",
    "bit-identical": "The same bits as NumPy's result for every element: the check for float32 vector add, whose "
    "single rounding per element is the same on both.",
    "roofline": "A chart of achieved FLOP/s against arithmetic intensity (FLOPs per byte) under two roofs: the "
    "memory's bandwidth and the arithmetic peak.",
    "grid-stride": "A loop inside the kernel: each thread takes element i, then i plus the grid's total thread "
    "count, and so on, so a fixed grid (about one wave of blocks) covers any N.",
    "coalesced": "A warp's loads are coalesced when its 32 threads read neighbouring addresses: the GPU serves them "
    "with a few 32-byte sectors instead of one sector per thread.",
    "bank conflict": "Shared memory is split into 32 banks; when threads of one warp touch different addresses in "
    "the same bank, those accesses take turns instead of happening together.",
    "arithmetic intensity": "FLOPs a kernel does per byte it must move (FLOP/byte). Below the roofline's ridge a "
    "kernel is limited by memory bandwidth, above it by arithmetic.",
    "simulated": "Run in a CUDA simulator on the CPU: checked exactly, but its times measure Python, not a GPU, so "
    "they are never charted, ranked or compared.",
}


# How each term shows up in a page's text (case-insensitive regular expressions). A term without marks is
# explained on Home only (it is too common to tooltip every use: "kernel", "warp").
MARKS: dict[str, str] = {
    "n<3": r"n\s*<\s*3",
    "sm_90": r"\bsm_\d+",
    "occupancy": r"\boccupancy\b",
    "sectors per request": r"sectors? per request|sectors/request",
    "barrier interval": r"barrier intervals?",
    "pageable / pinned memory": r"\bpinned\b|\bpageable\b",
    "stream hold": r"stream[- ]hold|behind a (verified )?hold",
    "grid-stride": r"grid-stride",
    "coalesced": r"\bcoalesc",
    "bank conflict": r"bank conflicts?",
    "arithmetic intensity": r"arithmetic intensity|flop/byte",
    "roofline": r"\broofline\b",
    "registers, spills": r"\bspill",
    "L2 flushed": r"\bL2 (is )?flushed",
}
_PATTERNS = {term: re.compile(pattern, re.IGNORECASE) for term, pattern in MARKS.items()}


def terms_in(text: str) -> list[str]:
    """The glossary's marked terms that ``text`` holds, in the glossary's order."""
    return [term for term, pattern in _PATTERNS.items() if pattern.search(text or "")]


def help_for(text: str, own: str | None = None) -> str | None:
    """A help tooltip for an element showing ``text``: ``own`` help first, then the glossary's sentence for each
    term ``text`` holds; None when there is neither."""
    parts = [own] if own else []
    parts += [f"**{term}**: {GLOSSARY[term]}" for term in terms_in(text) if GLOSSARY[term] not in (own or "")]
    return "\n\n".join(parts) or None


def caption(body: str, where: Any = None, **kwargs: Any) -> Any:
    """``st.caption(body)`` (in ``where``, a container, when given) with the glossary's sentences for the terms it
    holds as its help."""
    import streamlit as st

    return (where or st).caption(body, help=help_for(body, kwargs.pop("help", None)), **kwargs)


def markdown(body: str, where: Any = None, **kwargs: Any) -> Any:
    """``st.markdown(body)`` with the glossary's sentences for the terms it holds as its help."""
    import streamlit as st

    return (where or st).markdown(body, help=help_for(body, kwargs.pop("help", None)), **kwargs)


def column_config(columns: Iterable[str]) -> dict[str, Any]:
    """``st.dataframe``'s ``column_config`` giving each column whose header holds a term the term's sentence."""
    import streamlit as st

    return {c: st.column_config.Column(help=help_for(c)) for c in map(str, columns) if terms_in(c)}


def explain(term: str) -> str:
    """The glossary's sentence for ``term`` (KeyError for a term it does not hold: add it here first)."""
    return GLOSSARY[term]


def as_markdown() -> str:
    return "\n".join(f"- **{term}** — {text}" for term, text in GLOSSARY.items())


__all__ = [
    "GLOSSARY", "MARKS", "as_markdown", "caption", "column_config", "explain", "help_for", "markdown", "terms_in",
]
