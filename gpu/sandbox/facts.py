"""What the real compiler says about a submission (registers, spills, occupancy), for the simulator's verdict.

The one place the facts are fetched. They come from ``gpu.core.compiler.compile_source_facts``
(issue 17's compiler API) when this checkout has it; until then this returns None with the
reason, and the verdict says so instead of inventing figures.
"""

from __future__ import annotations

import math

from gpu.problems.base import Problem


def compile_facts(problem: Problem, source: str, threads_per_block: int) -> tuple[dict | None, str]:
    """(facts, note): the compiler's facts for the problem's kernel in ``source``, or None and why not."""
    try:
        from gpu.core.compiler import compile_source_facts  # issue 17
    except ImportError:
        return None, "compiler facts (registers, spills, occupancy) are not available in this version of the lab"
    block = math.prod(problem.launch(problem.tests[-1].sizes, threads_per_block)[1])  # threads in one block
    try:
        facts = compile_source_facts(source, problem.kernel_name, None, "cuda", block)
    except Exception as exc:  # the compiler's refusal is information, not a harness failure
        return None, f"the real compiler could not compile this kernel: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__}"
    if facts is None:
        return None, "the compiler reported no facts for this kernel"
    data = facts.to_dict() if hasattr(facts, "to_dict") else dict(facts)
    return data, "from the real CUDA compiler (NVVM and ptxas), without running on a GPU"


__all__ = ["compile_facts"]
