"""Cluster-mode load figures, in the CUDA simulator: throughput, waits and Ray's overhead per run.

    PYTHONPATH=. .venv/bin/python benchmarks/cluster_load.py [--users 16,32] [--gpus 1,2,4] \
        [--runs 2] [--n 1024] [--repeats 1] [--topology nodes|one-node]

What it does (every run is the real vector-add experiment, parsed, admitted and run by
``gpu.catalog.registry.run``; CPU baseline: NumPy):

1. **Overhead, one user.** 20 runs one after another at N = 64, embedded (this process:
   the file locks, then the run) and through Ray (one GPU worker). Reported: submission
   to start (the time before the experiment's own code starts) and the round trip minus
   the run itself.
2. **Load.** For each logical GPU count, a fresh local Ray cluster; ``--topology nodes``
   (default) gives each GPU its own Ray node (``ray.cluster_utils.Cluster``: several
   raylets on this host, as a class of one-GPU machines would be), ``one-node`` puts every
   GPU on one node, whose CPU lock then serialises the CPU baselines. Then ``--users``
   simulated users (threads calling ``ClusterClient.run``, as Streamlit sessions do, but
   without drawing pages) each submit ``--runs`` runs back to back. The embedded mode
   (one simulated device, the host's file locks) is measured with the same users.
   Reported: completed runs per minute, median and worst wait (submission to start), the
   median hand-over (a GPU idle between one run's end and the next queued run's start),
   Ray's overhead per run (round trip minus the worker's queue and run time, split into
   submission to arrival at the worker and end to result received), runs per worker,
   and a check that no worker ever ran two at once.

The simulator is CPU work: on a machine with fewer cores than workers (plus the app and
Ray's own processes), throughput cannot grow with the worker count. The script prints the
core count and load average so the figures can be read against them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
os.environ["KERNEL_LAB_LOCK_DIR"] = tempfile.mkdtemp(prefix="kernel-lab-cluster-load-")
sys.path.insert(0, str(ROOT))

import gpu  # noqa: E402  (decides the backend first)
from gpu.catalog import registry  # noqa: E402
from gpu.service.cluster import NAMESPACE, ClusterClient  # noqa: E402
from gpu.service.devicelock import FileFifoLock  # noqa: E402

WORKER_ENV = {"NUMBA_ENABLE_CUDASIM": "1"}


def params(n: int, repeats: int) -> dict:
    return {
        "n": n,
        "threads_per_block": 128,
        "repeats": repeats,
        "cpu": ["numpy"],
        "python_budget_s": 10.0,
        "article": False,
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


# --- the two ways of running -----------------------------------------------------------


class Embedded:
    """What ``ui.runner.run_experiment`` does around a run, without the page: device lock, CPU lock, run."""

    def __init__(self):
        folder = os.environ["KERNEL_LAB_LOCK_DIR"]
        self.gpu, self.cpu = FileFifoLock("gpu0", folder), FileFifoLock("cpu", folder)

    def run(self, p: dict, label: str) -> dict:
        submitted = time.time()
        with self.gpu.hold(label), self.cpu.hold(label):
            started = time.time()
            registry.run("vector-add", p)
            ended = time.time()
        return {"submitted": submitted, "arrived": submitted, "started": started, "ended": ended,
                "received": time.time(), "overhead": 0.0, "worker": "embedded"}


class OnRay:
    def __init__(self, gpus: int, topology: str):
        import ray

        self.cluster = None
        if topology == "nodes":
            from ray.cluster_utils import Cluster

            self.cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 1})
            for _ in range(gpus - 1):
                self.cluster.add_node(num_cpus=1, num_gpus=1)
            ray.init(address=self.cluster.address, namespace=NAMESPACE, log_to_driver=False)
        else:
            ray.init(num_gpus=gpus, namespace=NAMESPACE, include_dashboard=False, log_to_driver=False)
        self.client = ClusterClient("auto", worker_env=WORKER_ENV)
        deadline = time.monotonic() + 300
        while True:
            states = self.client.states()
            if len(states) == gpus and all(s.available for s in states):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers did not start: {states}")
            time.sleep(0.5)
            self.client.discover(force=True)

    def run(self, p: dict, label: str) -> dict:
        r = self.client.run("vector-add", p, label=label)
        return {"submitted": r.submitted, "arrived": r.arrived, "started": r.started, "ended": r.ended,
                "received": r.received, "overhead": r.overhead_s, "worker": r.worker.name}

    def recent_runs(self) -> dict[str, list]:
        import ray

        return {name: ray.get(self.client.handle(name).recent_runs.remote()) for name in self.client.discover()}

    def close(self) -> None:
        import ray

        ray.shutdown()
        if self.cluster is not None:
            self.cluster.shutdown()


# --- measurements ------------------------------------------------------------------------


def overhead_one_user(runner, runs: int = 20) -> tuple[list[float], list[float]]:
    """(submission-to-start, round trip minus run) for ``runs`` runs one after another at N = 64."""
    runner.run(params(64, 1), "warm-up")
    to_start, extra = [], []
    for i in range(runs):
        r = runner.run(params(64, 1), f"single {i}")
        to_start.append(r["started"] - r["submitted"])
        extra.append((r["received"] - r["submitted"]) - (r["ended"] - r["started"]))
    return to_start, extra


def load(runner, users: int, runs: int, p: dict) -> dict:
    records: list[dict] = []
    failures: list[str] = []
    barrier = threading.Barrier(users)

    def user(u: int) -> None:
        barrier.wait()
        for k in range(runs):
            try:
                records.append(runner.run(p, f"user {u} run {k}"))
            except Exception as exc:
                failures.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=user, args=(u,)) for u in range(users)]
    began = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall_s = time.time() - began
    waits = [r["started"] - r["submitted"] for r in records]
    gaps = []  # the device idle between one run's end and the next run's start, while runs were queued
    for name in {r["worker"] for r in records}:
        mine = sorted((r for r in records if r["worker"] == name), key=lambda r: r["started"])
        gaps += [b["started"] - a["ended"] for a, b in zip(mine, mine[1:])]
    per_worker: dict[str, int] = {}
    for r in records:
        per_worker[r["worker"]] = per_worker.get(r["worker"], 0) + 1
    return {
        "completed": len(records),
        "failures": failures,
        "wall_s": wall_s,
        "per_min": 60 * len(records) / wall_s if wall_s else 0.0,
        "median_wait": statistics.median(waits) if waits else float("nan"),
        "worst_wait": max(waits, default=float("nan")),
        "median_overhead": statistics.median(r["overhead"] for r in records) if records else float("nan"),
        "median_to_worker": statistics.median(r["arrived"] - r["submitted"] for r in records)
        if records
        else float("nan"),
        "median_back": statistics.median(r["received"] - r["ended"] for r in records) if records else float("nan"),
        "median_gap": statistics.median(gaps) if gaps else float("nan"),
        "median_run": statistics.median(r["ended"] - r["started"] for r in records) if records else float("nan"),
        "per_worker": sorted(per_worker.values(), reverse=True),
    }


def overlapping(runs: list) -> int:
    ordered = sorted(runs, key=lambda r: r[1])
    return sum(1 for a, b in zip(ordered, ordered[1:]) if b[1] < a[2])


def row(mode: str, users: int, result: dict) -> str:
    return (
        f"| {mode} | {users} | {result['completed']} | {result['wall_s']:.1f} s | {result['per_min']:.1f} | "
        f"{ms(result['median_wait'])} | {ms(result['worst_wait'])} | {ms(result['median_run'])} | "
        f"{ms(result['median_gap'])} | "
        f"{ms(result['median_overhead'])} ({ms(result['median_to_worker'])} + {ms(result['median_back'])}) | "
        f"{' / '.join(map(str, result['per_worker']))} | {os.getloadavg()[0]:.1f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="16,32", help="comma-separated simulated user counts")
    parser.add_argument("--gpus", default="1,2,4", help="comma-separated logical GPU counts")
    parser.add_argument("--runs", type=int, default=2, help="runs per user, back to back")
    parser.add_argument("--n", type=int, default=1024, help="elements per vector in each load run")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--topology", choices=("nodes", "one-node"), default="nodes")
    args = parser.parse_args()
    users = [int(u) for u in args.users.split(",")]
    gpu_counts = [int(g) for g in args.gpus.split(",")]
    p = params(args.n, args.repeats)
    print(f"# Kernel Lab cluster load — backend {gpu.BACKEND.label}; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}; vector add N = {args.n:,}, {args.repeats} repeat(s), CPU: NumPy; "
          f"{args.runs} runs per user; topology: {args.topology}", flush=True)
    problems = 0

    print("\n## Overhead per run, one user, N = 64 (20 runs)\n", flush=True)
    embedded = Embedded()
    e_start, e_extra = overhead_one_user(embedded)
    ray_one = OnRay(1, args.topology)
    try:
        r_start, r_extra = overhead_one_user(ray_one)
    finally:
        ray_one.close()
    print("| mode | submission to start, median | p90 | round trip minus run, median | p90 |")
    print("|---|---|---|---|---|")
    for name, start, extra in (("embedded", e_start, e_extra), ("Ray, 1 worker", r_start, r_extra)):
        q = lambda xs: statistics.quantiles(xs, n=10)[-1]  # noqa: E731
        print(
            f"| {name} | {ms(statistics.median(start))} | {ms(q(start))} | {ms(statistics.median(extra))} | "
            f"{ms(q(extra))} |"
        )
    print(
        f"\nRay adds {ms(statistics.median(r_start) - statistics.median(e_start))} (median) from submission to start.",
        flush=True,
    )

    print("\n## Load\n")
    print(
        "| mode | users | runs | wall | runs/min | median wait | worst wait | median run | median hand-over | median "
        "Ray overhead (to the worker + back) | runs per worker | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    per_min: dict[tuple[str, int], float] = {}
    for u in users:
        result = load(embedded, u, args.runs, p)
        per_min[("embedded", u)] = result["per_min"]
        problems += len(result["failures"])
        print(row("embedded (1 simulated GPU)", u, result), flush=True)
    for g in gpu_counts:
        runner = OnRay(g, args.topology)
        try:
            for u in users:
                result = load(runner, u, args.runs, p)
                per_min[(f"ray{g}", u)] = result["per_min"]
                problems += len(result["failures"])
                print(row(f"Ray, {g} GPU worker{'s' if g > 1 else ''}", u, result), flush=True)
                for failure in result["failures"][:3]:
                    print(f"    failure: {failure}")
            clashes = sum(overlapping(runs) for runs in runner.recent_runs().values())
            problems += clashes
            verdict = "no worker ran two at once" if not clashes else f"{clashes} OVERLAPS"
            print("| " + " | ".join([""] * 10 + [verdict, ""]) + " |", flush=True)
        finally:
            runner.close()
    print("\n## Throughput against one worker\n")
    for u in users:
        base = per_min.get(("ray1", u))
        if base:
            ratios = ", ".join(
                f"{g} GPUs {per_min[(f'ray{g}', u)] / base:.2f}x" for g in gpu_counts if (f"ray{g}", u) in per_min
            )
            print(f"- {u} users: {ratios}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}; failures or overlaps: {problems}")
    return 0 if problems == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
