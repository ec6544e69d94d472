"""The lab's jargon in one place: each term a newcomer meets on the pages, in a sentence or two.

Home shows the whole glossary; pages explain a term where it appears (a help tooltip) and
can take the sentence from here (``explain(term)``), so the two never disagree.
"""

from __future__ import annotations

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
    "simulated": "Run in a CUDA simulator on the CPU: checked exactly, but its times measure Python, not a GPU, so "
    "they are never charted, ranked or compared.",
}


def explain(term: str) -> str:
    """The glossary's sentence for ``term`` (KeyError for a term it does not hold: add it here first)."""
    return GLOSSARY[term]


def as_markdown() -> str:
    return "\n".join(f"- **{term}** — {text}" for term, text in GLOSSARY.items())


__all__ = ["GLOSSARY", "as_markdown", "explain"]
