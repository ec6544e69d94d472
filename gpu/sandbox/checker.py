"""The first layer against a learner's source: parse it (never import it) and allow only Numba's CUDA subset.

In the simulator a kernel is plain Python running on the host, so this check is what
keeps a submission off the machine there; on a GPU it keeps the module's top level (which
runs on the host) down to constants. Everything is allow-listed, nothing is deny-listed:

- decorators: `@cuda.jit` with at most device=, fastmath=, inline= as True/False (a signature string is
  eval()ed by numba-cuda, so none is accepted: the problem fixes the signature);
- top level: a docstring, ``from numba import cuda`` and named dtypes, ``import math`` /
  ``from math import NAME``, constant assignments, and ``@cuda.jit`` function definitions;
- bodies: assignments, ``for``/``while``/``if``, arithmetic, comparisons, subscripts, and
  calls to other kernels/device functions, the allowed builtins, ``math`` functions, dtypes
  and the allow-listed ``cuda`` API (``cuda.grid``, ``cuda.shared.array``, ``cuda.atomic.add``...);
- attributes: only that ``cuda`` API, ``math`` functions, and ``.size``/``.shape``/``.ndim``
  and ``.x``/``.y``/``.z``; never a name or attribute starting with ``_``;
- what the simulator's rewrite relies on: no top-level name takes an allowed builtin's
  (``range = 3``), a device function is only ever the callee of a call (an alias would hide
  its barriers), and a kernel is never named inside a kernel (a launch: NVVM refuses it).

A refusal names the rule and the line: ``Refusal(rule, line, message)``.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Set
from dataclasses import dataclass
from typing import Any

from gpu.problems.base import Refusal  # a problem's launch rules refuse with it too
from gpu.sim import pyast

MAX_SOURCE_BYTES = 20_000  # a kernel file is a few hundred lines at most
# A block's shared memory is at most 48 KiB without opting in (and 227 KiB on an H100 with it); a
# thread's local array this size already spills. Larger shapes are mistakes, and in the simulator
# (where they are NumPy arrays per block or per thread) a way to exhaust the host's memory.
MAX_SHARED_ELEMENTS = 48 * 1024 // 4
MAX_LOCAL_ELEMENTS = 1024

ALLOWED_BUILTINS = ("range", "min", "max", "abs", "len", "float", "int", "bool", "round")
# Named dtypes a kernel may import from numba (and call: float32(0.5)) for its shared arrays and constants.
DTYPES = ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "boolean")
# Named here so a refusal can say why; any other unknown name is refused too.
FORBIDDEN_NAMES = ("open", "exec", "eval", "__import__", "getattr", "setattr", "delattr", "globals", "locals",
                   "vars", "compile", "input", "breakpoint", "print", "type", "object", "super", "help", "exit", "quit",
                   "memoryview", "dir", "id", "hasattr", "iter", "next", "classmethod", "staticmethod", "property")

# The CUDA API a kernel may use, as attribute paths under ``cuda``.
CUDA_API = {
    "threadIdx": ("x", "y", "z"), "blockIdx": ("x", "y", "z"), "blockDim": ("x", "y", "z"), "gridDim": ("x", "y", "z"),
    "grid": (), "gridsize": (), "syncthreads": (), "syncthreads_count": (), "syncthreads_and": (), "syncthreads_or": (),
    "syncwarp": (), "threadfence": (), "threadfence_block": (), "laneid": (), "warpsize": (), "activemask": (),
    "shfl_sync": (), "shfl_up_sync": (), "shfl_down_sync": (), "shfl_xor_sync": (), "ballot_sync": (),
    "all_sync": (), "any_sync": (), "fma": (), "popc": (), "brev": (), "clz": (), "ffs": (), "selp": (),
    "shared": ("array",), "local": ("array",), "const": ("array_like",),
    "atomic": ("add", "sub", "max", "min", "inc", "dec", "exch", "cas", "and_", "or_", "xor"),
}
# cuda.* names that are values (read, or stored in a name); every other cuda.* name is a function, only called.
CUDA_VALUES = ("threadIdx", "blockIdx", "blockDim", "gridDim", "laneid", "warpsize")
JIT_OPTIONS = ("device", "fastmath", "inline")
# Constants are folded here, in the app's process, so each step is bounded before it is computed.
MAX_CONSTANT = 2 ** 64
MAX_FLOAT32 = 3.4028234663852886e38
ARRAY_ATTRIBUTES = ("size", "shape", "ndim", "x", "y", "z")
MATH_NAMES = tuple(name for name in dir(math) if not name.startswith("_"))

# Node types a function body may contain (everything else, e.g. with/try/lambda/class/import/global, is refused).
BODY_NODES = (
    ast.Assign, ast.AugAssign, ast.For, ast.While, ast.If, ast.Expr, ast.Return, ast.Break, ast.Continue, ast.Pass,
    ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Tuple, ast.Slice, ast.BinOp, ast.UnaryOp, ast.BoolOp,
    ast.Compare, ast.Call, ast.IfExp, ast.keyword, ast.Load, ast.Store, ast.operator, ast.unaryop, ast.boolop,
    ast.cmpop, ast.expr_context,
)
NODE_WORDS = {ast.Import: "an import inside a function", ast.ImportFrom: "an import inside a function",
              ast.Global: "a global statement", ast.Nonlocal: "a nonlocal statement", ast.Lambda: "a lambda",
              ast.With: "a with block", ast.Try: "a try block", ast.Raise: "raise", ast.Delete: "del",
              ast.ClassDef: "a class", ast.FunctionDef: "a nested function", ast.ListComp: "a list comprehension",
              ast.GeneratorExp: "a generator", ast.DictComp: "a dict comprehension", ast.SetComp: "a set comprehension",
              ast.List: "a list", ast.Dict: "a dict", ast.Set: "a set", ast.JoinedStr: "an f-string",
              ast.Yield: "yield", ast.Await: "await", ast.NamedExpr: "an assignment expression (:=)",
              ast.Starred: "a starred expression", ast.AsyncFunctionDef: "an async function"}



@dataclass(frozen=True)
class Checked:
    """A source that passed: its kernels (name -> parameter names) and constants."""

    kernels: dict
    device_functions: tuple
    constants: tuple
    imports: dict  # local name -> "cuda" | "math" | "math.NAME" | "dtype"


def check_source(source: str, kernel_name: str, n_args: int) -> Checked:
    """Parse ``source`` and return what it defines, or raise Refusal naming the rule and line.

    ``kernel_name`` must be a ``@cuda.jit`` kernel (not a device function) taking ``n_args`` arrays.
    """
    if len(source.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
        raise Refusal("size", 0, f"the source is over {MAX_SOURCE_BYTES:,} bytes; a kernel file needs far less")
    try:
        return _check_tree(_parse(source), kernel_name, n_args)
    except (RecursionError, MemoryError):
        # Only the nesting can cause these at this size: say so instead of "the harness failed".
        raise Refusal("complexity", 0, "the source nests too deeply to check (thousands of brackets or operators "
                      "in one expression); split it into simpler statements") from None


def _parse(source: str) -> ast.Module:
    try:
        return pyast.parse(source, filename="submission.py")
    except SyntaxError as exc:
        raise Refusal("syntax", exc.lineno or 0, f"Python cannot parse this: {exc.msg}") from None
    except ValueError as exc:  # a NUL byte, or text that is not valid Unicode
        raise Refusal("syntax", 0, f"Python cannot parse this: {exc}") from None


def _check_tree(tree: ast.Module, kernel_name: str, n_args: int) -> Checked:
    imports: dict[str, str] = {}
    constants: list[str] = []
    values: dict[str, object] = {}
    functions: dict[str, ast.FunctionDef] = {}
    device: list[str] = []
    for index, node in enumerate(tree.body):
        if (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            continue  # the module's docstring
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.update(_check_import(node))
        elif isinstance(node, ast.Assign):
            names = _check_constant(node, imports, constants)
            constants.extend(names)
            value = _fold(node.value, values, imports, node.lineno, strict=True)
            for name in names:
                values[name] = value
        elif isinstance(node, ast.FunctionDef):
            if node.name in functions or node.name in imports or node.name in constants:
                raise Refusal("redefinition", node.lineno, f"{node.name!r} is defined twice")
            _check_top_name(node.name, node.lineno)
            if _check_decorator(node, imports):
                device.append(node.name)
            functions[node.name] = node
        else:
            raise Refusal(
                "top-level",
                node.lineno,
                f"{_words(node)} is not allowed at the top level; a kernel file holds only "
                "imports (numba.cuda, math, dtypes), constant assignments and @cuda.jit functions",
            )
    if kernel_name not in functions or kernel_name in device:
        raise Refusal(
            "kernel",
            0,
            f"the problem's kernel is a @cuda.jit function named {kernel_name!r} (not device=True); "
            f"this file defines {', '.join(sorted(functions)) or 'no function'}",
        )
    params = [a.arg for a in functions[kernel_name].args.args]
    if len(params) != n_args:
        raise Refusal(
            "signature",
            functions[kernel_name].lineno,
            f"{kernel_name} takes {n_args} arrays, as in the problem's signature; this one takes {len(params)}",
        )
    module_names = set(imports) | set(constants) | set(functions)
    kernels = frozenset(name for name in functions if name not in device)
    for fn in functions.values():
        _check_body(fn, imports, module_names, kernels, frozenset(device))
        _check_array_sizes(fn, imports, values)
    return Checked({k: [a.arg for a in f.args.args] for k, f in functions.items() if k not in device},
                   tuple(device), tuple(constants), imports)


def _words(node: ast.AST) -> str:
    return NODE_WORDS.get(type(node), f"a {type(node).__name__} node")


def _check_top_name(name: str, line: int) -> None:
    """A top-level name: no underscore, and no allowed builtin (a global ``range`` would decide a loop's trips)."""
    _check_name(name, line)
    if name in ALLOWED_BUILTINS:
        raise Refusal("redefinition", line, f"{name!r} is a builtin a kernel may call; a top-level definition may not "
                      "take its name (choose another)")


def _check_name(name: str, line: int) -> None:
    if name.startswith("_"):
        raise Refusal(
            "underscore", line, f"names starting with '_' ({name!r}) are not allowed: they reach Python's internals"
        )


def _check_import(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    allowed = ("allowed imports: `from numba import cuda`, `from numba import float32` (and other dtypes), `import "
               "math`, `from math import sqrt`")
    out = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name != "math":
                raise Refusal("import", node.lineno, f"`import {alias.name}` is not allowed; {allowed}")
            local = alias.asname or "math"
            _check_name(local, node.lineno)
            out[local] = "math"
        return out
    if node.level or node.module not in ("numba", "math"):
        raise Refusal(
            "import", node.lineno, f"`from {'.' * node.level}{node.module or ''} import ...` is not allowed; {allowed}"
        )
    for alias in node.names:
        local = alias.asname or alias.name
        _check_name(local, node.lineno)
        if node.module == "math" and alias.name in MATH_NAMES:
            out[local] = f"math.{alias.name}"
        elif node.module == "numba" and alias.name == "cuda":
            out[local] = "cuda"
        elif node.module == "numba" and alias.name in DTYPES:
            out[local] = "dtype"
        else:
            raise Refusal("import", node.lineno, f"`from {node.module} import {alias.name}` is not allowed; {allowed}")
    return out


def _check_constant(node: ast.Assign, imports: dict, constants: list[str]) -> list[str]:
    names = []
    for target in node.targets:
        if not isinstance(target, ast.Name):
            raise Refusal(
                "top-level", node.lineno, "only plain names may be assigned at the top level (NAME = constant)"
            )
        _check_top_name(target.id, node.lineno)
        if target.id in imports:
            raise Refusal("redefinition", node.lineno, f"{target.id!r} is an import; it cannot be reassigned")
        names.append(target.id)

    return names


def _check_decorator(node: ast.FunctionDef, imports: dict) -> bool:
    """Require exactly one ``@cuda.jit`` (or ``@cuda.jit(...)`` with constant arguments); True for device=True."""
    message = (f"{node.name} must be decorated with @cuda.jit (a kernel) or @cuda.jit(device=True) (a device "
               "function), and nothing else")
    if len(node.decorator_list) != 1:
        raise Refusal("decorator", node.lineno, message)
    deco = node.decorator_list[0]
    call = deco if isinstance(deco, ast.Call) else None
    target = call.func if call else deco
    if not (isinstance(target, ast.Attribute) and target.attr == "jit" and isinstance(target.value, ast.Name)
            and imports.get(target.value.id) == "cuda"):
        raise Refusal("decorator", deco.lineno, message)
    device = False
    if call:
        if call.args:
            # numba-cuda eval()s a signature string as Python: no learner-written string is ever evaluated.
            raise Refusal(
                "decorator",
                deco.lineno,
                f"@cuda.jit takes no positional argument here (this one has {len(call.args)}): the problem fixes "
                "the signature, so write @cuda.jit without a signature string",
            )
        for kw in call.keywords:
            if kw.arg not in JIT_OPTIONS or not (
                isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool)
            ):
                if kw.arg is None:
                    why = "; **options are not allowed"
                elif kw.arg not in JIT_OPTIONS:
                    why = f"; {kw.arg}= is not available in the lab (the lab compiles every kernel the same way)"
                else:
                    shown = ast.unparse(kw.value)
                    why = f"; {kw.arg}= must be True or False, not {shown[:40]}"
                raise Refusal(
                    "decorator",
                    deco.lineno,
                    f"@cuda.jit accepts only {', '.join(o + '=True/False' for o in JIT_OPTIONS)} here{why}",
                )
            device = device or (kw.arg == "device" and kw.value.value is True)
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.kw_defaults or args.posonlyargs:
        raise Refusal(
            "signature",
            node.lineno,
            f"{node.name} takes plain positional parameters only (no defaults, *args or **kwargs)",
        )
    for a in args.args:
        _check_name(a.arg, node.lineno)
    if node.returns is not None or any(a.annotation is not None for a in args.args):
        raise Refusal("signature", node.lineno, "annotations are not allowed: the problem fixes the signature")
    return device


class _NotConstant(Exception):
    """An expression that is not a compile-time constant (a shape read from a parameter, say)."""


_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_RANGES = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def _fold(expr: ast.AST, values: dict, imports: dict, line: int, strict: bool):
    """The value of a constant expression, every step bounded before it is computed.

    Numbers only (ints below 2**64 in size, finite floats), tuples of them as literals, earlier
    constants, dtype calls in their type's range. ``strict`` (a top-level assignment) refuses
    anything else; otherwise a non-constant raises ``_NotConstant`` and the caller decides.
    A value out of bounds is refused either way: it would be computed before any limit applies.
    """
    def too_big(what: str) -> Refusal:
        return Refusal("constant", line, f"{what}: constants here stay below 2**64 (and floats finite), "
                       "so they are checked instantly; a kernel never needs more")

    def fold(e: ast.AST):
        if isinstance(e, ast.Constant) and isinstance(e.value, (bool, int, float)):
            return bounded(e.value)
        if isinstance(e, ast.Name) and e.id in values:
            return values[e.id]
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            v = fold(e.operand)
            if isinstance(v, tuple):
                raise not_constant()
            return -v if isinstance(e.op, ast.USub) else v
        if isinstance(e, ast.Tuple) and len(e.elts) <= 8:
            items = tuple(fold(x) for x in e.elts)
            if any(isinstance(x, tuple) for x in items):
                raise not_constant()
            return items
        if (isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and imports.get(e.func.id) == "dtype"
                and len(e.args) == 1 and not e.keywords):
            return dtype(e.func.id, fold(e.args[0]))
        if isinstance(e, ast.BinOp):
            a, b = fold(e.left), fold(e.right)
            if isinstance(a, tuple) or isinstance(b, tuple):
                raise Refusal(
                    "constant",
                    line,
                    "arithmetic on tuples ((0,) * n) is not allowed in a constant; write the tuple out",
                )
            return bounded(binop(e.op, a, b))
        raise not_constant()

    def not_constant() -> Exception:
        if strict:
            return Refusal("constant", line, "a top-level assignment must be a constant: numbers, earlier constants, "
                           "arithmetic on them, tuples of them, or a dtype call such as float32(0.2)")
        return _NotConstant()

    def bounded(v):
        if isinstance(v, float) and not math.isfinite(v):
            raise too_big("this constant is not a finite number")
        if isinstance(v, int) and abs(v) >= MAX_CONSTANT:
            raise too_big("this constant is too large")
        return v

    def binop(op: ast.operator, a, b):
        both_int = isinstance(a, int) and isinstance(b, int)
        try:
            if isinstance(op, ast.Pow):
                if both_int and b >= 0 and abs(a) > 1 and b >= 64:
                    raise too_big(f"{a} ** {b} is too large")
                return a ** b if both_int else math.pow(a, b)
            if isinstance(op, (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)):
                if not both_int:
                    raise Refusal("constant", line, "bit operations need integers")
                if isinstance(op, ast.LShift) and b >= 64:
                    raise too_big(f"{a} << {b} is too large")
            operations = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                          ast.FloorDiv: lambda: a // b, ast.Div: lambda: a / b, ast.Mod: lambda: a % b,
                          ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b, ast.BitAnd: lambda: a & b,
                          ast.BitOr: lambda: a | b, ast.BitXor: lambda: a ^ b}
            if type(op) not in operations:
                raise not_constant()
            return operations[type(op)]()  # operands are below 2**64, so every result is small
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
            raise Refusal("constant", line, f"this constant cannot be computed: {exc}") from None

    def dtype(name: str, v):
        if isinstance(v, tuple):
            raise not_constant()
        if name.startswith("float") and abs(v) > (MAX_FLOAT32 if name == "float32" else 1.7976931348623157e308):
            raise too_big(f"{v!r} does not fit in {name}")
        bits = _INT_RANGES.get(name)
        if bits and not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
            raise Refusal(
                "constant", line, f"{name}({v!r}) overflows: {name} holds {-(2 ** (bits - 1))} to {2 ** (bits - 1) - 1}"
            )
        bits = _UINT_RANGES.get(name)
        if bits and not 0 <= v < 2 ** bits:
            raise Refusal("constant", line, f"{name}({v!r}) overflows: {name} holds 0 to {2 ** bits - 1}")
        return v

    return fold(expr)


def _check_array_sizes(fn: ast.FunctionDef, imports: dict, values: dict) -> None:
    """cuda.shared.array / cuda.local.array: a constant shape (NVVM needs one) within the hardware's limits."""
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "array"):
            continue
        root, path = _attribute_path(node.func)
        if not (isinstance(root, ast.Name) and imports.get(root.id) == "cuda" and path[0] in ("shared", "local")):
            continue
        shape_node = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "shape"), None)
        try:
            shape = _fold(shape_node, values, imports, node.lineno, strict=False) if shape_node is not None else None
        except _NotConstant:
            shape = None
        dims = shape if isinstance(shape, tuple) else (shape,)
        if not dims or not all(isinstance(d, int) and d > 0 for d in dims):
            raise Refusal(
                "array-shape",
                node.lineno,
                f"cuda.{path[0]}.array needs a shape of positive integer constants "
                "(numbers or top-level constants): the compiler must know it",
            )
        elements = math.prod(dims)
        most = MAX_SHARED_ELEMENTS if path[0] == "shared" else MAX_LOCAL_ELEMENTS
        if elements > most:
            raise Refusal(
                "array-size",
                node.lineno,
                f"cuda.{path[0]}.array of {elements:,} elements is over the {most:,} allowed "
                "("
                + ("48 KiB of float32 shared memory per block" if path[0] == "shared"
                   else "a thread-local array this size lives in slow memory")
                + ")",
            )


def _attribute_path(node: ast.Attribute) -> tuple[ast.AST, list[str]]:
    parts = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    return current, parts[::-1]


def _check_attribute(node: ast.Attribute, imports: dict, local: set, module_names: set,
                     called: Set[Any] = frozenset(), inner: Set[Any] = frozenset()) -> None:
    root, path = _attribute_path(node)
    if isinstance(root, ast.Name):
        _check_name_use(root, imports, module_names, local)  # an unknown root (os.getpid) is named as such
    for part in path:
        if part.startswith("_"):
            raise Refusal(
                "dunder",
                node.lineno,
                f"attributes starting with '_' ({part!r}) are not allowed: they reach Python's internals",
            )
    if isinstance(root, ast.Name):
        kind = imports.get(root.id) if root.id not in local else None
        if kind == "cuda":
            first = path[0]
            if first not in CUDA_API or len(path) > 2 or (len(path) == 2 and path[1] not in CUDA_API[first]):
                raise Refusal(
                    "cuda-api",
                    node.lineno,
                    f"cuda.{'.'.join(path)} is not part of the kernel API allowed here "
                    "(threadIdx/blockIdx/blockDim/gridDim, grid, gridsize, syncthreads, shared.array, local.array, "
                    "atomic.*, shfl_*_sync, ...)",
                )
            if id(node) not in inner and id(node) not in called and first not in CUDA_VALUES:
                # `make = cuda.local.array; make(1 << 28, float32)` would pass every size rule: allow by what is called
                raise Refusal(
                    "cuda-api",
                    node.lineno,
                    f"cuda.{'.'.join(path)} may only be called here (write cuda.{'.'.join(path)}(...)), "
                    "not stored in a name or passed along",
                )
            return
        if kind == "math":
            if len(path) != 1 or path[0] not in MATH_NAMES:
                raise Refusal("math", node.lineno, f"math.{'.'.join(path)} is not a math function")
            return
    if len(path) == 1 and path[0] in ARRAY_ATTRIBUTES:
        return
    raise Refusal("attribute", node.lineno, f".{'.'.join(path)} is not allowed; on arrays and values only "
                  f"{', '.join('.' + a for a in ARRAY_ATTRIBUTES)} (and the cuda API, math functions)")


def _check_function_use(node: ast.Name, called: set, kernels: frozenset, devices: frozenset, local: set) -> None:
    """A kernel is never named in a body (that would be a launch); a device function only as the callee of a call."""
    if node.id in local:
        return
    if node.id in kernels:
        raise Refusal("kernel-launch", node.lineno, f"{node.id} is a kernel: a kernel cannot launch a kernel (Numba's "
                      "CUDA compiler refuses it); launch kernels from the host, or make it @cuda.jit(device=True) "
                      "and call it")
    if node.id in devices and id(node) not in called:
        raise Refusal("device-call", node.lineno, f"the device function {node.id} may only be called here "
                      f"(write {node.id}(...)), not stored in a name or passed along")


def _check_body(fn: ast.FunctionDef, imports: dict, module_names: set, kernels: frozenset = frozenset(),
                devices: frozenset = frozenset()) -> None:
    local = {a.arg for a in fn.args.args}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            if node.id in module_names:  # a local shadowing `cuda` would turn the API checks off
                raise Refusal(
                    "redefinition",
                    node.lineno,
                    f"{node.id!r} names an import or a top-level definition; choose another name",
                )
            local.add(node.id)
    for a in fn.args.args:
        if a.arg in module_names:
            raise Refusal(
                "redefinition",
                fn.lineno,
                f"parameter {a.arg!r} hides an import or a top-level definition; choose another name",
            )
    body = (
        fn.body[1:]
        if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant)
        else fn.body
    )
    for statement in body:
        nodes = list(ast.walk(statement))
        called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        inner = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
        for node in nodes:
            line = getattr(node, "lineno", fn.lineno)
            if not isinstance(node, BODY_NODES):
                raise Refusal(
                    "kernel-subset", line, f"{_words(node)} is not part of the Numba CUDA subset allowed in a kernel"
                )
            if isinstance(node, ast.Name):
                _check_name_use(node, imports, module_names, local)
                _check_function_use(node, called, kernels, devices, local)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                root = node.value
                while isinstance(root, ast.Subscript):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in module_names and root.id not in local:
                    raise Refusal(
                        "module-state",
                        line,
                        f"{root.id!r} is a top-level constant: a kernel writes only its own "
                        "arrays (no state kept between calls)",
                    )
            elif isinstance(node, ast.Attribute):
                if isinstance(node.ctx, ast.Store):
                    raise Refusal(
                        "attribute-assignment",
                        line,
                        "assigning to an attribute is not allowed (write to array elements with a[i] = ...)",
                    )
                _check_attribute(node, imports, local, module_names, called, inner)
            elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
                # a kernel has no use for text, and "x" * 10 ** 10 would fill the host's memory in the simulator
                raise Refusal("constant", line, "strings are not allowed in a kernel (only its docstring)")


def _check_name_use(node: ast.Name, imports: dict, module_names: set, local: set) -> None:
    name, line = node.id, node.lineno
    if name.startswith("__"):
        raise Refusal("dunder", line, f"{name!r} is not allowed: double-underscore names reach Python's internals")
    if name in FORBIDDEN_NAMES and name not in local:
        raise Refusal(
            "builtin", line, f"{name}() is not allowed in a kernel; allowed builtins: {', '.join(ALLOWED_BUILTINS)}"
        )
    _check_name(name, line)
    if isinstance(node.ctx, ast.Store):
        if name in imports or (name in module_names and name not in local):
            raise Refusal(
                "redefinition", line, f"{name!r} names an import or a top-level definition; choose another name"
            )
        return
    if name in local or name in module_names or name in ALLOWED_BUILTINS:
        return
    raise Refusal(
        "name",
        line,
        f"{name!r} is not defined here; a kernel may use its parameters and locals, the file's imports, "
        f"constants and functions, and the builtins {', '.join(ALLOWED_BUILTINS)}",
    )


__all__ = ["ALLOWED_BUILTINS", "CUDA_API", "DTYPES", "MAX_SOURCE_BYTES", "Checked", "Refusal", "check_source"]
