"""The judges' queue alone: a class's 16 submissions at once, no browsers, each judge's process cold or started ahead.

    .venv/bin/python benchmarks/judge_queue.py --repeats 3

The class benchmark (benchmarks/class_submit.py) runs 16 chromium pages on the server's own 2 cores, and they
decide most of what it measures. This one keeps only the server's side: 16 threads call
``gpu.sandbox.service.judge`` together (the class benchmark's kernels, tests/classroom.py: CLASS, each learner
named), through the host's real queue (device then CPU lock files, the time slice, one place
per learner) and the real sandbox, with ``KERNEL_LAB_SUBMIT_WALL_S`` and ``_MEMORY_MB`` as in the class. Each repeat
runs the class twice, side by side in one process: every judge a cold child (as the CLI does), then with a
spare started ahead (``gpu.sandbox.warm``, as the app does). Prints Submit -> verdict per kind, p50 and p95, and
writes benchmarks/judge_queue.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.classroom import CLASS, KINDS, MEMORY_MB, STATUS, WALL_S, kinds_summary, machine, percentile  # noqa: E402


def one_class(warm: bool) -> list[tuple[str, float, str]]:
    """(kind, seconds from the common start to the verdict, status) for each of the class's submissions."""
    from gpu.sandbox import judging, service
    from gpu.sandbox.warm import KEEPER
    from gpu.service.learners import LearnerId

    if warm:
        judging.keep_warm()
        KEEPER.settle()
    start = threading.Barrier(len(CLASS) + 1)
    results: list[tuple[str, float, str]] = []
    lock = threading.Lock()

    def learner(index: int, kind: str) -> None:
        name = f"student-{index + 1:02d}-{kind}"
        start.wait()
        began = time.perf_counter()
        made = service.judge("vector-add", KINDS[kind][0], learner=LearnerId(name, name), save=False)
        with lock:
            results.append((kind, time.perf_counter() - began, made.verdict.status))

    threads = [threading.Thread(target=learner, args=(i, kind)) for i, kind in enumerate(CLASS)]
    for t in threads:
        t.start()
    start.wait()
    for t in threads:
        t.join()
    KEEPER.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "judge_queue.md")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kernel-lab-judge-queue-"))
    os.environ.update({
        "KERNEL_LAB_DB": str(folder / "history.sqlite3"),
        "KERNEL_LAB_LOCK_DIR": str(folder / "locks"),
        "KERNEL_LAB_SUBMIT_WALL_S": str(WALL_S),
        "KERNEL_LAB_SUBMIT_MEMORY_MB": str(MEMORY_MB),
    })
    before = machine()
    every: dict[str, list[float]] = {"cold": [], "warm": []}
    by_kind: dict[tuple[str, str], list[float]] = {}
    wrong_status = []
    for repeat in range(args.repeats):
        for how in ("cold", "warm"):
            results = one_class(how == "warm")
            wrong_status += [(how, kind, status) for kind, _, status in results if status != STATUS[kind]]
            ran = [s for kind, s, _ in results if kind in ("correct", "wrong")]
            print(f"repeat {repeat + 1} {how}: correct and wrong kernels' verdicts p50 {percentile(ran, 0.5):.2f} s, "
                  f"max {max(ran):.2f} s; every verdict by {max(s for _, s, _ in results):.1f} s")
            every[how] += ran
            for kind, s, _ in results:
                by_kind.setdefault((how, kind), []).append(s)
    after = machine()
    lines = [
        "# The judges' queue alone: 16 submissions at once, cold or started ahead",
        "",
        f"Command: `.venv/bin/python benchmarks/judge_queue.py --repeats {args.repeats}`.",
        "",
        f"Machine: {platform.node() or 'this host'}, {platform.machine()}, {before} before, {after} after; the CUDA "
        f"simulator, bubblewrap where it works, no browser. The class's 16 submissions ({kinds_summary(CLASS)}) start "
        "together from 16 threads through `service.judge` and the host's "
        f"queue; KERNEL_LAB_SUBMIT_WALL_S={WALL_S:g}, KERNEL_LAB_SUBMIT_MEMORY_MB={MEMORY_MB}. Each repeat runs "
        "the class cold (every judge's process started for it) and then warm (a spare started ahead, "
        "`gpu/sandbox/warm.py`), side by side in one process.",
        "",
        f"**Submit → verdict for the 12 kernels that ran, over {args.repeats} repeats: cold p50 "
        f"{percentile(every['cold'], 0.5):.2f} s, p95 {percentile(every['cold'], 0.95):.2f} s; warm p50 "
        f"{percentile(every['warm'], 0.5):.2f} s, p95 {percentile(every['warm'], 0.95):.2f} s** "
        f"(ratio of medians {percentile(every['cold'], 0.5) / percentile(every['warm'], 0.5):.1f}×).",
        "",
        "| How | Kind | Submissions | p50 (s) | p95 (s) | max (s) |",
        "|---|---|---|---|---|---|",
    ]
    for (how, kind), values in sorted(by_kind.items()):
        lines.append(f"| {how} | {kind} | {len(values)} | {percentile(values, 0.5):.2f} | "
                     f"{percentile(values, 0.95):.2f} | {max(values):.2f} |")
    if wrong_status:
        lines += ["", f"**Verdicts other than expected:** {wrong_status}"]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)
    return 1 if wrong_status else 0


if __name__ == "__main__":
    raise SystemExit(main())
