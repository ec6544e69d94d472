"""Every experiment is one folder of gpu/experiments/ (a vertical slice), and the engine part of a folder never
reaches up: its kernels, declaration, run and result import the primitives, the declaration and the catalog
machinery, never Streamlit, Altair, ui/, gpu/service/ or gpu/report/. Only a folder's ``report``/``check``
(prose and its ``gpu check`` section) may use gpu/report/ and gpu/service/, and only its ``charts`` Altair and
ui/'s shared chart helpers. Its view (Streamlit) is ``ui/views/experiments/<name>.py``, outside gpu/; the page
hands the view's ``recorded`` drawing to its "On a real GPU" panel."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from gpu.catalog import registry

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "gpu" / "experiments"

# What each kind of module of a folder may import beyond the engine's own (None: anything).
REPORT = ("gpu.report", "gpu.service")
FACES: dict[str, tuple[str, ...] | None] = {  # registry.FACES
    "report": REPORT,
    "check": REPORT,
    "charts": (*REPORT, "altair", "ui."),
    "home": ("gpu.service.references",),  # Home's headline: the recorded run, no Streamlit
}
NEVER_IN_THE_ENGINE = ("streamlit", "altair", "ui", "gpu.service", "gpu.report", "gpu.trace", "gpu.sandbox")


def _folders() -> list[Path]:
    return sorted(p for p in EXPERIMENTS.iterdir() if (p / "__init__.py").exists())


def _modules() -> list[Path]:
    return [m for folder in _folders() for m in sorted(folder.glob("*.py"))]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_gpu_experiments_holds_only_experiment_folders():
    loose = sorted(p.name for p in EXPERIMENTS.glob("*.py"))
    assert loose == ["__init__.py"], "an experiment is a folder; machinery goes below (gpu/catalog/)"
    assert [p.name for p in _folders()] == [f.rsplit(".", 1)[1] for f in registry.slices()]


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: p.name)
def test_every_folder_declares_an_experiment_in_its_engine(folder):
    declared = registry.experiments()
    modules = registry.engine_modules(f"gpu.experiments.{folder.name}")
    assert any(
        value in declared for m in modules for value in vars(importlib.import_module(m)).values()
    ), f"no engine module of gpu/experiments/{folder.name}/ registers an experiment"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_engine_of_a_folder_never_imports_the_ui_the_services_or_the_reports(path):
    assert set(FACES) == set(registry.FACES)
    face = FACES.get(path.stem, ())
    if face is None:
        return
    for name in _imports(path):
        if name.startswith(face):
            continue
        for banned in NEVER_IN_THE_ENGINE:
            assert not (name == banned or name.startswith(banned + ".")), (
                f"gpu/experiments/{path.parent.name}/{path.name} imports {name}: "
                f"{'a ' + path.stem if path.stem in FACES else 'the engine'} may not ({banned})"
            )


def test_the_kernel_search_never_imports_a_folders_face():
    from gpu.catalog.kernel_index import _candidate_modules

    faces = [m for m in _candidate_modules() if m.startswith("gpu.experiments.") and m.rsplit(".", 1)[1] in FACES]
    assert faces == [], "a view imports Streamlit: python -m gpu compile and the compile gate must not"


def _views() -> list[Path]:
    return sorted(p for p in (ROOT / "ui" / "views" / "experiments").glob("*.py") if p.name != "__init__.py")


def test_each_view_is_named_after_its_folder():
    assert [p.stem for p in _views()] == [p.stem for p in _views() if (EXPERIMENTS / p.stem).is_dir()], (
        "ui/views/experiments/<name>.py draws gpu/experiments/<name>/"
    )
    assert not list(EXPERIMENTS.glob("*/view.py")), "a folder's view lives in ui/views/experiments/, not in gpu/"


def _panel_calls(page: Path) -> dict[str, int]:
    """``panel_after_run("name", ...)`` calls of ``page``: the panel's name and how many arguments it is given."""
    return {
        node.args[0].value: len(node.args)
        for node in ast.walk(ast.parse(page.read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "panel_after_run"
        and node.args and isinstance(node.args[0], ast.Constant)
    }


@pytest.mark.parametrize("view", _views(), ids=lambda p: p.stem)
def test_a_views_recorded_drawing_reaches_its_page_panel(view):
    """A view's ``recorded(ref)`` is handed to its page's ``panel_after_run``, or the panel would draw nothing."""
    module = importlib.import_module(f"ui.views.experiments.{view.stem}")
    if not hasattr(module, "recorded"):
        return
    names = {e.recorded.name for e in registry.experiments()
             if e.recorded is not None and e.run.__module__.startswith(f"gpu.experiments.{view.stem}.")}
    given = {name: n for page in sorted((ROOT / "pages").glob("*.py")) for name, n in _panel_calls(page).items()}
    assert names and all(given.get(name) == 2 for name in names), (
        f"pages call panel_after_run{sorted(given.items())}: each of {sorted(names)} needs the view's recorded"
    )
