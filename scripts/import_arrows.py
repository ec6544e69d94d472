"""Count the packages of gpu/ and the import arrows between them, and the arrows that run up the layers.

Every ``import`` of every module under gpu/ counts, those inside functions too (as
tests/test_import_cycles.py counts them). A module belongs to its package: the folder below
gpu/ (``gpu.core``, ``gpu.experiments``, ...); ``gpu/__init__.py`` (``gpu``, which decides the
backend before anything imports Numba) is the lowest, ``gpu/__main__.py`` (the CLI) the highest.
An arrow is a pair of packages with at least one import from the first to the second. It runs
**up** when it goes from a lower layer to a higher one, by docs/ARCHITECTURE.md's table:

    gpu < gpu.sim < gpu.core < gpu.kernels < gpu.catalog < gpu.experiments < gpu.service < gpu.report
    < gpu.trace < gpu.problems < gpu.sandbox < gpu.notebook < gpu.__main__ < ui

An experiment folder holds its engine and, above it, its faces (``report``, ``check``, ``charts``,
``home``: gpu/catalog/registry.py's ``FACES``; older checkouts also kept a ``view`` and ``readback``
there); with ``--faces`` the faces count as a package of their
own above ``gpu.sandbox`` (``gpu.experiments:faces``), as the layers table places them. With ``--ui``
the modules of ui/ count too, as one package ``ui`` above the whole engine: an arrow from gpu/ to ``ui``
(a view inside gpu/) runs up.

    python scripts/import_arrows.py            # the working tree
    python scripts/import_arrows.py --faces --list PATH   # another checkout, faces apart, each arrow listed
    python scripts/import_arrows.py --ui       # ui/ beside gpu/'s packages
"""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path

LAYERS = ("gpu", "gpu.sim", "gpu.core", "gpu.kernels", "gpu.catalog", "gpu.experiments", "gpu.service", "gpu.report",
          "gpu.trace", "gpu.problems", "gpu.sandbox", "gpu.experiments:faces", "gpu.notebook", "gpu.__main__", "ui")
FACES = ("report", "check", "readback", "charts", "view", "home")  # readback: the faces of older checkouts


def modules(root: Path, ui: bool = False) -> dict[str, Path]:
    """Dotted module name -> file, for every module under ``root``/gpu (and ``root``/ui with ``ui``)."""
    out = {}
    for path in sorted(p for top in (("gpu", "ui") if ui else ("gpu",)) for p in (root / top).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def package(module: str, faces: bool) -> str:
    parts = module.split(".")
    if parts[0] == "ui":
        return "ui"
    if len(parts) < 3:  # gpu/__init__.py (the backend's decision, first of all) and gpu/__main__.py (the CLI)
        return module
    if faces and parts[1] == "experiments" and len(parts) >= 4 and parts[3] in FACES:
        return "gpu.experiments:faces"
    return ".".join(parts[:2])


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours that ``module`` imports, anywhere in its file."""
    package_name = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package_name.split(".")[: len(package_name.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module:
                found.add(target)
    return found


def arrows(root: Path, faces: bool = False, ui: bool = False) -> dict[tuple[str, str], int]:
    """(from package, to package) -> how many module imports make the arrow."""
    known = modules(root, ui)
    counted: dict[tuple[str, str], int] = defaultdict(int)
    for module, path in known.items():
        for target in imports(module, path, known):
            a, b = package(module, faces), package(target, faces)
            if a != b:
                counted[(a, b)] += 1
    return dict(counted)


def runs_up(arrow: tuple[str, str]) -> bool:
    a, b = arrow
    return LAYERS.index(b) > LAYERS.index(a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]), help="a checkout")
    parser.add_argument("--faces", action="store_true", help="count an experiment folder's faces apart")
    parser.add_argument("--ui", action="store_true", help="count ui/ too, one package above the engine")
    parser.add_argument("--list", action="store_true", help="list every arrow")
    args = parser.parse_args()
    found = arrows(Path(args.root), args.faces, args.ui)
    packages = {p for arrow in found for p in arrow} | {package(m, args.faces) for m in modules(Path(args.root),
                                                                                                args.ui)}
    up = sorted(a for a in found if runs_up(a))
    both = sorted((a, b) for (a, b) in found if (b, a) in found and a < b)
    print(f"{len(packages)} packages, {len(found)} arrows between them, {len(up)} running up, "
          f"{len(both)} pairs importing each other")
    for a, b in up:
        print(f"  up: {a} -> {b} ({found[(a, b)]} imports)")
    if args.list:
        for (a, b), n in sorted(found.items()):
            print(f"  {a} -> {b} ({n})")


if __name__ == "__main__":
    main()
