"""The command line: ``python -m gpu COMMAND``. Exit 0 on success, 2 on bad arguments
(one line on stderr), 1 when a check fails."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpu.core.jsonout import print_json
from gpu.core.limits import InputError
from gpu.core.safe_text import shown


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line and exits 2 (no usage dump)."""

    def error(self, message: str):
        raise InputError(f"{self.prog}: {message}")



_print_json = print_json  # the name the commands below use


def _progress(quiet: bool):
    """Progress lines on stderr (stdout stays one JSON object or one report), or none."""
    return (lambda msg: None) if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))


from gpu.core.provenance import SIMULATOR_WARNING as SIMULATOR_LINE  # noqa: E402  (no GPU import: plain text)


def _emit(result, as_json: bool) -> None:
    """A result as one JSON object (its to_dict()) or as its terminal summary.

    Every text output in the simulator starts with the warning line: a header saying "(simulator)" was easy
    to miss beside a "1.56e-05x" speedup.
    ``result`` may also be text already rendered.
    """
    from gpu.catalog.render import summary, to_json
    from gpu.core.backend import BACKEND

    if as_json:
        _print_json(to_json(result))
        return
    if BACKEND.simulated:
        print(SIMULATOR_LINE)
    print(result if isinstance(result, str) else summary(result))


# --- experiments: one subcommand per declaration ------------------------------------


def add_experiment_command(sub, experiment) -> None:
    """The subcommand of one declared experiment: a flag per parameter, --json, --quiet."""
    from gpu.catalog.registry import aliases
    from gpu.core.backend import BACKEND

    p = sub.add_parser(experiment.key, aliases=list(aliases(experiment.key)), help=experiment.summary,
                       description=f"{experiment.title}: {experiment.summary}.")
    for param in experiment.params:
        if not param.cli:
            continue
        default = param.default_for(BACKEND.simulated)
        shown = ",".join(map(str, default)) if isinstance(default, (tuple, list)) else default
        text = f"{param.help} (default {shown}{' here' if hasattr(param.default, 'pick') else ''})".replace("%", "%%")
        if param.widget == "checkbox":
            p.add_argument(
                param.cli_flag, dest=param.name, action=argparse.BooleanOptionalAction, default=None, help=text
            )
        else:
            p.add_argument(param.cli_flag, dest=param.name, default=None, metavar=param.name.upper(), help=text)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    if experiment.csv:
        out.add_argument("--csv", action="store_true", help="print one row per measurement")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=lambda args: cmd_experiment(experiment, args))


def cmd_experiment(experiment, args: argparse.Namespace) -> int:
    """Parse, admit, run and print one experiment; exit 1 when its results disagree."""
    from gpu.core.backend import BACKEND
    from gpu.service.admission import admit

    raw = {
        p.name: getattr(args, p.name) for p in experiment.params if p.cli and getattr(args, p.name, None) is not None
    }
    params = experiment.parse(raw, BACKEND.simulated)
    admit(experiment, params)
    result = experiment.execute(params, _progress(args.quiet or args.json))
    # without a GPU: the recorded real-GPU figures beside the CPU's, with their source
    from gpu.report.cpu_vs_recorded import companion

    beside = companion(result)
    if getattr(args, "csv", False):
        sys.stdout.write(result.to_csv())
    elif args.json and beside is not None:
        _print_json({**result.to_dict(), "recorded_gpu": beside.to_dict()})
    else:
        _emit(result, args.json)
        if not args.json:
            for warning in getattr(result, "warnings", ()):
                print(f"warning: {warning}")
            if beside is not None:
                print("\n".join(beside.lines()))
    return 0 if experiment.passed(result) else 1


# --- commands ----------------------------------------------------------------------


def cmd_info(args: argparse.Namespace) -> int:
    from gpu.core.backend import BACKEND
    from gpu.core.device import device_count, device_info, host_info, library_versions

    data: dict[str, Any] = {
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
        for key in (
            "compute_capability",
            "multiprocessors",
            "total_memory_bytes",
            "peak_bandwidth_gbps",
            "driver_version",
            "runtime_version",
        ):
            if dev.get(key) is not None:
                print(f"  {key}: {dev[key]}")
    host = data["host"]
    print(f"host: {host['cpu']}, {host['logical_cores']} logical cores, Python {host['python']}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in data["versions"].items() if v))
    return 0



def cmd_check(args: argparse.Namespace) -> int:
    from gpu.core.backend import BACKEND
    from gpu.report.check import run_check

    if BACKEND.simulated:  # first, before any progress or figure (check.md starts with it too)
        print(SIMULATOR_LINE, flush=True)
    report = run_check(args.out, quick=args.quick, on_progress=_progress(False), plan=args.plan)
    print(report.markdown())
    return 0 if report.passed else 1


def cmd_history(args: argparse.Namespace) -> int:
    from gpu.core.safe_text import shown
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
        line = f"{r.short_id}  {r.created_at}  {r.experiment:<14} {r.device_name or '?'} ({r.backend}){sim}  {params}"
        print(shown(line))  # an imported run's device name and keys are the file's: shown escaped
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
            raise ImportProblem(
                f"the file is {size / 2**20:,.1f} MiB; a check file may be at most {MAX_IMPORT_BYTES / 2**20:,.0f} MiB"
            )
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



def build_parser() -> argparse.ArgumentParser:
    from gpu.catalog.registry import experiments

    parser = _Parser(prog="python -m gpu", description="Kernel Lab's engine, without a browser.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for experiment in experiments():
        add_experiment_command(sub, experiment)

    p = sub.add_parser("info", help="backend, device, host and library versions")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser(
        "check", help="the GPU validation run: correctness and timings, written as check.json and check.md"
    )
    p.add_argument("--out", default=".", help="folder for check.json and check.md (default: current folder)")
    p.add_argument("--quick", action="store_true", default=None, help="small sizes only (the default in the simulator)")
    p.add_argument("--plan", choices=("first-look", "verify"), default=None,
                   help="only the sections of `make gpu-first-look`'s or `make gpu-verify`'s plan, headline first, "
                        "each within its budget (gpu/report/plan.py)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "history", help="list saved runs (newest first); `history import FILE` adds a check.json from another machine"
    )
    p.add_argument("action", nargs="?", choices=("list", "import"), default="list", help="list (default) or import")
    p.add_argument(
        "file",
        nargs="?",
        help="import: the check.json that `python -m gpu check --out DIR` wrote (validated; a rejected file changes "
             "nothing)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object with every run and all its samples")
    p.add_argument("--experiment", default=None, help="only this experiment, e.g. vector-add")
    p.add_argument("--limit", type=int, default=1000, help="at most this many runs (default 1000)")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("history-delete", help="admin: delete saved runs by id (the app cannot delete)")
    p.add_argument("--id", action="append", required=True, help="run id or a unique prefix; repeat for several")
    p.add_argument("--yes", action="store_true", help="confirm the deletion")
    p.set_defaults(func=cmd_history_delete)

    from gpu.report import compile as compile_command  # the real compiler's facts

    compile_command.add_command(sub)

    from gpu.sandbox.cli import register as register_write_a_kernel  # problems, solve, submissions

    register_write_a_kernel(sub)

    from gpu.sandbox.cli import trace_file
    from gpu.trace.cli import add_trace_command  # the memory trace

    add_trace_command(sub, trace_file)

    from gpu.notebook.cli import add_commands as add_notebook_commands  # a free GPU: notebook, import

    add_notebook_commands(sub)




    return parser


EXIT_BAD_INPUT = 2  # bad input, or a refusal
EXIT_LAB_FAILED = 3  # the lab itself failed: never 1, which means "wrong" (solve) or "a finding" (trace)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except InputError as exc:
        print(shown(f"error: {' '.join(str(exc).split())}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # one line, never a traceback (and never exit 1)
        text = " ".join(str(exc).split())[:300]
        print(shown(f"error: the lab itself failed (not your input): {type(exc).__name__}: {text}"), file=sys.stderr)
        return EXIT_LAB_FAILED


if __name__ == "__main__":
    sys.exit(main())
