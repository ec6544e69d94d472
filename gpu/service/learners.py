"""Who a learner is on the shared demo: a display name, claimed once, kept by a secret only their browser holds.

There are no passwords. The first browser to use a name claims it: the name is stored with the
SHA-256 of a random secret that browser made (and keeps in a cookie, ``ui/learner.py``). Later
the same name is accepted only with the same secret, so a name taken by someone else is refused
("taken" means: claimed here with another secret). A name is compared case- and blank-insensitively
("Ada  L" is "ada l"), so two learners cannot look alike on a leaderboard.

The ``learners`` table lives in History's database (``gpu.service.store.default_path()``) beside
the submissions, so names survive a restart of the server. Locally (``make run``) there is one
user, ``LOCAL_NAME``, and nothing is claimed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gpu.service.store import StoreError, connect_with_schema, default_path

LOCAL_NAME = "you"  # the one user of a lab on your own machine
MAX_NAME_CHARS = 40
SECRET_HEX_CHARS = 32  # 128 random bits
_ALLOWED = re.compile(r"^[\w .'\-]+$")  # letters (any script), digits, blanks, . ' - _

SCHEMA = """
CREATE TABLE IF NOT EXISTS learners (
    key         TEXT PRIMARY KEY,   -- the name folded: lower case, blanks collapsed
    name        TEXT NOT NULL,      -- as first typed
    secret_hash TEXT NOT NULL,      -- SHA-256 hex of the browser's secret
    created_at  TEXT NOT NULL
);
"""


class NameRefused(StoreError):
    """A name that cannot be used: malformed, reserved, or claimed by another browser (the message says which)."""


def fold(name: str) -> str:
    """The name as compared: case-folded, blanks collapsed."""
    return " ".join(name.split()).casefold()


def check_name(name: str | None) -> str:
    """The display name, trimmed; NameRefused saying what is allowed when it is empty, too long or odd."""
    text = " ".join((name or "").split())
    if not text:
        raise NameRefused("type a name: 1 to 40 letters, digits, blanks or . ' - _")
    if len(text) > MAX_NAME_CHARS:
        raise NameRefused(f"{text[:12]!r}… is {len(text)} characters; a name is at most {MAX_NAME_CHARS}")
    if not _ALLOWED.match(text):
        raise NameRefused(f"{text!r} has characters a name may not use; use letters, digits, blanks or . ' - _")
    if fold(text) in (LOCAL_NAME, "anonymous"):
        raise NameRefused(f"{text!r} is reserved; pick another name")
    return text


def new_secret() -> str:
    return secrets.token_hex(SECRET_HEX_CHARS // 2)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Learner:
    name: str  # as first typed
    key: str  # folded: what submissions and progress are filed under


@dataclass(frozen=True)
class LearnerId:
    """Whom work is filed under: the folded name (``fold``: what progress is keyed by) and the name as shown."""

    key: str
    name: str


class LearnerStore:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()

    def _connect(self) -> sqlite3.Connection:
        return connect_with_schema(self.path, SCHEMA, "learners' names cannot be kept")

    def claim(self, name: str, secret: str) -> Learner:
        """``name`` for the browser holding ``secret``: claimed now if nobody has it, the same learner again if this
        secret claimed it before; NameRefused when another browser claimed it (or the name is malformed)."""
        text = check_name(name)
        if not re.fullmatch(rf"[0-9a-f]{{{SECRET_HEX_CHARS}}}", secret or ""):
            raise NameRefused("this browser's key is malformed; reload the page to get a new one")
        key = fold(text)
        with self._connect() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO learners VALUES (?,?,?,?)",
                (key, text, _hash(secret), datetime.now(UTC).isoformat(timespec="seconds")),
            )
            row = conn.execute("SELECT name, secret_hash FROM learners WHERE key = ?", (key,)).fetchone()
        if not hmac.compare_digest(row["secret_hash"], _hash(secret)):
            raise NameRefused(f"the name {text!r} is taken by someone else on this lab; pick another")
        return Learner(row["name"], key)

    def known(self, name: str, secret: str) -> Learner | None:
        """The learner this browser claimed as ``name`` before, or None (never claims)."""
        try:
            key = fold(check_name(name))
        except NameRefused:
            return None
        with self._connect() as conn:
            row = conn.execute("SELECT name, secret_hash FROM learners WHERE key = ?", (key,)).fetchone()
        if row is None or not hmac.compare_digest(row["secret_hash"], _hash(secret or "")):
            return None
        return Learner(row["name"], key)

    def names(self) -> dict[str, str]:
        """Every claimed name: folded key -> name as typed."""
        with self._connect() as conn:
            return {r["key"]: r["name"] for r in conn.execute("SELECT key, name FROM learners ORDER BY key")}


__all__ = [
    "LOCAL_NAME",
    "MAX_NAME_CHARS",
    "Learner",
    "LearnerId",
    "LearnerStore",
    "NameRefused",
    "check_name",
    "fold",
    "new_secret",
]
