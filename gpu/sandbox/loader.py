"""Turn a checked source into a kernel: exec it in a restricted namespace, never as a module.

Only after ``check_source`` passed. The namespace's builtins are the checker's allow-list
plus an ``__import__`` that hands out only ``numba`` (for ``from numba import cuda`` and
dtypes) and ``math`` to the submission's own import statements: a second layer if the
checker missed something. The module is never put in ``sys.modules`` and nothing in it
outlives the child process.

That ``__import__`` is also what C code calls while a submission's frame is the current one
(``PyImport_Import`` takes ``__import__`` from the current frame's builtins): NumPy's lazy
imports of its own modules (``numpy._core._dtype`` when ``int8(100) + 1000`` overflows)
arrive here with the submission's globals. Those are told apart by the calling frame's
instruction (an ``IMPORT_NAME`` is the submission's own ``import``; anything else is a call
from C or a direct call) and served only for ``numpy.*`` and ``numba.*`` modules, so the
learner sees NumPy's real error (an OverflowError, with the line) instead of an import
refusal they never wrote.

An exception raised while the module's top level runs (a constant NumPy rejects, a decorator
that refuses its arguments) is the learner's: a ``Refusal("module", line, ...)`` naming the
line, never "the harness failed".
"""

from __future__ import annotations

import builtins
import dis
import linecache
import sys
import traceback
import types

from gpu.sandbox.checker import ALLOWED_BUILTINS, Refusal, check_source
from gpu.sim import pyast


class _NumbaForSubmissions(types.ModuleType):
    """``numba`` as a submission sees it under the lab's simulator: its ``cuda`` is the lab's."""

    def __getattr__(self, name):
        import numba

        from gpu.core.backend import cuda

        return cuda if name == "cuda" else getattr(numba, name)


_NUMBA = _NumbaForSubmissions("numba")


SUBMISSION_NAME = "submission"  # the namespace's __name__
SOURCE_FILE = "submission.py"
_IMPORT_NAME = dis.opmap["IMPORT_NAME"]
_INTERNAL_PACKAGES = ("numpy", "numba")  # the libraries a submission is handed, whose C code imports lazily


def _from_import_statement(frame) -> bool:
    """Whether ``frame`` (the caller of ``__import__``) is a submission executing its own ``import`` statement."""
    if frame is None or frame.f_globals.get("__name__") != SUBMISSION_NAME:
        return False
    code, at = frame.f_code.co_code, frame.f_lasti
    return 0 <= at < len(code) and code[at] == _IMPORT_NAME


def _restricted_import(name, globals=None, locals=None, fromlist=(), level=0):
    caller = sys._getframe(1)
    if caller.f_globals.get("__name__") != SUBMISSION_NAME:
        # library code whose functions were made with these builtins (never the learner's frames)
        return builtins.__import__(name, globals, locals, fromlist, level)
    if not _from_import_statement(caller):
        # C code (NumPy's lazy imports) running on behalf of the submission's frame, or a direct call
        if level == 0 and name.split(".")[0] in _INTERNAL_PACKAGES and "." in name:
            return builtins.__import__(name, globals, locals, fromlist, level)
        raise ImportError(f"import of {name!r} is not allowed in a submission")
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
    return {"__builtins__": allowed, "__name__": SUBMISSION_NAME}


def learner_line(exc: BaseException) -> int:
    """The submission's innermost line in ``exc``'s traceback (0 when it has none)."""
    line = 0
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == SOURCE_FILE:
            line = frame.lineno or 0
    return line


def load_module(source: str, kernel_name: str, n_args: int, *, checked: bool = False) -> dict:
    """Check ``source`` (unless ``checked``: this process already did) and exec it; return its namespace.

    Raises Refusal when the checker refuses, or when the learner's top level raises (rule ``module``,
    with the line).
    """
    import gpu  # noqa: F401  (decides hardware or simulator before numba.cuda is imported)

    if not checked:
        check_source(source, kernel_name, n_args)
    scope = namespace()
    # The lab's simulator reads a kernel's source to run it (and tracebacks show its lines).
    linecache.cache[SOURCE_FILE] = (len(source), None, source.splitlines(True), SOURCE_FILE)
    try:
        exec(compile(source, SOURCE_FILE, "exec"), scope)  # checked above; restricted builtins
    except ImportError as exc:
        raise Refusal("import", learner_line(exc), str(exc)) from None
    except Exception as exc:  # the learner's module code raised: theirs, with the line
        text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        message = f"your file's top level raised {type(exc).__name__}" + (f": {text}" if text else "")
        raise Refusal("module", learner_line(exc), message) from None
    return scope


def load_kernel(source: str, kernel_name: str, n_args: int | None = None):
    """The ``@cuda.jit`` dispatcher named ``kernel_name`` in ``source`` (checked, restricted exec)."""
    if n_args is None:
        import ast

        tree = pyast.parse(source)
        n_args = next(
            (len(f.args.args) for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == kernel_name), 0
        )
    return load_module(source, kernel_name, n_args)[kernel_name]



def solution_kernel(solution, kernel_name: str):
    """A problem's reference solution (``gpu.problems.base.Solution``) as a dispatcher: the lab's
    own kernel where the solution names a module, else its source compiled through the same
    checker and restricted exec as a learner's."""
    if solution.module:
        import importlib

        return getattr(importlib.import_module(solution.module), solution.name)
    return load_kernel(solution.source, kernel_name)


__all__ = ["learner_line", "load_kernel", "load_module", "namespace", "solution_kernel"]
