"""``python -m gpu trace KERNEL-OR-FILE [--problem P] [--n N] [--json]``: the memory trace from the shell.

Exit 0 when the trace is clean, 1 when it finds a race, an out-of-bounds access or
barrier divergence (each printed with its thread and line), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpu.core.limits import InputError

FILE_REFUSED = ("tracing a file needs the write-a-kernel page's checker and sandbox (issue 20), which this build "
                "does not have; an unchecked file is never run. Trace one of the lab's kernels by name instead "
                "(python -m gpu trace --list).")


def add_trace_command(sub) -> None:
    """Register the ``trace`` subcommand on the CLI's subparsers."""
    p = sub.add_parser("trace", help="record every memory access of a kernel in the simulator: races, out-of-bounds, "
                                     "barrier divergence, sectors per request, bank conflicts",
                       description="Run a kernel at a small size in Numba's CUDA simulator with every global and shared "
                                   "memory access recorded. Exit 0 when clean, 1 on a race, an out-of-bounds access or "
                                   "barrier divergence, 2 for bad input.")
    p.add_argument("target", nargs="?", help="a lab kernel (e.g. transpose-naive; see --list) or a learner's .py file (with --problem)")
    p.add_argument("--problem", default=None, help="the write-a-kernel problem a .py file solves")
    p.add_argument("--n", default=None, help="problem size (default: the kernel's small trace size)")
    p.add_argument("--list", action="store_true", help="list the lab's kernels and exit")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_trace)


def cmd_trace(args: argparse.Namespace) -> int:
    from gpu.core.backend import BACKEND
    from gpu.trace.lab import find, lab_kernels, trace_lab_kernel

    if args.list:
        for k in lab_kernels():
            print(f"{k.name:<24} {k.title}" + (f"  (cannot be traced: {k.skip})" if k.skip else ""))
        return 0
    if not args.target:
        raise InputError("trace needs a kernel name (python -m gpu trace --list shows them) or a .py file with --problem")
    target = args.target
    if target.endswith(".py") or Path(target).is_file():
        if not args.problem:
            raise InputError(f"{target} looks like a file: a learner's kernel is traced against its problem, add --problem P")
        raise InputError(FILE_REFUSED)
    if args.problem:
        raise InputError("--problem goes with a .py file; a lab kernel has its own inputs")
    kernel = find(target)  # InputError naming the choices
    if kernel.skip:
        raise InputError(f"{target} cannot be traced: it {kernel.skip}. Its GPU steps are measured on the Kernels page.")
    n = None if args.n is None else kernel.check_n(args.n)
    if BACKEND.simulated:
        report = trace_lab_kernel(target, n)
    else:  # this process has the real GPU; the simulator needs a process of its own
        from gpu.trace.child import run_in_child

        report = run_in_child([(target, n)])[0]
        if isinstance(report, str):
            raise InputError(report)
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(report)
    return 1 if report.problems else 0
