"""The command line of "Write a kernel": ``problems``, ``solve`` and the admin's ``submissions``.

``python -m gpu solve PROBLEM FILE [--json]`` exits 0 when every test passes, 1 when a
result is wrong (or the kernel raised), 2 when the submission is refused (a bad problem
name, an unreadable file, the checker, or the sandbox's limits), 3 when the lab itself
failed (not the learner's code). Never a traceback. The same ``gpu.sandbox.service.submit``
as the page: the verdict, the compiler's facts (simulator) and the memory trace's findings.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys

from gpu.core.jsonout import print_json
from gpu.core.limits import InputError
from gpu.core.safe_text import shown

MAX_FILE_BYTES = 1 << 20


_json = print_json
EXIT_CODES_HELP = "exit 0 passed, 1 wrong, 2 refused, 3 the lab itself failed"


def read_kernel_file(path: str) -> str:
    """A learner's file as text: a regular file (never a FIFO or a device, which could block or never end), read up
    to ``MAX_FILE_BYTES`` (never more into memory), UTF-8. InputError (exit 2) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"{path} is not a regular file; give the path of a .py file")
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, MAX_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > MAX_FILE_BYTES:
        raise InputError(f"{path} is over {MAX_FILE_BYTES:,} bytes; a kernel file is far smaller")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text") from None


def trace_lines(report) -> list[str]:
    """The trace's findings under a verdict: the headline, then each race, out-of-bounds access and divergence."""
    if report is None:
        return []
    if isinstance(report, str):
        return [f"  trace: {report}"]
    lines = [f"  trace: {report.headline()} ({report.label}; {report.blocks_traced:,} of "
             f"{report.blocks_total:,} blocks, {report.accesses:,} accesses)"]
    if report.error:
        lines.append(f"    error: {report.error}")
    lines += [f"    {finding}" for finding in (*report.races, *report.out_of_bounds, *report.divergence)]
    return lines


def trace_json(report) -> dict | None:
    if report is None:
        return None
    if isinstance(report, str):
        return {"traced": False, "reason": report}
    findings = [str(f) for f in (*report.races, *report.out_of_bounds, *report.divergence)]
    return {"traced": True, "headline": report.headline(), "problems": report.problems, "label": report.label,
            "findings": findings, "error": report.error}


def trace_file(path: str, problem: str, as_json: bool, test: str | None = None) -> int:
    """``gpu trace FILE --problem P``: a learner's file, read (capped, UTF-8), checked by the
    sandbox's checker, traced in its sandboxed child."""
    from gpu.sandbox.trace_submission import trace_submission
    from gpu.trace.cli import emit

    source = read_kernel_file(path)  # a regular file, capped, UTF-8: else InputError (exit 2)
    report = trace_submission(problem, source, test=test)
    if isinstance(report, str):  # refused by the checker, or stopped by the sandbox's limits
        raise InputError(f"{path}: {report}")
    return emit(report, as_json)


def cmd_problems(args: argparse.Namespace) -> int:
    from gpu.problems import problems

    if args.json:
        _json({"problems": [p.summary() for p in problems()]})
        return 0
    for p in problems():
        launch = "threads per block of your choice" if p.thread_choices else "fixed launch"
        print(f"{p.order:>2}. {p.key:<12} {p.title:<26} {p.signature:<30} {launch}")
    print("Solve one: python -m gpu solve PROBLEM FILE.py  (the starter: python -m gpu problems --starter PROBLEM)")
    return 0


def cmd_starter(key: str) -> int:
    from gpu.problems import get

    sys.stdout.write(get(key).starter)
    return 0


def format_verdict(verdict, saved_id: str | None = None, save_problem: str | None = None, trace=None) -> list[str]:
    """The terminal lines of a verdict: a header, one line per test, timing or compiler facts, the trace's findings,
    the first mismatch."""
    from gpu.core.timing import format_seconds
    from gpu.sandbox.verdict import mismatch_text

    if verdict.status == "refused":
        return [verdict.message]
    lines = [f"{verdict.problem}: {verdict.status.upper()} — {verdict.message} (sandbox: {verdict.sandbox or 'none'})"]
    for t in verdict.tests:
        sizes = ", ".join(f"{k} = {v:,}" for k, v in t["sizes"].items())
        lines.append(
            f"  {'pass' if t['passed'] else 'FAIL'}  {t['name']} ({sizes}){'' if t['passed'] else ': ' + t['message']}"
            + (f" [simulator tier: {t['tier']}]" if t.get("tier") else "")
        )
    timing = verdict.timing
    if timing:
        ratio = timing.get("ratio_to_reference")
        lines.append(
            f"  time {format_seconds(timing['median_s'])} (median of {timing['samples']}), {timing['gbps']:,.1f} GB/s"
            + (
                f", {timing['percent_of_peak']:.0f}% of the {timing['peak_gbps']:,.0f} GB/s peak"
                if timing.get("percent_of_peak")
                else ""
            )
            + (f", {timing['gflops']:,.1f} GFLOP/s" if timing.get("gflops") else "")
            + (f", {ratio:.2f}x the lab's kernel's time" if ratio else "")
        )
        if timing.get("faster_than_roof"):
            lines.append(
                "  flagged: faster than the memory roof allows for the bytes this problem must move — not ranked"
            )
    elif verdict.backend == "simulator" and verdict.status != "error":
        lines.append("  simulator: correctness only, no timing (simulated time is not GPU performance)")
    if verdict.compile_facts_note and verdict.status != "error":
        lines.append(f"  compiler: {verdict.compile_facts_note}")
    if verdict.status in ("passed", "wrong"):
        lines += trace_lines(trace)
    lines += [f"  note: {note}" for note in getattr(verdict, "notes", None) or ()]
    if verdict.mismatch:
        m = verdict.mismatch
        lines.append(f"first mismatch: test {m['test']!r}: {mismatch_text(m)}")
    if saved_id:
        lines.append(f"saved as submission {saved_id[:8]}" + ("" if verdict.ranked else " (not ranked)"))
    elif save_problem:
        lines.append(f"not saved: {save_problem}")
    return lines


def cmd_solve(args: argparse.Namespace) -> int:
    from gpu.core.backend import BACKEND
    from gpu.sandbox.service import submit
    from gpu.sandbox.verdict import EXIT_LAB_FAILED

    source = read_kernel_file(args.file)
    try:
        result = submit(
            args.problem, source, name=args.name, save=not args.no_save, facts=not args.no_facts,
            trace=not args.no_trace,
        )
    except InputError:
        raise
    except Exception as exc:  # the contract: one line, never a harness traceback
        text = " ".join(str(exc).split())[:300]
        print(shown(f"error: the lab itself failed before a verdict (not your code): {type(exc).__name__}: {text}"),
              file=sys.stderr)
        return EXIT_LAB_FAILED
    verdict = result.verdict
    if args.json:
        _json({**verdict.to_dict(), "exit_code": verdict.exit_code, "saved_id": result.saved_id,
               "trace": trace_json(result.trace)})
    else:
        if BACKEND.simulated and verdict.status != "refused":
            from gpu.core.provenance import SIMULATOR_WARNING as SIMULATOR_LINE

            print(SIMULATOR_LINE)
        # The one output gate: a learner's text (a quoted line, a name, a message) reaches the terminal escaped.
        print(shown("\n".join(format_verdict(verdict, result.saved_id, result.save_problem, result.trace)),
                    newlines=True))
    return verdict.exit_code


def cmd_submissions(args: argparse.Namespace) -> int:
    from gpu.sandbox.submissions import SubmissionStore
    from gpu.service.store import StoreError

    store = SubmissionStore()
    if args.action == "delete":
        if not args.ids:
            raise InputError("submissions delete needs the id(s) to delete: python -m gpu submissions delete ID --yes")
        if not args.yes:
            raise InputError(
                "submissions delete removes leaderboard entries for every user of this machine; add --yes to confirm"
            )
        try:
            deleted = store.delete(args.ids)
        except StoreError as exc:
            raise InputError(str(exc)) from None
        print(f"deleted {deleted} submission{'s' if deleted != 1 else ''} from {store.path}")
        return 0
    entries = store.leaderboard(args.problem) if args.problem else store.all()
    if args.json:
        _json({"database": str(store.path), "submissions": [e.to_dict() for e in entries]})
        return 0
    print(f"{len(entries)} submission{'s' if len(entries) != 1 else ''} in {store.path}")
    for e in entries:
        time = f"{e.median_s * 1e6:,.1f} µs" if e.median_s else "not timed"
        print(shown(
            f"{e.id[:8]}  {e.created_at}  {e.problem:<12} {e.device:<28} {e.name:<20} "
            f"{time}{'' if e.ranked else '  (not ranked)'}"
        ))
    return 0


def register(sub) -> None:
    """Add ``problems``, ``solve`` and ``submissions`` to the CLI's subcommands."""
    p = sub.add_parser("problems", help="the Write-a-kernel problem set")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--starter", metavar="PROBLEM", default=None, help="print one problem's starter code")
    p.set_defaults(func=lambda a: cmd_starter(a.starter) if a.starter else cmd_problems(a))

    p = sub.add_parser(
        "solve",
        help=f"check, run and time your kernel for a problem ({EXIT_CODES_HELP})",
        description="Check your kernel, run it on fresh inputs against NumPy (on a GPU: time it), and trace its "
        "memory accesses, in a sandbox. Exit codes: 0 passed, 1 a wrong result (or the kernel raised), 2 refused "
        "(bad input, the checker, the sandbox's limits), 3 the lab itself failed (not your code). A race the trace "
        "finds is printed but does not change the exit code (`python -m gpu trace FILE --problem P` exits 1 on it).",
    )
    p.add_argument("problem", help="the problem's name, e.g. vector-add (see `python -m gpu problems`)")
    p.add_argument("file", help="your kernel, a .py file")
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.add_argument("--name", default=None, help="your name on the leaderboard (default: anonymous)")
    p.add_argument("--no-save", action="store_true", help="do not save a passing submission")
    p.add_argument(
        "--no-facts",
        action="store_true",
        help="simulator: skip the real compiler's registers/spills/occupancy (a few seconds)",
    )
    p.add_argument("--no-trace", action="store_true", help="skip the memory trace (races, out-of-bounds accesses)")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("submissions", help="list saved submissions; admin: `submissions delete ID --yes`")
    p.add_argument("action", nargs="?", choices=("list", "delete"), default="list")
    p.add_argument("ids", nargs="*", help="delete: submission ids or unique prefixes")
    p.add_argument("--problem", default=None, help="list: this problem's leaderboard")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--yes", action="store_true", help="confirm the deletion")
    p.set_defaults(func=cmd_submissions)


__all__ = ["format_verdict", "read_kernel_file", "register", "trace_json", "trace_lines"]
