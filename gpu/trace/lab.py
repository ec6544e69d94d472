"""The lab's kernels by name, ready to trace at small sizes.

Names: every step of the catalog as ``<kernel>-<step>`` (``transpose-naive``,
``reduction-tree``, ...), the vector-add kernels of ``gpu/kernels/vector_add.py``, and
the coalesced / strided pair of ``gpu/trace/examples.py``. Steps that need a feature
the simulator lacks (warp shuffles) are listed with the reason and cannot be traced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu.core.limits import InputError, parse_size
from gpu.trace import examples
from gpu.trace.record import DEFAULT_MAX_ACCESSES, DEFAULT_MAX_BLOCKS, trace_launch
from gpu.trace.report import TraceReport, analyse

MAX_TRACE_ELEMENTS = 2**16  # inputs above this only cost time: at most DEFAULT_MAX_BLOCKS blocks run anyway
_CATALOG_RUN_PARAMS = ("repeats", "cpu", "cpu_budget_s")  # a trace runs each step once, with no CPU implementations
# Trace sizes where the catalog's simulator default launches more than the 4 blocks the
# picture draws (histogram: 1,024 values in blocks of 128 = 8 blocks; 512 = 4).
TRACE_N = {"histogram": 512}


@dataclass(frozen=True)
class Launch:
    kernel: Any
    grid: Any
    block: Any
    args: tuple
    label: str


@dataclass(frozen=True)
class LabKernel:
    """One traceable kernel of the lab. ``prepare(n)`` makes its launch; ``skip`` says why it cannot run in the
    simulator."""

    name: str
    title: str
    size_help: str
    default_n: int
    elements: Callable[[int], int]  # elements an N-sized problem has (N or N²)
    prepare: Callable[[int], Launch]
    skip: str | None = None
    changed: str = ""

    def check_n(self, value: Any) -> int:
        n = parse_size(value, "N")
        if n < 1:
            raise InputError(f"N must be at least 1, got {value!r}.")
        if self.elements(n) > MAX_TRACE_ELEMENTS:
            raise InputError(
                f"N = {n:,} is too large for a trace of {self.name}: {self.size_help} may have at most "
                f"{MAX_TRACE_ELEMENTS:,} elements (a trace is for small sizes; at most {DEFAULT_MAX_BLOCKS} blocks "
                "run)."
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
                default_n=TRACE_N.get(key, defaults["n"]), elements=(lambda n: n * n) if square else (lambda n: n),
                prepare=_catalog_launch(spec, step, defaults),
                skip=f"needs {step.needs}, which Numba's CUDA simulator cannot run" if step.needs else None,
                changed=step.changed,
            ))
    return out


def _catalog_launch(spec, step, defaults: dict) -> Callable[[int], Launch]:
    def prepare(n: int) -> Launch:
        params = {**defaults, "n": n}
        inputs = spec.make_inputs(params, 0)
        out = np.zeros(spec.output.shape(params), dtype=spec.output.dtype)
        return Launch(step.kernel, step.grid(params), step.block(params), (*inputs.values(), out),
                      f"{spec.key}-{step.key}, {spec.size_label(params)}")
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
            if n % examples.WHOLE_PATTERN:
                raise InputError(f"{name} reads the data {examples.STRIDE} elements apart: N must be a multiple of "
                                 f"{examples.WHOLE_PATTERN:,} ({examples.STRIDE} × a warp of 32), got {n:,}.")
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
    """Trace one lab kernel at size ``n`` (its small default when None) in this process's simulator."""
    kernel = find(name)
    if kernel.skip:
        raise InputError(f"{name} cannot be traced: it {kernel.skip}.")
    size = kernel.default_n if n is None else kernel.check_n(n)
    launch = kernel.prepare(size)
    raw = trace_launch(
        launch.kernel, launch.grid, launch.block, launch.args, max_accesses=max_accesses, max_blocks=max_blocks
    )
    return analyse(raw, label=launch.label)
