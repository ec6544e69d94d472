"""Every ``@cuda.jit`` kernel in ``gpu/``, found by walking the package, with its launches.

A module that defines kernels declares ``LAUNCHES`` beside them (gpu/core/launch_spec.py):
the signatures the experiments launch each kernel with and its threads per block. This
index imports every module of ``gpu`` whose source mentions ``jit``, collects the CUDA
kernels (not device functions: those are compiled inside the kernels that call them)
defined there, and pairs each with its declaration. A new kernel module is covered with
no list to edit; a kernel without a declaration is reported (the compile gate fails on it).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import gpu
from gpu.catalog.registry import FACES
from gpu.core.compiler import CompileRequest
from gpu.core.launch_spec import Launch

# Modules never to import while searching: the CLI entry point and the compile worker
# (which switches numba to the real backend when imported).
_SKIP = {"gpu.__main__", "gpu.core.compile_worker"}


def _is_face(name: str) -> bool:
    """An experiment folder's report, check, charts or home: no kernel lives there."""
    parts = name.split(".")
    return parts[:2] == ["gpu", "experiments"] and len(parts) == 4 and parts[3] in FACES


@dataclass(frozen=True)
class FoundKernel:
    """One kernel: where it is defined, the dispatcher, and its declared launches (or None)."""

    module: str
    name: str
    dispatcher: object
    launch: Launch | None

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.name}"

    def requests(self) -> list[CompileRequest]:
        """One compile request per declared signature (none without a declaration)."""
        if self.launch is None:
            return []
        return [
            CompileRequest(
                self.name, sig, self.name, module=self.module, threads_per_block=self.launch.threads_per_block
            )
            for sig in self.launch.signatures
        ]


def is_kernel(obj) -> bool:
    """A numba CUDA kernel (hardware or simulator dispatcher), not a device function."""
    if not hasattr(obj, "py_func"):
        return False
    cls = type(obj)
    if cls.__module__ == "gpu.sim.kernel":  # the lab's simulator
        return cls.__name__ == "SimKernel" and not obj._device
    if cls.__module__.startswith("numba.cuda.simulator"):
        return cls.__name__ == "FakeCUDAKernel" and not getattr(obj, "_device", False)
    if cls.__module__.startswith("numba.cuda") and cls.__name__ == "CUDADispatcher":
        return not obj.targetoptions.get("device", False)
    return False


def _candidate_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(gpu.__path__, "gpu."):
        if info.ispkg or info.name in _SKIP or _is_face(info.name):
            continue
        spec = importlib.util.find_spec(info.name)
        if spec and spec.origin and "jit" in Path(spec.origin).read_text():
            names.append(info.name)
    return sorted(names)


@lru_cache(maxsize=1)
def find_kernels() -> tuple[FoundKernel, ...]:
    """Every kernel defined in ``gpu/``, sorted by module then name."""
    found = []
    for module_name in _candidate_modules():
        module = importlib.import_module(module_name)
        launches = getattr(module, "LAUNCHES", {})
        for name, obj in sorted(vars(module).items()):
            if is_kernel(obj) and obj.py_func.__module__ == module_name and obj.py_func.__name__ == name:
                found.append(FoundKernel(module_name, name, obj, launches.get(name)))
    return tuple(found)


def stale_declarations() -> list[str]:
    """``module.name`` for LAUNCHES entries that name no kernel of their module."""
    kernels = {k.qualified for k in find_kernels()}
    stale = []
    for module_name in _candidate_modules():
        for name in getattr(importlib.import_module(module_name), "LAUNCHES", {}):
            if f"{module_name}.{name}" not in kernels:
                stale.append(f"{module_name}.{name}")
    return stale


def kernel_named(name: str) -> FoundKernel:
    """The kernel called ``name`` (its function name, or module.name); ValueError listing them otherwise."""
    matches = [k for k in find_kernels() if name in (k.name, k.qualified)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(k.name for k in find_kernels())
    if matches:
        raise ValueError(f"kernel name {name!r} is ambiguous: use one of {', '.join(k.qualified for k in matches)}")
    raise ValueError(f"no kernel named {name!r}: choose one of {known}")


def launch_of(dispatcher) -> tuple[FoundKernel, Launch] | None:
    """The index entry and declared launch of a kernel object, or None when undeclared."""
    fn = getattr(dispatcher, "py_func", dispatcher)
    for k in find_kernels():
        if k.module == fn.__module__ and k.name == fn.__name__ and k.launch is not None:
            return k, k.launch
    return None


__all__ = ["FoundKernel", "find_kernels", "is_kernel", "kernel_named", "launch_of", "stale_declarations"]
