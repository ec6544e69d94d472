"""Every experiment the lab knows, by key.

Experiment modules declare themselves with ``register``; ``experiments()`` imports every
module of ``gpu.experiments`` first, so the CLI, the pages, the cluster workers and
``gpu check`` all see the same set. The registry is filled at import time and only read
afterwards (no per-user state lives here).
"""

from __future__ import annotations

import importlib
import pkgutil

from gpu.core.limits import InputError
from gpu.experiments.base import Experiment

# The order the CLI and the pages list the experiments in; any other module of this
# package that declares one is found too (a new experiment needs no edit here).
ORDER = ("vector-add", "scaling", "indexing", "launch-sweep", "launch-overhead", "transfers-bandwidth", "transfers",
         "reduction", "transpose", "histogram", "stencil", "matmul")

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
    """Import every module of this package, so each declaration registers itself."""
    import gpu.experiments as package

    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")


def experiments() -> list[Experiment]:
    """Every registered experiment: those in ``ORDER`` first, in that order, then the rest."""
    _load()
    rank = {key: i for i, key in enumerate(ORDER)}
    return sorted(_REGISTRY.values(), key=lambda e: rank.get(e.key, len(ORDER)))


def get(name: str) -> Experiment:
    """The experiment called ``name`` (its key or an alias); InputError naming the known ones."""
    _load()
    key = _ALIASES.get(name)
    if key is None:
        raise InputError(f"unknown experiment {name!r}; known: {', '.join(_REGISTRY)}")
    return _REGISTRY[key]
