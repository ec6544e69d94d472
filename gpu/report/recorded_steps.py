"""A catalog kernel's steps as recorded on a real GPU: time, GB/s and share of the memory peak per step.

The Kernels page shows these first, beside (never mixed with) the simulated run: in the simulator each
step's time is Python running its threads, which says nothing about the ladder from naive to near the
hardware. The figures come from the newest committed ``gpu check`` section of the kernel measured under
today's rules (``References.best``), as the check wrote them (``KernelRun.to_dict()``): nothing here
measures, scales or rounds a figure before it is shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpu.core.timing import format_seconds
from gpu.service.references import Provenance, ReferenceRun, References


@dataclass(frozen=True)
class RecordedStep:
    """One implementation of a recorded catalog run (seconds: the kernel alone on the GPU, the call on the CPU)."""

    key: str
    label: str
    kind: str  # "step" (a Numba GPU step), "library" (CuPy, PyTorch, a device copy) or "cpu"
    seconds: float | None  # median; None when it was skipped or failed
    gbps: float | None  # bytes the algorithm must move ÷ seconds
    fraction_of_peak: float | None  # share of the roof that bounds the kernel (GPU rows only)
    samples: int | None
    min_s: float | None
    max_s: float | None
    why_not: str | None  # skipped or failed: why there is no figure


@dataclass(frozen=True)
class RecordedKernel:
    """The recorded run of one catalog kernel: its steps, size and where it comes from."""

    experiment: str
    title: str
    size: str
    steps: tuple[RecordedStep, ...]
    reference: str  # the folder under benchmarks/
    provenance: Provenance
    caveat: str | None  # set when the run was measured under older rules
    finished: bool  # False: the check was cut short after finishing this section

    @property
    def device(self) -> str:
        return self.provenance.device

    def gpu_steps(self) -> list[RecordedStep]:
        return [s for s in self.steps if s.kind == "step" and s.seconds]

    def ladder_sentence(self) -> str:
        """The lesson in one sentence: the first step against the fastest, in time and share of the memory peak."""
        steps = self.gpu_steps()
        if not steps:
            return f"The recorded run on the {self.device} holds no measured step of {self.title}."
        first, best = steps[0], min(steps, key=lambda s: s.seconds or float("inf"))
        assert first.seconds is not None and best.seconds is not None  # gpu_steps keeps measured ones
        share = (
            f" ({_percent(first.fraction_of_peak)} → {_percent(best.fraction_of_peak)} of the memory peak)"
            if first.fraction_of_peak is not None and best.fraction_of_peak is not None
            else ""
        )
        if first is best:
            return f"On the {self.device}, {first.label} takes {format_seconds(first.seconds)}{share}."
        return (
            f"On the {self.device}, at {self.size}, the steps go from {first.label} at {format_seconds(first.seconds)} "
            f"to {best.label} at {format_seconds(best.seconds)}{share}: "
            f"{first.seconds / best.seconds:,.0f}x less time for the same work."
        )

    def rows(self) -> list[dict]:
        """One row per implementation, for a table: step, kind, time, GB/s, % of peak, samples."""
        return [
            {
                "step": s.label,
                "kind": s.kind,
                "time": format_seconds(s.seconds) if s.seconds else (s.why_not or "not measured"),
                "GB/s": round(s.gbps, 1) if s.gbps is not None else None,
                "% of peak": round(100 * s.fraction_of_peak, 2) if s.fraction_of_peak is not None else None,
                "samples": s.samples,
                "min–max": (f"{format_seconds(s.min_s)}–{format_seconds(s.max_s)}"
                            if s.min_s is not None and s.max_s is not None else ""),
            }
            for s in self.steps
        ]


def _percent(fraction: float | None) -> str:
    if fraction is None:
        return "?"
    return f"{100 * fraction:.2g}%" if fraction < 0.01 else f"{100 * fraction:.1f}%"


def _step(key: str, impl: Mapping[str, Any]) -> RecordedStep:
    timing = impl.get("kernel_timing") or {}
    why_not = impl.get("skipped") or (f"failed: {impl['error']}" if impl.get("error") else None)
    return RecordedStep(
        key=key,
        label=str(impl.get("label") or key),
        kind=str(impl.get("kind") or "step"),
        seconds=impl.get("seconds") if not why_not else None,
        gbps=impl.get("gbps") if not why_not else None,
        fraction_of_peak=impl.get("fraction_of_peak"),
        samples=timing.get("samples") if isinstance(timing, Mapping) else None,
        min_s=timing.get("min_s") if isinstance(timing, Mapping) else None,
        max_s=timing.get("max_s") if isinstance(timing, Mapping) else None,
        why_not=why_not,
    )


def _largest_run(ref: ReferenceRun, experiment: str) -> Mapping[str, Any] | None:
    """The run of ``experiment`` in ``ref`` moving the most bytes (a section may hold several sizes)."""
    from gpu.service.check_schema import section_records

    runs = [record for key, record in section_records(ref.data) if key == experiment
            and isinstance(record.get("implementations"), Mapping)]
    return max(runs, key=lambda r: r.get("bytes_moved") or 0) if runs else None


def _with_unmeasured_steps(experiment: str, steps: tuple[RecordedStep, ...]) -> tuple[RecordedStep, ...]:
    """``steps`` with every GPU step the kernel declares now but the recorded run lacks (added since), said so,
    after the last recorded step: a learner sees the whole ladder, and which rungs no GPU has timed yet."""
    from gpu.catalog.declare import kernel_module

    recorded = {s.key for s in steps}
    missing = [RecordedStep(key=step.key, label=step.label, kind="step", seconds=None, gbps=None,
                            fraction_of_peak=None, samples=None, min_s=None, max_s=None,
                            why_not="not measured on a GPU yet (added after this run)")
               for step in kernel_module(experiment).SPEC.steps if step.key not in recorded]
    if not missing:
        return steps
    last = max((i for i, s in enumerate(steps) if s.kind == "step"), default=-1)
    return (*steps[: last + 1], *missing, *steps[last + 1:])


def recorded_kernel(experiment: str, refs: References) -> RecordedKernel | None:
    """The quoted recorded run of catalog kernel ``experiment``; None when no committed run holds it."""
    ref = refs.best(experiment)
    run = _largest_run(ref, experiment) if ref is not None else None
    if ref is None or run is None:
        return None
    steps = tuple(_step(key, impl) for key, impl in run["implementations"].items() if isinstance(impl, Mapping))
    steps = _with_unmeasured_steps(experiment, steps)
    return RecordedKernel(
        experiment=experiment,
        title=str(run.get("title") or experiment),
        size=str(run.get("size") or ""),
        steps=steps,
        reference=ref.key,
        provenance=ref.provenance,
        caveat=ref.caveat,
        finished=ref.finished,
    )


__all__ = ["RecordedKernel", "RecordedStep", "recorded_kernel"]
