"""``python -m gpu trace KERNEL-OR-FILE [--problem P [--test NAME]] [--n N] [--json]``: the memory trace from the shell.

Exit 0 when the trace is clean, 1 when it finds a race, an out-of-bounds access or
barrier divergence (each printed with its thread and line), 2 for bad input or a
refusal (an unreadable, huge or non-UTF-8 file, a FIFO, the checker refusing, or failing,
on the source, the sandbox's limits), 3 when the lab itself failed (``gpu.__main__``:
one line, never a traceback; never 1, which means a finding). A lab
kernel is traced in this process when it runs the simulator (else in a child that
does); a learner's file (with ``--problem``) only after the write-a-kernel checker
passed it, in that sandbox's child process (``gpu.sandbox.trace_submission``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from gpu.core.jsonout import print_json
from gpu.core.limits import InputError
from gpu.core.safe_text import shown
from gpu.trace import MAX_TRACE_WORK


def add_trace_command(sub, trace_file: Callable[[str, str, bool, str | None], int] | None = None) -> None:
    """Register the ``trace`` subcommand on the CLI's subparsers.

    ``trace_file(path, problem, as_json, test)`` traces a learner's file: the sandbox's
    (gpu/sandbox/cli.py), handed in by the CLI so the trace, which the sandbox uses, never
    imports it."""
    p = sub.add_parser(
        "trace",
        help="record every memory access of a kernel in the simulator: races, out-of-bounds, "
        "barrier divergence, sectors per request, bank conflicts",
        description="Run a kernel at a small size in Kernel Lab's CUDA simulator with every global and shared "
        "memory access recorded. Exit codes: 0 clean, 1 a race, an out-of-bounds access or "
        "barrier divergence, 2 refused (bad input, or a learner's file the checker refuses), "
        "3 the lab itself failed (not your code).",
    )
    p.add_argument(
        "target",
        nargs="?",
        help="a lab kernel (e.g. transpose-naive; see --list) or a learner's .py file (with --problem)",
    )
    p.add_argument("--problem", default=None, help="the write-a-kernel problem a .py file solves")
    p.add_argument(
        "--test",
        default=None,
        help="with --problem: the name of the problem's functional test to trace, which sets the size "
        "(default: the smallest where every loop runs twice and full and partial blocks appear; python -m gpu "
        "problems shows the tests)",
    )
    p.add_argument(
        "--n",
        default=None,
        help=f"the traced size N (default: the kernel's small trace size); its work (N, N × N or N³) may be at most "
        f"{MAX_TRACE_WORK:,}: --list gives each kernel's largest N",
    )
    p.add_argument("--list", action="store_true", help="list the lab's kernels and exit")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_trace, trace_file=trace_file)


def cmd_trace(args: argparse.Namespace) -> int:
    from gpu.core.backend import BACKEND
    from gpu.trace.lab import find, lab_kernels, trace_lab_kernel

    if args.list:
        for k in lab_kernels():
            print(f"{k.name:<24} {k.title}  (N: {k.default_n:,} by default, at most {k.max_n:,})")
        return 0
    if not args.target:
        raise InputError(
            "trace needs a kernel name (python -m gpu trace --list shows them) or a .py file with --problem"
        )
    target = args.target
    if target.endswith(".py") or Path(target).is_file():
        if not args.problem:
            raise InputError(
                f"{target} looks like a file: a learner's kernel is traced against its problem, add --problem P "
                "(python -m gpu problems lists them)"
            )
        if args.n is not None:
            raise InputError(
                "--n goes with a lab kernel; a learner's file is traced at one of its problem's test sizes "
                "(choose it with --test NAME)"
            )
        if args.trace_file is None:
            raise InputError("tracing a learner's file needs the sandbox, which this command was built without")
        return args.trace_file(target, args.problem, args.json, args.test)
    if args.problem:
        raise InputError("--problem goes with a .py file; a lab kernel has its own inputs")
    if args.test is not None:
        raise InputError("--test goes with a .py file and --problem; a lab kernel's size is --n N")
    kernel = find(target)  # InputError naming the choices
    n = None if args.n is None else kernel.check_n(args.n)
    if BACKEND.simulated:
        report = trace_lab_kernel(target, n)
    else:  # this process has the real GPU; the simulator needs a process of its own
        from gpu.trace.child import run_in_child

        report = run_in_child([(target, n)])[0]
        if isinstance(report, str):
            raise InputError(report)
    return emit(report, args.json)


def emit(report, as_json: bool) -> int:
    if as_json:
        print_json(report.to_dict())
    else:
        print(shown(str(report), newlines=True))  # the one output gate: quoted source lines and names escaped
    return 1 if report.problems else 0
