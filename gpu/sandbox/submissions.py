"""Passing submissions and the leaderboard: a ``submissions`` table beside History's runs.

Same database file as History (``$KERNEL_LAB_DB`` or the user's data directory), its own
table, so the runs table and its schema version are untouched. Only passing submissions
are saved; one faster than the memory roof allows is saved but never ranked. The app
cannot delete (one learner must not remove another's entry): the admin runs
``python -m gpu submissions delete ID --yes``.
"""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gpu.service.store import StoreError, connect_with_schema, default_path

MAX_NAME_CHARS = 40
SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    id          TEXT PRIMARY KEY,
    created_at  TEXT NOT NULL,
    problem     TEXT NOT NULL,
    backend     TEXT NOT NULL,
    device      TEXT NOT NULL,
    name        TEXT NOT NULL,
    source      TEXT NOT NULL,
    median_s    REAL,
    gbps        REAL,
    percent_of_peak REAL,
    ratio_to_reference REAL,
    ranked      INTEGER NOT NULL,
    verdict     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS submissions_board ON submissions (problem, device, ranked, median_s);
"""


def clean_name(name: str | None) -> str:
    """The learner's display name: printable, trimmed, at most MAX_NAME_CHARS; 'anonymous' when empty."""
    text = "".join(ch for ch in (name or "") if ch.isprintable()).strip()[:MAX_NAME_CHARS]
    return text or "anonymous"


@dataclass(frozen=True)
class Entry:
    id: str
    created_at: str
    problem: str
    backend: str
    device: str
    name: str
    median_s: float | None
    gbps: float | None
    percent_of_peak: float | None
    ratio_to_reference: float | None
    ranked: bool
    source: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class SubmissionStore:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()

    def _connect(self) -> sqlite3.Connection:
        return connect_with_schema(self.path, SCHEMA, "submissions cannot be saved")

    def save(self, verdict, source: str, name: str | None) -> str:
        """Save a passing verdict; returns its id. Refuses anything that did not pass."""
        if verdict.status != "passed":
            raise StoreError("only passing submissions are saved")
        timing = verdict.timing or {}
        entry_id = uuid.uuid4().hex
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO submissions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    entry_id,
                    datetime.now(UTC).isoformat(timespec="seconds"),
                    verdict.problem,
                    verdict.backend,
                    verdict.device or ("CUDA simulator" if verdict.backend == "simulator" else "unknown GPU"),
                    clean_name(name),
                    source,
                    timing.get("median_s"),
                    timing.get("gbps"),
                    timing.get("percent_of_peak"),
                    timing.get("ratio_to_reference"),
                    int(verdict.ranked),
                    verdict.to_json(),
                ),
            )
        return entry_id

    def _entries(self, sql: str, args: tuple) -> list[Entry]:
        with self._connect() as conn:
            rows = conn.execute(sql, args).fetchall()
        return [
            Entry(
                r["id"],
                r["created_at"],
                r["problem"],
                r["backend"],
                r["device"],
                r["name"],
                r["median_s"],
                r["gbps"],
                r["percent_of_peak"],
                r["ratio_to_reference"],
                bool(r["ranked"]),
                r["source"],
            )
            for r in rows
        ]

    def leaderboard(self, problem: str, device: str | None = None, limit: int = 20) -> list[Entry]:
        """Ranked entries of one problem on one device, fastest first (in the simulator: first to pass first)."""
        where, args = "problem = ? AND ranked = 1", [problem]
        if device:
            where += " AND device = ?"
            args.append(device)
        order = "CASE WHEN median_s IS NULL THEN 1 ELSE 0 END, median_s, created_at"
        return self._entries(f"SELECT * FROM submissions WHERE {where} ORDER BY {order} LIMIT ?", (*args, limit))

    def devices(self, problem: str) -> list[str]:
        with self._connect() as conn:
            return [
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT device FROM submissions WHERE problem = ? ORDER BY device", (problem,)
                )
            ]

    def all(self, limit: int = 1000, name: str | None = None) -> list[Entry]:
        """The newest passing submissions (only those saved under ``name``, when given: one learner's own)."""
        where, args = ("WHERE name = ? ", (name,)) if name is not None else ("", ())
        return self._entries(
            f"SELECT * FROM submissions {where}ORDER BY created_at DESC, rowid DESC LIMIT ?", (*args, limit)
        )  # rowid: saved in the same second

    def count(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM submissions").fetchone()[0])

    def delete(self, ids: list[str]) -> int:
        """Delete by id or unique prefix (admin only); StoreError for an unknown or ambiguous id."""
        deleted = 0
        with self._connect() as conn:
            for prefix in ids:
                prefix = prefix.strip().lower()
                if not prefix or any(ch not in "0123456789abcdef" for ch in prefix):
                    raise StoreError(f"{prefix!r} is not a submission id (hexadecimal)")
                found = [r[0] for r in conn.execute("SELECT id FROM submissions WHERE id LIKE ?", (prefix + "%",))]
                if len(found) != 1:
                    raise StoreError(f"{prefix!r} matches {len(found)} submissions; give more of the id")
                deleted += conn.execute("DELETE FROM submissions WHERE id = ?", (found[0],)).rowcount
        return deleted


__all__ = ["MAX_NAME_CHARS", "Entry", "SubmissionStore", "clean_name"]
