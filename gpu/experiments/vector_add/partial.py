"""A vector-add run still going: what it has measured so far, and what is still running.

``measure_vector_add`` runs the GPU part first, then the compiled CPU implementations, the
Python loop last of them (and the caller runs the article's method after that). After the GPU
part and after each CPU implementation it hands ``progress.partial`` one ``PartialRun``, and the
page redraws it in one place: the first chart comes in seconds while the slow rows still run.

Every figure in a ``PartialRun`` is a measurement already made, the same one the completed run
holds (or the Python loop's labelled estimate, once its step has ended and it was skipped over
its budget). What is still running is only named, never given a number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from gpu.core import cpu

ARTICLE = "article"  # the name of the article's method among a partial run's steps still running
LATE = ("python",)  # the slow CPU implementations: run after the compiled ones, so those are shown first


def run_order(impls: Sequence[str]) -> tuple[str, ...]:
    """The CPU implementations in the order they run: the compiled ones as chosen, the Python loop last.

    The completed run still lists them in the chosen order (``impls``); only the timing order moves.
    """
    return tuple(name for name in impls if name not in LATE) + tuple(name for name in impls if name in LATE)


def running_label(name: str) -> str:
    """How a step still running is named on the page: "Python loop (article)", "the article's method"."""
    return "the article's method" if name == ARTICLE else cpu.LABELS[name]


class MeasuredSoFar(Protocol):
    """What a partial run's ``run`` holds at least (``VectorAddRun`` does): the CPU timings finished."""

    @property
    def cpu(self) -> Mapping[str, object]: ...


R = TypeVar("R", bound=MeasuredSoFar)


@dataclass(frozen=True)
class PartialRun(Generic[R]):
    """A run not yet complete: ``run`` (a ``VectorAddRun``) holds the GPU phases and the CPU implementations
    finished so far (``run.article`` is None until the whole run returns); ``running`` names what is still to
    finish, in the order it runs (CPU implementation names, and ``ARTICLE`` when the article's method was asked).
    """

    run: R
    running: tuple[str, ...]

    def __post_init__(self) -> None:
        shown = sorted(set(self.run.cpu) & set(self.running))
        if shown:  # a row both measured and running would be a number shown before its measurement ended
            raise ValueError(f"a partial run lists {', '.join(shown)} as both measured and still running")

    @property
    def running_labels(self) -> list[str]:
        return [running_label(name) for name in self.running]

    def status_line(self) -> str:
        """One sentence for the top of the partial view: what is still running and what happens next."""
        return (
            f"Still running: {', '.join(self.running_labels)}. What is below is measured; each row still running "
            "fills in when it finishes, and History saves the run once it is complete."
        )
