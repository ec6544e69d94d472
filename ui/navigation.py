"""The sidebar's page list and the Home page's list of pages, from the declarations.

No list of pages is kept anywhere: an experiment's declaration gives its page's link
(``Experiment.page``), and a page that shows no experiment (Home, History, Device...)
states ``PAGE = PageLink(...)`` with plain literals in its own file, found here by
reading the file (it is never run for this). A new page is one new file.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpu.catalog.base import PageLink
from gpu.catalog.registry import page_links
from gpu.sim import pyast

APP_DIR = Path(__file__).resolve().parent.parent  # where app.py and pages/ live
HOME = "app.py"


def declared_link(path: Path, app_dir: Path = APP_DIR) -> PageLink | None:
    """The ``PAGE = PageLink(...)`` a page file states, or None; ValueError when it is not plain literals."""
    return _declared_link(path, app_dir, path.stat().st_mtime_ns)


@lru_cache(maxsize=256)  # every page draws the sidebar on every rerun: parse a file again only when it changed
def _declared_link(path: Path, app_dir: Path, _mtime_ns: int) -> PageLink | None:
    tree = pyast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PAGE"]):
            continue
        call = node.value
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "PageLink"):
            raise ValueError(f"{path.name}: PAGE must be PageLink(...), got {ast.unparse(call)}")
        values = [*call.args, *(k.value for k in call.keywords)]
        if not all(isinstance(v, ast.Constant) and isinstance(v.value, (str, int)) for v in values):
            raise ValueError(
                f"{path.name}: PageLink(...) must use plain strings and numbers (the file is read, not run)"
            )
        # (every value is a plain constant: checked above)
        args: list[Any] = [a.value for a in call.args if isinstance(a, ast.Constant)]
        kwargs: dict[str, Any] = {
            k.arg: k.value.value for k in call.keywords if k.arg is not None and isinstance(k.value, ast.Constant)
        }
        link = PageLink(*args, **kwargs)
        return link if link.script else replace(link, script=path.relative_to(app_dir).as_posix())
    return None


def all_links(app_dir: Path = APP_DIR) -> list[PageLink]:
    """Every page's link in sidebar order: the declarations' and the page files' own, Home first."""
    links = {link.script: link for link in page_links()}
    for path in [app_dir / HOME, *sorted((app_dir / "pages").glob("*.py"))]:
        link = declared_link(path, app_dir)
        if link is not None:
            links.setdefault(link.script, link)
    return sorted(links.values(), key=lambda link: (link.order, link.label))


def visible_links(teacher: bool) -> list[PageLink]:
    """The links a session sees: every page's, the teacher's pages only for a teacher (``teacher``)."""
    return [page for page in all_links() if teacher or not page.teacher]


def link(label: str) -> PageLink:
    """The link of the page called ``label``; KeyError naming the known ones."""
    found = {lk.label: lk for lk in all_links()}
    if label not in found:
        raise KeyError(f"no page called {label!r}; known: {', '.join(found)}")
    return found[label]
