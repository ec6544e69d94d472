"""Run traces in a fresh child process, never in the caller's.

Why a child: a trace is CPU work that must not hold up the app's sessions (threads of one
process, which the simulator's launch lock would serialise), and on a GPU machine the app's
process uses the real device, while a trace needs a process that simulates, which Numba
fixes at import. The child is ``python -m gpu.trace.child NAME[=N] ...`` with
``NUMBA_ENABLE_CUDASIM=1`` and Kernel Lab's simulator (``KERNEL_LAB_SIMULATOR=lab``, whatever
the app runs); it prints one JSON list, a report or ``{"name", "problem"}`` per request, in order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from gpu.core import settings as _settings
from gpu.core.limits import InputError

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT_S = 120.0  # a lab kernel's trace takes seconds; this bounds a runaway one


class TraceFailed(RuntimeError):
    """The child process did not return reports (timed out or crashed); the message says which."""


def run_in_child(requests: Sequence[tuple[str, int | None]], timeout_s: float = DEFAULT_TIMEOUT_S) -> list:
    """Trace lab kernels ``(name, n or None)`` in one fresh simulator process.

    Returns, per request, a ``TraceReport`` or the text of why it could not be traced
    (an unknown name, a size out of range, saying what is allowed).
    """
    from gpu.trace.report import TraceReport

    args = [name if n is None else f"{name}={int(n)}" for name, n in requests]
    env = {
        **os.environ,
        "NUMBA_ENABLE_CUDASIM": "1",
        _settings.SIMULATOR.name: "lab",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gpu.trace.child", *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        raise TraceFailed(f"the trace took longer than {timeout_s:.0f} s and was stopped") from None
    if proc.returncode != 0:
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        raise TraceFailed(f"the trace process failed (exit {proc.returncode}): {' / '.join(tail) or 'no message'}")
    out = []
    for item in json.loads(proc.stdout):
        out.append(item["problem"] if "problem" in item else TraceReport.from_dict(item))
    return out


def _parse(arg: str) -> tuple[str, str | None]:
    name, _, n = arg.partition("=")
    return name, (n or None)


def main(argv: Sequence[str]) -> int:
    from gpu.trace.lab import trace_lab_kernel

    results = []
    for arg in argv:
        name, n = _parse(arg)
        try:
            results.append(trace_lab_kernel(name, n).to_dict())
        except InputError as exc:
            results.append({"name": name, "problem": str(exc)})
    json.dump(results, sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
