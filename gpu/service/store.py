"""Run history: every completed run, saved in SQLite with its parameters, device and samples.

The database lives at ``$KERNEL_LAB_DB`` or, by default, ``history.sqlite3`` in the user's
data directory (platformdirs when installed, else ``~/.local/share/kernel-lab``). It runs
in WAL mode, so readers never block the one writer and a process killed mid-write loses
only its own uncommitted run. Each save is one transaction of one row.

A damaged database must never stop experiments: a file that is not a database is moved
aside (``<name>.corrupt-<UTC time>``) and a fresh one started; a file or folder that
cannot be written leaves history read-only (or unavailable) with a ``problem`` that says
why, and every save then raises ``StoreError`` for the caller to report.

Deleting is not offered to the app: only ``python -m gpu history-delete`` calls ``delete``.

One database is shared by every Kernel Lab server under the user account, so each run
saved from the app carries the id of the browser session that saved it (``session_id``;
``runs(session_id=...)``): History's "Your runs" are that session's, "Everyone's runs"
all of them. Rows saved before the column existed, from the CLI or by an older server
have none and are only under everyone's.

Schema changes: ``SCHEMA_VERSION`` is bumped only by a change an older Kernel Lab cannot
read or write (it then refuses the file, leaving it untouched). Additive changes, which
older servers sharing the file keep reading and writing, are ``LAYOUT_MIGRATIONS``,
applied in order on open and recorded as ``layout_version`` in ``meta``.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Declared in gpu/core/settings.py (tests/test_settings.py checks the name). This module imports nothing of gpu
# at import time: tests/test_store.py loads it alone, under a Python without NumPy.
ENV_DB = "KERNEL_LAB_DB"
SCHEMA_VERSION = 1  # what an older Kernel Lab must understand to use the file (see the module docstring)
# Additive migrations: (layout version, column added to runs, its SQL type and comment, statements after it).
LAYOUT_MIGRATIONS: tuple[tuple[int, str, str, tuple[str, ...]], ...] = (
    (2, "session_id", "TEXT", ("CREATE INDEX IF NOT EXISTS runs_session ON runs (session_id)",)),
)
LAYOUT_VERSION = LAYOUT_MIGRATIONS[-1][0]
BUSY_TIMEOUT_S = 15.0  # many sessions may finish at once; a save waits this long for the writer

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       TEXT NOT NULL UNIQUE,      -- uuid4 hex, what users and the CLI see
    experiment   TEXT NOT NULL,             -- "vector-add", "scaling", ...
    created_at   TEXT NOT NULL,             -- when the run was measured (UTC, ISO 8601)
    saved_at     TEXT NOT NULL,             -- when it was written here (UTC, ISO 8601)
    backend      TEXT NOT NULL,             -- "cuda" or "simulator"
    simulated    INTEGER NOT NULL,          -- 1 when timings came from the CUDA simulator
    device_name  TEXT,
    device_index INTEGER,
    versions     TEXT NOT NULL,             -- JSON: library -> version
    params       TEXT NOT NULL,             -- JSON: the run's parameters
    result       TEXT NOT NULL              -- JSON: result.to_dict(), every sample included
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at);
CREATE INDEX IF NOT EXISTS runs_experiment ON runs (experiment);
"""

COLUMNS = (
    "run_id",
    "experiment",
    "created_at",
    "saved_at",
    "backend",
    "simulated",
    "device_name",
    "device_index",
    "versions",
    "params",
    "result",
)
OPTIONAL_COLUMNS = ("session_id",)  # added by a migration: NULL in older rows, absent from a read-only older file

# Keys of a result's to_dict() that describe the run rather than parameterise it.
_NOT_PARAMS = {"experiment", "created_at", "backend", "device", "versions", "warnings", "lines"}


class StoreError(RuntimeError):
    """History could not be read or written; the message says why and what still works."""


def default_path() -> Path:
    """Where history lives: $KERNEL_LAB_DB, else the user's data directory."""
    from gpu.core.settings import settings

    configured = settings().db
    if configured:
        return Path(configured).expanduser()
    try:
        from platformdirs import user_data_dir

        base = Path(user_data_dir("kernel-lab", appauthor=False))
    except ImportError:  # the GPU test machine has no platformdirs
        base = Path.home() / ".local" / "share" / "kernel-lab"
    return base / "history.sqlite3"


def connect_with_schema(path: Path, schema: str, failing: str) -> sqlite3.Connection:
    """A connection to the database at ``path`` (made if missing) with ``schema`` applied, rows by name;
    StoreError "``failing`` in <path>: <why>" when it cannot be opened (the learner stores share History's file)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        conn.row_factory = sqlite3.Row
        conn.executescript(schema)
        return conn
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"{failing} in {path}: {exc}") from None


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _json_safe(value: Any) -> Any:
    """JSON-serialisable copy: NaN/inf become None (strict JSON), tuples lists, others str."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if hasattr(value, "item"):  # numpy scalars
        return _json_safe(value.item())
    return str(value)


def params_of(result: Mapping[str, Any]) -> dict:
    """The parameters of a run from its to_dict(): a "params" mapping when given, else its scalar fields."""
    if isinstance(result.get("params"), Mapping):
        return dict(result["params"])
    params = {
        k: v
        for k, v in result.items()
        if k not in _NOT_PARAMS and (v is None or isinstance(v, (str, int, float, bool)))
    }
    for key in ("policy", "sizes", "threads_per_block_values", "block_sizes"):
        if key in result and key not in params:
            params[key] = result[key]
    return params


@dataclass(frozen=True)
class RunRecord:
    """One saved run. ``result`` is the run's to_dict() exactly as saved."""

    run_id: str
    experiment: str
    created_at: str
    saved_at: str
    backend: str
    simulated: bool
    device_name: str | None
    device_index: int | None
    versions: dict
    params: dict
    result: dict
    session_id: str | None = None  # the browser session that saved it; None: CLI, import, or saved before sessions

    @property
    def short_id(self) -> str:
        return self.run_id[:8]

    @property
    def backend_label(self) -> str:
        """"CUDA" or "CUDA simulator (simulated timings)": simulated runs are always labelled."""
        return "CUDA simulator (simulated timings)" if self.simulated else "CUDA"

    def to_dict(self) -> dict:
        return {
            "run_id": self.run_id,
            "experiment": self.experiment,
            "created_at": self.created_at,
            "saved_at": self.saved_at,
            "backend": self.backend,
            "simulated": self.simulated,
            "device_name": self.device_name,
            "device_index": self.device_index,
            "versions": self.versions,
            "params": self.params,
            "result": self.result,
        }

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> RunRecord:
        return cls(
            run_id=row["run_id"],
            experiment=row["experiment"],
            created_at=row["created_at"],
            saved_at=row["saved_at"],
            backend=row["backend"],
            simulated=bool(row["simulated"]),
            device_name=row["device_name"],
            device_index=row["device_index"],
            versions=json.loads(row["versions"]),
            params=json.loads(row["params"]),
            result=json.loads(row["result"]),
            session_id=row["session_id"] if "session_id" in row.keys() else None,
        )


class HistoryStore:
    """The history database at ``path``. Thread-safe: one short-lived connection per call.

    ``available`` is False when nothing can be read; ``writable`` False when runs cannot be
    saved; ``problem`` then says why (for a banner) and ``moved_aside`` names a corrupt
    file that was moved out of the way.
    """

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else default_path()
        self.available = False
        self.writable = False
        self.problem: str | None = None
        self.moved_aside: Path | None = None
        # A WAL database in a folder we may not write cannot make its -shm index; then it is
        # opened as immutable (no locking: fine for reading what an earlier process saved).
        self._ro_query = "mode=ro"
        self._has_session = True  # False for a read-only file from before the session column
        self._open()

    # --- opening -------------------------------------------------------------------

    def _connect(self, readonly: bool = False) -> sqlite3.Connection:
        if readonly:
            conn = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?{self._ro_query}",
                uri=True,
                timeout=BUSY_TIMEOUT_S,
                check_same_thread=False,
            )
        else:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        return conn

    def _initialise(self) -> None:
        """Create or check the schema; raise sqlite3 errors for the caller to classify."""
        conn = self._connect()
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"could not switch to WAL mode (got {mode!r})")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a committed run survives a killed process
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {check}")
            with conn:
                conn.executescript(SCHEMA)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
                _migrate(conn)
            version = int(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"history at {self.path} was written by a newer Kernel Lab (schema {version}); it is left untouched"
                )
        finally:
            conn.close()

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._set_unavailable(f"cannot create the history folder {self.path.parent}: {exc.strerror or exc}")
            return
        try:
            self._initialise()
        except (sqlite3.DatabaseError, StoreError) as exc:
            if _is_readonly(exc, self.path):
                self._open_readonly(exc)
            elif isinstance(exc, StoreError):
                self._set_unavailable(str(exc))
            elif _is_corrupt(exc):
                self._move_aside(exc)
            else:
                self._set_unavailable(f"history database {self.path} cannot be opened: {exc}")
            return
        self.available = self.writable = True
        self.problem = None

    def _open_readonly(self, exc: Exception) -> None:
        """The file (or its folder) cannot be written: read what is there, save nothing."""
        why = f"history database {self.path} is read-only ({exc}); new runs are not being saved"
        if not self.path.exists():
            self._set_unavailable(f"history folder {self.path.parent} is not writable; new runs are not being saved")
            return
        read_exc: Exception | None = None
        for query in ("mode=ro", "mode=ro&immutable=1"):
            self._ro_query = query
            try:
                conn = self._connect(readonly=True)
                try:
                    conn.execute("SELECT count(*) FROM runs").fetchone()
                    self._has_session = "session_id" in _run_columns(conn)
                finally:
                    conn.close()
                break
            except sqlite3.DatabaseError as exc_ro:
                read_exc = exc_ro
        else:
            self._set_unavailable(f"{why}, and it cannot be read either ({read_exc})")
            return
        self.available, self.writable, self.problem = True, False, why

    def _move_aside(self, exc: Exception) -> None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            os.replace(self.path, target)
            for suffix in ("-wal", "-shm"):
                side = self.path.with_name(self.path.name + suffix)
                if side.exists():
                    os.replace(side, target.with_name(target.name + suffix))
            self._initialise()
        except (OSError, sqlite3.DatabaseError, StoreError) as move_exc:
            self._set_unavailable(
                f"history database {self.path} is damaged ({exc}) and could not be replaced ({move_exc})"
            )
            return
        self.moved_aside = target
        self.available = self.writable = True
        self.problem = f"the history database was damaged ({exc}); it was moved to {target.name} and a new one started"

    def _set_unavailable(self, why: str) -> None:
        self.available = self.writable = False
        self.problem = f"History is unavailable: {why}. Experiments still run; results are not saved."

    # --- writing -------------------------------------------------------------------

    def _row(self, result: Mapping[str, Any], experiment: str | None, params: Mapping[str, Any] | None,
             device_index: int | None, versions: Mapping[str, str | None] | None,
             session_id: str | None = None) -> tuple:
        from gpu.core.provenance import stamp

        # a run measured now follows the current rules; an imported one carries its own
        # version (the importer sets it from the file, 1 when the file predates versions)
        data = stamp(_json_safe(dict(result)))
        name = data.get("experiment") or experiment
        if not name:
            raise StoreError("a run needs an experiment name to be saved")
        device: Mapping[str, Any] = data["device"] if isinstance(data.get("device"), Mapping) else {}
        backend = str(data.get("backend") or device.get("backend") or "unknown")
        if versions is None:
            from gpu.core.device import library_versions

            versions = library_versions()
        return (
            uuid.uuid4().hex,
            str(name),
            str(data.get("created_at") or _utc_now()),
            _utc_now(),
            backend,
            int(backend == "simulator"),
            device.get("name"),
            device_index if device_index is not None else device.get("index"),
            json.dumps(_json_safe(dict(versions)), sort_keys=True),
            json.dumps(
                _json_safe(dict(params) if params is not None else params_of(data)), sort_keys=True, allow_nan=False
            ),
            json.dumps(data, allow_nan=False),
            str(session_id) if session_id else None,
        )

    def save(
        self,
        result: Mapping[str, Any],
        *,
        experiment: str | None = None,
        params: Mapping[str, Any] | None = None,
        device_index: int | None = None,
        versions: Mapping[str, str | None] | None = None,
        session_id: str | None = None,
    ) -> str:
        """Save one run's to_dict(); return its run id. Raises StoreError when history is not writable.

        ``experiment`` is used when the dict has no "experiment" key. ``params`` are the
        parameters the experiment declared and ran with; rows saved before declarations
        existed (and imported files) fall back to ``params_of``. ``versions`` defaults to
        the installed library versions. ``session_id`` names the browser session saving it
        (History's "Your runs"); None for the CLI and imports from it.
        """
        return self.save_many(
            [result],
            experiment=experiment,
            params=params,
            device_index=device_index,
            versions=versions,
            session_id=session_id,
        )[0]

    def save_many(
        self,
        results: Iterable[Mapping[str, Any]],
        *,
        experiment: str | None = None,
        params: Mapping[str, Any] | None = None,
        device_index: int | None = None,
        versions: Mapping[str, str | None] | None = None,
        session_id: str | None = None,
    ) -> list[str]:
        """Save several runs in one transaction (all or none); return their run ids in order."""
        if not self.writable:
            raise StoreError(self.problem or f"history database {self.path} is not writable")
        rows = [self._row(result, experiment, params, device_index, versions, session_id) for result in results]
        try:
            conn = self._connect()
            try:
                with conn:
                    columns = (*COLUMNS, *OPTIONAL_COLUMNS)
                    conn.executemany(
                        f"INSERT INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows
                    )
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            if _is_readonly(exc, self.path):
                self.writable = False
                self.problem = f"history database {self.path} became read-only ({exc}); new runs are not being saved"
            raise StoreError(f"the run could not be saved to history: {exc}") from exc
        return [row[0] for row in rows]

    def delete(self, run_ids: Iterable[str]) -> int:
        """Delete runs by full id or unique prefix; return how many. Admin CLI only."""
        if not self.writable:
            raise StoreError(self.problem or f"history database {self.path} is not writable")
        deleted = 0
        conn = self._connect()
        try:
            with conn:
                for run_id in run_ids:
                    matches = [
                        r[0]
                        for r in conn.execute(
                            "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\'", (_prefix_pattern(run_id),)
                        )
                    ]
                    if len(matches) > 1:
                        raise StoreError(f"run id prefix {run_id!r} matches {len(matches)} runs; give more characters")
                    if not matches:
                        raise StoreError(f"no run with id {run_id!r}")
                    deleted += conn.execute("DELETE FROM runs WHERE run_id = ?", (matches[0],)).rowcount
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"could not delete: {exc}") from exc
        finally:
            conn.close()
        return deleted

    # --- reading -------------------------------------------------------------------

    def _query(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        if not self.available:
            raise StoreError(self.problem or "history is unavailable")
        try:
            conn = self._connect(readonly=not self.writable)
            try:
                return conn.execute(sql, args).fetchall()
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"history could not be read: {exc}") from exc

    def _select(self) -> str:
        optional = "session_id" if self._has_session else "NULL AS session_id"
        return f"SELECT {', '.join(COLUMNS)}, {optional} FROM runs"

    def runs(
        self,
        experiment: str | None = None,
        device: str | None = None,
        backend: str | None = None,
        limit: int = 1000,
        *,
        session_id: str | None = None,
    ) -> list[RunRecord]:
        """Saved runs, newest first, optionally filtered by experiment, device name, backend and
        the browser session that saved them (``session_id``: that session's runs only)."""
        where, args = [], []
        filters = [("experiment", experiment), ("device_name", device), ("backend", backend)]
        if session_id is not None:
            if not self._has_session:  # an older read-only file: no run has a session
                return []
            filters.append(("session_id", session_id))
        for column, value in filters:
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = f"{self._select()} {'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY id DESC LIMIT ?"
        return [RunRecord.from_row(r) for r in self._query(sql, (*args, int(limit)))]

    def get(self, run_id: str) -> RunRecord:
        rows = self._query(
            f"{self._select()} WHERE run_id LIKE ? ESCAPE '\\' LIMIT 2", (_prefix_pattern(run_id),)
        )
        if len(rows) != 1:
            raise StoreError(f"no single run with id {run_id!r}")
        return RunRecord.from_row(rows[0])

    def count(self) -> int:
        return int(self._query("SELECT count(*) FROM runs")[0][0])

    def integrity(self) -> str:
        """SQLite's quick_check: "ok" when the file is sound."""
        return str(self._query("PRAGMA quick_check")[0][0])

    def status(self) -> str:
        """One line for the sidebar or CLI: where history is and whether it saves."""
        if not self.available:
            return self.problem or "History is unavailable."
        state = "saving every run" if self.writable else "read-only: new runs are not saved"
        return f"History: {self.path} ({state})"


def _run_columns(conn: sqlite3.Connection) -> set[str]:
    return {row[1] for row in conn.execute("PRAGMA table_info(runs)")}


def _migrate(conn: sqlite3.Connection) -> None:
    """Apply the additive ``LAYOUT_MIGRATIONS`` this file lacks (inside the caller's transaction)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'layout_version'").fetchone()
    done = int(row[0]) if row else 1
    columns = _run_columns(conn)
    for version, column, sql_type, after in LAYOUT_MIGRATIONS:
        if column not in columns:  # checked by column too: an older server may have created the file since
            conn.execute(f"ALTER TABLE runs ADD COLUMN {column} {sql_type}")
        for statement in after:
            conn.execute(statement)
        done = max(done, version)
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('layout_version', ?)", (str(done),))


def _prefix_pattern(run_id: str) -> str:
    cleaned = str(run_id).strip().lower()
    if not cleaned or any(c not in "0123456789abcdef" for c in cleaned):
        raise StoreError(f"run ids are hexadecimal, got {run_id!r}")
    return cleaned + "%"


def _is_readonly(exc: Exception, path: Path) -> bool:
    text = str(exc).lower()
    if "readonly" in text or "read-only" in text or "attempt to write" in text:
        return True
    if "unable to open" in text:  # a folder or file we may not write
        return not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK))
    return False


def _is_corrupt(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(
        s in text for s in ("not a database", "malformed", "integrity check failed", "file is encrypted", "disk image")
    )


def open_store(path: str | os.PathLike | None = None) -> HistoryStore:
    """Open (creating, repairing or degrading as needed) the history database; never raises."""
    return HistoryStore(path)
