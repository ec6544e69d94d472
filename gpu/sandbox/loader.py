"""Turn a checked source into a kernel: exec it in a restricted namespace, never as a module.

Only after ``check_source`` passed. The namespace's builtins are the checker's allow-list
plus an ``__import__`` that hands out only ``numba`` (for ``from numba import cuda`` and
dtypes) and ``math``: a second layer if the checker missed something. The module is never
put in ``sys.modules`` and nothing in it outlives the child process.
"""

from __future__ import annotations

import builtins
import linecache
import types

from gpu.sandbox.checker import ALLOWED_BUILTINS, Refusal, check_source


class _NumbaForSubmissions(types.ModuleType):
    """``numba`` as a submission sees it under the lab's simulator: its ``cuda`` is the lab's."""

    def __getattr__(self, name):
        import numba

        from gpu.core.backend import cuda

        return cuda if name == "cuda" else getattr(numba, name)


_NUMBA = _NumbaForSubmissions("numba")


def _restricted_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and name in ("numba", "math"):
        import numba  # noqa: F401  (already imported by gpu.core.backend's decision)

        from gpu.core.backend import BACKEND

        if name == "numba" and BACKEND.lab_simulator:
            return _NUMBA
        return builtins.__import__(name, globals, locals, fromlist, level)
    raise ImportError(f"import of {name!r} is not allowed in a submission")


def namespace() -> dict:
    """Fresh globals for one submission: the allowed builtins and the restricted import, nothing else."""
    allowed = {name: getattr(builtins, name) for name in ALLOWED_BUILTINS}
    allowed["__import__"] = _restricted_import
    return {"__builtins__": allowed, "__name__": "submission"}


def load_module(source: str, kernel_name: str, n_args: int) -> dict:
    """Check ``source`` and exec it; return its namespace (raises Refusal when the checker refuses)."""
    import gpu  # noqa: F401  (decides hardware or simulator before numba.cuda is imported)

    check_source(source, kernel_name, n_args)
    scope = namespace()
    # The lab's simulator reads a kernel's source to run it (and tracebacks show its lines).
    linecache.cache["submission.py"] = (len(source), None, source.splitlines(True), "submission.py")
    try:
        exec(compile(source, "submission.py", "exec"), scope)  # checked above; restricted builtins
    except ImportError as exc:
        raise Refusal("import", 0, str(exc)) from None
    return scope


def load_kernel(source: str, kernel_name: str, n_args: int | None = None):
    """The ``@cuda.jit`` dispatcher named ``kernel_name`` in ``source`` (checked, restricted exec)."""
    if n_args is None:
        import ast

        tree = ast.parse(source)
        n_args = next(
            (len(f.args.args) for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == kernel_name), 0
        )
    return load_module(source, kernel_name, n_args)[kernel_name]


__all__ = ["load_kernel", "load_module", "namespace"]
