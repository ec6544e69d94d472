"""Background jobs that outlive the page run that started them, process-wide and bounded.

Streamlit stops a run at its next element, or its next read or write of the session's state, as soon as a newer
run is asked for (an edit, a click), and starts the newer run beside it. Work that must finish whatever the page
does (a submission's judge, its analysis) therefore runs in a thread of this process, and the session keeps only
the job's token: every run of the page finds the job by its token, follows it, and the first that sees it finished
keeps its result. A stopped run simply stops following.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

MAX_JOBS = 256  # per kind, on this server: past it, the oldest finished jobs are forgotten


class Job(Protocol):
    token: str
    finished_at: float | None


J = TypeVar("J", bound=Job)


class Jobs(Generic[J]):
    """Every session's jobs of one kind on this server, by token (bounded: the oldest finished go first; ``add``
    never drops a job still queued or running, ``forget`` drops those its caller calls stale)."""

    def __init__(self, limit: int = MAX_JOBS) -> None:
        self._jobs: OrderedDict[str, J] = OrderedDict()
        self._mutex = threading.Lock()
        self._limit = limit

    def add(self, job: J) -> None:
        with self._mutex:
            self._jobs[job.token] = job
            for token in [t for t, j in self._jobs.items() if j.finished_at is not None]:
                if len(self._jobs) <= self._limit:
                    break
                del self._jobs[token]

    def get(self, token: str | None) -> J | None:
        with self._mutex:
            return self._jobs.get(token) if token else None

    def forget(self, stale: Callable[[J], bool]) -> None:
        """Drop every job ``stale`` says is (one never started whose session left, say)."""
        with self._mutex:
            for token in [t for t, j in self._jobs.items() if stale(j)]:
                del self._jobs[token]

    def count(self, which: Callable[[J], bool]) -> int:
        """How many jobs ``which`` picks."""
        with self._mutex:
            return sum(1 for j in self._jobs.values() if which(j))

    def __len__(self) -> int:
        with self._mutex:
            return len(self._jobs)


__all__ = ["MAX_JOBS", "Job", "Jobs"]
