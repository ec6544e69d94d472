"""The verification plans for a lent GPU: what runs, in what order, and the seconds each may take.

A lent GPU machine comes rarely and briefly: one command may run at most ``CALL_LIMIT_S``
seconds, and a session has ``SESSION_DEVICE_S`` seconds of device time in all, the machine's
start (``MACHINE_START_S``, a few minutes) included. Two plans fit that, each one command:

- ``first-look`` (``make gpu-first-look``, at most ``FIRST_LOOK_S``): the figures needed first —
  the launch ladder, the reduction and transpose steps, the Scaling sweep and its overhead —
  each through the engine's own CLI, written as JSON beside its printed table;
- ``verify`` (``make gpu-verify``, at most ``VERIFY_S``): the GPU-only tests, the compiler on
  the device's own target, ``gpu check`` with the headline sections first and a budget per
  section (``VERIFY_SECTIONS``), then every page under AppTest.

Each step runs under its own limit (``python -m gpu.report.plan NAME``: a step past its limit
is stopped and the next one runs), so a plan keeps its total; ``tests/test_verify_plan.py``
sums the budgets against those limits. ``--rehearse`` runs every step at the simulator's
tiny sizes, on a machine without a GPU, to prove the commands before a visit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CALL_LIMIT_S = 600  # the device tool's longest command
SESSION_DEVICE_S = 900  # device time per session, every start, call and idle wait included
MACHINE_START_S = 240  # "a few minutes" to start a machine: counted, and not ours to use
FIRST_LOOK_S = 180
VERIFY_S = 300
# Seconds the shell scripts spend before a plan's steps: the carried wheels installed, the preflight.
SETUP_S = {"first-look": 25, "verify": 25}
# A rehearsal runs on a developer's machine, shared and slower than a GPU machine's 16 cores: its steps get
# this many times their budget (the pages took 6 s on the H200's host and over 10 s on a shared 2-core one).
REHEARSAL_SLACK = 6

# gpu check's sections for `make gpu-verify`, headline first, with the seconds each may take on an H200.
# Sized from the H200 run of 2026-12-04 (benchmarks/h200-2026-12-04/check.json: scaling 85.8 s at its
# 80 s limit, transfers 25.4 s, breakdown 19.9 s, article 8.9 s, launch 4.4 s); the catalog's and the
# sweep's sections sample until stable within theirs (gpu/catalog/declare.py: budgeted_policy).
VERIFY_SECTIONS: dict[str, float] = {
    "correctness": 2,
    "reduction": 15,
    "transpose": 16,
    "scaling": 40,
    "histogram": 14,
    "stencil": 12,
    "matmul": 12,
    "methodology": 18,
    "launch": 6,
    "transfers": 25,
    "breakdown": 20,
    "article": 10,
}
# `make gpu-first-look`'s check: the catalog steps at the limit and the sweep's overhead, nothing else.
FIRST_LOOK_SECTIONS: dict[str, float] = {"reduction": 35, "transpose": 30, "scaling": 55}
SECTIONS = {"first-look": FIRST_LOOK_SECTIONS, "verify": VERIFY_SECTIONS}


@dataclass(frozen=True)
class Step:
    """One command of a plan: ``argv`` on the GPU, ``rehearsal`` at the simulator's sizes, stdout to ``output``."""

    name: str
    budget_s: int
    argv: tuple[str, ...]
    rehearsal: tuple[str, ...]
    output: str


GPU = ("{python}", "-m", "gpu")

FIRST_LOOK = (
    Step("the launch ladder", 25, (*GPU, "launch-overhead", "--samples", "30", "--json"),
         (*GPU, "launch-overhead", "--samples", "3", "--json"), "launch-overhead.json"),
    Step("gpu check: reduction, transpose, the sweep", 125,
         (*GPU, "check", "--plan", "first-look", "--out", "{out}"),
         (*GPU, "check", "--quick", "--plan", "first-look", "--out", "{out}"), "check.txt"),
)

VERIFY = (
    Step("GPU-only tests", 55,
         ("{python}", "-m", "pytest", "{gpu_tests}", "-m", "gpu", "-q", "-rs", "-p", "no:cacheprovider",
          "--ignore-glob=*test_browser*", "--junitxml={out}/pytest-gpu.xml"),
         ("{python}", "-m", "pytest", "{gpu_tests}", "-m", "gpu", "--collect-only", "-q", "-p", "no:cacheprovider",
          "--ignore-glob=*test_browser*"),
         "pytest-gpu.txt"),
    Step("the compiler on this device's target", 10, (*GPU, "compile", "--json", "--target", "{cc}"),
         (*GPU, "compile", "--json", "--kernel", "vector_add_kernel", "--target", "9.0"), "compile.json"),
    Step("gpu check, headline sections first", 195, (*GPU, "check", "--plan", "verify", "--out", "{out}"),
         (*GPU, "check", "--quick", "--plan", "verify", "--out", "{out}"), "check.txt"),
    Step("every page under AppTest", 10, ("{python}", "scripts/gpu_pages.py", "{out}"),
         ("{python}", "scripts/gpu_pages.py", "{out}"), "pages.txt"),
)

# Each plan's steps and the most it may take, its setup included.
PLANS: dict[str, tuple[tuple[Step, ...], int]] = {
    "first-look": (FIRST_LOOK, FIRST_LOOK_S),
    "verify": (VERIFY, VERIFY_S),
}


def total_s(name: str) -> int:
    """The seconds plan ``name`` may take, its setup included."""
    steps, _limit = PLANS[name]
    return SETUP_S[name] + sum(step.budget_s for step in steps)


ROOT = Path(__file__).resolve().parents[2]


def gpu_test_files(root: Path = ROOT) -> list[str]:
    """The test files that hold GPU-only tests (``pytest.mark.gpu``), relative to ``root``: pytest collects
    these alone, not the ~75 files whose 1,400-odd tests it would deselect (part of the 56 s the GPU-only
    tests took on the H200)."""
    return sorted(str(path.relative_to(root)) for path in (root / "tests").rglob("test_*.py")
                  if "mark.gpu" in path.read_text(errors="replace"))


def command(step: Step, rehearse: bool, **values: str) -> list[str]:
    """``step``'s command with ``{python}``, ``{out}`` and ``{cc}`` filled in, and ``{gpu_tests}`` as the
    test files holding GPU-only tests; ``--target`` is left out when the compute capability is unknown (an
    ``nvidia-smi`` without ``compute_cap``): every target is compiled."""
    argv: list[str] = []
    for part in step.rehearsal if rehearse else step.argv:
        argv += gpu_test_files() if part == "{gpu_tests}" else [part.format(**values)]
    if "--target" in argv and not argv[argv.index("--target") + 1]:
        at = argv.index("--target")
        del argv[at:at + 2]
    return argv


def run_plan(name: str, out: Path, *, rehearse: bool = False, python: str = sys.executable, cc: str = "",
             say=print) -> list[dict]:
    """Run plan ``name``'s steps in order, each stopped at its budget; write ``plan.json`` into ``out``.

    Returns one dict per step: name, budget_s, seconds, rc (None when stopped at its budget).
    """
    steps, _limit = PLANS[name]
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results = []
    for step in steps:
        argv = command(step, rehearse, python=python, out=str(out), cc=cc)
        say(f"[{time.perf_counter() - started:5.0f} s] {step.name} (at most {step.budget_s} s): {' '.join(argv[1:])}")
        began = time.perf_counter()
        with open(out / step.output, "w") as stdout, open(out / (step.output + ".stderr.txt"), "w") as stderr:
            try:
                limit_s = step.budget_s * (REHEARSAL_SLACK if rehearse else 1)
                rc: int | None = subprocess.run(argv, stdout=stdout, stderr=stderr, timeout=limit_s,
                                                env=os.environ).returncode
            except subprocess.TimeoutExpired:
                rc = None
        seconds = time.perf_counter() - began
        results.append({"name": step.name, "budget_s": step.budget_s, "seconds": seconds, "rc": rc,
                        "output": step.output})
        verdict = "ok" if rc == 0 else ("STOPPED at its budget" if rc is None else f"FAILED (exit {rc})")
        say(f"[{time.perf_counter() - started:5.0f} s]   {verdict} in {seconds:.1f} s")
        (out / "plan.json").write_text(json.dumps({"plan": name, "rehearsal": rehearse, "steps": results},
                                                  indent=2) + "\n")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu.report.plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("plan", choices=sorted(PLANS))
    parser.add_argument("--out", required=True, help="folder for every step's output and plan.json")
    parser.add_argument("--rehearse", action="store_true", help="the simulator's tiny sizes (no GPU needed)")
    parser.add_argument("--cc", default="", help="the device's compute capability, e.g. 9.0 (the compiler's target)")
    args = parser.parse_args(argv)
    results = run_plan(args.plan, Path(args.out), rehearse=args.rehearse, cc=args.cc)
    return 0 if all(r["rc"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
