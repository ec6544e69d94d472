"""The engine (every module under gpu/) never imports Streamlit: what draws a page lives in ui/ and pages/.

Every import counts, those inside functions too, in every module of every folder (an experiment's view
is ``ui/views/experiments/<name>.py``, not a module of its folder).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def streamlit_imports(source: str) -> list[int]:
    """The lines of ``source`` that import streamlit (or one of its modules)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        else:
            continue
        if any(name == "streamlit" or name.startswith("streamlit.") for name in names):
            lines.append(node.lineno)
    return lines


def test_the_finder_sees_every_spelling():
    source = ("import streamlit as st\nfrom streamlit.testing.v1 import AppTest\ndef f():\n    import streamlit\n"
              "import streamlit_extras\nfrom .streamlit import x\n")
    assert streamlit_imports(source) == [1, 2, 4]


def test_no_module_under_gpu_imports_streamlit():
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "gpu").rglob("*.py"))
        for line in streamlit_imports(path.read_text(encoding="utf-8"))
    ]
    assert found == [], f"gpu/ is the engine and never imports Streamlit (a view goes in ui/views/): {found}"
