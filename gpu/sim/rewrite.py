"""Turn a kernel's Python source into what the simulator runs: same lines, three rewrites.

1. **Every subscript is bounds-checked.** NumPy wraps a negative index (``out[-1]`` is the
   last element); a GPU writes before the array. Each index expression ``e`` becomes
   ``(_kN if (_kN := e) >= 0 else _neg(array, _kN, position, line))``: one comparison, no
   call, on the common path. An index past the end already raises in NumPy (IndexError),
   which the engine turns into the same out-of-bounds error.
2. **Barriers and warp collectives become ``yield``.** ``cuda.syncthreads()`` becomes
   ``(yield (_BAR, line, ...))``; a call to a device function that (transitively) contains
   one becomes ``(yield from f(...))``. The kernel is then a generator: the engine runs each
   thread up to its next barrier and switches there (generators, not greenlets: see
   docs/simulator.md for the measurement). A kernel with no barrier stays a plain function.
3. **Shared arrays are per block, per call site.** ``cuda.shared.array(...)`` becomes
   ``_shared(site, ...)`` so every thread of a block gets the same array at one site.

Line numbers are kept (every new node copies its location), so tracebacks and errors name
the learner's line.
"""

from __future__ import annotations

import ast
import textwrap
import types
from dataclasses import dataclass

# cuda.* calls at which a thread waits for others: (block barriers, warp collectives).
BLOCK_SYNC = {
    "syncthreads": "bar",
    "syncthreads_count": "bar_count",
    "syncthreads_and": "bar_and",
    "syncthreads_or": "bar_or",
}
WARP_SYNC = {
    "syncwarp": "syncwarp",
    "shfl_sync": "shfl",
    "shfl_up_sync": "shfl_up",
    "shfl_down_sync": "shfl_down",
    "shfl_xor_sync": "shfl_xor",
    "all_sync": "all",
    "any_sync": "any",
    "eq_sync": "eq",
    "ballot_sync": "ballot",
    "match_any_sync": "match_any",
}
SYNC_NAMES = {**BLOCK_SYNC, **WARP_SYNC}


@dataclass(frozen=True)
class Rewritten:
    """The rewritten function's module code, and whether it is a generator (has sync points)."""

    code: types.CodeType
    name: str
    is_generator: bool
    block_name: str | None = None  # the whole-block loop of a barrier-free kernel, where one could be made


def _cuda_attr(node: ast.AST, cuda_names: frozenset[str]) -> str | None:
    """``cuda.x`` -> "x"; ``cuda.shared.array`` -> "shared.array"; else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in cuda_names and parts:
        return ".".join(reversed(parts))
    return None


def _calls_sync(func: ast.FunctionDef, cuda_names: frozenset[str], sync_devices: frozenset[str]) -> bool:
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            name = _cuda_attr(node.func, cuda_names)
            if name in SYNC_NAMES:
                return True
            if isinstance(node.func, ast.Name) and node.func.id in sync_devices:
                return True
    return False


class _Rewriter(ast.NodeTransformer):
    def __init__(self, cuda_names: frozenset[str], sync_devices: frozenset[str]):
        self.cuda_names = cuda_names
        self.sync_devices = sync_devices
        self.counter = 0
        self.sites = 0

    def _fresh(self) -> str:
        self.counter += 1
        return f"_k{self.counter}"

    def _checked(self, index: ast.expr, array: ast.expr, position: int, line: int) -> ast.expr:
        name = self._fresh()
        test = ast.Compare(
            left=ast.NamedExpr(target=ast.Name(name, ast.Store()), value=index),
            ops=[ast.GtE()],
            comparators=[ast.Constant(0)],
        )
        fail = ast.Call(
            func=ast.Name("_neg", ast.Load()),
            args=[array, ast.Name(name, ast.Load()), ast.Constant(position), ast.Constant(line)],
            keywords=[],
        )
        return ast.IfExp(test=test, body=ast.Name(name, ast.Load()), orelse=fail)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        line = getattr(node, "lineno", 0)
        # The array expression is evaluated twice only on the failing path (to name it).
        index = node.slice
        if isinstance(index, ast.Slice):
            return node
        if isinstance(index, ast.Tuple):
            if any(isinstance(e, (ast.Slice, ast.Starred)) for e in index.elts):
                return node
            elts = [self._checked(e, node.value, k, line) for k, e in enumerate(index.elts)]
            node.slice = ast.Tuple(elts=elts, ctx=ast.Load())
        else:
            node.slice = self._checked(index, node.value, 0, line)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        line = getattr(node, "lineno", 0)
        name = _cuda_attr(node.func, self.cuda_names)
        if name in SYNC_NAMES:
            # The request a thread yields: (kind, line, args, kwargs). Without arguments it
            # is one constant tuple, so the engine sees "every thread at this barrier" by identity.
            kind = SYNC_NAMES[name]
            if not node.args and not node.keywords:
                request: object = (kind, line, (), None)  # a constant tuple: compile() accepts it, typeshed does not
                return ast.Yield(value=ast.Constant(request))  # type: ignore[arg-type]
            kwargs = (
                ast.Dict(keys=[ast.Constant(k.arg) for k in node.keywords], values=[k.value for k in node.keywords])
                if node.keywords
                else ast.Constant(None)
            )
            request = ast.Tuple(
                elts=[ast.Constant(kind), ast.Constant(line), ast.Tuple(elts=list(node.args), ctx=ast.Load()), kwargs],
                ctx=ast.Load(),
            )
            return ast.Yield(value=request)
        if name == "shared.array":
            self.sites += 1
            return ast.Call(
                func=ast.Name("_shared", ast.Load()),
                args=[ast.Constant(self.sites), ast.Constant(line), *node.args],
                keywords=node.keywords,
            )
        if isinstance(node.func, ast.Name) and node.func.id in self.sync_devices:
            return ast.YieldFrom(value=node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.decorator_list = []
        self.generic_visit(node)
        return node


def function_node(source: str, name: str, first_line: int) -> ast.FunctionDef:
    """The ``def name`` in ``source`` (dedented), with line numbers of the original file."""
    tree = ast.parse(textwrap.dedent(source))
    ast.increment_lineno(tree, first_line - 1)
    first = source.splitlines()[0] if source else ""
    indent = len(first) - len(first.lstrip())  # dedent moved every column left by this: put them back (the trace
    if indent:  # quotes `out[i]` from the file by column)
        for node in ast.walk(tree):
            if isinstance(node, (ast.stmt, ast.expr)):
                node.col_offset += indent
                if node.end_col_offset is not None:
                    node.end_col_offset += indent
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise ValueError(f"no function {name!r} in its source")


def needs_sync(func: ast.FunctionDef, cuda_names: frozenset[str], sync_devices: frozenset[str]) -> bool:
    return _calls_sync(func, cuda_names, sync_devices)


def rewrite(
    func: ast.FunctionDef, filename: str, cuda_names: frozenset[str], sync_devices: frozenset[str]
) -> Rewritten:
    """Compile ``func`` rewritten for the simulator; the code defines ``func.name`` when exec'd."""
    generator = _calls_sync(func, cuda_names, sync_devices)
    rewriter = _Rewriter(cuda_names, sync_devices)
    new = rewriter.visit(func)
    body = [new]
    block = None if generator else _block_loop(new)
    if block is not None:
        body.append(block)
    module = ast.Module(body=body, type_ignores=[])
    ast.fix_missing_locations(module)
    return Rewritten(code=compile(module, filename, "exec"), name=func.name, is_generator=generator,
                     block_name=block.name if block is not None else None)


class _ReturnToContinue(ast.NodeTransformer):
    def visit_Return(self, node: ast.Return) -> ast.AST:
        return ast.copy_location(ast.Continue(), node)


def _block_loop(func: ast.FunctionDef) -> ast.FunctionDef | None:
    """``def NAME__block(_tidx, _count, *args)``: the kernel's body in a loop over threadIdx.x of a 1-D block.

    One Python call per block instead of one per thread (the plain-loop path's largest cost).
    A ``return`` becomes ``continue`` (the next thread), so only a body whose returns are not
    inside a loop of its own qualifies; anything else keeps the per-thread call.
    """
    for node in ast.walk(func):
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)) and any(
            isinstance(n, ast.Return) for n in ast.walk(node)
        ):
            return None
        if node is not func and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal)):
            return None
    import copy

    body = [_ReturnToContinue().visit(stmt) for stmt in copy.deepcopy(func.body)]
    set_x = ast.Assign(targets=[ast.Attribute(ast.Name("_tidx", ast.Load()), "x", ast.Store())],
                       value=ast.Name("_tx", ast.Load()))
    loop = ast.For(target=ast.Name("_tx", ast.Store()),
                   iter=ast.Call(ast.Name("range", ast.Load()), [ast.Name("_count", ast.Load())], []),
                   body=[set_x, *body], orelse=[])
    args = copy.deepcopy(func.args)
    args.args = [ast.arg("_tidx"), ast.arg("_count"), *args.args]
    block = ast.FunctionDef(name=f"{func.name}__block", args=args, body=[loop], decorator_list=[], returns=None)
    ast.copy_location(block, func)
    ast.copy_location(loop, func.body[0])
    ast.copy_location(set_x, func.body[0])
    return block


__all__ = ["BLOCK_SYNC", "SYNC_NAMES", "WARP_SYNC", "Rewritten", "function_node", "needs_sync", "rewrite"]
