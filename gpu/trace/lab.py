"""The lab's kernels by name, ready to trace at small sizes.

Names: every step of the catalog as ``<kernel>-<step>`` (``transpose-naive``,
``reduction-tree``, ...), the vector-add kernels of ``gpu/kernels/vector_add.py``, and
the coalesced / strided pair of ``gpu/trace/examples.py``. Every one is traced in Kernel
Lab's simulator, warp shuffles included, at a size the learner may choose up to
``MAX_TRACE_WORK`` units of work (``LabKernel.check_n`` says what is wrong with any other).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu.core.limits import InputError, parse_size
from gpu.trace import MAX_TRACE_WORK, examples
from gpu.trace.analysis import MAX_PICTURE_BLOCKS
from gpu.trace.record import DEFAULT_MAX_ACCESSES, DEFAULT_MAX_BLOCKS, trace_launch
from gpu.trace.report import TraceReport, analyse

_CATALOG_RUN_PARAMS = ("repeats", "cpu", "cpu_budget_s")  # a trace runs each step once, with no CPU implementations

@dataclass(frozen=True)
class Launch:
    kernel: Any
    grid: Any
    block: Any
    args: tuple
    label: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabKernel:
    """One traceable kernel of the lab. ``prepare(n)`` makes its launch at size ``n`` (``check_n`` first)."""

    name: str
    title: str
    size_help: str
    default_n: int
    work: Callable[[int], int]  # the work of an N-sized trace, in the units of ``work_help``: bounded by MAX_TRACE_WORK
    prepare: Callable[[int], Launch]
    changed: str = ""
    work_help: str = "N elements"
    multiple: int = 1  # N must be a multiple of this (the strided copy reads whole warps' patterns)

    @property
    def max_n(self) -> int:
        """The largest N whose ``work(N)`` is within ``MAX_TRACE_WORK`` (and a multiple of ``multiple``)."""
        lo, hi = 1, MAX_TRACE_WORK
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if self.work(mid) <= MAX_TRACE_WORK else (lo, mid - 1)
        return lo - lo % self.multiple

    def check_n(self, value: Any) -> int:
        """``value`` as the traced size N, or InputError saying what is wrong and what is allowed."""
        n = parse_size(value, "N")
        if n < 1:
            raise InputError(f"the traced size N must be at least 1, got {value!r}.")
        if self.work(n) > MAX_TRACE_WORK:
            raise InputError(
                f"N = {n:,} is too large for a trace of {self.name}: its work, {self.work_help}, would be "
                f"{self.work(n):,}; a trace does at most {MAX_TRACE_WORK:,} so that it stays interactive, so N may be "
                f"at most {self.max_n:,} here."
            )
        if n % self.multiple:
            raise InputError(
                f"N = {n:,} does not suit {self.name}: it reads the data {examples.STRIDE} elements apart, so N must "
                f"be a multiple of {self.multiple:,} ({examples.STRIDE} × a warp of 32)."
            )
        return n


def _catalog() -> list[LabKernel]:
    from gpu.catalog.declare import KERNELS, kernel_module

    out = []
    for key in KERNELS:
        module = kernel_module(key)
        spec, experiment = module.SPEC, module.EXPERIMENT
        defaults = {p.name: p.default_for(True) for p in experiment.params if p.name not in _CATALOG_RUN_PARAMS}
        square = len(spec.output.shape(defaults)) == 2
        for step in spec.steps:
            out.append(LabKernel(
                name=f"{spec.key}-{step.key}", title=f"{spec.title} · {step.label}",
                size_help="an N × N matrix" if square else "an N-element input",
                default_n=_trace_default(spec, defaults),
                work=_catalog_work(spec, defaults),
                work_help=_work_help(spec, defaults),
                prepare=_catalog_launch(spec, step, defaults),
                changed=step.changed,
            ))
    return out


def _catalog_work(spec, defaults: dict) -> Callable[[int], int]:
    """The catalog's own cost of a size (elements, or N³ multiply-adds for matmul): what bounds its trace."""
    return lambda n: int(spec.cost({**defaults, "n": n}))


def _work_help(spec, defaults: dict) -> str:
    power = round(np.log2(spec.cost({**defaults, "n": 4}) / spec.cost({**defaults, "n": 2})))
    return {1: "N elements", 2: "N × N elements"}.get(power, " × ".join(["N"] * power) + " steps")


def _trace_default(spec, defaults: dict) -> int:
    """The catalog's simulator default N, halved until the first step launches at most the blocks the access
    picture draws (``MAX_PICTURE_BLOCKS``): a trace that shows every block, for the first look."""
    n = defaults["n"]
    while n > 1 and int(np.prod(spec.steps[0].grid({**defaults, "n": n}))) > MAX_PICTURE_BLOCKS:
        n //= 2
    return n


def _catalog_launch(spec, step, defaults: dict) -> Callable[[int], Launch]:
    def prepare(n: int) -> Launch:
        params = {**defaults, "n": n}
        inputs = spec.make_inputs(params, 0)
        out = np.zeros(spec.output.shape(params), dtype=spec.output.dtype)
        launches = step.launches(params, inputs, out, alloc=lambda shape, dtype: np.zeros(shape, dtype))
        kernel, grid, block, args = launches[0]
        notes: tuple[str, ...] = ()
        if len(launches) > 1:  # a multi-pass step: the first launch is traced, the later ones are not run
            later = ", ".join(getattr(getattr(k, "py_func", k), "__name__", "kernel") for k, *_ in launches[1:])
            notes = (f"This step launches {len(launches)} kernels; the trace shows the first "
                     f"({getattr(getattr(kernel, 'py_func', kernel), '__name__', 'kernel')}), not {later}.",)
        return Launch(kernel, grid, block, args, f"{spec.key}-{step.key}, {spec.size_label(params)}", notes)
    return prepare


def _vectors(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32)


def _vector_kernels() -> list[LabKernel]:
    from gpu.kernels import vector_add as k
    from gpu.kernels.geometry import blocks_for

    tpb = 256  # the lab's default block

    def plain(kernel, name, per_thread=1):
        def prepare(n):
            return Launch(kernel, blocks_for(n, tpb * per_thread), tpb, _vectors(n), f"{name}, N = {n:,} float32")
        return prepare

    def grid_stride(n):
        return Launch(
            k.vector_add_grid_stride_kernel,
            2,
            128,
            _vectors(n),
            f"vector-add-grid-stride, N = {n:,} float32, 2 blocks of 128",
        )

    def indexing(n):
        blocks = blocks_for(n, tpb)
        record = np.zeros((blocks * tpb, len(k.PROBE_FIELDS)), np.int32)
        return Launch(
            k.indexing_probe_kernel, blocks, tpb, (*_vectors(n), record), f"indexing-probe, N = {n:,} float32"
        )

    def stride_probe(n):
        record = np.zeros((2 * 128, len(k.PROBE_FIELDS)), np.int32)
        return Launch(
            k.grid_stride_probe_kernel,
            2,
            128,
            (*_vectors(n), record, np.zeros(n, np.int32), np.zeros(n, np.int32)),
            f"grid-stride-probe, N = {n:,} float32, 2 blocks of 128",
        )

    one = lambda n: n  # noqa: E731
    return [
        LabKernel(
            "vector-add",
            "Vector add (the article's kernel)",
            "a vector",
            1000,
            one,
            plain(k.vector_add_kernel, "vector-add"),
        ),
        LabKernel(
            "vector-add-ilp",
            "Vector add, 4 elements per thread",
            "a vector",
            1000,
            one,
            plain(k.vector_add_ilp_kernel, "vector-add-ilp", k.ELEMENTS_PER_THREAD),
        ),
        LabKernel("vector-add-grid-stride", "Vector add, grid-stride loop", "a vector", 1000, one, grid_stride),
        LabKernel("indexing-probe", "Thread-indexing probe", "a vector", 1000, one, indexing),
        LabKernel("grid-stride-probe", "Grid-stride probe", "a vector", 1000, one, stride_probe),
    ]


def _example_kernels() -> list[LabKernel]:
    def prepare(kernel, name):
        def launch(n):
            a = np.arange(n, dtype=np.float32)
            return Launch(kernel, (n + 255) // 256, 256, (a, np.zeros_like(a)), f"{name}, N = {n:,} float32")
        return launch

    one = lambda n: n  # noqa: E731
    return [
        LabKernel(
            "copy-coalesced",
            "Copy, coalesced reads",
            "a vector",
            1024,
            one,
            prepare(examples.read_coalesced_kernel, "copy-coalesced"),
        ),
        LabKernel(
            "copy-strided",
            f"Copy, reads {examples.STRIDE} elements apart",
            "a vector",
            1024,
            one,
            prepare(examples.read_strided_kernel, "copy-strided"),
            multiple=examples.WHOLE_PATTERN,
        ),
    ]


_KERNELS: tuple[LabKernel, ...] | None = None


def lab_kernels() -> tuple[LabKernel, ...]:
    """Every traceable kernel of the lab, in the catalog's order (built once per process)."""
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = tuple(_vector_kernels() + _catalog() + _example_kernels())
    return _KERNELS


def find(name: str) -> LabKernel:
    for kernel in lab_kernels():
        if kernel.name == name:
            return kernel
    raise InputError(f"unknown kernel {name!r}; the lab's kernels are {', '.join(k.name for k in lab_kernels())} "
                     "(or a .py file with --problem).")


def trace_lab_kernel(name: str, n: Any = None, max_accesses: int = DEFAULT_MAX_ACCESSES,
                     max_blocks: int = DEFAULT_MAX_BLOCKS) -> TraceReport:
    """Trace one lab kernel at size ``n`` (its small default when None; else ``check_n``) in Kernel Lab's simulator."""
    kernel = find(name)
    size = kernel.default_n if n is None else kernel.check_n(n)
    launch = kernel.prepare(size)
    raw = trace_launch(
        launch.kernel, launch.grid, launch.block, launch.args, max_accesses=max_accesses, max_blocks=max_blocks
    )
    return analyse(raw, label=launch.label, notes=launch.notes)
