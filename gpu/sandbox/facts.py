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
    """The kernel's Numba signature for the arguments the harness passes (C-contiguous device arrays,
    and scalars of their declared dtype: ``float32``)."""
    import numpy as np

    sizes = problem.tests[-1].sizes
    arrays = {**problem.args(np.random.default_rng(0), sizes),
              **{k: np.empty(shape, dtype) for k, (shape, dtype) in problem.outputs(sizes).items()}}
    types = []
    for name in problem.params:
        a = arrays[name]
        if not isinstance(a, np.ndarray):  # a scalar argument
            types.append(np.dtype(a.dtype).name)
            continue
        dims = ", ".join([":"] * (a.ndim - 1) + ["::1"])
        types.append(f"{np.dtype(a.dtype).name}[{dims}]")
    return f"void({', '.join(types)})"


def compile_facts(problem: Problem, source: str, threads_per_block: int) -> tuple[dict | None, str, str]:
    """(facts, note, status): the compiler's facts for the problem's kernel in ``source``, or None
    and why not. ``status`` is the compiler's (``gpu.core.compiler``): "compiled"; "rejected" (the
    compiler refused the kernel: the note quotes it); or "unavailable" (the compiler could not run
    here, a toolkit part missing: the note names it and says how to get it, never blaming the kernel).

    Runs NVVM and ptxas in a subprocess (the source is exec'd there: call this only inside
    the sandboxed child, after the checker passed).
    """
    from gpu.core.compiler import COMPILED, REJECTED, UNAVAILABLE, compile_source_facts

    block = math.prod(problem.launch(problem.tests[-1].sizes, threads_per_block)[1])  # threads in one block
    try:
        facts = compile_source_facts(source, problem.kernel_name, numba_signature(problem), threads_per_block=block)
    except Exception as exc:  # compile_many reports a kernel's refusal as facts; this is the lab failing
        text = str(exc).strip()
        why = text.splitlines()[0][:300] if text else type(exc).__name__
        return None, f"the compiler's facts are unavailable: the compiler could not run ({why}); " \
                     "your kernel is not at fault", UNAVAILABLE
    if facts.unavailable:
        return None, facts.sentence().replace("the kernel is not at fault", "your kernel is not at fault"), UNAVAILABLE
    if not facts.ok:
        return (
            None,
            f"the real compiler rejects this kernel for {facts.target_label}: "
            f"{(facts.error or '').strip().splitlines()[-1][:300] if facts.error else 'no reason given'}",
            REJECTED,
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
    return data, facts.sentence(), COMPILED


__all__ = ["compile_facts", "numba_signature"]
