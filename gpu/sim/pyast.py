"""Python's own parser, one thread at a time.

CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter state, not per thread: two threads
turning source into AST objects at once (``ast.parse``) or AST objects into code (``compile`` of a tree) can
interleave at an allocation and one of them fails with ``SystemError: AST constructor recursion depth
mismatch`` (python/cpython#106905). The app parses in many threads — a class's judges and their analyses, the
simulator in every session's run — and a correct kernel was once refused "the checker could not check this
source" that way, and a test of eight sessions at once saw a page's own compile fail so (Streamlit parses each
page once, ``ui/script_compile.py``). Every parse and every compile of a tree in this process goes through here.
It lives in the simulator because the simulator imports nothing else of the lab, and every parse must share the
one lock.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` of a module, serialised with every other parse and compile of a tree in this process."""
    with _LOCK:
        return ast.parse(source, filename=filename)


def parse_expression(source: str) -> ast.Expression:
    """``ast.parse(source, mode="eval")``, serialised the same way."""
    with _LOCK:
        return ast.parse(source, mode="eval")


def compile_tree(tree: ast.Module | ast.Expression, filename: str, mode: str = "exec") -> CodeType:
    """``compile`` of an AST, serialised with every parse in this process."""
    with _LOCK:
        return compile(tree, filename, mode)


@contextmanager
def held() -> Iterator[None]:
    """The same lock, for a parse made elsewhere: Streamlit compiling a page script (``ui/script_compile.py``)."""
    with _LOCK:
        yield


__all__ = ["compile_tree", "held", "parse", "parse_expression"]
