"""``python -m gpu notebook`` (write a notebook to run on a free GPU) and ``python -m gpu import`` (read its result).

    python -m gpu notebook vector-add --out vector-add.ipynb       # or scaling, launch-sweep, transfers, reduction…
    python -m gpu notebook PROBLEM KERNEL.py --out FILE.ipynb      # a Write-a-kernel problem and your kernel
    python -m gpu import kernel-lab-result-vector-add.json

Exit codes as every command's: 0 done, 2 bad input or a refused file (one line naming the field).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpu.core.limits import InputError

MAX_KERNEL_FILE_BYTES = 64_000


def cmd_notebook(args: argparse.Namespace) -> int:
    from gpu.notebook.build import EXPERIMENTS, experiment_notebook, problem_notebook, write_notebook

    if args.kernel is None:
        if args.target not in EXPERIMENTS:
            raise InputError(f"{args.target!r} is not an experiment with a notebook ({', '.join(EXPERIMENTS)}); for a "
                             "Write-a-kernel problem give your kernel file too: python -m gpu notebook PROBLEM "
                             "KERNEL.py --out FILE.ipynb")
        notebook = experiment_notebook(args.target)
    else:
        path = Path(args.kernel)
        if not path.is_file():
            raise InputError(f"kernel file {args.kernel!r} does not exist")
        if path.stat().st_size > MAX_KERNEL_FILE_BYTES:
            raise InputError(f"kernel file {args.kernel!r} is over {MAX_KERNEL_FILE_BYTES:,} bytes")
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InputError(f"kernel file {args.kernel!r} is not UTF-8 text") from None
        notebook = problem_notebook(args.target, source)
    out = write_notebook(notebook, args.out)
    print(f"wrote {out}: open it in Colab or Kaggle with a GPU runtime, run all, then "
          "`python -m gpu import` the result file it writes")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from gpu.notebook.importing import import_self_report
    from gpu.notebook.selfreport import SelfReportProblem
    from gpu.service.store import StoreError

    path = Path(args.file)
    if not path.is_file():
        raise InputError(f"result file {args.file!r} does not exist")
    try:
        done = import_self_report(path.read_bytes(), source=path.name, name=args.name)
    except (SelfReportProblem, StoreError) as exc:
        raise InputError(f"{path.name} was not imported: {exc}") from None
    print(done.summary())
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("notebook", help="write a Jupyter notebook that runs an experiment, or your kernel for a "
                                        "Write-a-kernel problem, on a free cloud GPU (Colab, Kaggle)")
    p.add_argument("target", help="an experiment with a notebook (vector-add, scaling, launch-sweep, transfers, or a "
                                  "Kernels catalog kernel: reduction, transpose, histogram, stencil, matmul) or a "
                                  "Write-a-kernel problem's key")
    p.add_argument("kernel", nargs="?", default=None, help="for a problem: your kernel file (.py)")
    p.add_argument("--out", required=True, help="the notebook to write (.ipynb)")
    p.set_defaults(func=cmd_notebook)

    p = sub.add_parser("import", help="import the result file a lab notebook wrote, as self-reported on its GPU")
    p.add_argument("file", help="kernel-lab-result-<key>.json")
    p.add_argument("--name", default=None, help="your display name on a problem's leaderboard")
    p.set_defaults(func=cmd_import)


__all__ = ["add_commands"]
