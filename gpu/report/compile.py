"""``python -m gpu compile``: every kernel's facts from the real compiler, per target.

Registers per thread, spill stores and loads, static shared memory, stack frame and the
theoretical occupancy at the block size the experiment launches with, for each kernel of
gpu/ (gpu/catalog/kernel_index.py) and each target (gpu/core/arch.py), compiled by NVVM +
ptxas (gpu/core/compiler.py). Works without a GPU. Exit 1 when any kernel is rejected by the
compiler (FAILS) or could not be compiled here (UNAVAILABLE: a toolkit part is missing, which
says nothing about the kernel; ``make run`` installs the compiler wheels).
"""

from __future__ import annotations

import argparse

from gpu.catalog.kernel_index import find_kernels, kernel_named
from gpu.core.arch import TARGETS, target_named
from gpu.core.compiler import (
    GET_THE_COMPILER,
    CompileFacts,
    available_targets,
    compile_many,
    first_line,
    toolkit,
)
from gpu.core.jsonout import print_json
from gpu.core.limits import InputError

STATIC_FACTS = "static facts from the compiler, not measurements"


def add_command(sub) -> None:
    """Register the ``compile`` subcommand on the CLI's subparsers."""
    p = sub.add_parser(
        "compile",
        help="every kernel compiled by NVVM + ptxas per target: registers, spills, shared memory, occupancy (no GPU "
             "needed)",
    )
    p.add_argument(
        "--kernel",
        action="append",
        default=None,
        metavar="NAME",
        help="only this kernel (function name); repeat for several",
    )
    p.add_argument(
        "--target",
        action="append",
        default=None,
        metavar="SM",
        help="only this target, e.g. sm_90 or 9.0; repeat for several (default: every target this ptxas knows, of "
             f"{', '.join(TARGETS)})",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--code", action="store_true", help="with --json: include each kernel's PTX and SASS (nvdisasm: slower)"
    )
    p.set_defaults(func=run_command)


def facts_for(kernel_names: list[str] | None, target_names: list[str] | None, sass: bool = False) -> list[CompileFacts]:
    """Facts for the chosen kernels (default all) and targets (default all available)."""
    try:
        kernels = [kernel_named(n) for n in kernel_names] if kernel_names else list(find_kernels())
        targets = [target_named(t) for t in target_names] if target_names else available_targets()
    except ValueError as exc:
        raise InputError(str(exc)) from None
    requests = [r for k in kernels for r in k.requests()]
    return compile_many(requests, targets, sass=sass)


def to_json(facts: list[CompileFacts], code: bool = False) -> dict:
    tools = toolkit()
    return {
        "compiler": f"NVVM/ptxas {tools.version}" if tools.version else None,
        "toolkit_problem": tools.problem,
        "sass": tools.sass_note or "nvdisasm (with --code)",
        "note": STATIC_FACTS,
        "targets": [TARGETS[t].to_dict() for t in dict.fromkeys(f.target for f in facts)],
        "ok": all(f.ok for f in facts),
        "failed": sum(not f.ok for f in facts),
        "rejected": sum(f.rejected for f in facts),
        "unavailable": sum(f.unavailable for f in facts),
        "kernels": [f.to_dict(code=code) for f in facts],
    }


def table(facts: list[CompileFacts]) -> str:
    """One line per kernel, signature and target."""
    tools = toolkit()
    lines = [f"Compiled here by NVVM/ptxas {tools.version or '?'} — {STATIC_FACTS}."]
    header = (
        f"{'kernel':<30} {'target':<7} {'regs':>5} {'spilled B':>9} {'shared B':>9} {'stack B':>7} {'occupancy':>17}"
    )
    for target in dict.fromkeys(f.target for f in facts):
        lines += ["", TARGETS[target].label, header]
        for f in (f for f in facts if f.target == target):
            if f.unavailable:
                what = f"{f.missing} is not installed" if f.missing else f"could not run: {first_line(f.error)}"
                lines.append(f"{f.kernel:<30} {f.target:<7} UNAVAILABLE: {what[:120]}")
                continue
            if not f.ok:
                lines.append(f"{f.kernel:<30} {f.target:<7} FAILS: {first_line(f.error)[:120]}")
                continue
            occ = f"{f.occupancy.percent} at {f.threads_per_block}" if f.occupancy else "—"
            lines.append(
                f"{f.kernel:<30} {f.target:<7} {f.registers_per_thread:>5} {f.spill_stores_bytes:>9,} "
                f"{f.shared_memory_bytes:>9,} {f.stack_frame_bytes:>7,} {occ:>17}"
            )
    failed = sum(f.rejected for f in facts)
    unavailable = sum(f.unavailable for f in facts)
    compiled = len(facts) - failed - unavailable
    lines += [
        "",
        f"{compiled} of {len(facts)} compiled"
        + (f"; {failed} failed" if failed else "")
        + (f"; {unavailable} unavailable (the compiler could not run here: that says nothing about the kernels; "
           f"{GET_THE_COMPILER})" if unavailable else ""),
    ]
    return "\n".join(lines)


def run_command(args: argparse.Namespace) -> int:
    facts = facts_for(args.kernel, args.target, sass=args.json and args.code)
    if args.json:
        print_json(to_json(facts, code=args.code))
    else:
        print(table(facts))
    return 0 if facts and all(f.ok for f in facts) else 1


__all__ = ["STATIC_FACTS", "add_command", "facts_for", "run_command", "table", "to_json"]
