"""Where a loop can be left before its items run out: the AST walks the rewrite's rule 5 needs (gpu/sim/rewrite.py).

A ``for`` loop over a range is charged its whole length to the launch's work as it starts, unless it may leave early
(``may_leave``: a ``break`` of its own, or a ``return``), when it is counted turn by turn. A ``while`` loop with an
``else`` charges its turns first in the ``else`` and before each of its own ``break``s (``before_breaks``), since a
``break`` skips the ``else``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

_OWN_SCOPES = (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _statement_lists(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists directly inside ``stmt`` (an ``if``'s two branches, a ``try``'s parts, ...); none for a loop
    or a function, whose ``break``s are their own."""
    if isinstance(stmt, _OWN_SCOPES):
        return []
    lists = [getattr(stmt, field) for field in ("body", "orelse", "finalbody")
             if isinstance(getattr(stmt, field, None), list)]
    return lists + [part.body for part in getattr(stmt, "handlers", []) + getattr(stmt, "cases", [])]


def may_leave(body: list[ast.stmt]) -> bool:
    """Whether a loop with this body may end before its items do: a ``break`` of its own, or a ``return`` anywhere in
    it (but in a function defined there)."""
    lists = [body]
    while lists:
        for stmt in lists.pop():
            if isinstance(stmt, ast.Break):
                return True
            lists.extend(_statement_lists(stmt))
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def before_breaks(body: list[ast.stmt], charge: Callable[[ast.stmt], ast.stmt]) -> None:
    """Put ``charge(break)`` right before every ``break`` of this loop (not of a loop inside it) in ``body``."""
    for index in range(len(body) - 1, -1, -1):
        if isinstance(body[index], ast.Break):
            body.insert(index, charge(body[index]))
        else:
            for inner in _statement_lists(body[index]):
                before_breaks(inner, charge)


__all__ = ["before_breaks", "may_leave"]
