"""The real CUDA compiler, without a GPU: what NVVM and ptxas make of a kernel for a target.

Numba's simulator runs kernels as Python, so it accepts code no GPU compiles (a shared
array whose shape is computed in the kernel) and never meets a warp shuffle's real
lowering. numba-cuda's ``compile_ptx`` needs no driver, only the CUDA toolkit wheels
(``numba-cuda[cu12]`` or ``[cu13]`` bring NVVM and ptxas), so this module compiles any
``@cuda.jit`` kernel for any target in the table of ``gpu.core.arch``:

* NVVM turns the kernel into PTX for the target's compute capability;
* ``ptxas -v`` assembles it and reports registers per thread, spill stores and loads,
  static shared memory and the stack frame;
* ``nvdisasm`` (where the ``nvidia-cuda-nvdisasm`` wheel is installed) lists the SASS;
* ``gpu.core.arch`` turns registers and shared memory into theoretical occupancy.

The compile runs in a subprocess (``gpu.core.compile_worker``) with
``NUMBA_ENABLE_CUDASIM=0``, one process per target, because a process that chose the
simulator cannot compile and numba fixes that choice at import. Results are cached in
memory and on disk (``gpu/core/compile_cache.py``),
keyed by the kernel's source, signature, target and toolkit, so pages stay fast.
Everything returned is a static fact from the compiler, never a measurement.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from gpu.core import compile_cache as _cache
from gpu.core.arch import DEFAULT_TARGET, TARGETS, Target, TheoreticalOccupancy, target_named, theoretical_occupancy

WORKER_TIMEOUT_S = 600
_REPO_ROOT = Path(__file__).resolve().parents[2]

__all__ = [
    "COMPILED",
    "GET_THE_COMPILER",
    "REJECTED",
    "UNAVAILABLE",
    "CompileFacts",
    "CompileRequest",
    "TARGETS",
    "Target",
    "Toolkit",
    "available_targets",
    "compile_facts",
    "compile_many",
    "compile_source_facts",
    "missing_toolkit_part",
    "toolkit",
    "unavailable_sentence",
]

# What a compile gives: facts, the compiler's refusal of the kernel, or no verdict at all
# because the compiler could not run here (a toolkit library is missing, the worker died).
COMPILED, REJECTED, UNAVAILABLE = "compiled", "rejected", "unavailable"
GET_THE_COMPILER = "run `make run` (it installs the CUDA compiler wheels) to see the compiler's facts"
NOT_THE_KERNEL = "the kernel is not at fault"


# --- the toolkit ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Toolkit:
    """Where ptxas and nvdisasm are, and the CUDA release ptxas reports ("12.9")."""

    ptxas: str | None
    nvdisasm: str | None
    version: str | None

    @property
    def version_tuple(self) -> tuple[int, int]:
        if not self.version:
            return (0, 0)
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)

    @property
    def problem(self) -> str | None:
        """None when kernels can be compiled here, else what is missing and how to get it."""
        if self.ptxas is None:
            return "ptxas (the CUDA toolkit's assembler) is not installed here"
        return None

    @property
    def sass_note(self) -> str | None:
        if self.nvdisasm is None:
            return "SASS: no disassembler installed (pip install nvidia-cuda-nvdisasm; `make run` does)"
        return None


def _nvidia_bin_candidates(tool: str) -> list[Path]:
    """``tool`` in the NVIDIA wheels' bin folders (cu12: nvidia/cuda_nvcc/bin, cu13: nvidia/cu13/bin)."""
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
    found = []
    for root in roots:
        for pattern in (f"*/bin/{tool}", f"*/*/bin/{tool}"):
            found.extend(sorted(Path(root).glob(pattern)))
    return found


def _find_tool(tool: str) -> str | None:
    for path in _nvidia_bin_candidates(tool):
        if os.access(path, os.X_OK):
            return str(path)
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home and os.access(Path(home) / "bin" / tool, os.X_OK):
            return str(Path(home) / "bin" / tool)
    return shutil.which(tool)


@lru_cache(maxsize=1)
def toolkit() -> Toolkit:
    """The CUDA toolkit this process would compile with (found once per process)."""
    ptxas = _find_tool("ptxas")
    version = None
    if ptxas:
        try:
            out = subprocess.run([ptxas, "--version"], capture_output=True, text=True, timeout=30).stdout
            match = re.search(r"release (\d+\.\d+)", out)
            version = match.group(1) if match else None
        except (OSError, subprocess.TimeoutExpired):
            ptxas = None
    return Toolkit(ptxas, _find_tool("nvdisasm"), version)


def available_targets() -> list[Target]:
    """The targets of ``TARGETS`` this toolkit's ptxas knows (sm_100 and sm_120 need 12.8+)."""
    have = toolkit().version_tuple
    return [t for t in TARGETS.values() if t.min_toolkit <= have]


# --- what is missing when the compiler cannot run ---------------------------------------------

# Errors that say a part of the toolkit is absent, never that the kernel is wrong: cuda-pathfinder's
# DynamicLibNotFoundError ("Failure finding "libnvrtc.so.13 or libnvrtc.so.12""), numba-cuda's
# NvvmSupportError ("libNVVM cannot be found") and NvrtcSupportError, a missing libdevice.
_LIBRARY_NOT_FOUND = re.compile(
    r"(?:DynamicLibNotFoundError|DynamicLibNotAvailableError)\b.*?Failure finding \"([^\"]+)\""
)
_NOT_FOUND = r"\S* (?:cannot be found|not found)"
_MISSING_PARTS = (
    (re.compile(r"NvvmSupportError|libNVVM" + _NOT_FOUND, re.I), "libNVVM (NVVM, the CUDA compiler)"),
    (re.compile(r"NvrtcSupportError|libnvrtc" + _NOT_FOUND, re.I), "libNVRTC (the CUDA runtime compiler)"),
    (re.compile(r"BitcodeLibNotFoundError|libdevice" + _NOT_FOUND, re.I), "libdevice (NVVM's math library)"),
    (re.compile(r"DynamicLibNotFoundError|DynamicLibNotAvailableError"), "a CUDA toolkit library"),
)
_LIBRARY_NAMES = {"nvrtc": "NVRTC", "nvvm": "NVVM", "nvJitLink": "nvJitLink", "cudart": "the CUDA runtime"}


def missing_toolkit_part(error: str | None) -> str | None:
    """What part of the CUDA toolkit an error says is missing ("libnvrtc.so.13 (NVRTC)"), or None
    when the error is the compiler's verdict on the kernel."""
    text = error or ""
    found = _LIBRARY_NOT_FOUND.search(text)
    if found:
        libs = found.group(1)
        role = next((v for k, v in _LIBRARY_NAMES.items() if k.lower() in libs.lower()), None)
        return f"{libs} ({role})" if role else libs
    return next((part for pattern, part in _MISSING_PARTS if pattern.search(text)), None)


def unavailable_sentence(target_label: str, missing: str | None, why: str | None = None) -> str:
    """What a page says when the compiler could not run: what is missing, how to get it, and
    that the kernel is not at fault."""
    if missing:
        return (f"the compiler's facts for {target_label} are unavailable here: {missing} is not installed. "
                f"{GET_THE_COMPILER[0].upper()}{GET_THE_COMPILER[1:]}; {NOT_THE_KERNEL}")
    return (f"the compiler's facts for {target_label} are unavailable: the compiler could not run "
            f"({first_line(why)}); {NOT_THE_KERNEL}")


# --- the facts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CompileFacts:
    """What NVVM and ptxas made of one kernel with one signature for one target.

    ``status`` is ``COMPILED`` (``ok``), ``REJECTED`` (the compiler refused the kernel: ``error``
    is its message) or ``UNAVAILABLE`` (the compiler could not run here, so there is no verdict on
    the kernel: ``missing`` names the absent toolkit part, where that is the reason).
    Sizes are in bytes. ``occupancy`` is theoretical (resources only) at
    ``threads_per_block``, or None when no block size was given. ``sass`` is None where
    no disassembler is installed (``sass_note`` says so).
    """

    kernel: str
    signature: str
    target: str
    cc: tuple[int, int]
    target_label: str
    ok: bool
    error: str | None
    toolkit_version: str | None
    registers_per_thread: int | None = None
    spill_stores_bytes: int | None = None
    spill_loads_bytes: int | None = None
    shared_memory_bytes: int | None = None
    stack_frame_bytes: int | None = None
    barriers: int | None = None
    threads_per_block: int | None = None
    occupancy: TheoreticalOccupancy | None = None
    compile_s: float | None = None
    cached: bool = False
    ptx: str | None = field(default=None, repr=False)
    sass: str | None = field(default=None, repr=False)
    sass_note: str | None = None
    unavailable: bool = False
    missing: str | None = None

    @property
    def status(self) -> str:
        if self.ok:
            return COMPILED
        return UNAVAILABLE if self.unavailable else REJECTED

    @property
    def rejected(self) -> bool:
        """The compiler ran and refused this kernel (never said when it could not run)."""
        return self.status == REJECTED

    @property
    def compiler(self) -> str:
        return f"NVVM/ptxas {self.toolkit_version}" if self.toolkit_version else "NVVM/ptxas"

    @property
    def spilled_bytes(self) -> int | None:
        """Bytes spilled to local memory (stores; every spilled byte is stored once at least)."""
        return self.spill_stores_bytes

    def sentence(self) -> str:
        """The one line a page shows: what was compiled where, and the static facts."""
        where = f"compiled here for {self.target_label} by {self.compiler}"
        if self.unavailable:
            return unavailable_sentence(self.target_label, self.missing, self.error)
        if not self.ok:
            return f"is rejected by the compiler for {self.target_label} ({self.compiler}): {first_line(self.error)}"
        parts = [
            f"{self.registers_per_thread} registers",
            f"{self.spill_stores_bytes:,} bytes spilled",
            f"{self.shared_memory_bytes:,} bytes of shared memory",
        ]
        if self.occupancy is not None:
            parts.append(f"occupancy {self.occupancy.percent} at {self.threads_per_block} threads per block")
        return f"{where}: {', '.join(parts)} — static facts from the compiler, not measurements"

    def to_dict(self, code: bool = True) -> dict:
        """JSON-ready; ``code`` False leaves out the PTX and SASS listings."""
        data = {
            "kernel": self.kernel,
            "signature": self.signature,
            "target": self.target,
            "cc": list(self.cc),
            "target_label": self.target_label,
            "ok": self.ok,
            "status": self.status,
            "error": self.error,
            "missing": self.missing,
            "compiler": self.compiler,
            "toolkit_version": self.toolkit_version,
            "registers_per_thread": self.registers_per_thread,
            "spill_stores_bytes": self.spill_stores_bytes,
            "spill_loads_bytes": self.spill_loads_bytes,
            "shared_memory_bytes": self.shared_memory_bytes,
            "stack_frame_bytes": self.stack_frame_bytes,
            "barriers": self.barriers,
            "threads_per_block": self.threads_per_block,
            "occupancy": self.occupancy.to_dict() if self.occupancy else None,
            "compile_s": self.compile_s,
            "sass_note": self.sass_note,
        }
        if code:
            data["ptx"] = self.ptx
            data["sass"] = self.sass
        return data


def first_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[0] if lines else "unknown error"


_INT = r"(\d+)"


def parse_ptxas_log(log: str) -> dict:
    """Registers, shared memory, barriers, stack and spills of the entry function from
    ``ptxas -v`` output (the lines after "Compiling entry function")."""
    entry = log.split("Compiling entry function", 1)[-1]

    def grab(pattern: str) -> int | None:
        match = re.search(pattern, entry)
        return int(match.group(1)) if match else None

    return {
        "registers_per_thread": grab(r"Used " + _INT + r" registers"),
        "shared_memory_bytes": grab(_INT + r" bytes smem") or 0,
        "barriers": grab(r"used " + _INT + r" barriers") or 0,
        "stack_frame_bytes": grab(_INT + r" bytes stack frame"),
        "spill_stores_bytes": grab(_INT + r" bytes spill stores"),
        "spill_loads_bytes": grab(_INT + r" bytes spill loads"),
    }


# --- requests and the worker (the cache: gpu/core/compile_cache.py) ------------------------------


@dataclass(frozen=True)
class CompileRequest:
    """One kernel and signature to compile: an importable kernel (``module`` + ``name``)
    or a function in a source string (``source`` + ``name``). ``kernel`` is its label."""

    kernel: str
    signature: str
    name: str
    module: str | None = None
    source: str | None = None
    threads_per_block: int | None = None

    def job(self) -> dict:
        if self.source is not None:
            return {"source": self.source, "name": self.name, "signature": self.signature}
        return {"module": self.module, "name": self.name, "signature": self.signature}


def request_for(pyfunc, signature: str, threads_per_block: int | None = None) -> CompileRequest:
    """A request for a kernel object (dispatcher, simulator kernel or plain function).

    A module-level kernel is imported by name in the worker; one defined elsewhere
    (``__main__``, inside a function) is sent as its source, which must then be self-contained.
    """
    fn = getattr(pyfunc, "py_func", pyfunc)
    module, qualname = fn.__module__, fn.__qualname__
    if module != "__main__" and "<locals>" not in qualname:
        return CompileRequest(qualname, str(signature), qualname, module=module, threads_per_block=threads_per_block)
    source = textwrap.dedent(inspect.getsource(fn))
    header = "from numba import cuda, float32, float64, int32, int64, uint32, uint8\n"
    return CompileRequest(
        fn.__name__, str(signature), fn.__name__, source=header + source, threads_per_block=threads_per_block
    )


def _worker_env() -> dict:
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "0"  # the simulator cannot compile (see the module docstring)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def _run_worker(
    targets: list[Target], requests: list[CompileRequest], tools: Toolkit, timeout_s: float, sass: bool
) -> list[list[dict]]:
    """Compile ``requests`` for ``targets`` in one subprocess: per request, one raw result per target."""
    payload = {
        "targets": [{"name": t.name, "cc": list(t.cc)} for t in targets],
        "ptxas": tools.ptxas, "nvdisasm": tools.nvdisasm if sass else None, "jobs": [r.job() for r in requests],
    }
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gpu.core.compile_worker"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=_worker_env(),
            cwd=str(_REPO_ROOT),
        )
        if done.returncode == 0:
            return json.loads(done.stdout)
        why = f"the compile worker exited with {done.returncode}: {done.stderr.strip()[-2000:]}"
    except subprocess.TimeoutExpired:
        why = f"the compile worker ran past {timeout_s:g} s"
    except ValueError as exc:
        why = f"the compile worker's output was not JSON ({exc})"
    failed = {
        "ok": False,
        "error": why,
        "ptx": None,
        "ptxas_log": None,
        "sass": None,
        "compile_s": None,
        "worker_failed": True,
    }
    return [[failed for _ in targets] for _ in requests]


def _facts(
    request: CompileRequest, target: Target, tools: Toolkit, raw: dict, cached: bool, sass: bool = True
) -> CompileFacts:
    parsed = parse_ptxas_log(raw["ptxas_log"]) if raw.get("ok") and raw.get("ptxas_log") else {}
    ok = bool(raw.get("ok"))
    missing = None if ok else raw.get("missing") or missing_toolkit_part(raw.get("error"))
    occupancy = None
    if parsed and request.threads_per_block:
        occupancy = theoretical_occupancy(
            target, request.threads_per_block, parsed["registers_per_thread"] or 0, parsed["shared_memory_bytes"]
        )
    return CompileFacts(
        kernel=request.kernel,
        signature=request.signature,
        target=target.name,
        cc=target.cc,
        target_label=target.label,
        ok=ok,
        error=raw.get("error"),
        unavailable=not ok and (bool(missing) or bool(raw.get("worker_failed"))),
        missing=missing,
        toolkit_version=tools.version,
        threads_per_block=request.threads_per_block,
        occupancy=occupancy,
        compile_s=raw.get("compile_s"),
        cached=cached,
        ptx=raw.get("ptx"),
        sass=raw.get("sass"),
        sass_note=tools.sass_note if sass else "SASS: not asked for (sass=True lists it)",
        **parsed,
    )


def compile_many(
    requests: list[CompileRequest],
    targets: Sequence[str | Target] | None = None,
    workers: int | None = None,
    timeout_s: float = WORKER_TIMEOUT_S,
    sass: bool = False,
) -> list[CompileFacts]:
    """Every request for every target (default: ``available_targets()``), target by
    target (requests in order within each). Uncached kernels are split over ``workers``
    subprocesses (default: the CPU count), each compiling its kernels for every target
    and stopped after ``timeout_s`` seconds. ``sass`` adds nvdisasm's listing (about
    0.5 s of CPU per kernel and target, so only pages and ``--code`` ask for it). A kernel
    the compiler rejects gives facts with status ``REJECTED`` and the compiler's message;
    one it could not judge (a toolkit part missing, the worker died) status ``UNAVAILABLE``;
    nothing raises for either.
    """
    tools = toolkit()
    chosen = [t if isinstance(t, Target) else target_named(t) for t in (targets or available_targets())]
    results: dict[tuple[int, int], CompileFacts] = {}
    missing: dict[int, list[int]] = {}  # request index -> target indices to compile
    for ti, target in enumerate(chosen):
        for ri, request in enumerate(requests):
            absent = tools.problem and "ptxas (the CUDA toolkit's assembler)"
            if absent is None and target.min_toolkit > tools.version_tuple:
                absent = (f"a ptxas that knows {target.name} (CUDA {target.min_toolkit[0]}.{target.min_toolkit[1]}+; "
                          f"this one is {tools.version})")
            if absent:
                raw = {"ok": False, "error": f"{absent}: not installed", "missing": absent}
                results[ti, ri] = _facts(request, target, tools, raw, False)
                continue
            # a cached result with SASS serves a request without it too
            keys = [_cache.key(request, target.name, tools.version, True)] + (
                [] if sass else [_cache.key(request, target.name, tools.version, False)]
            )
            cached = next((r for r in map(_cache.get, keys) if r is not None), None)
            if cached is not None:
                results[ti, ri] = _facts(request, target, tools, cached, True, sass)
            else:
                missing.setdefault(ri, []).append(ti)

    # one worker call per (set of targets, share of the kernels)
    groups: dict[tuple[int, ...], list[int]] = {}
    for ri, tis in missing.items():
        groups.setdefault(tuple(tis), []).append(ri)
    count = max(1, workers or os.cpu_count() or 1)
    calls = [(tis, ris[i::count]) for tis, ris in groups.items() for i in range(min(count, len(ris)))]

    def run(call: tuple[tuple[int, ...], list[int]]) -> None:
        tis, ris = call
        raws = _run_worker([chosen[ti] for ti in tis], [requests[ri] for ri in ris], tools, timeout_s, sass)
        for ri, per_target in zip(ris, raws):
            for ti, raw in zip(tis, per_target):
                # a compiler's verdict is a fact; a crashed worker or a missing library is not
                if not raw.get("worker_failed") and not missing_toolkit_part(raw.get("error")):
                    listed = sass and bool(tools.nvdisasm)
                    _cache.put(_cache.key(requests[ri], chosen[ti].name, tools.version, listed), raw)
                results[ti, ri] = _facts(requests[ri], chosen[ti], tools, raw, False, sass)

    if calls:
        with ThreadPoolExecutor(max_workers=min(count, len(calls))) as pool:
            list(pool.map(run, calls))
    return [results[ti, ri] for ti in range(len(chosen)) for ri in range(len(requests))]


def compile_facts(
    pyfunc, signature: str, target: str = DEFAULT_TARGET, threads_per_block: int | None = None, sass: bool = True
) -> CompileFacts:
    """Compile one kernel (a ``@cuda.jit`` dispatcher, also a simulator one, or its Python
    function) with ``signature`` (e.g. ``"void(float32[::1], float32[::1])"``) for
    ``target`` ("sm_90"), and return what the compiler says. Cached; see the module docstring."""
    return compile_many([request_for(pyfunc, signature, threads_per_block)], [target], sass=sass)[0]


def compile_source_facts(
    source: str,
    function_name: str,
    signature: str,
    target: str = DEFAULT_TARGET,
    threads_per_block: int | None = None,
    timeout_s: float = WORKER_TIMEOUT_S,
    sass: bool = True,
) -> CompileFacts:
    """Compile the function ``function_name`` defined by the Python ``source`` (which
    imports what it uses, e.g. ``from numba import cuda``). The source is executed in the
    compile subprocess, never in this process, which is stopped after ``timeout_s``
    seconds; callers running untrusted code sandbox the call."""
    request = CompileRequest(
        function_name, str(signature), function_name, source=source, threads_per_block=threads_per_block
    )
    return compile_many([request], [target], timeout_s=timeout_s, sass=sass)[0]
