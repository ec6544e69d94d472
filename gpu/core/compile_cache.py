"""What the compiler said, remembered: the compile cache of ``gpu/core/compiler.py``, in memory and on disk.

An entry is the compile worker's raw result for one kernel, signature, target and toolkit, keyed by a hash of all
four and of the kernel's code (its source, or for a kernel of the ``gpu`` package every file of the package: a kernel
may use constants from any). The disk cache lives in ``$KERNEL_LAB_COMPILE_CACHE`` or ``~/.cache/kernel-lab/compile``,
at most ``MAX_ENTRIES`` files, the oldest dropped; each entry is written whole, then renamed into place, so processes
sharing the folder (the app's, the sandbox's analyses, the tests' workers) never read half of one. A read-only home
still compiles; it just does not remember.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from gpu.core import settings as _settings

CACHE_FORMAT = 2  # bump when the worker's output changes, so old entries are not reused
MAX_ENTRIES = 1024  # on disk; PTX is 5-50 KB, so the cache stays under ~50 MB
MEMORY_ENTRIES = 256
_GPU_PACKAGE = Path(__file__).resolve().parents[1]


class Request(Protocol):
    """What the key reads of a compile request (``gpu.core.compiler.CompileRequest``)."""

    @property
    def name(self) -> str: ...
    @property
    def module(self) -> str | None: ...
    @property
    def signature(self) -> str: ...
    @property
    def source(self) -> str | None: ...


@lru_cache(maxsize=1)
def _gpu_package_hash() -> str:
    """One hash of every .py file of the gpu package: a kernel may use constants from any."""
    digest = hashlib.sha256()
    for path in sorted(_GPU_PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(_GPU_PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _code_hash(request: Request) -> str:
    if request.source is not None:
        return hashlib.sha256(request.source.encode()).hexdigest()
    if request.module is None:
        raise ValueError(f"a compile request carries source or names a module; {request.name!r} has neither")
    spec = importlib.util.find_spec(request.module)
    origin = Path(spec.origin) if spec and spec.origin else None
    if origin is not None and _GPU_PACKAGE in origin.resolve().parents:
        return _gpu_package_hash()
    return hashlib.sha256(origin.read_bytes() if origin else request.module.encode()).hexdigest()


def key(request: Request, target: str, toolkit_version: str | None, sass: bool) -> str:
    """The entry's name for ``request`` compiled for ``target`` by this toolkit, with its SASS listing or not."""
    parts = [CACHE_FORMAT, toolkit_version, sass, target, request.name, request.module, request.signature,
             _code_hash(request)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def cache_dir() -> Path:
    configured = _settings.settings().compile_cache
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernel-lab" / "compile"


_memory: OrderedDict[str, dict] = OrderedDict()
_memory_lock = threading.Lock()


def get(entry: str) -> dict | None:
    """The raw result kept under ``entry``, from memory or disk, or None."""
    with _memory_lock:
        if entry in _memory:
            _memory.move_to_end(entry)
            return _memory[entry]
    try:
        raw = json.loads((cache_dir() / f"{entry}.json").read_text())
    except (OSError, ValueError):
        return None
    _remember(entry, raw)
    return raw


def _remember(entry: str, raw: dict) -> None:
    with _memory_lock:
        _memory[entry] = raw
        _memory.move_to_end(entry)
        while len(_memory) > MEMORY_ENTRIES:
            _memory.popitem(last=False)


def put(entry: str, raw: dict) -> None:
    """Keep ``raw`` under ``entry`` in memory and on disk (written whole, then renamed into place)."""
    _remember(entry, raw)
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{entry}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(raw))
        tmp.replace(folder / f"{entry}.json")
        entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in entries[: max(0, len(entries) - MAX_ENTRIES)]:
            old.unlink(missing_ok=True)
    except OSError:  # a read-only home still compiles; it just does not remember
        pass


__all__ = ["CACHE_FORMAT", "MAX_ENTRIES", "MEMORY_ENTRIES", "cache_dir", "get", "key", "put"]
