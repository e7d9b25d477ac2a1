"""Attempts per client in a sliding window, in the database (the `attempts` table): join attempts, requests naming
no running class, classes started. Every replica on one database counts the same attempts, so two servers behind
nginx give a guesser the limit once, not twice.

An attempt is a row (kind, client, when). `take` checks and counts in one transaction under a lock on that
client's attempts (SQLite: the transaction's BEGIN IMMEDIATE; PostgreSQL: an advisory lock on the kind and
client), so concurrent requests on any replica never both pass the last free place. The table stays small:
every insert deletes the rows older than the window (an indexed range), so it holds at most the attempts of
the last `window_s` seconds, of every client.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

from sqlalchemy import Connection, Engine, delete, insert, select, text

from classroom.models import CLIENT_MAX, AttemptRow

JOIN, FAILED_CODE, START = "join", "failed_code", "start"


class Attempts:
    def __init__(self, engine: Engine, window_s: int) -> None:
        self.engine, self.window_s = engine, window_s
        self.reader = engine.execution_options(sqlite_begin="DEFERRED")  # a check alone takes no write lock

    def wait_s(self, kind: str, client: str, limit: int, now: datetime) -> int:
        """0 when `client` may try now, else the whole seconds until enough of its attempts leave the window."""
        with self.reader.connect() as db:
            return self._wait(db, kind, client[:CLIENT_MAX], limit, now)

    def take(self, kind: str, client: str, limit: int, now: datetime) -> int:
        """Count an attempt if `client` may make one now and return 0; else the seconds to wait (none counted)."""
        client = client[:CLIENT_MAX]
        with self.engine.begin() as db:
            _lock(db, kind, client)
            wait = self._wait(db, kind, client, limit, now)
            if not wait:
                self._add(db, kind, client, now)
        return wait

    def count(self, kind: str, client: str, now: datetime) -> None:
        """Count an attempt that already happened (a failed code: the request was made, whatever the count)."""
        with self.engine.begin() as db:
            self._add(db, kind, client[:CLIENT_MAX], now)

    def waits(self, db: Connection, kind: str, clients: set[str], limit: int, now: datetime) -> dict[str, int]:
        """The clients among `clients` that must wait, with their seconds: one query for many (a group of
        answers, in its own transaction)."""
        if not clients:
            return {}
        seen: dict[str, list[datetime]] = {}
        for client, at in db.execute(select(AttemptRow.client, AttemptRow.at)
                                     .where(AttemptRow.kind == kind,
                                            AttemptRow.client.in_({c[:CLIENT_MAX] for c in clients}),
                                            AttemptRow.at > now - timedelta(seconds=self.window_s))):
            seen.setdefault(client, []).append(at)
        waits = {client: self._wait_for(sorted(times, reverse=True)[limit - 1], now)
                 for client, times in seen.items() if len(times) >= limit}
        return {client: waits[client[:CLIENT_MAX]] for client in clients if client[:CLIENT_MAX] in waits}

    def _wait(self, db: Connection, kind: str, client: str, limit: int, now: datetime) -> int:
        # the limit-th most recent attempt in the window: while it is in the window, the client waits for it to leave
        edge = db.scalar(select(AttemptRow.at)
                         .where(AttemptRow.kind == kind, AttemptRow.client == client,
                                AttemptRow.at > now - timedelta(seconds=self.window_s))
                         .order_by(AttemptRow.at.desc()).offset(limit - 1).limit(1))
        return 0 if edge is None else self._wait_for(edge, now)

    def _wait_for(self, edge: datetime, now: datetime) -> int:
        edge = edge if edge.tzinfo else edge.replace(tzinfo=timezone.utc)  # SQLite gives back naive UTC
        return int((edge - now).total_seconds() + self.window_s) + 1

    def _add(self, db: Connection, kind: str, client: str, now: datetime) -> None:
        db.execute(delete(AttemptRow).where(AttemptRow.at <= now - timedelta(seconds=self.window_s)))
        db.execute(insert(AttemptRow).values(kind=kind, client=client, at=now))


def _lock(db: Connection, kind: str, client: str) -> None:
    """PostgreSQL: a lock on this client's attempts of this kind until the transaction ends (two replicas'
    checks of one client wait for each other; other clients' do not). SQLite's BEGIN IMMEDIATE already did."""
    if db.dialect.name == "postgresql":
        key = int.from_bytes(hashlib.sha256(f"{kind}\0{client}".encode()).digest()[:8], "big", signed=True)
        db.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
