"""Streamlit's compile of a page script, under the lab's parser lock.

Streamlit compiles each page script once per server (``ScriptCache.get_bytecode``: ``ast.parse`` for its "magic",
then ``compile`` of the tree), under a lock of its own. The lab parses learners' sources in other threads under
``gpu.sim.pyast``'s lock. CPython 3.11 keeps the AST constructor's recursion depth per interpreter
(python/cpython#106905), so the two could interleave: a test running eight sessions at once (each its own script
cache) saw a page's compile fail with "SystemError: AST constructor recursion depth mismatch", and on a class's
server a page's first compile could meet a judge's checker. ``guard()`` makes Streamlit's compile take the lab's
lock too (idempotent; the app calls it first thing, the tests at start).
"""

from __future__ import annotations

from typing import Any

from streamlit.runtime.scriptrunner import script_cache

from gpu.sim import pyast

_GUARDED = "_kernel_lab_parser_lock"


def guard() -> None:
    """From now on every ``ScriptCache.get_bytecode`` in this process holds ``gpu.sim.pyast``'s lock."""
    original = script_cache.ScriptCache.get_bytecode
    if getattr(original, _GUARDED, False):
        return

    def get_bytecode(self: script_cache.ScriptCache, script_path: str) -> Any:
        with pyast.held():
            return original(self, script_path)

    setattr(get_bytecode, _GUARDED, True)
    script_cache.ScriptCache.get_bytecode = get_bytecode  # type: ignore[method-assign]


__all__ = ["guard"]
