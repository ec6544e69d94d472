"""Where a class's CPU goes: the class of benchmarks/class_submit.py once, every process's CPU read from /proc.

    .venv/bin/python benchmarks/class_submit.py --repeats 2   # the latencies (benchmarks/class_submit.md)
    .venv/bin/python benchmarks/class_cpu.py                  # this: the CPU behind them, by process and phase

Every process's user + system time is read from /proc every 0.5 s and counted by what the process is (``KINDS``:
the learners' Chromium renderers and its other processes, the sandboxed judges (spares included), the analyses,
their compile workers, the Streamlit server, the rest) and by the phase of the class its time fell in: the 16 pages
loading and typing, the first press to the middle verdict (the p50 learner's), from there to the last verdict, and
after it (the compiler's facts and trace, and the benchmark reading the pages). On two cores the phases from the
first press to the last verdict are what the Submit → verdict figures are made of. Linux only (/proc); it prints a
table and writes nothing.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.classroom import (  # noqa: E402
    CLASS,
    LEARNERS_NICENESS,
    VISITOR_NICENESS,
    chromium,
    demo_server,
    machine,
    run_class,
    tmpdir,
)

TICK = os.sysconf("SC_CLK_TCK")
KINDS = ("Chromium renderers", "Chromium, other", "judges", "analyses", "compile workers", "Streamlit server",
         "the rest")


def kind(cmdline: str) -> str:
    if "chromium" in cmdline:
        return KINDS[0] if "--type=renderer" in cmdline else KINDS[1]
    if "gpu.core.compile_worker" in cmdline:  # NVVM for the compiler's facts (a child of an analysis)
        return KINDS[4]
    if "bwrap" in cmdline or "gpu.sandbox" in cmdline:  # a judge's child (always "warm-judge", spares included)
        return KINDS[2] if "warm-judge" in cmdline else KINDS[3]  # or an analysis's
    if "streamlit" in cmdline and " run " in cmdline:
        return KINDS[5]
    return KINDS[6]


class Sampler(threading.Thread):
    """Every 0.5 s, each process's CPU ticks since the last look: ``windows`` holds (when, kind, seconds)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.windows: list[tuple[float, str, float]] = []
        self.stopped = threading.Event()

    def look(self, last: dict[str, int]) -> dict[str, int]:
        now, grown = {}, collections.Counter()
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:  # it ended meanwhile
                continue
            now[pid] = ticks = int(fields[11]) + int(fields[12])
            grown[kind(cmdline)] += ticks - last.get(pid, 0)  # a process new since the last look: from its start
        if last:
            at = time.time()
            self.windows.extend((at, name, value / TICK) for name, value in grown.items())
        return now

    def run(self) -> None:
        last: dict[str, int] = {}
        while not self.stopped.wait(0.5):
            last = self.look(last)


def main() -> int:
    sampler = Sampler()
    before = machine()
    with (
        demo_server(tmpdir()) as server,
        chromium(LEARNERS_NICENESS, VISITOR_NICENESS) as (browser, home_browser),
    ):
        sampler.start()
        started = time.time()
        run = run_class(browser, server.url, home_browser=home_browser)
        ended = time.time()
    sampler.stopped.set()
    sampler.join()
    # the phases, from the pages' own clocks (one machine, one clock)
    first_press = min(lr.clicked_at for lr in run.learners) / 1000
    verdicts = [lr.verdict_at / 1000 for lr in run.learners if lr.verdict_at is not None]
    last_verdict = max(verdicts, default=ended)
    middle = sorted(verdicts)[(len(verdicts) - 1) // 2] if verdicts else ended  # the p50 learner's verdict
    phases = [("pages load, names, typing", started, first_press),
              ("first press -> the middle verdict (p50)", first_press, middle),
              ("the middle verdict -> the last", middle, last_verdict),
              ("after: facts, trace, the benchmark reading the pages", last_verdict, ended)]
    print(f"Machine: {before}")
    print(f"{len(CLASS)} learners (tests/classroom.py: CLASS), {len(verdicts)} verdicts; the learners' Chromium "
          f"at nice {LEARNERS_NICENESS} in a cpu cgroup of that weight where the host allows; /proc every 0.5 s\n")
    print("| Phase | wall (s) | " + " | ".join(f"{name} (CPU s)" for name in KINDS) + " | all (CPU s) |")
    print("|---|---" + "|---" * (len(KINDS) + 1) + "|")
    for label, begin, end in phases:
        used = collections.Counter()
        for at, name, value in sampler.windows:
            if begin <= at - 0.25 < end:  # a window (0.5 s) counts in the phase that holds its middle
                used[name] += value
        cells = " | ".join(f"{used[name]:.1f}" for name in KINDS)
        print(f"| {label} | {end - begin:.1f} | {cells} | {sum(used.values()):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
