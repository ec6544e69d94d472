"""A class at once: Submit -> verdict latency when 16 browsers press Run together on one demo server.

    .venv/bin/python benchmarks/class_submit.py --repeats 2

Each repeat starts a fresh `make demo` server (tests/classroom.py: the demo's flags, a throwaway
database and lock folder, KERNEL_LAB_SUBMIT_WALL_S and _MEMORY_MB lowered), opens 16 chromium
contexts on Write a kernel (8 correct, 4 wrong, 2 never-ending — one stopped by the simulator's loop limit, one, a
loop of long loops, by its work limit — and 2 with a shift past 63 places, undefined in Numba),
presses Run in all of them together and times, in each page, from its press to its verdict drawn.
Home is loaded every few seconds meanwhile, each time in a new tab of a visitor's browser that opened the
lab once before the class (its first, cold load is reported apart). Prints the latencies per kind, p50 and
p95 over every submission, and writes benchmarks/class_submit.md. ``--wall-clock-kernel`` swaps the loop of long
loops for a kernel only the wall clock stops (its every turn long too: tests/classroom.py, RUNS_TOO_LONG).
``--busy N`` runs N busy loops (plain Python, at the benchmark's own priority) beside each repeat, from its server's
start to its end: a stand-in for a machine with N cores' worth of other work on it.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOME_TARGET_S = 2.0  # the class issue's target for every load of Home while a class submits
FACTS_TARGET_S = 20.0  # the class issue's bound: a kernel's facts and trace within 20 s of its verdict, or why not
WALL_LIMITED = ("time-limit",)  # kinds whose verdict cannot come before the wall-clock limit
sys.path.insert(0, str(ROOT))

from tests.classroom import (  # noqa: E402
    CLASS,
    LEARNERS_NICENESS,
    MEMORY_MB,
    VISITOR_NICENESS,
    WALL_S,
    analysis_splits,
    chromium,
    demo_server,
    kinds_summary,
    leaderboard_names,
    machine,
    percentile,
    run_class,
    splits,
    tmpdir,
)


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """``count`` processes that only spin, for as long as the block runs: other work on the machine."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "class_submit.md")
    parser.add_argument("--wall-clock-kernel", action="store_true",
                        help="the nested kernel swapped for one only the wall clock stops (kind time-limit)")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="N busy loops beside each repeat (other work on the machine)")
    args = parser.parse_args()
    kinds = [("time-limit" if kind == "nested" else kind) for kind in CLASS] if args.wall_clock_kernel else CLASS
    before = machine()
    by_kind: dict[str, list[float]] = {}
    every: list[float] = []
    rows = []
    home: list[float] = []
    undrawn = 0  # loads of Home not drawn within 30 s
    cold: list[float | None] = []
    analysis: list[tuple[str, float, str]] = []  # (kind, seconds from verdict, "facts and trace" or "said why not")
    parts: list = []  # each submission's Split (tests/classroom.py): to the server, on the server, to the screen
    ending: list[float] = []  # Submit → verdict of every kernel but the one only the wall clock stops
    analysis_parts: list = []  # each analysis's AnalysisSplit (tests/classroom.py)
    for repeat in range(args.repeats):
        with (
            busy_loops(args.busy),
            demo_server(tmpdir()) as server,
            chromium(LEARNERS_NICENESS, VISITOR_NICENESS) as (browser, home_browser),
        ):
            started = time.perf_counter()
            run = run_class(browser, server.url, kinds=kinds, home_browser=home_browser)
            names = leaderboard_names(server.db)
            split = splits(run.learners, server.judge_log)
            analysed = analysis_splits(run.learners, server.judge_log)
        passing = sorted(lr.name for lr in run.learners if lr.kind == "correct")
        lat = [lr.latency_s for lr in run.learners if lr.latency_s is not None]
        print(f"repeat {repeat + 1}: {len(lat)}/{len(run.learners)} verdicts, presses spread {run.spread_s:.2f} s, "
              f"last verdict {run.wall_s:.1f} s after the first press, Home {worst(run):.2f} s at worst, "
              f"leaderboard {'exactly the passing rows' if sorted(names) == passing else names} "
              f"({time.perf_counter() - started:.0f} s with setup)")
        for lr in run.learners:
            queue = [q.split(' — ')[0] for q in lr.queued]
            after = f"+{lr.analysis_s:.1f} s {lr.analysis}" if lr.analysis_s is not None else ""
            if lr.name in split:
                sp = split[lr.name]
                after += f" [to server {sp.to_server_s:.1f}, server {sp.server_s:.1f}, to screen {sp.to_screen_s:.1f}]"
            print(f"  {lr.name:26s} {lr.latency_s if lr.latency_s is not None else float('nan'):6.1f} s  "
                  f"{verdict_line(lr.verdict)}  {after} | {'; '.join(queue[:2])}{' ...' if len(queue) > 2 else ''}")
            if lr.latency_s is not None:
                by_kind.setdefault(lr.kind, []).append(lr.latency_s)
                every.append(lr.latency_s)
            if lr.name in split:
                parts.append(split[lr.name])
                if lr.kind not in WALL_LIMITED:
                    ending.append(lr.latency_s)
            if lr.analysis_s is not None:
                analysis.append((lr.kind, lr.analysis_s, lr.analysis))
            if lr.name in analysed:
                analysis_parts.append(analysed[lr.name])
        home += run.home_drawn
        undrawn += len(run.home_s) - len(run.home_drawn)
        cold.append(run.home_cold_s)
        rows.append((repeat + 1, run.spread_s, run.wall_s, worst(run), home_loads(run), sorted(names) == passing))
    after = machine()
    lines = [
        "# A class at once: Submit → verdict on one demo server",
        "",
        f"Command: `.venv/bin/python benchmarks/class_submit.py --repeats {args.repeats}"
        + (" --wall-clock-kernel" if args.wall_clock_kernel else "") + (f" --busy {args.busy}" if args.busy else "")
        + "` "
        "(in a checkout with `make test`'s setup).",
        "",
        f"Machine: {platform.node() or 'this host'}, {platform.machine()}, {before} before, {after} after; "
        "the CUDA simulator (no GPU), bubblewrap sandbox, one chromium with 16 contexts on the same machine "
        f"as the server, at niceness {LEARNERS_NICENESS} (standing in for the learners' own machines), and a "
        f"second chromium for Home at niceness {VISITOR_NICENESS} (a visitor's own machine; both set for the "
        "browser's session too, tests/classroom.py)"
        + (f"; {args.busy} busy loop{'s' if args.busy != 1 else ''} beside each repeat, at the benchmark's own "
           "priority (other work on the machine)." if args.busy else "."),
        "",
        f"Scenario (tests/classroom.py; `make test`'s tests/test_browser_class.py runs 8 of these browsers): one "
        "`make demo` server, 16 browsers on Write a kernel, each with its own name (picked in the sidebar), press Run "
        f"within a moment: {kinds_summary(kinds)}. "
        "Each kernel that ran then gets its compiler facts and trace in the background, timed from its verdict to "
        "their panels drawn (or to the page saying why not). Limits lowered for the run: "
        f"KERNEL_LAB_SUBMIT_WALL_S={WALL_S:g}, KERNEL_LAB_SUBMIT_MEMORY_MB={MEMORY_MB}. Latency is timed in each "
        "page, from its Run press to its verdict drawn.",
        "",
        f"**Submit → verdict over {len(every)} submissions: p50 {percentile(every, 0.5):.1f} s, "
        f"p95 {percentile(every, 0.95):.1f} s** (max {max(every):.1f} s). Home loaded in {max(home):.2f} s at "
        f"worst ({len(home)} loads from the presses on, each a new tab and a new session of a visitor's browser that "
        f"had opened the lab once before; median {percentile(home, 0.5):.2f} s). That first visit, cold, before "
        f"the class: {cold_text(cold)} (mostly the browser compiling Streamlit's scripts). "
        f"Target: under {HOME_TARGET_S:g} s throughout — "
        + ("met" if home and max(home) < HOME_TARGET_S and not undrawn else
           f"NOT met ({sum(1 for h in home if h >= HOME_TARGET_S)} loads at or over it, {undrawn} not drawn in 30 s)")
        + ".",
        "",
        split_lines(parts, ending, len(every)),
        "",
        analysis_line(analysis) + " " + analysis_split_line(analysis_parts),
        "",
        "| Kind | Submissions | p50 (s) | p95 (s) | min (s) | max (s) |",
        "|---|---|---|---|---|---|",
    ]
    for kind, values in by_kind.items():
        lines.append(f"| {kind} | {len(values)} | {percentile(values, 0.5):.1f} | {percentile(values, 0.95):.1f} | "
                     f"{min(values):.1f} | {max(values):.1f} |")
    lines += ["", "| Repeat | Presses spread (s) | Last verdict after (s) | Home worst (s) | Home's loads in order (s) "
              "| Leaderboard exact |", "|---|---|---|---|---|---|"]
    lines += [f"| {r} | {s:.2f} | {w:.1f} | {h:.2f} | {loads} | {'yes' if ok else 'NO'} |"
              for r, s, w, h, loads, ok in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)
    return 0


def split_lines(parts: list, ending: list[float], submissions: int) -> str:
    """Where the seconds went, from the server's judge log (``KERNEL_LAB_JUDGE_LOG``) and the pages' clocks; and
    Submit → verdict of every kernel but those only the wall clock stops (whose verdict cannot come before it)."""
    if not parts:
        return "The server's judge log recorded no submission from press to verdict."
    server = [p.server_s for p in parts]
    reach = [p.to_server_s for p in parts]
    draw = [p.to_screen_s for p in parts]
    text = (
        f"**Where the seconds went** ({len(parts)} of {submissions} submissions; the server's judge log, "
        "`KERNEL_LAB_JUDGE_LOG`, on the same clock as the pages): the press reaching the server p50 "
        f"{percentile(reach, 0.5):.1f} s (max {max(reach):.1f} s); **on the server, press received → verdict kept "
        f"by the page: p50 {percentile(server, 0.5):.1f} s, p95 {percentile(server, 0.95):.1f} s**; the verdict "
        f"reaching its browser and drawn there p50 {percentile(draw, 0.5):.1f} s (max {max(draw):.1f} s; 16 pages "
        "drawing on the server's own 2 cores at the lowest share)."
    )
    if ending and len(ending) < len(parts):
        text += (f" Submit → verdict of the {len(ending)} kernels not stopped by the wall clock (the one that is "
                 f"cannot have its verdict before its {WALL_S:g} s limit): p50 {percentile(ending, 0.5):.1f} s, "
                 f"p95 {percentile(ending, 0.95):.1f} s.")
    return text


def home_loads(run) -> str:
    """Each load of Home from the presses on, in order (one every ``home_every_s``, the first at the presses, the last
    after the last verdict): which moment of the class a slow one met."""
    return ", ".join("not drawn" if h is None else f"{h:.2f}" for h in run.home_s)


def cold_text(cold: list[float | None]) -> str:
    return ", ".join("not drawn in 30 s" if c is None else f"{c:.2f} s" for c in cold)


def worst(run) -> float:
    """Home's slowest load in one class; infinite when a load was not drawn within 30 s."""
    return float("inf") if len(run.home_drawn) < len(run.home_s) else max(run.home_drawn)


def analysis_line(analysis: list[tuple[str, float, str]]) -> str:
    """The compiler's facts and the trace after each verdict of a kernel that ran: when they arrived, or when the page
    said why not (its bound, ui/views/analysis.py)."""
    if not analysis:
        return "No page recorded its compiler facts and trace."
    arrived = [s for _, s, how in analysis if how == "facts and trace"]
    said = [s for _, s, how in analysis if how != "facts and trace"]
    first = next(((s, how) for kind, s, how in analysis if kind == "correct"), None)
    text = (f"**Compiler facts and trace after the verdict** ({len(analysis)} kernels that ran): "
            f"{len(arrived)} arrived" + (f" (p50 {percentile(arrived, 0.5):.1f} s, max {max(arrived):.1f} s; "
                                         f"{sum(s <= FACTS_TARGET_S for s in arrived)} within {FACTS_TARGET_S:.0f} s)"
                                         if arrived else "")
            + f", {len(said)} said why not at the page's bound" + (f" ({max(said):.1f} s at most)" if said else ""))
    if first is not None:
        text += f"; the first correct answer's: {first[1]} {first[0]:.1f} s after its verdict"
    return text + "."


def analysis_split_line(parts: list) -> str:
    """Where the analyses' seconds went, from the judge log's ``analysis-*`` events and the pages' clocks."""
    if not parts:
        return "The server's judge log recorded no analysis from launch to done."

    def spread(part: str) -> str:  # over the analyses that have this part
        values = [getattr(p, part) for p in parts if getattr(p, part) is not None]
        return f"p50 {percentile(values, 0.5):.1f} s, max {max(values):.1f} s" if values else "none"

    cached = sum(1 for p in parts if p.queued_s is None)
    return (
        f"Where their seconds went ({len(parts)} analyses in the judge log): the verdict kept → the analysis "
        f"launched (the page looked again) {spread('seen_s')}; launched → its turn in the queue "
        f"{spread('queued_s')} ({cached} served from the caches without a turn); its turn → done "
        f"{spread('work_s')}; done → its panels drawn {spread('to_screen_s')} (done → the page's next look found "
        f"it {spread('looked_s')}; → the page's rerun had drawn its panels on the server {spread('rerun_s')}; → the "
        f"browser showed them {spread('browser_s')})."
    )


def verdict_line(text: str) -> str:
    for line in text.splitlines():
        if line.startswith(("Passed:", "Wrong result:", "Refused (", "Could not finish:")):
            return line[:70]
    return "(no verdict)"


if __name__ == "__main__":
    raise SystemExit(main())
