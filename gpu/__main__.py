"""The command line: ``python -m gpu COMMAND``. Exit 0 on success, 2 on bad arguments
(one line on stderr), 1 when a check fails."""

from __future__ import annotations

import argparse
import json
import sys

from gpu.core.limits import InputError


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line and exits 2 (no usage dump)."""

    def error(self, message: str):  # type: ignore[override]
        raise InputError(f"{self.prog}: {message}")


def _cpu_list(text: str) -> list[str]:
    from gpu.core.cpu import IMPLEMENTATIONS

    names = [part.strip() for part in text.split(",") if part.strip()]
    for name in names:
        if name not in IMPLEMENTATIONS:
            raise argparse.ArgumentTypeError(f"unknown CPU implementation {name!r}; choose from {','.join(IMPLEMENTATIONS)}")
    return names


def _print_json(data: dict) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def _progress(quiet: bool):
    """Progress lines on stderr (stdout stays one JSON object or one report), or none."""
    return (lambda msg: None) if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))


def _emit(result, as_json: bool) -> None:
    """A result as one JSON object (its to_dict()) or as its terminal summary."""
    if as_json:
        _print_json(result.to_dict())
    else:
        print(result)


# --- commands ----------------------------------------------------------------------


def cmd_info(args: argparse.Namespace) -> int:
    from gpu.core.backend import BACKEND
    from gpu.core.device import device_count, device_info, host_info, library_versions

    data = {
        "backend": BACKEND.kind,
        "backend_reason": BACKEND.reason,
        "devices": [device_info(i).to_dict() for i in range(device_count())],
        "host": host_info().to_dict(),
        "versions": library_versions(),
    }
    if args.json:
        _print_json(data)
        return 0
    print(f"backend: {BACKEND.label} ({BACKEND.reason})")
    for dev in data["devices"]:
        print(f"device {dev['index']}: {dev['name']}")
        for key in ("compute_capability", "multiprocessors", "total_memory_bytes", "peak_bandwidth_gbps", "driver_version", "runtime_version"):
            if dev.get(key) is not None:
                print(f"  {key}: {dev[key]}")
    host = data["host"]
    print(f"host: {host['cpu']}, {host['logical_cores']} logical cores, Python {host['python']}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in data["versions"].items() if v))
    return 0


def cmd_vector_add(args: argparse.Namespace) -> int:
    from gpu.core.limits import check_repeats
    from gpu.core.timing import RepeatPolicy
    from gpu.experiments.vector_add import run_vector_add

    policy = RepeatPolicy.count(check_repeats(args.repeats))
    run = run_vector_add(args.n, args.threads_per_block, policy, args.cpu, python_budget_s=args.python_budget)
    _emit(run, args.json)
    return 0 if run.agree else 1


def cmd_check(args: argparse.Namespace) -> int:
    from gpu.report.check import run_check

    report = run_check(args.out, quick=args.quick, on_progress=_progress(False))
    print(report.markdown())
    return 0 if report.passed else 1


def cmd_history(args: argparse.Namespace) -> int:
    from gpu.service.store import StoreError, open_store

    if args.action == "import":
        if not args.file:
            raise InputError("history import needs the check.json to import: python -m gpu history import FILE")
        return cmd_history_import(args)
    if args.file:
        raise InputError(f"unexpected argument {args.file!r}; did you mean `history import {args.file}`?")

    store = open_store()
    if store.problem:
        print(store.problem, file=sys.stderr)
    try:
        runs = store.runs(experiment=args.experiment, limit=args.limit)
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        _print_json({"database": str(store.path), "runs": [r.to_dict() for r in runs]})
        return 0
    print(f"{len(runs)} run{'s' if len(runs) != 1 else ''} in {store.path} (newest first)")
    for r in runs:
        params = ", ".join(f"{k}={v}" for k, v in r.params.items() if not isinstance(v, (dict, list)))
        sim = " [simulated]" if r.simulated else ""
        print(f"{r.short_id}  {r.created_at}  {r.experiment:<14} {r.device_name or '?'} ({r.backend}){sim}  {params}")
    return 0


def cmd_history_import(args: argparse.Namespace) -> int:
    """Add a check.json from another machine to History (validated; a rejected file changes nothing)."""
    from pathlib import Path

    from gpu.service.importer import MAX_IMPORT_BYTES, ImportProblem, import_check
    from gpu.service.store import StoreError, open_store

    path = Path(args.file)
    try:
        size = path.stat().st_size
        if size > MAX_IMPORT_BYTES:
            raise ImportProblem(f"the file is {size / 2**20:,.1f} MiB; a check file may be at most {MAX_IMPORT_BYTES / 2**20:,.0f} MiB")
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    except ImportProblem as exc:
        raise InputError(f"{args.file} was not imported: {exc}") from None
    store = open_store()
    try:
        result = import_check(store, raw, source=path.name)
    except ImportProblem as exc:
        raise InputError(f"{args.file} was not imported: {exc}") from None
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(result.summary())
    print(f"run ids: {', '.join(r[:8] for r in result.run_ids)} in {store.path}")
    return 0


def cmd_history_delete(args: argparse.Namespace) -> int:
    """Admin only: the app offers no way to delete, so one user cannot remove another's runs."""
    from gpu.service.store import StoreError, open_store

    if not args.yes:
        raise InputError("history-delete removes runs for every user of this machine; add --yes to confirm")
    store = open_store()
    try:
        deleted = store.delete(args.id)
    except StoreError as exc:
        raise InputError(str(exc)) from None
    print(f"deleted {deleted} run{'s' if deleted != 1 else ''} from {store.path}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from gpu.core.peaks import measure_peaks
    from gpu.experiments.scaling import make_config, repeat_policy, run_sweep

    mode = "until_stable" if args.budget is not None else "count"
    policy = repeat_policy(mode, args.repeats, max_noise=args.noise, budget_s=args.budget)
    impls = [part.strip() for part in args.impl.split(",") if part.strip()]
    config = make_config(args.min_n, args.max_n, impls, spacing=args.spacing, threads_per_block=args.threads_per_block,
                         policy=policy, python_budget_s=args.python_budget, max_wall_s=args.time_limit)
    say = _progress(args.quiet)
    peaks = None if args.no_peaks else measure_peaks(quick=bool(args.quick_peaks), on_progress=say)
    run = run_sweep(config, peaks=peaks, on_progress=lambda p: say(p.message))
    if args.csv:
        sys.stdout.write(run.to_csv())
    else:
        _emit(run, args.json)
    return 0 if run.agree else 1


def cmd_launch_sweep(args: argparse.Namespace) -> int:
    from gpu.experiments.launch import run_launch_sweep
    from gpu.core.limits import check_repeats
    from gpu.core.timing import RepeatPolicy

    policy = RepeatPolicy.count(check_repeats(args.repeats))
    say = _progress(args.json)
    sizes = [part for part in args.block_sizes.split(",") if part.strip()]
    multiples = [part for part in args.grid_stride_multiples.split(",") if part.strip()]
    run = run_launch_sweep(args.n, sizes, extra_block_size=args.extra_block_size, grid_stride_multiples=multiples, policy=policy, on_progress=say)
    _emit(run, args.json)
    return 0 if run.agree else 1


def cmd_transfers(args: argparse.Namespace) -> int:
    from gpu.core.backend import BACKEND
    from gpu.core.limits import check_repeats
    from gpu.core.timing import RepeatPolicy
    from gpu.experiments.transfers import run_bandwidth_curves, run_strategies

    n = args.n if args.n is not None else (2048 if BACKEND.simulated else 10_000_000)
    policy = RepeatPolicy.count(check_repeats(args.repeats))
    say = _progress(args.json)
    strategies = run_strategies(n, args.threads_per_block, args.chunks, args.streams, args.iterations, policy, on_progress=say)
    curves = None if args.no_bandwidth else run_bandwidth_curves(policy=RepeatPolicy.count(10), on_progress=say)
    if args.json:
        _print_json({"experiment": "transfers", "bandwidth": curves.to_dict() if curves else None, "strategies": strategies.to_dict()})
    else:
        if curves is not None:
            print(curves, end="\n\n")
        print(strategies)
    return 0 if strategies.agree else 1


def cmd_indexing(args: argparse.Namespace) -> int:
    from gpu.experiments.launch import run_indexing

    run = run_indexing(args.n, args.threads_per_block, args.grid_stride_blocks)
    _emit(run, args.json)
    if not args.json:
        for warning in run.warnings:
            print(f"warning: {warning}")
    return 0 if run.passed else 1


def build_parser() -> argparse.ArgumentParser:
    from gpu.core.cpu import IMPLEMENTATIONS

    parser = _Parser(prog="python -m gpu", description="Kernel Lab's engine, without a browser.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("info", help="backend, device, host and library versions")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("vector-add", help="time c = a + b on the GPU and the CPU")
    p.add_argument("--n", required=True, help="elements per vector: 10000000, 1e7 or 2^20")
    p.add_argument("--threads-per-block", type=str, default="256", help="1 to 1024 (default 256)")
    p.add_argument("--repeats", default="10", help="timed runs after one warm-up (1 to 1000, default 10)")
    p.add_argument("--cpu", type=_cpu_list, default=list(IMPLEMENTATIONS), help=f"comma-separated, from {','.join(IMPLEMENTATIONS)}")
    p.add_argument("--python-budget", type=float, default=10.0, help="seconds the Python loop may take before it is only estimated")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_vector_add)

    p = sub.add_parser("check", help="the GPU validation run: correctness and timings, written as check.json and check.md")
    p.add_argument("--out", default=".", help="folder for check.json and check.md (default: current folder)")
    p.add_argument("--quick", action="store_true", default=None, help="small sizes only (the default in the simulator)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("history", help="list saved runs (newest first); `history import FILE` adds a check.json from another machine")
    p.add_argument("action", nargs="?", choices=("list", "import"), default="list", help="list (default) or import")
    p.add_argument("file", nargs="?", help="import: the check.json that `python -m gpu check --out DIR` wrote (validated; a rejected file changes nothing)")
    p.add_argument("--json", action="store_true", help="print one JSON object with every run and all its samples")
    p.add_argument("--experiment", default=None, help="only this experiment, e.g. vector-add")
    p.add_argument("--limit", type=int, default=1000, help="at most this many runs (default 1000)")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("history-delete", help="admin: delete saved runs by id (the app cannot delete)")
    p.add_argument("--id", action="append", required=True, help="run id or a unique prefix; repeat for several")
    p.add_argument("--yes", action="store_true", help="confirm the deletion")
    p.set_defaults(func=cmd_history_delete)

    p = sub.add_parser("sweep", help="time the vector add over a range of sizes; crossovers and bandwidth")
    p.add_argument("--min-n", default="2^10", help="smallest N (default 2^10)")
    p.add_argument("--max-n", default=None, help="largest N (default: the largest size that fits)")
    p.add_argument("--spacing", choices=("pow2", "decade"), default="pow2", help="powers of two or of ten between the ends")
    p.add_argument("--impl", default="gpu,numpy,numba,numba-parallel,python,cupy,torch",
                   help="comma-separated, from gpu,python,numpy,numba,numba-parallel,cupy,torch (references without their library are skipped)")
    p.add_argument("--threads-per-block", type=str, default="256", help="1 to 1024 (default 256)")
    p.add_argument("--repeats", default="5", help="timed runs per point after one warm-up (with --budget: at most this many)")
    p.add_argument("--budget", type=float, default=None, help="sample each point until its noise is below --noise or this many seconds are spent")
    p.add_argument("--noise", type=float, default=0.02, help="relative spread target; noisier points are flagged (default 0.02)")
    p.add_argument("--python-budget", type=float, default=2.0, help="seconds per point the Python loop may take before it is only estimated")
    p.add_argument("--time-limit", type=float, default=None, help="stop after this many seconds, keeping the points measured")
    p.add_argument("--no-peaks", action="store_true", help="skip measuring the copy ceilings")
    p.add_argument("--quick-peaks", action="store_true", help="measure the ceilings with 16 MiB buffers (fast, less exact)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object (configuration, points, crossovers, peaks)")
    fmt.add_argument("--csv", action="store_true", help="print one row per size and series, headed by the configuration")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("launch-sweep", help="time the vector-add kernel for threads per block 32..1024 and grid-stride launches")
    p.add_argument("--n", required=True, help="elements per vector: 2^26, 1e8 or 67108864")
    p.add_argument("--block-sizes", default="32,64,128,256,512,1024", help="threads per block to time, comma-separated (default 32,64,...,1024)")
    p.add_argument("--extra-block-size", default=None, help="also time this block size (e.g. 100, not a multiple of 32)")
    p.add_argument("--grid-stride-multiples", default="1,4,8,32", help="grid-stride launches of k x SM-count blocks of 256 threads, comma-separated k ('' for none)")
    p.add_argument("--repeats", default="20", help="timed runs per configuration after one warm-up (1 to 1000, default 20)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_launch_sweep)

    p = sub.add_parser("indexing", help="run the thread-indexing probe: which thread handles which element")
    p.add_argument("--n", required=True, help="elements")
    p.add_argument("--threads-per-block", type=str, required=True, help="1 to 1024")
    p.add_argument("--grid-stride-blocks", default=None, help="launch this many blocks as a grid-stride loop instead of ceil(N / T)")
    p.add_argument("--json", action="store_true", help="print one JSON object (with per-thread records when small enough to draw)")
    p.set_defaults(func=cmd_indexing)

    p = sub.add_parser("transfers", help="host-link copy bandwidth curves and the vector-add transfer strategies side by side")
    p.add_argument("--n", default=None, help="elements per vector for the strategies (default 1e7; 2048 in the simulator)")
    p.add_argument("--threads-per-block", type=str, default="256", help="1 to 1024 (default 256)")
    p.add_argument("--chunks", default="8", help="chunks for the chunked-streams strategy (1 to N, at most 256; default 8)")
    p.add_argument("--streams", default="4", help="streams for the chunked strategy (1 to the chunk count, at most 32; default 4)")
    p.add_argument("--iterations", default=None, help="kernel runs for the data-kept-on-device strategy (default 100; 3 in the simulator)")
    p.add_argument("--repeats", default="5", help="timed runs per strategy after one warm-up (default 5)")
    p.add_argument("--no-bandwidth", action="store_true", help="skip the copy bandwidth curves")
    p.add_argument("--json", action="store_true", help="print one JSON object: bandwidth curves and strategies")
    p.set_defaults(func=cmd_transfers)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "threads_per_block", None) is not None:
            from gpu.core.limits import parse_int

            args.threads_per_block = parse_int(args.threads_per_block, "threads per block")
        return args.func(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
