"""Every judged submission and every hint opened, per learner: progress that survives a restart, and the class view.

Two tables in History's database (beside ``submissions``, which keeps only passes for the
leaderboard): ``attempts`` (one row per verdict: who, which problem, the status, the failure
kind in words, its one-line detail, the source) and ``hints`` (which stage of which problem's
hint a learner opened, and when). A learner's progress (solved / tried / new per problem) is
read from ``attempts``; the teacher's class view (``class_summary``, ``latest_per_learner``,
``csv_rows``) reads the same rows and never hands a learner anyone else's code.
"""

from __future__ import annotations

import csv
import io
import sqlite3
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gpu.sandbox.verdict import Verdict
from gpu.service.store import connect_with_schema, default_path

STUCK_AFTER = 3  # attempts without a pass after which a learner counts as stuck on a problem
# The failure kinds a teacher sees, in the order the class view lists them
KINDS = ("wrong result", "out of bounds", "race", "undefined behaviour", "kernel error", "refused by the checker",
         "time limit", "memory limit", "crashed", "lab error")
SOLVED, TRIED, NEW = "solved", "tried", "new"
CSV_COLUMNS = ("created_at", "learner", "problem", "status", "kind", "detail")

SCHEMA = """
CREATE TABLE IF NOT EXISTS attempts (
    id          TEXT PRIMARY KEY,
    created_at  TEXT NOT NULL,
    learner     TEXT NOT NULL,      -- the folded name (gpu.service.learners.fold)
    name        TEXT NOT NULL,      -- the name as shown
    problem     TEXT NOT NULL,
    status      TEXT NOT NULL,      -- the verdict's: passed, wrong, refused, error
    kind        TEXT NOT NULL,      -- "passed" or one of KINDS
    detail      TEXT NOT NULL,      -- the verdict's one line
    source      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS attempts_learner ON attempts (learner, problem, created_at);
CREATE INDEX IF NOT EXISTS attempts_problem ON attempts (problem, created_at);
CREATE TABLE IF NOT EXISTS hints (
    learner     TEXT NOT NULL,
    problem     TEXT NOT NULL,
    stage       INTEGER NOT NULL,   -- 1 the nudge, 2 the idea, 3 the line
    opened_at   TEXT NOT NULL,
    PRIMARY KEY (learner, problem, stage)
);
"""

_SANDBOX_KINDS = {"time-limit": "time limit", "cpu-limit": "time limit", "memory-limit": "memory limit",
                  "crashed": "crashed", "output-limit": "crashed", "file-limit": "crashed", "sandbox": "crashed"}


def failure_kind(verdict: Verdict) -> str:
    """What went wrong, in the words the class view counts: "passed" or one of ``KINDS``."""
    if verdict.status == "passed":
        return "passed"
    if verdict.status == "refused":
        rule = (verdict.refusal or {}).get("rule", "")
        return _SANDBOX_KINDS.get(rule, "refused by the checker")
    if verdict.status == "wrong":
        error = str((verdict.mismatch or {}).get("error", ""))
        if "out of bounds" in error:
            return "out of bounds"
        if "loop limit" in error:  # the simulator stopped a loop that would not end (gpu/sim/loops.py: endless)
            return "time limit"
        if "the kernel failed: undefined (" in error:  # e.g. a shift by 64 places (gpu/sim/arithmetic.py)
            return "undefined behaviour"
        if error:
            return "kernel error"
        return "wrong result"
    return "lab error"


@dataclass(frozen=True)
class Attempt:
    id: str
    created_at: str
    learner: str
    name: str
    problem: str
    status: str
    kind: str
    detail: str
    source: str


@dataclass(frozen=True)
class ProblemSummary:
    problem: str
    solved: int  # learners who passed it
    tried: int  # learners who submitted it and have not passed
    stuck: int  # of those, the ones with STUCK_AFTER or more attempts
    kinds: tuple[tuple[str, int, str, str], ...]  # (kind, attempts, an example's learner, its detail), most first


class ProgressStore:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()

    def _connect(self) -> sqlite3.Connection:
        return connect_with_schema(self.path, SCHEMA, "progress cannot be kept")

    # --- a learner's own -------------------------------------------------------------------

    def record(self, learner: str, name: str, verdict: Verdict, source: str) -> str:
        """Keep one verdict of ``learner`` (a folded name); returns the attempt's id."""
        attempt_id = uuid.uuid4().hex
        detail = " ".join(str(verdict.message).split())[:300]
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO attempts VALUES (?,?,?,?,?,?,?,?,?)",
                (attempt_id, datetime.now(UTC).isoformat(timespec="seconds"), learner, name, verdict.problem,
                 verdict.status, failure_kind(verdict), detail, source),
            )
        return attempt_id

    def mark_race(self, attempt_id: str, detail: str) -> None:
        """The trace found a race in a submission that did not pass: its kind is "race" (what went wrong)."""
        with self._connect() as conn:
            conn.execute(
                "UPDATE attempts SET kind = 'race', detail = ? WHERE id = ? AND status != 'passed'",
                (" ".join(detail.split())[:300], attempt_id),
            )

    def progress(self, learner: str) -> dict[str, str]:
        """Problem key -> "solved" or "tried" for every problem ``learner`` submitted (the others are new)."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT problem, MAX(status = 'passed') AS solved FROM attempts WHERE learner = ? GROUP BY problem",
                (learner,),
            ).fetchall()
        return {r["problem"]: SOLVED if r["solved"] else TRIED for r in rows}

    def attempts(self, learner: str, problem: str | None = None, limit: int = 200) -> list[Attempt]:
        """``learner``'s own attempts, newest first (of one problem, when given)."""
        where, args = "learner = ?", [learner]
        if problem is not None:
            where += " AND problem = ?"
            args.append(problem)
        return self._attempts(f"WHERE {where} ORDER BY created_at DESC, rowid DESC LIMIT ?", (*args, limit))

    def open_hint(self, learner: str, problem: str, stage: int) -> None:
        """Record that ``learner`` opened ``stage`` of ``problem``'s hint (the first time only)."""
        with self._connect() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO hints VALUES (?,?,?,?)",
                (learner, problem, int(stage), datetime.now(UTC).isoformat(timespec="seconds")),
            )

    def hints_opened(self, learner: str, problem: str) -> int:
        """The highest hint stage ``learner`` opened for ``problem`` (0: none)."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT MAX(stage) FROM hints WHERE learner = ? AND problem = ?", (learner, problem)
            ).fetchone()
        return int(row[0] or 0)

    # --- the teacher's ----------------------------------------------------------------------

    def _attempts(self, tail: str, args: tuple) -> list[Attempt]:
        with self._connect() as conn:
            rows = conn.execute(f"SELECT * FROM attempts {tail}", args).fetchall()
        return [Attempt(*(r[k] for k in Attempt.__dataclass_fields__)) for r in rows]

    def every_attempt(self, limit: int = 100_000) -> list[Attempt]:
        """Every attempt, oldest first (the class view and its CSV)."""
        return self._attempts("ORDER BY created_at, rowid LIMIT ?", (limit,))

    def hint_counts(self) -> dict[str, Counter]:
        """Problem -> Counter of the highest stage each learner opened."""
        with self._connect() as conn:
            rows = conn.execute("SELECT problem, learner, MAX(stage) AS s FROM hints GROUP BY problem, learner")
            out: dict[str, Counter] = {}
            for r in rows:
                out.setdefault(r["problem"], Counter())[int(r["s"])] += 1
        return out


def class_summary(attempts: Iterable[Attempt], problems: Iterable[str]) -> list[ProblemSummary]:
    """Per problem (in ``problems``' order): how many learners solved it, tried without solving, and are stuck,
    and the failure kinds, most common first, each with its latest example."""
    by_problem: dict[str, dict[str, list[Attempt]]] = {}
    for a in attempts:
        by_problem.setdefault(a.problem, {}).setdefault(a.learner, []).append(a)
    out = []
    for key in problems:
        learners = by_problem.get(key, {})
        solved = [k for k, tries in learners.items() if any(t.status == "passed" for t in tries)]
        tried = [k for k in learners if k not in solved]
        stuck = [k for k in tried if len(learners[k]) >= STUCK_AFTER]
        failures = [t for tries in learners.values() for t in tries if t.kind != "passed"]
        counts = Counter(t.kind for t in failures)
        kinds = tuple(
            (kind, n, example.name, example.detail)
            for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], KINDS.index(kv[0]) if kv[0] in KINDS else 99))
            for example in [next(t for t in reversed(failures) if t.kind == kind)]
        )
        out.append(ProblemSummary(key, len(solved), len(tried), len(stuck), kinds))
    return out


def latest_per_learner(attempts: Iterable[Attempt]) -> list[Attempt]:
    """Each learner's newest attempt, newest first."""
    latest: dict[str, Attempt] = {}
    for a in attempts:  # oldest first: the last one seen is the newest
        latest[a.learner] = a
    return sorted(latest.values(), key=lambda a: a.created_at, reverse=True)


def csv_text(attempts: Iterable[Attempt]) -> str:
    """Every attempt as CSV (``CSV_COLUMNS``; no source code), for the teacher's export."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for a in attempts:
        writer.writerow([a.created_at, a.name, a.problem, a.status, a.kind, a.detail])
    return out.getvalue()


__all__ = [
    "CSV_COLUMNS",
    "KINDS",
    "NEW",
    "SOLVED",
    "STUCK_AFTER",
    "TRIED",
    "Attempt",
    "ProblemSummary",
    "ProgressStore",
    "class_summary",
    "csv_text",
    "failure_kind",
    "latest_per_learner",
]
