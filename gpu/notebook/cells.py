"""The pieces every notebook is made of: markdown and code cells, the notebook around them, and a kernel's source
cut from the lab's file (``gpu.notebook.build`` and the builders of each experiment's cells use them)."""

from __future__ import annotations

import ast
from pathlib import Path

from gpu.sim import pyast


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text.strip().splitlines(keepends=True)}


def _code(text: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": text.strip().splitlines(keepends=True)}


def _notebook(cells: list[dict]) -> dict:
    for number, cell in enumerate(cells):
        cell["id"] = f"cell-{number}"  # nbformat 4.5 wants ids; stable ones keep a regenerated notebook identical
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "accelerator": "GPU",  # Colab and Kaggle open it asking for a GPU runtime
            "colab": {"gpuType": "T4", "provenance": []},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _function_source(path: Path, name: str) -> str:
    """The source of function ``name`` in ``path``, decorated ``@cuda.jit`` (the lab's options dropped)."""
    text = path.read_text(encoding="utf-8")
    node = next(n for n in pyast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    body = ast.get_source_segment(text, node, padded=False) or ""
    lines = body.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    return "from numba import cuda\n\n\n@cuda.jit\n" + "\n".join(lines[start:]) + "\n"


__all__ = ["_code", "_function_source", "_markdown", "_notebook"]
