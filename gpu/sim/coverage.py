"""What one launch exercised: how often each loop of the kernel ran in one thread, and which block shapes ran.

A trace finds a missing barrier between two iterations only where a loop runs at least
twice, and a missing guard only where a block is partial; ``coverage`` measures both for a
launch, so the trace can choose the smallest test that shows them
(gpu/sandbox/trace_child.py: ``default_case``). It runs the launch under ``sys.settrace``,
counting line events of the kernel's own code objects (device functions included) per
thread, so it costs several times a plain launch: meant for a problem's small tests.

- **loops**: for every ``for``/``while`` of the kernel and its device functions, the most
  times one thread ran the first line of its body (0: never reached);
- **shapes**: "full" for a block where every line any of its threads ran, all of its threads
  ran; "partial" for one where some threads skipped a line others ran (a guard at an edge).

A launch is watched for at most ``MAX_LINES`` line events (about a second); past them it is
stopped and what it exercised so far is reported (``cut``). The lab's own solutions take at most
an eighth of that at any test of their problem, but for the register-tiled matmul, whose 128 × 128
tiles on a 15 × 15 or 33 × 33 matrix are mostly padding (cut there); a kernel whose loops never
end would otherwise be watched line by line until the simulator's work limit (2,097,152 turns:
half a minute and more).
"""

from __future__ import annotations

import ast
import linecache
import sys
from dataclasses import dataclass

from gpu.sim import pyast, vector
from gpu.sim.device import STATE
from gpu.sim.errors import KernelFault

MAX_LINES = 1 << 19  # line events watched in one launch (about 2 µs each here: about a second)


class _Enough(Exception):
    """Raised in the kernel's frame by the line tracer once ``MAX_LINES`` events were seen."""


@dataclass(frozen=True)
class Coverage:
    loops: dict  # (file, line of the loop) -> the most iterations one thread ran (0: never reached)
    shapes: frozenset  # {"full", "partial"}
    faulted: bool = False
    cut: bool = False  # stopped after MAX_LINES line events: what ran until then
    lines: int = 0  # the line events watched

    @property
    def loops_twice(self) -> int:
        """How many loops ran at least twice in some thread."""
        return sum(1 for trips in self.loops.values() if trips >= 2)


def _loops(codes) -> dict:
    """(file, loop line) -> the line of the loop body's first statement, for every loop in these functions."""
    out: dict = {}
    names_by_file: dict[str, set[str]] = {}
    for code in codes:
        names_by_file.setdefault(code.co_filename, set()).add(code.co_name)
    for file, names in names_by_file.items():
        text = "".join(linecache.getlines(file))
        try:
            tree = pyast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and fn.name in names:
                for node in ast.walk(fn):
                    if isinstance(node, (ast.For, ast.While)) and node.body:
                        out[(file, node.lineno)] = node.body[0].lineno
    return out


def coverage(kernel, grid, block, args) -> Coverage:
    """Launch ``kernel[grid, block](*args)`` (a ``SimKernel``) and report what it exercised; a fault ends it early."""
    compiled = kernel.compile()
    codes = compiled.codes
    loops = _loops(codes)
    body_lines = {(file, line) for (file, _), line in loops.items()}
    per_thread: dict = {}  # (frame, block, thread) -> {body line: hits}
    per_block: dict = {}  # block -> {(file, line): set of threads}
    t, b, g, d = STATE.threadIdx, STATE.blockIdx, STATE.gridDim, STATE.blockDim
    left = [MAX_LINES]

    def local(frame, event, arg):
        if event == "line":
            left[0] -= 1
            if left[0] < 0:
                raise _Enough
            file, line = frame.f_code.co_filename, frame.f_lineno
            thread = t.x + d.x * (t.y + d.y * t.z)
            blk = b.x + g.x * (b.y + g.y * b.z)
            per_block.setdefault(blk, {}).setdefault((file, line), set()).add(thread)
            if (file, line) in body_lines:
                hits = per_thread.setdefault((id(frame), blk, thread), {})
                hits[(file, line)] = hits.get((file, line), 0) + 1
        return local

    def start(frame, event, arg):
        return local if frame.f_code in codes else None

    faulted = False
    previous = sys.gettrace()
    sys.settrace(start)
    try:
        with vector.per_thread():  # the vectorised tier runs no thread's lines: nothing to watch
            kernel[grid, block](*args)
    except KernelFault as fault:
        faulted = not isinstance(fault.__cause__ or fault.__context__, _Enough)
    except _Enough:
        pass
    finally:
        sys.settrace(previous)
    size = d.x * d.y * d.z
    trips = {key: 0 for key in loops}
    for hits in per_thread.values():
        for key, body in loops.items():
            trips[key] = max(trips[key], hits.get((key[0], body), 0))
    shapes = frozenset(
        "full" if all(len(threads) == size for threads in lines.values()) else "partial"
        for lines in per_block.values()
    )
    return Coverage(loops=trips, shapes=shapes, faulted=faulted, cut=left[0] < 0, lines=MAX_LINES - max(left[0], 0))


__all__ = ["Coverage", "coverage"]
