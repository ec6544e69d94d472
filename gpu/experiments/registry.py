"""Every experiment the lab knows, by key.

Experiment modules declare themselves with ``register``; ``experiments()`` imports the
modules listed in ``MODULES`` first, so the CLI, the pages, the cluster workers and
``gpu check`` all see the same set. The registry is filled at import time and only read
afterwards (no per-user state lives here).
"""

from __future__ import annotations

import importlib
from gpu.core.limits import InputError
from gpu.experiments.base import Experiment

# The modules that declare experiments, in the order the CLI and the home page list them.
MODULES = (
    "gpu.experiments.vector_add",
    "gpu.experiments.scaling",
    "gpu.experiments.indexing",
    "gpu.experiments.launch",
    "gpu.experiments.launch_overhead",
    "gpu.experiments.bandwidth",
    "gpu.experiments.transfers",
    # the kernel catalog (gpu/experiments/catalog.py)
    "gpu.experiments.reduction",
    "gpu.experiments.transpose",
    "gpu.experiments.histogram",
    "gpu.experiments.stencil",
    "gpu.experiments.matmul",
)

_REGISTRY: dict[str, Experiment] = {}
_ALIASES: dict[str, str] = {}


def register(experiment: Experiment, *, aliases: tuple[str, ...] = ()) -> Experiment:
    """Add ``experiment`` (and other names it answers to, e.g. an older CLI command); return it."""
    for name in (experiment.key, *aliases):
        owner = _ALIASES.get(name)
        if owner is not None and owner != experiment.key:
            raise ValueError(f"experiment name {name!r} is taken by {owner!r}")
        _ALIASES[name] = experiment.key
    _REGISTRY[experiment.key] = experiment
    return experiment


def aliases(key: str) -> tuple[str, ...]:
    """Other names an experiment answers to (its key excluded)."""
    return tuple(name for name, owner in _ALIASES.items() if owner == key and name != key)


def _load() -> None:
    for module in MODULES:
        importlib.import_module(module)


def experiments() -> list[Experiment]:
    """Every registered experiment, in declaration order."""
    _load()
    return list(_REGISTRY.values())


def get(name: str) -> Experiment:
    """The experiment called ``name`` (its key or an alias); InputError naming the known ones."""
    _load()
    key = _ALIASES.get(name)
    if key is None:
        raise InputError(f"unknown experiment {name!r}; known: {', '.join(_REGISTRY)}")
    return _REGISTRY[key]
