"""A progress bar that names the step, its number and the time left (estimated).

Experiments that declare a ``plan`` (their steps in order with an estimate of each) get
this bar while they run: a 30-second simulated run shows which phase it is in and about
how long is left instead of a bare spinner. Steps are matched by id (the run calls
``progress.begin(step_id, message)``), never by the wording of the message.
"""

from __future__ import annotations

from collections.abc import Sequence

ESTIMATE_SHOWN_FROM_S = 2.0  # a run that may take longer states its estimate before it starts


def estimate_text(seconds: float, simulated: bool) -> str:
    """The line a run shows while it waits and starts: about how long it takes (an estimate)."""
    where = " in the simulator" if simulated else ""
    return f"Waiting for the device… this run should take about {eta_text(seconds)}{where} (estimate)."


def eta_text(seconds: float) -> str:
    if seconds < 2:
        return "a second"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


class PhaseProgress:
    """Moves ``bar`` (an ``st.progress``) to the step the run says it has begun, by id."""

    def __init__(self, bar, steps: Sequence[tuple[str, float]], simulated: bool):
        self.bar, self.steps, self.simulated = bar, list(steps), simulated
        self.total = sum(w for _m, w in self.steps) or 1.0
        self._index = {step_id: i for i, (step_id, _w) in enumerate(self.steps)}
        self._current: int | None = None

    def start_text(self) -> str:
        return estimate_text(self.total, self.simulated)

    def started(self, step_id: str) -> None:
        """The run began step ``step_id``; an id the plan does not hold is an error in the declaration."""
        if step_id not in self._index:
            raise KeyError(f"the run began step {step_id!r}, which its plan does not list ({', '.join(self._index)})")
        self._current = self._index[step_id]

    def __call__(self, message: str) -> None:
        """Show ``message`` as the current step's line (nothing before the first step begins)."""
        index = self._current
        if index is None:
            return
        done = sum(w for _m, w in self.steps[:index])
        where = " in the simulator" if self.simulated else ""
        self.bar.progress(
            min(done / self.total, 0.99),
            text=f"Step {index + 1} of {len(self.steps)}: {message} — about {eta_text(self.total - done)} left{where} "
                 "(estimate)",
        )
