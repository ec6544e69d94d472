"""Import a ``python -m gpu check`` file (check.json) into History: untrusted input.

The file is read by the schema (gpu/service/check_schema.py: size limit, strict JSON,
every value bounded, every result converted into its type), then every section is rebuilt
into the engine's own result objects (what the pages draw, ``ReferenceRun.rebuild_all``);
only when all of that succeeds are its runs written to History, in one transaction, so a
rejected file changes nothing. A file is recognised by its content, not its bytes: the
digest is of its canonical JSON (keys sorted, no spaces), so the same check with one more
space or its keys in another order is the same import. Whatever the file holds, the
import ends in a saved run or an ``ImportProblem`` (the CLI's exit 2), never a crash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from gpu.core.safe_text import shown
from gpu.service.check_schema import MAX_IMPORT_BYTES, ImportProblem, canonical, history_records
from gpu.service.check_schema import parse_check_bytes as parse_schema
from gpu.service.check_schema import validate_check as validate_schema
from gpu.service.references import Provenance, ReferenceRun


@dataclass(frozen=True)
class ImportResult:
    """What an import saved: run ids per experiment, the device, and the file's digest."""

    run_ids: tuple[str, ...]
    experiments: tuple[str, ...]
    device: str
    backend: str
    started_at: str
    sha256: str

    def summary(self) -> str:
        runs = len(self.run_ids)
        sim = " (simulated timings)" if self.backend == "simulator" else ""
        return shown(  # the device's name is the file's: no control or bidi character reaches a terminal
            f"Imported {runs} run{'s' if runs != 1 else ''} from a check of {self.device}{sim} started "
            f"{self.started_at}: "
            f"{', '.join(self.experiments)}."
        )


def rebuild(data: dict) -> None:
    """Raise ImportProblem unless every result of a schema-valid check rebuilds into the engine's objects."""
    try:
        ReferenceRun.from_check("import", data, Provenance.of_check(data, source="import")).rebuild_all()
    except ImportProblem:
        raise
    except Exception as exc:  # a value the schema let through but the result types refuse
        raise ImportProblem(f"the results cannot be rebuilt: {exc}") from None


def validate_check(data: Any) -> None:
    """Raise ImportProblem naming the first thing that makes ``data`` not a check file this version can draw."""
    validate_schema(data)
    rebuild(data)


def parse_check_bytes(raw: bytes, *, max_bytes: int = MAX_IMPORT_BYTES) -> dict:
    """Bytes of a check.json -> the validated dict (schema and rebuild). Raises ImportProblem naming the first
    problem."""
    data = parse_schema(raw, max_bytes=max_bytes)
    rebuild(data)
    return data


def digest(data: Any) -> str:
    """The SHA-256 of a parsed check's canonical JSON: one digest for one content."""
    return hashlib.sha256(canonical(data)).hexdigest()


def import_check(
    store, raw: bytes, *, source: str = "check.json", max_bytes: int = MAX_IMPORT_BYTES, session_id: str | None = None
) -> ImportResult:
    """Validate ``raw`` and save its runs to ``store`` in one transaction (``session_id``: the
    browser session importing it, whose "Your runs" then list them; None from the CLI).

    Raises ImportProblem (nothing saved) when the file is rejected, already imported, or
    holds no run; StoreError when History cannot be written.
    """
    try:
        data = parse_check_bytes(raw, max_bytes=max_bytes)
        sha = digest(data)
        records = history_records(data, source=source, sha256=sha)
    except ImportProblem:
        raise
    except Exception as exc:  # a file is never a crash of the lab: refused, naming what went wrong
        raise ImportProblem(f"the file cannot be read as a check ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not records:
        raise ImportProblem("the file holds no timed run (only correctness or failed sections); nothing to import")
    # the content's digest; an import made before content digests holds its bytes' digest
    known = {sha, hashlib.sha256(raw).hexdigest()}
    for existing in store.runs(limit=100_000):
        if (existing.result.get("imported") or {}).get("sha256") in known:
            raise ImportProblem(f"this file was already imported (run {existing.short_id}); nothing changed")
    ids = store.save_many(records, versions=data["versions"], session_id=session_id)
    return ImportResult(
        tuple(ids),
        tuple(dict.fromkeys(r["experiment"] for r in records)),
        data["device"]["name"],
        data["backend"],
        data["started_at"],
        sha,
    )


__all__ = [
    "ImportProblem",
    "ImportResult",
    "MAX_IMPORT_BYTES",
    "history_records",
    "import_check",
    "parse_check_bytes",
    "validate_check",
]
