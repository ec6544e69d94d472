"""A progress bar that names the step, its number and the time left (estimated).

Experiments that declare a ``plan`` (their steps in order with an estimate of each) get
this bar while they run: a 30-second simulated run shows which phase it is in and about
how long is left instead of a bare spinner.
"""

from __future__ import annotations

from typing import Sequence


def eta_text(seconds: float) -> str:
    if seconds < 2:
        return "a second"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


class PhaseProgress:
    """Moves ``bar`` (an ``st.progress``) to the step whose message starts a progress line."""

    def __init__(self, bar, steps: Sequence[tuple[str, float]], simulated: bool):
        self.bar, self.steps, self.simulated = bar, list(steps), simulated
        self.total = sum(w for _m, w in self.steps) or 1.0

    def start_text(self) -> str:
        where = " in the simulator" if self.simulated else ""
        return f"Waiting for the device… this run should take about {eta_text(self.total)}{where} (estimate)."

    def __call__(self, message: str) -> None:
        index = next((i for i, (m, _w) in enumerate(self.steps) if message.startswith(m)), None)
        if index is None:
            return
        done = sum(w for _m, w in self.steps[:index])
        where = " in the simulator" if self.simulated else ""
        self.bar.progress(min(done / self.total, 0.99),
                          text=f"Step {index + 1} of {len(self.steps)}: {message} — about {eta_text(self.total - done)} left{where} (estimate)")
