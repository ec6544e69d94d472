"""Turn a kernel's Python source into what the simulator runs: same lines, six rewrites.

1. **Every subscript is bounds-checked as Numba compiles it.** Numba wraps a negative index
   once, as Python does (numba-cuda's ``fix_index``): ``out[i - n]`` with 0 <= i < n is
   ``out[i]``. Each index expression ``e`` becomes
   ``(k if (k := e) >= 0 else neg(array, k, position, line))``: one comparison, no call, on
   the common path; ``neg`` wraps an index in [-size, 0) (and warns, naming the line: CUDA C
   would address memory before the array) and faults below -size. An index past the end
   already raises in NumPy (IndexError), which the engine turns into the same fault.
2. **Barriers and warp collectives become ``yield``.** ``cuda.syncthreads()`` becomes
   ``(yield (BAR, line, args, kwargs, site))``, where ``site`` is unique to that call node (two
   barriers on one line are two barriers); a call of a device function that (transitively)
   contains one becomes ``(yield from f(...))``. Such a function may only be called by its
   name: any other use of it (an alias, an argument) is refused, since a generator that is
   never iterated would silently skip its work. The kernel is then a generator: the engine
   runs each thread up to its next barrier and switches there (see docs/simulator.md).
3. **Shared arrays are per block, per call site.** ``cuda.shared.array(...)`` becomes
   ``shared(site, line, ...)``, ``site`` unique to that node across every function compiled.
4. **A launch inside a kernel is refused**, as Numba's CUDA compiler refuses it.
5. **Every loop counts its turns.** Before a ``while`` its thread takes the launch's limit
   (``lab$turns()``, gpu/sim/loops.py: ``loop_limit``, or the launch's work left where that is
   less: ``work_limit``) into two fresh locals ``a = t``, and each turn counts ``t`` down first
   thing: ``if (t := t - 1) < 0: lab$endless(line, "while", a)``; on its way out (after it, first
   in its ``else`` and before its ``break``s where it has one, before a ``return`` inside it) it
   charges ``lab$spent(a - t, line)`` to the launch's work. A ``for`` iterates
   ``lab$within(items, line, leaves)``: a range within both limits as it is, charged at once,
   anything longer, or a loop with a ``break`` or ``return`` in it (``leaves``), counted as it
   goes. A run of one loop past the loop limit in one thread, or the launch's loops past its work
   limit in all, is a KernelFault naming the thread and the loop's line, in a second, instead of
   a submission that spins until its wall-clock limit. (A GPU has no such limit; the fault says so.)
6. **Whole numbers and divisions as Numba compiles them** (gpu/sim/arithmetic.py). ``a * b`` becomes
   ``(p if (p := a * b).__class__ is not lab$int or LOW <= p <= HIGH else lab$wrap(p))`` (no call
   on the common path), ``a ** b``, ``a << b`` and ``a >> b`` become ``lab$pow(a, b)``,
   ``lab$shl(a, b, line)`` and ``lab$shr(a, b, line)``, ``a / b``, ``a // b`` and ``a % b`` become
   ``lab$div(a, b, line)``, ``lab$floordiv(...)`` and ``lab$mod(...)``, and ``x *= b`` and the others on a local name
   likewise; a Python int stored into an array element is cast to the element's type first, as
   Numba's store casts an int64 (``lab$stored``). A Python int past int64
   wraps; a shift by a count outside 0-63, undefined in compiled Numba, is a KernelFault naming
   the line; a division by zero gives what Numba's error model for kernels gives (an int 0, a
   float IEEE's inf or nan) where Python raises. ``+`` and ``-`` are left to Python (checking
   every sum would double the cost of an integer loop): a sum past int64 is wrapped at the next
   product or store, the same value modulo 2**64; only a comparison or a division of such a sum
   differs. Two literals, a product with a float literal, a division by a literal other than
   zero: left alone.

Every name the generated code binds or calls (the helpers, ``range``, the temporaries, the
block loop) contains ``$``, which no Python source can spell, and the helpers and builtins are
bound in the namespace by the simulator itself: no submission can define, shadow or replace
them. Line numbers are kept (every new node copies its location), so tracebacks and errors
name the learner's line.
"""

from __future__ import annotations

import ast
import copy
import itertools
import textwrap
import types
from dataclasses import dataclass

from gpu.sim import pyast
from gpu.sim.loop_exits import before_breaks, may_leave

# The generated code's own names: "$" is outside the identifier space of any source file.
NEG = "lab$neg"
INDEX = "lab$index"  # a whole index that may be a tuple held in a variable (``gid = cuda.grid(2); a[gid]``)
SHARED = "lab$shared"
RANGE = "lab$range"
BLOCK = "lab$block"
TURNS = "lab$turns"  # the launch's limit on one run of one loop in one thread
ENDLESS = "lab$endless"  # called at the turn past it: raises the fault
SPENT = "lab$spent"  # a while loop's turns, charged to the launch's work limit on its way out
WITHIN = "lab$within"  # what a ``for`` loop iterates: its items, counted only where they may be more than the limit
INT, WRAP, POW, SHL, SHR = "lab$int", "lab$wrap", "lab$pow", "lab$shl", "lab$shr"  # int64 (gpu/sim/arithmetic.py)
DIV, FLOORDIV, MOD = "lab$div", "lab$floordiv", "lab$mod"  # division as Numba's error model for kernels does it
STORED = "lab$stored"  # a Python int about to be stored into an array element, as Numba's int64
_INT_OPS: dict[type, tuple[str, bool]] = {  # operator -> (helper, whether it takes the line); a product is inlined
    ast.Mult: (WRAP, False), ast.Pow: (POW, False), ast.LShift: (SHL, True), ast.RShift: (SHR, True),
    ast.Div: (DIV, True), ast.FloorDiv: (FLOORDIV, True), ast.Mod: (MOD, True)}
_DIVISIONS = (ast.Div, ast.FloorDiv, ast.Mod)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_TIDX, _COUNT, _TX = "lab$tidx", "lab$count", "lab$tx"
_SITES = itertools.count(1)  # one id per barrier, collective and shared-array call node, across every compile


class RewriteRefused(Exception):
    """A form the simulator cannot run faithfully: one sentence, and the line."""

    def __init__(self, sentence: str, line: int | None):
        self.sentence, self.line = sentence, line
        super().__init__(sentence)


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
    "match_all_sync": "match_all",
    "activemask": "activemask",  # the lanes converged here: a point where the warp's lanes meet
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


GRID_SYNC = "grid_sync"  # the request of ``cuda.cg.this_grid().sync()``: every thread of the grid meets there


def _grid_names(func: ast.AST, cuda_names: frozenset[str]) -> frozenset[str]:
    """Names assigned ``cuda.cg.this_grid()`` (``g = cuda.cg.this_grid()``)."""
    return frozenset(
        t.id for n in ast.walk(func) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
        and _cuda_attr(n.value.func, cuda_names) == "cg.this_grid" for t in n.targets if isinstance(t, ast.Name)
    )


def is_grid_sync(node: ast.Call, cuda_names: frozenset[str], grid_names: frozenset[str]) -> bool:
    """``g.sync()`` for a name assigned ``cuda.cg.this_grid()``, or ``cuda.cg.this_grid().sync()``."""
    f = node.func
    if not (isinstance(f, ast.Attribute) and f.attr == "sync" and not node.args and not node.keywords):
        return False
    if isinstance(f.value, ast.Name):
        return f.value.id in grid_names
    return isinstance(f.value, ast.Call) and _cuda_attr(f.value.func, cuda_names) == "cg.this_grid"


def _calls_sync(func: ast.AST, cuda_names: frozenset[str], sync_devices: frozenset[str]) -> bool:
    grids = _grid_names(func, cuda_names)
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            name = _cuda_attr(node.func, cuda_names)
            if name in SYNC_NAMES or is_grid_sync(node, cuda_names, grids):
                return True
            if isinstance(node.func, ast.Name) and node.func.id in sync_devices:
                return True
    return False


def grid_syncs(func: ast.AST, cuda_names: frozenset[str]) -> bool:
    """Whether ``func`` itself calls a grid group's ``sync()`` (its device functions are asked separately)."""
    grids = _grid_names(func, cuda_names)
    return any(isinstance(n, ast.Call) and is_grid_sync(n, cuda_names, grids) for n in ast.walk(func))


class _Rewriter(ast.NodeTransformer):
    def __init__(self, cuda_names: frozenset[str], sync_devices: frozenset[str], kernels: frozenset[str]):
        self.cuda_names = cuda_names
        self.sync_devices = sync_devices
        self.kernels = kernels
        self.counter = 0
        self.callees: set[int] = set()  # id() of every Name that is the function of a call
        self.top: ast.AST | None = None
        self.tuples: frozenset[str] = frozenset()  # local names that may hold a tuple (an index in a variable)
        self.grids: frozenset[str] = frozenset()  # local names assigned cuda.cg.this_grid()
        self.whiles: list[tuple[str, str, int]] = []  # the while loops around this node: (allowed, left, line)

    def _fresh(self) -> str:
        self.counter += 1
        return f"lab$k{self.counter}"

    def _checked(self, index: ast.expr, array: ast.expr, position: int, line: int) -> ast.expr:
        name = self._fresh()
        test = ast.Compare(
            left=ast.NamedExpr(target=ast.Name(name, ast.Store()), value=index),
            ops=[ast.GtE()],
            comparators=[ast.Constant(0)],
        )
        wrap = ast.Call(
            func=ast.Name(NEG, ast.Load()),
            args=[array, ast.Name(name, ast.Load()), ast.Constant(position), ast.Constant(line)],
            keywords=[],
        )
        return ast.IfExp(test=test, body=ast.Name(name, ast.Load()), orelse=wrap)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        line = getattr(node, "lineno", 0)
        # The array expression is evaluated twice only on the negative path (to wrap it or name it).
        index = node.slice
        if isinstance(index, ast.Slice):
            return node  # NumPy slices as Python does, and so does Numba (fix_slice)
        if isinstance(index, ast.Constant) and isinstance(index.value, str):
            return node  # a record's field by name: ``recs[i]["x"]``
        if isinstance(index, ast.Name) and index.id in self.tuples:
            node.slice = ast.Call(func=ast.Name(INDEX, ast.Load()), args=[node.value, index, ast.Constant(line)],
                                  keywords=[])
            return node
        if isinstance(index, ast.Tuple):
            if any(isinstance(e, (ast.Slice, ast.Starred)) for e in index.elts):
                return node
            elts = [self._checked(e, node.value, k, line) for k, e in enumerate(index.elts)]
            node.slice = ast.Tuple(elts=elts, ctx=ast.Load())
        else:
            node.slice = self._checked(index, node.value, 0, line)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        line = getattr(node, "lineno", None)
        if node.id in self.kernels and isinstance(node.ctx, ast.Load):
            raise RewriteRefused(
                f"this kernel launches the kernel {node.id}; a launch inside a kernel is refused, as Numba's CUDA "
                "compiler refuses it (launch kernels from the host)",
                line,
            )
        if node.id in self.sync_devices and isinstance(node.ctx, ast.Load) and id(node) not in self.callees:
            raise RewriteRefused(
                f"{node.id} synchronises threads, so it may only be called by its name ({node.id}(...)); "
                "an alias or a function passed along would hide its barriers from the simulator",
                line,
            )
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name):
            self.callees.add(id(node.func))
        self.generic_visit(node)
        line = getattr(node, "lineno", 0)
        if is_grid_sync(node, self.cuda_names, self.grids):
            grid_request: object = (GRID_SYNC, line, (), None, (next(_SITES), getattr(node, "col_offset", 0)))
            return ast.Yield(value=ast.Constant(grid_request))  # type: ignore[arg-type]
        name = _cuda_attr(node.func, self.cuda_names)
        if name in SYNC_NAMES:
            # The request a thread yields: (kind, line, args, kwargs, site). ``site`` is this node's own, so two
            # barriers on one line differ; without arguments the request is one constant tuple, so the engine sees
            # "every thread at this barrier" by identity.
            kind = SYNC_NAMES[name]
            site = (next(_SITES), getattr(node, "col_offset", 0))
            if not node.args and not node.keywords:
                request: object = (kind, line, (), None, site)  # a constant tuple: compile() accepts it, typeshed not
                return ast.Yield(value=ast.Constant(request))  # type: ignore[arg-type]
            kwargs = (
                ast.Dict(keys=[ast.Constant(k.arg) for k in node.keywords], values=[k.value for k in node.keywords])
                if node.keywords
                else ast.Constant(None)
            )
            request = ast.Tuple(
                elts=[ast.Constant(kind), ast.Constant(line), ast.Tuple(elts=list(node.args), ctx=ast.Load()), kwargs,
                      ast.Constant(site)],  # type: ignore[arg-type]
                ctx=ast.Load(),
            )
            return ast.Yield(value=request)
        if name == "shared.array":
            return ast.Call(
                func=ast.Name(SHARED, ast.Load()),
                args=[ast.Constant(next(_SITES)), ast.Constant(line), *node.args],
                keywords=node.keywords,
            )
        if isinstance(node.func, ast.Name) and node.func.id in self.sync_devices:
            return ast.YieldFrom(value=node)
        return node

    def visit_While(self, node: ast.While) -> list[ast.stmt]:
        """``a = t = lab$turns()`` before the loop; ``if (t := t - 1) < 0: lab$endless(line, "while", a)`` opens each
        turn (first, so a ``continue`` cannot skip it); ``lab$spent(a - t, line)`` on every way out but a fault: after
        the loop (its condition false, a ``break``), or, where it has an ``else``, first in it and before each of its
        ``break``s; before a ``return`` inside it (``visit_Return``)."""
        line = getattr(node, "lineno", 0)
        allowed, left = self._fresh(), self._fresh()
        self.whiles.append((allowed, left, line))
        self.generic_visit(node)
        self.whiles.pop()
        start = ast.Assign(targets=[ast.Name(allowed, ast.Store()), ast.Name(left, ast.Store())],
                           value=ast.Call(ast.Name(TURNS, ast.Load()), [], []))
        down = ast.NamedExpr(target=ast.Name(left, ast.Store()),
                             value=ast.BinOp(ast.Name(left, ast.Load()), ast.Sub(), ast.Constant(1)))
        past = ast.If(
            test=ast.Compare(left=down, ops=[ast.Lt()], comparators=[ast.Constant(0)]),
            body=[ast.Expr(ast.Call(ast.Name(ENDLESS, ast.Load()),
                                    [ast.Constant(line), ast.Constant("while"), ast.Name(allowed, ast.Load())], []))],
            orelse=[],
        )
        node.body = [past, *node.body]
        if not node.orelse:
            after = [self._spent([(allowed, left, line)], node)]
        else:  # a ``break`` skips the ``else``: each charges its own way out
            node.orelse = [self._spent([(allowed, left, line)], node), *node.orelse]
            before_breaks(node.body, lambda brk: self._spent([(allowed, left, line)], brk))
            after = []
        for new in (start, past):
            for sub in ast.walk(new):
                ast.copy_location(sub, node)
        return [start, node, *after]

    def visit_Return(self, node: ast.Return) -> ast.AST | list[ast.stmt]:
        """Inside ``while`` loops: each one's turns charged first (``visit_While``)."""
        self.generic_visit(node)
        if not self.whiles:
            return node
        return [self._spent(self.whiles, node), node]

    def _spent(self, loops: list[tuple[str, str, int]], where: ast.AST) -> ast.stmt:
        """``lab$spent(a - t [+ a2 - t2 ...], line)``: the turns taken so far by these while loops."""
        total: ast.expr | None = None
        for allowed, left, _ in loops:
            taken = ast.BinOp(ast.Name(allowed, ast.Load()), ast.Sub(), ast.Name(left, ast.Load()))
            total = taken if total is None else ast.BinOp(total, ast.Add(), taken)
        assert total is not None
        call = ast.Expr(ast.Call(ast.Name(SPENT, ast.Load()), [total, ast.Constant(loops[-1][2])], []))
        for sub in ast.walk(call):
            ast.copy_location(sub, where)
        return call

    def visit_For(self, node: ast.For) -> ast.For:
        """``for x in lab$within(items, line, leaves)``: a range within the limits as it is (no cost per turn, its
        turns charged at once), anything longer, or a loop that may leave early (``leaves``: a ``break`` or a
        ``return`` in its body), counted as it goes (a ``break`` before the limit is not a fault)."""
        leaves = may_leave(node.body)
        self.generic_visit(node)
        node.iter = ast.copy_location(
            ast.Call(ast.Name(WITHIN, ast.Load()),
                     [node.iter, ast.Constant(getattr(node, "lineno", 0)), ast.Constant(leaves)], []),
            node.iter,
        )
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        return self._int_op(node.op, node.left, node.right, node) or node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        """A Python int stored into an array element is cast to the element's type first, as Numba's store casts an
        int64 (``lab$stored``), instead of NumPy raising where it does not fit."""
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
            node.value = self._stored(node.value, node.targets[0], node)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        """``x *= b`` on a local name: ``x = <x * b as int64>``; ``a[i] += v``: ``v`` wrapped first (NumPy's element
        arithmetic then wraps as Numba's does)."""
        self.generic_visit(node)
        if isinstance(node.target, ast.Subscript):
            node.value = self._stored(node.value, node.target, node)
            return node
        if not isinstance(node.target, ast.Name):
            return node
        new = self._int_op(node.op, ast.Name(node.target.id, ast.Load()), node.value, node)
        if new is None:
            return node
        return ast.copy_location(ast.Assign(targets=[node.target], value=new), node)

    def _int_op(self, op: ast.operator, left: ast.expr, right: ast.expr, where: ast.AST) -> ast.expr | None:
        """``left op right`` as a compiled kernel does it, or None where Python's is the same: two literals (Python
        folds them), a product, power or shift with a float or string literal (no int results), a division by a
        literal other than zero (it cannot raise)."""
        helper = _INT_OPS.get(type(op))
        if helper is None or all(isinstance(side, ast.Constant) for side in (left, right)):
            return None
        if isinstance(op, _DIVISIONS):
            if isinstance(right, ast.Constant) and right.value != 0:
                return None
        elif any(isinstance(side, ast.Constant) and not isinstance(side.value, int) for side in (left, right)):
            return None
        name, takes_line = helper
        if name == WRAP:
            return self._wrapped(ast.BinOp(left, op, right), where)
        args = [left, right] + ([ast.Constant(getattr(where, "lineno", 0))] if takes_line else [])
        return ast.copy_location(ast.Call(ast.Name(name, ast.Load()), args, []), where)

    def _wrapped(self, value: ast.expr, where: ast.AST) -> ast.expr:
        """``(p if (p := value).__class__ is not int or LOW <= p <= HIGH else lab$wrap(p))``: no call on the common
        path (a float, a NumPy scalar, an int within int64)."""
        if isinstance(value, ast.Constant):
            return value
        return self._unless_int(value, where, WRAP, [], within_int64=True)

    def _stored(self, value: ast.expr, target: ast.Subscript, where: ast.AST) -> ast.expr:
        """``(p if (p := value).__class__ is not int else lab$stored(p, array))``: a float or a NumPy scalar as it is, a
        Python int as the array's element type has it (a literal only where it might not fit a byte). ``array`` is the
        target's array where it is a plain name (read again at no cost), else None (then an int64)."""
        array = ast.Name(target.value.id, ast.Load()) if isinstance(target.value, ast.Name) else ast.Constant(None)
        if isinstance(value, ast.Constant):
            if type(value.value) is not int or 0 <= value.value <= 127:
                return value
            return ast.copy_location(ast.Call(ast.Name(STORED, ast.Load()), [value, array], []), where)
        return self._unless_int(value, where, STORED, [array])

    def _unless_int(self, value: ast.expr, where: ast.AST, helper: str, extra: list[ast.expr],
                    within_int64: bool = False) -> ast.expr:
        """``value`` as it is unless it is a Python int (``within_int64``: one past int64), else ``helper(p, *extra)``:
        ``(p if (p := value).__class__ is not lab$int [or LOW <= p <= HIGH] else helper(p, *extra))``."""
        p = self._fresh()
        test: ast.expr = ast.Compare(
            ast.Attribute(ast.NamedExpr(ast.Name(p, ast.Store()), value), "__class__", ast.Load()),
            [ast.IsNot()], [ast.Name(INT, ast.Load())])
        if within_int64:
            test = ast.BoolOp(ast.Or(), [test, ast.Compare(ast.Constant(_INT64[0]), [ast.LtE(), ast.LtE()],
                                                           [ast.Name(p, ast.Load()), ast.Constant(_INT64[1])])])
        new = ast.IfExp(test=test, body=ast.Name(p, ast.Load()),
                        orelse=ast.Call(ast.Name(helper, ast.Load()), [ast.Name(p, ast.Load()), *extra], []))
        return ast.copy_location(new, where)  # (its new inner nodes take this line too: fix_missing_locations)

    def _nested(self, node: ast.AST) -> None:
        if node is not self.top and _calls_sync(node, self.cuda_names, self.sync_devices):
            raise RewriteRefused(
                "a function defined inside a kernel synchronises threads; the simulator runs barriers only in "
                "the kernel and in @cuda.jit(device=True) functions",
                getattr(node, "lineno", None),
            )

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self._nested(node)
        node.decorator_list = []
        outer, self.whiles = self.whiles, []  # a function inside a loop: its returns leave only itself
        self.generic_visit(node)
        self.whiles = outer
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self._nested(node)
        self.generic_visit(node)
        return node


def function_node(source: str, name: str, first_line: int) -> ast.FunctionDef:
    """The ``def name`` in ``source`` (dedented), with line numbers of the original file."""
    tree = pyast.parse(textwrap.dedent(source))
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
    func: ast.FunctionDef,
    filename: str,
    cuda_names: frozenset[str],
    sync_devices: frozenset[str],
    kernels: frozenset[str] = frozenset(),
) -> Rewritten:
    """Compile ``func`` rewritten for the simulator; the code defines ``func.name`` when exec'd.

    ``kernels`` are the names of (non-device) kernels in its scope: using one is a launch inside a
    kernel. Raises RewriteRefused for a form the simulator cannot run faithfully.
    """
    generator = _calls_sync(func, cuda_names, sync_devices)
    rewriter = _Rewriter(cuda_names, sync_devices, kernels)
    rewriter.top = func
    rewriter.tuples = _tuple_names(func, cuda_names)
    rewriter.grids = _grid_names(func, cuda_names)
    new = rewriter.visit(func)
    body = [new]
    block = None if generator else _block_loop(new)
    if block is not None:
        body.append(block)
    module = ast.Module(body=body, type_ignores=[])
    ast.fix_missing_locations(module)
    try:
        code = pyast.compile_tree(module, filename)
    except SyntaxError as exc:  # e.g. a synchronising call inside a comprehension: yield cannot go there
        raise RewriteRefused(f"the simulator cannot run this form ({exc.msg})", exc.lineno) from None
    return Rewritten(code=code, name=func.name, is_generator=generator,
                     block_name=BLOCK if block is not None else None)


def _tuple_names(func: ast.FunctionDef, cuda_names: frozenset[str]) -> frozenset[str]:
    """Names assigned something that may be a tuple: ``cuda.grid(2)``, ``gridsize(3)``, ``(i, j)``, ``a.shape``, or
    another such name (parameters are not followed: a tuple passed to a device function is indexed element-wise)."""
    def tuple_valued(value: ast.AST, known: set[str]) -> bool:
        if isinstance(value, ast.Tuple):
            return True
        if isinstance(value, ast.Attribute) and value.attr == "shape":
            return True
        if isinstance(value, ast.Name):
            return value.id in known
        if isinstance(value, ast.Call) and _cuda_attr(value.func, cuda_names) in ("grid", "gridsize"):
            arg = value.args[0] if value.args else None
            return not (isinstance(arg, ast.Constant) and arg.value == 1)
        return False

    known: set[str] = set()
    assigns = [n for n in ast.walk(func) if isinstance(n, ast.Assign)]
    changed = True
    while changed:
        changed = False
        for a in assigns:
            for target in a.targets:
                if isinstance(target, ast.Name) and target.id not in known and tuple_valued(a.value, known):
                    known.add(target.id)
                    changed = True
    return frozenset(known)


class _ReturnToContinue(ast.NodeTransformer):
    def visit_Return(self, node: ast.Return) -> ast.AST:
        return ast.copy_location(ast.Continue(), node)


def _block_loop(func: ast.FunctionDef) -> ast.FunctionDef | None:
    """``def lab$block(tidx, count, *args)``: the kernel's body in a loop over threadIdx.x of a 1-D block.

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
    body = [_ReturnToContinue().visit(stmt) for stmt in copy.deepcopy(func.body)]
    set_x = ast.Assign(targets=[ast.Attribute(ast.Name(_TIDX, ast.Load()), "x", ast.Store())],
                       value=ast.Name(_TX, ast.Load()))
    loop = ast.For(target=ast.Name(_TX, ast.Store()),
                   iter=ast.Call(ast.Name(RANGE, ast.Load()), [ast.Name(_COUNT, ast.Load())], []),
                   body=[set_x, *body], orelse=[])
    args = copy.deepcopy(func.args)
    args.args = [ast.arg(_TIDX), ast.arg(_COUNT), *args.args]
    block = ast.FunctionDef(name=BLOCK, args=args, body=[loop], decorator_list=[], returns=None)
    ast.copy_location(block, func)
    ast.copy_location(loop, func.body[0])
    ast.copy_location(set_x, func.body[0])
    return block


__all__ = [
    "BLOCK", "BLOCK_SYNC", "ENDLESS", "GRID_SYNC", "INDEX", "NEG", "RANGE", "SHARED", "SPENT", "SYNC_NAMES", "TURNS",
    "WARP_SYNC", "WITHIN", "Rewritten",
    "RewriteRefused",
    "function_node", "grid_syncs", "is_grid_sync", "needs_sync", "rewrite",
]
