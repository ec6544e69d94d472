"""The problem set of "Write a kernel": one file per problem, found here automatically.

A new problem is one new file in this package defining ``PROBLEM = Problem(...)``
(``gpu/problems/base.py`` says what it declares); ``problems()`` lists them in order.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from gpu.core.limits import InputError
from gpu.problems.base import Problem


@lru_cache(maxsize=1)
def problems() -> tuple[Problem, ...]:
    """Every declared problem, in teaching order (modules without PROBLEM are skipped)."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        problem = getattr(module, "PROBLEM", None)
        if isinstance(problem, Problem):
            found.append(problem)
    keys = [p.key for p in found]
    duplicates = {k for k in keys if keys.count(k) > 1}
    if duplicates:
        raise RuntimeError(f"two problems share the key(s) {sorted(duplicates)}")
    return tuple(sorted(found, key=lambda p: (p.order, p.key)))


def get(key: str) -> Problem:
    """The problem named ``key``; InputError listing the names otherwise."""
    for problem in problems():
        if problem.key == key:
            return problem
    raise InputError(f"there is no problem {key!r}; the problems are: {', '.join(p.key for p in problems())}")


__all__ = ["Problem", "get", "problems"]
