"""The kernel inspector: what numba-cuda built from the vector-add kernel.

PTX comes from the dispatcher's ``inspect_asm``; SASS from ``inspect_sass`` where the
toolkit's ``nvdisasm`` is installed (its absence is reported, not raised); registers,
local, shared and constant memory and the largest allowed block from the compiled
kernel's attributes. ``find_highlights`` points at the lines that compute the index,
check the bounds, load a and b, add, and store c. In the simulator nothing is compiled,
so the result says that no machine code exists there.
"""

from __future__ import annotations

import inspect as _pyinspect
import re
import time
from dataclasses import dataclass, field
from typing import Any

from gpu.core.backend import BACKEND
from gpu.core.device import device_info
from gpu.core.limits import InputError
from gpu.core.timing import utc_timestamp
from gpu.kernels.vector_add import (
    VECTOR_ADD_SIGNATURE,
    vector_add_grid_stride_kernel,
    vector_add_kernel,
)

# name -> (dispatcher, what it is)
KERNELS = {
    "vector_add": (vector_add_kernel, "the article's vector_add_kernel (one thread per element)"),
    "grid_stride": (vector_add_grid_stride_kernel, "the grid-stride vector add (a fixed grid loops over N)"),
}

SIMULATOR_REASON = (
    "In Numba's CUDA simulator kernels run as Python functions on the CPU: this process loads no "
    "machine code, so no PTX annotated line by line and no driver-reported attributes exist here. "
    "The facts above come from the real compiler, run here for the chosen GPU."
)

# Roles, in the order a thread meets them.
ROLES = ("thread index", "index arithmetic", "bounds check", "guard branch", "load", "add", "store")
ROLE_MEANING = {
    "thread index": "reads a built-in index register",
    "index arithmetic": "position = tx + bx * bw",
    "bounds check": "compares position with a.size (the guard)",
    "guard branch": "skips the body when the guard fails",
    "load": "reads an input element (a[position] or b[position]) from device memory",
    "add": "the addition a + b (float32)",
    "store": "writes c[position] to device memory",
}
_SPECIAL_REGISTERS = {
    "%tid.x": "threadIdx.x (tx)",
    "%ctaid.x": "blockIdx.x (bx)",
    "%ntid.x": "blockDim.x (bw)",
    "%nctaid.x": "gridDim.x",
}

_PTX_RULES = [
    ("load", re.compile(r"^ld\.global(\.\w+)*\.(f32|b32)\b")),
    ("add", re.compile(r"^add(\.rn|\.rz|\.rm|\.rp)?(\.ftz)?(\.sat)?\.f32\b")),
    ("store", re.compile(r"^st\.global(\.\w+)*\.(f32|b32)\b")),
]
_SETP = re.compile(r"^setp\.(lt|le|gt|ge|ne|eq)\.[su](32|64)\s+(%p\d+)\s*,\s*([^,]+),\s*([^;]+);?$")
_BRANCH = re.compile(r"^@(!?)(%p\d+)\s+bra(\.uni)?\b")
_INT_MUL = re.compile(r"^(mad|mul)(\.lo|\.wide)?\.[su](32|64)\s")
_INT_ADD = re.compile(r"^add\.[su](32|64)\s")
_CVT = re.compile(r"^cvt\.[su](32|64)\.[su](32|64)\s")
_SASS_RULES = [
    ("thread index", re.compile(r"\bS2R\b.*SR_(TID|CTAID)\.X")),
    ("index arithmetic", re.compile(r"\bIMAD\b(?!\.MOV)|\bIMAD\.WIDE\b")),
    ("bounds check", re.compile(r"\bISETP\b")),
    ("guard branch", re.compile(r"@!?P\d+\s+(EXIT|BRA)\b")),
    ("load", re.compile(r"\bLDG\b")),
    ("add", re.compile(r"\bFADD\b")),
    ("store", re.compile(r"\bSTG\b")),
]


@dataclass(frozen=True)
class CodeLine:
    """One pointed-out line: its role, 1-based line number in the listing, and text."""

    code: str  # "PTX" or "SASS"
    role: str
    line_no: int
    text: str
    note: str

    def to_dict(self) -> dict:
        return {"code": self.code, "role": self.role, "line": self.line_no, "text": self.text, "note": self.note}


def _ptx_statement(line: str) -> str:
    return line.split("//", 1)[0].strip()


def _operands(stmt: str) -> list[str]:
    """Register operands of one PTX instruction, destination first."""
    parts = stmt.rstrip(";").split(None, 1)
    return [op.strip() for op in parts[1].split(",")] if len(parts) > 1 else []


def find_ptx_highlights(ptx: str) -> tuple[CodeLine, ...]:
    """Point at the PTX lines that read the thread index, compute the position (or the
    grid-stride step), check the bounds, branch on that check, load, add and store.

    Text matching with light register tracking: index arithmetic is a multiply or add
    whose operands come from the special registers; the guard is a compare that is not
    against a literal (Numba's negative-index wraparound and its loop-count helpers
    compare with 0 or 1 literals and are left out), and a guard branch is a branch on
    that compare's predicate. Returns the lines in order.
    """
    out: list[CodeLine] = []
    origin: dict[str, str] = {}  # register -> "tid", "ctaid", "ntid", "nctaid", "bx*bw", "stride", "position"
    guard_predicates: set[str] = set()
    for number, raw in enumerate(ptx.splitlines(), start=1):
        stmt = _ptx_statement(raw)
        if not stmt:
            continue
        ops = _operands(stmt)
        special = next((reg for reg in _SPECIAL_REGISTERS if re.search(re.escape(reg) + r"\b", stmt)), None)
        if special and stmt.startswith("mov."):
            origin[ops[0]] = special.strip("%").split(".")[0]
            out.append(CodeLine("PTX", "thread index", number, stmt, f"reads {_SPECIAL_REGISTERS[special]}"))
            continue
        if _CVT.match(stmt) and len(ops) == 2 and ops[1] in origin:
            origin[ops[0]] = origin[ops[1]]  # a widening copy keeps its meaning
            continue
        sources = {origin.get(op) for op in ops[1:]}
        if _INT_MUL.match(stmt) and len(ops) >= 3:
            if {"ctaid", "ntid"} <= sources:
                origin[ops[0]] = "position" if "tid" in sources else "bx*bw"  # mad = bx * bw + tx in one go
                note = "position = tx + bx * bw" if "tid" in sources else "bx * bw, the first thread of this block"
                out.append(CodeLine("PTX", "index arithmetic", number, stmt, note))
            elif {"ntid", "nctaid"} <= sources:
                origin[ops[0]] = "stride"
                out.append(
                    CodeLine(
                        "PTX", "index arithmetic", number, stmt, "stride = blockDim.x * gridDim.x (threads in the grid)"
                    )
                )
            continue
        if _INT_ADD.match(stmt) and len(ops) == 3 and {"bx*bw", "tid"} <= sources:
            origin[ops[0]] = "position"
            out.append(CodeLine("PTX", "index arithmetic", number, stmt, "position = tx + bx * bw"))
            continue
        setp = _SETP.match(stmt)
        if setp:
            left, right = setp.group(4).strip(), setp.group(5).strip()
            if re.fullmatch(r"-?\d+", left) or re.fullmatch(r"-?\d+", right):
                continue  # against a literal: wraparound or loop-count bookkeeping, not the guard
            first = not guard_predicates
            guard_predicates.add(setp.group(3))
            note = ROLE_MEANING["bounds check"] if first else "compares an index with a bound again (loop bound)"
            out.append(CodeLine("PTX", "bounds check", number, stmt, note))
            continue
        branch = _BRANCH.match(stmt)
        if branch:
            if branch.group(2) in guard_predicates:
                out.append(CodeLine("PTX", "guard branch", number, stmt, ROLE_MEANING["guard branch"]))
            continue
        for role, rule in _PTX_RULES:
            if rule.search(stmt):
                out.append(CodeLine("PTX", role, number, stmt, ROLE_MEANING[role]))
                break
    return tuple(out)


def find_sass_highlights(sass: str) -> tuple[CodeLine, ...]:
    """The same roles in a SASS listing (nvdisasm output), where present."""
    out: list[CodeLine] = []
    for number, raw in enumerate(sass.splitlines(), start=1):
        stmt = re.sub(r"/\*.*?\*/", "", raw).strip()  # nvdisasm wraps offsets and encodings in comments
        if not stmt:
            continue
        for role, rule in _SASS_RULES:
            if rule.search(stmt):
                out.append(CodeLine("SASS", role, number, stmt, ROLE_MEANING[role]))
                break
    return tuple(out)


@dataclass(frozen=True)
class KernelInspection:
    """The compiled kernel as numba-cuda built it (``available`` False in the simulator).

    Sizes in bytes; ``max_threads_per_block`` is the largest block the device allows
    for this compiled kernel (registers can make it smaller than the device's 1024).
    """

    kernel: str  # key in KERNELS
    description: str
    signature: str
    backend: str
    device_name: str
    compute_capability: str | None
    available: bool
    reason: str  # why not available, or empty
    source: str  # the kernel's Python source
    ptx: str | None = None
    sass: str | None = None
    sass_note: str | None = None  # why SASS is missing
    regs_per_thread: int | None = None
    local_mem_per_thread_bytes: int | None = None
    shared_mem_per_block_bytes: int | None = None
    const_mem_bytes: int | None = None
    max_threads_per_block: int | None = None
    compile_s: float | None = None
    highlights: tuple[CodeLine, ...] = ()
    created_at: str = field(default_factory=utc_timestamp)

    @property
    def ptx_found(self) -> bool:
        return bool(self.ptx and ".entry" in self.ptx)

    @property
    def roles_found(self) -> tuple[str, ...]:
        """PTX roles pointed out, in ROLES order."""
        found = {h.role for h in self.highlights if h.code == "PTX"}
        return tuple(r for r in ROLES if r in found)

    @property
    def roles_missing(self) -> tuple[str, ...]:
        return tuple(r for r in ROLES if r not in self.roles_found)

    def to_frame(self):
        """The pointed-out lines (pandas DataFrame): code, role, line, text, note."""
        import pandas as pd

        return pd.DataFrame([h.to_dict() for h in self.highlights], columns=["code", "role", "line", "text", "note"])

    def to_dict(self) -> dict:
        return {
            "experiment": "kernel-inspect",
            "created_at": self.created_at,
            "params": {"kernel": self.kernel, "signature": self.signature},
            "backend": self.backend,
            "device": device_info().to_dict(),
            "kernel": self.kernel,
            "description": self.description,
            "signature": self.signature,
            "available": self.available,
            "reason": self.reason,
            "compute_capability": self.compute_capability,
            "regs_per_thread": self.regs_per_thread,
            "local_mem_per_thread_bytes": self.local_mem_per_thread_bytes,
            "shared_mem_per_block_bytes": self.shared_mem_per_block_bytes,
            "const_mem_bytes": self.const_mem_bytes,
            "max_threads_per_block": self.max_threads_per_block,
            "compile_s": self.compile_s,
            "ptx_found": self.ptx_found,
            "ptx_lines": len(self.ptx.splitlines()) if self.ptx else 0,
            "roles_found": list(self.roles_found),
            "roles_missing": list(self.roles_missing),
            "sass_found": bool(self.sass),
            "sass_note": self.sass_note,
            "highlights": [h.to_dict() for h in self.highlights],
            "ptx": self.ptx,
            "sass": self.sass,
        }

    def __str__(self) -> str:
        head = f"{self.kernel}: {self.description}, {self.signature}, {self.device_name} ({self.backend})"
        if not self.available:
            return f"{head}\n  {self.reason}"
        lines = [
            head,
            f"  registers per thread {self.regs_per_thread}, local memory {self.local_mem_per_thread_bytes} B/thread, "
            f"shared memory {self.shared_mem_per_block_bytes} B/block, constant {self.const_mem_bytes} B, "
            f"max threads per block {self.max_threads_per_block}",
            f"  PTX: {len(self.ptx.splitlines()) if self.ptx else 0} lines; SASS: "
            f"{'yes' if self.sass else self.sass_note}",
        ]
        for h in self.highlights:
            if h.code == "PTX":
                lines.append(f"  {h.line_no:>4}  {h.role:<16} {h.text}   // {h.note}")
        if self.roles_missing:
            lines.append(f"  not pointed out: {', '.join(self.roles_missing)}")
        return "\n".join(lines)


def _kernel_source(dispatcher) -> str:
    fn = getattr(dispatcher, "py_func", None) or getattr(dispatcher, "fn", None)
    if fn is None:
        return ""
    try:
        return _pyinspect.getsource(fn)
    except (TypeError, OSError):
        return ""


def inspect_kernel(kernel: str = "vector_add") -> KernelInspection:
    """Compile (or load) one of KERNELS for float32 vectors and describe what was built."""
    if kernel not in KERNELS:
        raise InputError(f"unknown kernel {kernel!r}; choose from {', '.join(KERNELS)}")
    dispatcher, description = KERNELS[kernel]
    device = device_info()
    base: dict[str, Any] = dict(
        kernel=kernel,
        description=description,
        signature=VECTOR_ADD_SIGNATURE,
        backend=BACKEND.kind,
        device_name=device.name,
        compute_capability=device.compute_capability,
        source=_kernel_source(dispatcher),
    )
    if BACKEND.simulated:
        return KernelInspection(available=False, reason=SIMULATOR_REASON, **base)

    from numba.core import sigutils

    started = time.perf_counter()
    compiled = dispatcher.compile(VECTOR_ADD_SIGNATURE)
    compile_s = time.perf_counter() - started
    argtypes, _ = sigutils.normalize_signature(VECTOR_ADD_SIGNATURE)
    ptx = dispatcher.inspect_asm(argtypes)
    sass, sass_note = None, None
    try:
        sass = dispatcher.inspect_sass(argtypes)
    except Exception as exc:  # nvdisasm missing, or a toolkit that cannot disassemble
        sass_note = f"SASS not available: {exc}".strip()
        if "nvdisasm" not in sass_note:
            sass_note += " (disassembly needs nvdisasm from the CUDA toolkit)"
    highlights = find_ptx_highlights(ptx) + (find_sass_highlights(sass) if sass else ())
    return KernelInspection(
        available=True,
        reason="",
        ptx=ptx,
        sass=sass,
        sass_note=sass_note,
        regs_per_thread=int(compiled.regs_per_thread),
        local_mem_per_thread_bytes=int(compiled.local_mem_per_thread),
        shared_mem_per_block_bytes=int(compiled.shared_mem_per_block),
        const_mem_bytes=int(compiled.const_mem_size),
        max_threads_per_block=int(compiled.max_threads_per_block),
        compile_s=compile_s,
        highlights=highlights,
        **base,
    )


def inspect_vector_add() -> KernelInspection:
    """The article's kernel, as built for float32 vectors."""
    return inspect_kernel("vector_add")


__all__ = [
    "CodeLine",
    "KERNELS",
    "KernelInspection",
    "ROLES",
    "find_ptx_highlights",
    "find_sass_highlights",
    "inspect_kernel",
    "inspect_vector_add",
]
