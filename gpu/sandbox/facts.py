"""What the real compiler says about a submission (registers, spills, occupancy), for the simulator's verdict.

The one place the facts are fetched: ``gpu.core.compiler.compile_source_facts``,
NVVM and ptxas for the default target, no GPU needed. It takes seconds (a fresh Numba in a
subprocess), so it runs as a second sandboxed step after the tests' verdict
(``gpu.sandbox.judging.analyse_in_child``), never inside the timed path from Submit to verdict, and its
result is kept (``FactsCache``) so the same source for the same problem is compiled once per lab.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gpu.problems.base import Problem
from gpu.sim import pyast


def numba_signature(problem: Problem) -> str:
    """The kernel's Numba signature for the arguments the harness passes (C-contiguous device arrays,
    and scalars of their declared dtype: ``float32``)."""
    import numpy as np

    sizes = problem.tests[-1].sizes
    arrays = {**problem.args(np.random.default_rng(0), sizes),
              **{k: np.empty(shape, dtype) for k, (shape, dtype) in problem.outputs(sizes).items()}}
    types = []
    for name in problem.params:
        a = arrays[name]
        if not isinstance(a, np.ndarray):  # a scalar argument
            types.append(np.dtype(a.dtype).name)
            continue
        dims = ", ".join([":"] * (a.ndim - 1) + ["::1"])
        types.append(f"{np.dtype(a.dtype).name}[{dims}]")
    return f"void({', '.join(types)})"


def compile_facts(problem: Problem, source: str, threads_per_block: int) -> tuple[dict | None, str, str]:
    """(facts, note, status): the compiler's facts for the problem's kernel in ``source``, or None
    and why not. ``status`` is the compiler's (``gpu.core.compiler``): "compiled"; "rejected" (the
    compiler refused the kernel: the note quotes it); or "unavailable" (the compiler could not run
    here, a toolkit part missing: the note names it and says how to get it, never blaming the kernel).

    Runs NVVM and ptxas in a subprocess (the source is exec'd there: call this only inside
    the sandboxed child, after the checker passed).
    """
    from gpu.core.compiler import COMPILED, REJECTED, UNAVAILABLE, compile_source_facts

    block = math.prod(problem.launch(problem.tests[-1].sizes, threads_per_block)[1])  # threads in one block
    try:
        # no SASS listing: the page shows registers, spills, shared memory and occupancy (nvdisasm is ~0.5 s of CPU)
        facts = compile_source_facts(source, problem.kernel_name, numba_signature(problem), threads_per_block=block,
                                     sass=False)
    except Exception as exc:  # compile_many reports a kernel's refusal as facts; this is the lab failing
        text = str(exc).strip()
        why = text.splitlines()[0][:300] if text else type(exc).__name__
        return None, f"the compiler's facts are unavailable: the compiler could not run ({why}); " \
                     "your kernel is not at fault", UNAVAILABLE
    if facts.unavailable:
        return None, facts.sentence().replace("the kernel is not at fault", "your kernel is not at fault"), UNAVAILABLE
    if not facts.ok:
        return (
            None,
            f"the real compiler rejects this kernel for {facts.target_label}: "
            f"{(facts.error or '').strip().splitlines()[-1][:300] if facts.error else 'no reason given'}",
            REJECTED,
        )
    occupancy = facts.occupancy
    data = {
        "target": facts.target_label,
        "compiler": facts.compiler,
        "registers_per_thread": facts.registers_per_thread,
        "spilled_bytes": facts.spill_stores_bytes,
        "shared_memory_bytes": facts.shared_memory_bytes,
        "threads_per_block": facts.threads_per_block,
        "occupancy": f"{occupancy.fraction:.0%} (limited by {occupancy.limiter})" if occupancy else None,
    }
    return data, facts.sentence(), COMPILED




# --- the cache: one compile per (source, target) for the whole class --------------------------------------------

FACTS_CACHE_ENTRIES = 2048  # rows kept; a row is a few hundred bytes (the facts, not the PTX)
FACTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS compile_facts (
    key         TEXT PRIMARY KEY,   -- sha256 of (problem, signature, threads per block, source, target, toolkit)
    created_at  TEXT NOT NULL,
    facts       TEXT,               -- JSON, or NULL for a kernel the compiler rejected
    note        TEXT NOT NULL,
    status      TEXT NOT NULL       -- "compiled" or "rejected": an unavailable compiler is never cached
);
"""


def _shape(source: str) -> str:
    """The source as the compiler sees it: its syntax tree, so comments, blank lines and layout do not count
    (the source itself when it does not parse; the checker refuses it before any compile)."""
    import ast

    try:
        return ast.dump(pyast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source


class FactsCache:
    """The compiler's facts of a submission, kept in History's database by what decides them: the problem (its
    signature), the threads in a block, the source (its syntax tree: comments and layout aside), the target and
    the toolkit. Thirty learners submitting the
    starter code compile it once; an edit compiles again. Bounded (``FACTS_CACHE_ENTRIES``, oldest dropped).

    Only "compiled" and "rejected" are kept: "unavailable" (the compiler could not run) says nothing of the kernel.
    The facts come from the sandboxed child that compiled the source, so a cached row is what that source made
    of the compiler, for that exact source only.
    """

    def __init__(self, path=None, entries: int = FACTS_CACHE_ENTRIES):
        from gpu.service.store import default_path

        self.path = path or default_path()
        self.entries = entries

    @staticmethod
    def key(problem: Problem, source: str, threads_per_block: int) -> str:
        import hashlib
        import json

        from gpu.core.arch import DEFAULT_TARGET
        from gpu.core.compile_cache import CACHE_FORMAT
        from gpu.core.compiler import toolkit

        block = math.prod(problem.launch(problem.tests[-1].sizes, threads_per_block)[1])
        what = [CACHE_FORMAT, problem.key, numba_signature(problem), block, _shape(source), DEFAULT_TARGET,
                toolkit().version]
        return hashlib.sha256(json.dumps(what).encode()).hexdigest()

    def _connect(self):
        import sqlite3
        from pathlib import Path

        from gpu.service.store import BUSY_TIMEOUT_S

        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        conn.executescript(FACTS_SCHEMA)
        return conn

    def get(self, key: str) -> tuple[dict | None, str, str] | None:
        """(facts, note, status) as ``compile_facts`` returned them, or None when not cached (or unreadable)."""
        import json
        import sqlite3

        try:
            with self._connect() as conn:
                row = conn.execute("SELECT facts, note, status FROM compile_facts WHERE key = ?", (key,)).fetchone()
        except (OSError, sqlite3.Error):
            return None
        if row is None:
            return None
        return (json.loads(row[0]) if row[0] else None), row[1], row[2]

    def put(self, key: str, facts: dict | None, note: str, status: str) -> None:
        """Keep a compiled or rejected result (anything else is ignored); a store that cannot be written is skipped."""
        import json
        import sqlite3
        from datetime import UTC, datetime

        from gpu.core.compiler import COMPILED, REJECTED

        if status not in (COMPILED, REJECTED):
            return
        try:
            with self._connect() as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO compile_facts VALUES (?,?,?,?,?)",
                    (key, datetime.now(UTC).isoformat(timespec="microseconds"),
                     json.dumps(facts) if facts is not None else None, note, status),
                )
                conn.execute(
                    "DELETE FROM compile_facts WHERE key IN (SELECT key FROM compile_facts "
                    "ORDER BY created_at DESC LIMIT -1 OFFSET ?)",
                    (self.entries,),
                )
        except (OSError, sqlite3.Error):
            return

    def count(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM compile_facts").fetchone()[0])


class CompileOnce:
    """At most one compile of a key at a time in this process: a second analysis of the same source waits for the
    first's facts (which ``FactsCache`` then holds) instead of compiling them again beside it. (The whole analysis
    claims its source too, ``service.analyse``: the second waits beside the queue, not in it.)"""

    def __init__(self) -> None:
        import threading

        self._mutex = threading.Lock()
        self._running: dict = {}  # key -> threading.Event, set when that compile ended

    def claim(self, key: str, wait_s: float, on_wait: Callable[[], None] | None = None) -> bool:
        """True: the caller compiles ``key`` (and must ``release`` it); False: another compile of it ended (or
        ``wait_s`` passed) meanwhile, so the cache may hold it now. ``on_wait()`` is called every second of the
        wait (it may raise to leave: nothing is claimed then)."""
        import threading
        import time

        with self._mutex:
            running = self._running.get(key)
            if running is None:
                self._running[key] = threading.Event()
                return True
        deadline = time.monotonic() + wait_s
        while not running.wait(min(1.0, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                break
            if on_wait is not None:
                on_wait()
        return False

    def release(self, key: str) -> None:
        with self._mutex:
            done = self._running.pop(key, None)
        if done is not None:
            done.set()


COMPILING = CompileOnce()  # one per process: every session's analyses share it


__all__ = ["COMPILING", "FACTS_CACHE_ENTRIES", "CompileOnce", "FactsCache", "compile_facts", "numba_signature"]
