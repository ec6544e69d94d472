"""Where a class's seconds went: each Write a kernel submission's milestones, appended to ``KERNEL_LAB_JUDGE_LOG``.

One JSON object per line, ``{"at": Unix seconds, "event": ..., "token": the judge's token, "learner": a display
name or null, ...}``, with events in this order:

- ``received``: the Run press reached the server and its judge was started (``ui/views/judge_job.py``);
- ``turn``: the judge holds the queue (the device lock, then the CPU lock);
- ``verdict``: the judge ended (``status``: passed, wrong, refused...; or ``failed``: it could not run);
- ``kept``: the page's run that follows the judge keeps the verdict and draws it next (``run_panel.follow``).

and, for a kernel that ran, its analysis (the compiler's facts and the trace, ``ui/views/analysis.py``):
``analysis-launched`` (the page looked again after drawing the verdict), ``analysis-turn`` (it holds the queue),
``analysis-done`` or ``analysis-failed`` (cancelled or broken), ``analysis-seen`` (the page's next look found it
finished and runs the page again), ``analysis-sent`` (that run drew its panels: the rest is the browser's). A cached
analysis has no turn.

``benchmarks/class_submit.py`` sets it and splits each learner's Submit → verdict into the server's part
(received → kept) and the rest (the press reaching the server, the verdict reaching and being drawn by the
browser). Nothing is written when unset; a write that fails is dropped: a log never stops a judge.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from gpu.core import settings as _settings

_WRITE = threading.Lock()  # one line at a time from the server's threads


def mark(event: str, token: str, learner: str | None, **fields: Any) -> None:
    """Append one milestone of the submission ``token`` (see the module's list), when the log is on."""
    path = _settings.settings().judge_log
    if not path:
        return
    line = json.dumps({"at": time.time(), "event": event, "token": token, "learner": learner, **fields}, default=str)
    with _WRITE:
        try:
            with open(path, "a", encoding="utf-8") as out:
                out.write(line + "\n")
        except OSError:
            pass


def read(path: Path) -> dict[str, dict[str, Any]]:
    """The log by submission: ``{token: {"learner": ..., "status": ..., event: Unix seconds, ...}}``, the first time
    of each event (a malformed line is skipped)."""
    submissions: dict[str, dict[str, Any]] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(raw)
            token, event, at = str(entry["token"]), str(entry["event"]), float(entry["at"])
        except (ValueError, KeyError, TypeError):
            continue
        row = submissions.setdefault(token, {"learner": entry.get("learner")})
        row.setdefault(event, at)
        if "status" in entry:
            row.setdefault("status", entry["status"])
    return submissions


__all__ = ["mark", "read"]
