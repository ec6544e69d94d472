"""What the real compiler says about a submission (registers, spills, occupancy), for the simulator's verdict.

The one place the facts are fetched: ``gpu.core.compiler.compile_source_facts`` (issue 17),
NVVM and ptxas for the default target, no GPU needed. It takes seconds (a fresh Numba in a
subprocess), so it runs as a second sandboxed step after the tests' verdict
(``gpu.sandbox.runner.facts_in_child``), never inside the timed path from Submit to verdict.
"""

from __future__ import annotations

import math

from gpu.problems.base import Problem


def numba_signature(problem: Problem) -> str:
    """The kernel's Numba signature for the arrays the harness passes (C-contiguous device arrays)."""
    import numpy as np

    sizes = problem.tests[-1].sizes
    arrays = {**problem.inputs(np.random.default_rng(0), sizes),
              **{k: np.empty(shape, dtype) for k, (shape, dtype) in problem.outputs(sizes).items()}}
    types = []
    for name in problem.params:
        a = arrays[name]
        dims = ", ".join([":"] * (a.ndim - 1) + ["::1"])
        types.append(f"{np.dtype(a.dtype).name}[{dims}]")
    return f"void({', '.join(types)})"


def compile_facts(problem: Problem, source: str, threads_per_block: int) -> tuple[dict | None, str]:
    """(facts, note): the compiler's facts for the problem's kernel in ``source``, or None and why not.

    Runs NVVM and ptxas in a subprocess (the source is exec'd there: call this only inside
    the sandboxed child, after the checker passed).
    """
    try:
        from gpu.core.compiler import compile_source_facts  # issue 17
    except ImportError:
        return None, "compiler facts (registers, spills, occupancy) are not available in this version of the lab"
    block = math.prod(problem.launch(problem.tests[-1].sizes, threads_per_block)[1])  # threads in one block
    try:
        facts = compile_source_facts(source, problem.kernel_name, numba_signature(problem), threads_per_block=block)
    except Exception as exc:  # the compiler's refusal is information, not a harness failure
        text = str(exc).strip()
        return (
            None,
            "the real compiler could not compile this kernel: "
            f"{text.splitlines()[0][:300] if text else type(exc).__name__}",
        )
    if not facts.ok:
        return (
            None,
            f"the real compiler rejects this kernel for {facts.target_label}: "
            f"{(facts.error or '').strip().splitlines()[-1][:300] if facts.error else 'no reason given'}",
        )
    occupancy = facts.occupancy
    data = {
        "target": facts.target_label,
        "compiler": facts.compiler,
        "registers_per_thread": facts.registers_per_thread,
        "spilled_bytes": facts.spill_stores_bytes,
        "shared_memory_bytes": facts.shared_memory_bytes,
        "threads_per_block": facts.threads_per_block,
        "occupancy": f"{occupancy.fraction:.0%} (limited by {occupancy.limiter})" if occupancy else None,
    }
    return data, facts.sentence()


__all__ = ["compile_facts", "numba_signature"]
