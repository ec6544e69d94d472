"""Every experiment the lab knows, by key: the one place an experiment is registered.

Each experiment is a folder of ``gpu.experiments`` (a slice: its kernels, declaration, result,
report and charts; its view is ui/views/experiments/<name>.py) whose ``experiment`` module declares it with
``register``.
``experiments()`` imports the engine modules (all but the ``FACES``) of every folder of
``gpu.experiments`` first, and of every folder of the packages named in ``$KERNEL_LAB_EXPERIMENTS``
(comma-separated: experiments kept outside this tree), so
the CLI, the pages, the cluster workers and ``gpu check`` all see the same set, in the
order the declarations give (``Experiment.order``). The registry is filled at import
time and only read afterwards (no per-user state lives here).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from functools import lru_cache
from types import ModuleType

from gpu.catalog.base import CheckSection, Experiment, PageLink
from gpu.core import series
from gpu.core import settings as _settings
from gpu.core.limits import InputError

PACKAGES_ENV = _settings.EXPERIMENTS.name

_REGISTRY: dict[str, Experiment] = {}
_ALIASES: dict[str, str] = {}


def register(experiment: Experiment, *, aliases: tuple[str, ...] = ()) -> Experiment:
    """Add ``experiment`` (and other names it answers to, e.g. an older CLI command); return it.

    Refuses (ValueError) a name another experiment holds, a page link that differs from
    another declaration's link to the same page, a measured series whose id another
    experiment gave another label or colour, and a ``gpu check`` section key another
    experiment declares.
    """
    for name in (experiment.key, *aliases):
        owner = _ALIASES.get(name)
        if owner is not None and owner != experiment.key:
            raise ValueError(f"experiment name {name!r} is taken by {owner!r}")
    if experiment.page is not None:
        for other in _REGISTRY.values():
            if (
                other.key != experiment.key
                and other.page is not None
                and other.page.script == experiment.page.script
                and other.page != experiment.page
            ):
                raise ValueError(
                    f"experiments {other.key!r} and {experiment.key!r} link to {experiment.page.script} differently: "
                    f"{other.page} / {experiment.page}"
                )
    for section in experiment.check_sections():
        for other in _REGISTRY.values():
            if other.key != experiment.key and section.key in {c.key for c in other.check_sections()}:
                raise ValueError(
                    f"check section {section.key!r} of {experiment.key!r} is already declared by {other.key!r}"
                )
    for s in experiment.series:
        series.add(s)
    for name in (experiment.key, *aliases):
        _ALIASES[name] = experiment.key
    _REGISTRY[experiment.key] = experiment
    return experiment


def unregister(key: str) -> None:
    """Forget experiment ``key`` and its names (tests that declare a throwaway experiment)."""
    experiment = _REGISTRY.pop(key, None)
    for name in [n for n, owner in _ALIASES.items() if owner == key]:
        del _ALIASES[name]
    for s in experiment.series if experiment is not None else ():
        series.remove(s.id)


def aliases(key: str) -> tuple[str, ...]:
    """Other names an experiment answers to (its key excluded)."""
    return tuple(name for name, owner in _ALIASES.items() if owner == key and name != key)


def extra_packages() -> list[str]:
    """Packages of experiment folders kept outside gpu/experiments: ``$KERNEL_LAB_EXPERIMENTS``."""
    return list(_settings.settings().experiments)


# The modules of an experiment's folder above its engine: its prose, its ``gpu check`` section, its chart
# builders, its page's view (and Home's, for vector add). They may use gpu/report, gpu/service and the UI,
# so the registry never imports them: whoever shows or reports a result does (a page, ``gpu check``, the
# CLI's prose). A check file is read back through the result types themselves (``CheckSection.parts``).
FACES = ("report", "check", "charts", "home")  # a folder's view is ui/views/experiments/<name>.py


def slices(package: str = "gpu.experiments") -> list[str]:
    """The experiment folders of ``package`` (dotted names, sorted): its subpackages."""
    found = importlib.import_module(package)
    return sorted(f"{package}.{m.name}" for m in pkgutil.iter_modules(getattr(found, "__path__", [])) if m.ispkg)


def engine_modules(folder: str) -> list[str]:
    """The modules of experiment folder ``folder`` that make up its engine (every one but its ``FACES``)."""
    found = importlib.import_module(folder)
    return sorted(
        f"{folder}.{m.name}"
        for m in pkgutil.iter_modules(getattr(found, "__path__", []))
        if not m.ispkg and m.name not in FACES
    )


def faces(face: str) -> list[ModuleType]:
    """Import the ``face`` module (one of ``FACES``) of every experiment folder that has one, here and in the extra
    packages, and return them: called by a layer above the engine (``gpu check`` for ``check``, the prose for
    ``report``); each face registers what it provides as it is imported (``checking.runs_section``) or holds it
    (a report's ``SUMMARIES`` and ``PROSE``)."""
    if face not in FACES:
        raise ValueError(f"{face!r} is not an experiment folder's face; one of {', '.join(FACES)}")
    return list(_faces(face, tuple(extra_packages())))


@lru_cache(maxsize=16)
def _faces(face: str, packages: tuple[str, ...]) -> tuple[ModuleType, ...]:
    """``faces`` for these extra packages: the folders are part of the checkout and do not change while it runs, so
    each prose lookup and each check section does not scan them again."""
    found = []
    for package in ("gpu.experiments", *packages):
        for folder in slices(package):
            if importlib.util.find_spec(f"{folder}.{face}") is not None:
                found.append(importlib.import_module(f"{folder}.{face}"))
    return tuple(found)


def _load() -> None:
    """Import the engine of every experiment folder, here and in the extra packages, so each declaration
    registers itself (a folder may declare several: the Launch config page's three experiments are one folder)."""
    _loaded(tuple(extra_packages()))


@lru_cache(maxsize=16)
def _loaded(packages: tuple[str, ...]) -> None:
    """``_load`` for these extra packages, once: the folders are part of the checkout. Scanning them on every call
    (each page's navigation asks several times per run) took about 0.5 s of a class server's CPU over one class
    (py-spy, ``benchmarks/class_submit.py``, 16 learners)."""
    for package in ("gpu.experiments", *packages):
        for folder in slices(package):
            for module in engine_modules(folder):
                importlib.import_module(module)


def experiments() -> list[Experiment]:
    """Every registered experiment, by its declared ``order`` (then key)."""
    _load()
    return sorted(_REGISTRY.values(), key=lambda e: (e.order, e.key))


def get(name: str) -> Experiment:
    """The experiment called ``name`` (its key or an alias); InputError naming the known ones."""
    _load()
    key = _ALIASES.get(name)
    if key is None:
        raise InputError(f"unknown experiment {name!r}; known: {', '.join(_REGISTRY)}")
    return _REGISTRY[key]


def of_result(result: object) -> Experiment | None:
    """The experiment whose declared ``result_type`` ``result`` is (None for a part of a result)."""
    return next((e for e in experiments() if e.result_type is not None and type(result) is e.result_type), None)


def on_page(script: str) -> list[Experiment]:
    """The experiments shown by the page ``script`` (e.g. "pages/7_Kernels.py"), in order."""
    return [e for e in experiments() if e.page is not None and e.page.script == script]


def page_links() -> list[PageLink]:
    """The page links the declarations give, one per page, in the order of the first experiment of each."""
    return list({e.page.script: e.page for e in experiments() if e.page is not None}.values())


def history_columns() -> tuple[str, ...]:
    """Parameters with a History column of their own: every declaration's ``history_columns``, first seen first."""
    return tuple(dict.fromkeys(c for e in experiments() for c in e.history_columns))


def check_sections() -> dict[str, tuple[Experiment, CheckSection]]:
    """Every declared ``gpu check`` section by its key, with the experiment declaring it, in order."""
    return {section.key: (e, section) for e in experiments() for section in e.check_sections()}
