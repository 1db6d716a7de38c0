"""Match logs in the database: the copies workers commit with their results, where each log is, and retention.

A worker on another host commits its match's log (gzip bytes) with the result; the front moves it
to its own folder (or a daily bundle, :mod:`arena.store.log_archive`) and deletes the copy.
Retention deletes old live events and failed uploads in small batches. A mixin of
:class:`arena.store.sqlite.Store` (``self.run``, ``self._tx()``, ``self.dialect``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.schema import CreateIndex

from arena.match.log import decompress
from arena.store.log_archive import read_stored
from arena.store.schema import match_events, match_logs, matches, metadata, uploads
from arena.store.upserts import replace

m = matches.c
_KEY = bindparam("key")
PUT_LOG = replace(match_logs, ("match_key",), ("data",))
LOG_COPY = select(match_logs.c.data).where(match_logs.c.match_key == _KEY)
_COPIES = select(match_logs.c.match_key, m.tournament_id, m.log_path).join(
    matches, m.match_key == match_logs.c.match_key)
COPIES = _COPIES.limit(bindparam("lim"))
COPIES_OF = _COPIES.where(m.tournament_id == bindparam("tid")).limit(bindparam("lim"))
MOVE_LOG = update(matches).where(m.match_key == _KEY, m.log_path == bindparam("old")).values(
    log_path=bindparam("new"))
DROP_COPY = delete(match_logs).where(match_logs.c.match_key == _KEY)
LOG_OF = select(m.log_path, m.log_hash).where(m.match_key == _KEY)
FIRST_FINISHED = select(func.min(m.finished_at)).where(m.finished_at >= bindparam("since"), m.log_path.is_not(None))
FINISHED_BETWEEN = select(m.match_key, m.log_path).where(
    m.finished_at >= bindparam("start"), m.finished_at < bindparam("end"), m.log_path.is_not(None)).order_by(
    m.finished_at, m.id)
_LIMIT = bindparam("batch")
PRUNE_EVENTS = delete(match_events).where(match_events.c.id.in_(
    select(match_events.c.id).where(match_events.c.created_at < bindparam("before")).limit(_LIMIT)))
PRUNE_UPLOADS = delete(uploads).where(uploads.c.id.in_(
    select(uploads.c.id).where(uploads.c.status == "failed", uploads.c.finished_at < bindparam("before")).limit(
        _LIMIT)))
RETENTION_INDEXES = ("matches_by_finished_at", "match_events_by_time", "uploads_failed_by_time")
"""The indexes retention reads by (:mod:`arena.store.schema`)."""


class Logs:
    """Match log copies and retention of :class:`arena.store.sqlite.Store` (a mixin)."""

    dialect: str
    run: Any
    _tx: Any
    connection: Any

    def put_match_log(self, match_key: str, data: bytes) -> None:
        """Store the bytes of ``match_key``'s log file as written (gzip), inside the caller's
        transaction: the log a worker commits with the result (:meth:`match_log_bytes` reads it
        back where the file is not at hand). Taken at the commit, the copy holds every line, the
        result's included, but not the gzip trailer the file gets when it is closed just after:
        :func:`arena.match.log.decompress` reads both alike."""
        self.run(PUT_LOG[self.dialect], {"match_key": match_key, "data": data})

    def match_log_bytes(self, match_key: str, log_path: str | None) -> bytes | None:
        """The uncompressed bytes of a match's log: its file at ``log_path`` (or its member of a
        daily archive bundle, :mod:`arena.store.log_archive`) if this host has it, else the copy
        its worker committed to the database; None if neither exists. Raises
        :class:`arena.match.log.ChainError` if what is there is corrupt."""
        if log_path:
            try:
                return decompress(read_stored(log_path))
            except OSError:  # on a worker's host, or removed
                pass
        data = self.match_log_copy(match_key)
        return None if data is None else decompress(data)

    def match_log_copy(self, match_key: str) -> bytes | None:
        """The bytes of ``match_key``'s log as its worker committed them (:meth:`put_match_log`),
        or None once the front has the log (:meth:`move_match_logs`) or if none was committed."""
        data = self.run(LOG_COPY, {"key": match_key}).scalar()
        return None if data is None else bytes(data)

    def match_log_copies(self, tournament_id: int | None = None, limit: int = 100) -> list[tuple[str, int, str]]:
        """Up to ``limit`` worker copies still in the database (of tournament ``tournament_id``,
        or of any): ``(match_key, tournament_id, log_path)``. A copy is committed with its result
        and deleted once the front has the log, so this reads a few rows, not the history."""
        rows = (self.run(COPIES, {"lim": limit}) if tournament_id is None
                else self.run(COPIES_OF, {"tid": tournament_id, "lim": limit}))
        return [(r[0], int(r[1]), r[2]) for r in rows]

    def move_match_logs(self, moves: list[tuple[str, str, str]]) -> int:
        """In one transaction, for each ``(match_key, old log_path, new log_path)``: the match's
        log is now at the new path (only if it was still at the old one: a move made meanwhile
        by another process is kept), and its worker copy, if any, is deleted. Returns how many
        paths were changed."""
        moved = 0
        with self._tx():
            for key, old, new in moves:
                if old != new:
                    moved += max(self.run(MOVE_LOG, {"key": key, "old": old, "new": new}).rowcount, 0)
                self.run(DROP_COPY, {"key": key})
        return moved

    def match_log_of(self, match_key: str) -> tuple[str | None, str | None] | None:
        """``(log_path, log_hash)`` of a match, or None if there is no such match."""
        row = self.run(LOG_OF, {"key": match_key}).first()
        return None if row is None else (row[0], row[1])

    def ensure_retention_indexes(self) -> None:
        """The indexes retention reads by (idempotent): matches by the time they finished, live
        events by the time they were written, failed uploads by the time they were refused. Part of
        the schema since the baseline revision; made here if missing (a database whose indexes
        were dropped by hand)."""
        for table in metadata.tables.values():
            for index in table.indexes:
                if index.name in RETENTION_INDEXES:
                    self.run(CreateIndex(index, if_not_exists=True))

    def first_finished_at(self, since: float) -> float | None:
        """The earliest ``finished_at`` (Unix seconds) at or after ``since`` of a match with a
        log, or None (one probe of ``matches_by_finished_at``)."""
        found = self.run(FIRST_FINISHED, {"since": since}).scalar()
        return None if found is None else float(found)

    def logs_finished_between(self, start: float, end: float) -> list[tuple[str, str]]:
        """``(match_key, log_path)`` of the matches with a log that finished in ``[start, end)``
        (Unix seconds), by time (a range of ``matches_by_finished_at``)."""
        return [(r[0], r[1]) for r in self.run(FINISHED_BETWEEN, {"start": start, "end": end})]

    def prune_retention(self, events_before_ms: int, uploads_before_s: float, batch: int = 5000) -> tuple[int, int]:
        """Delete live events (``match_events``) written before ``events_before_ms`` (Unix ms) and
        failed uploads (their row, their report) refused before ``uploads_before_s``, ``batch``
        rows per transaction so that other writers never wait long. Returns ``(events,
        uploads)`` deleted."""
        counts = []
        for statement, before in ((PRUNE_EVENTS, events_before_ms), (PRUNE_UPLOADS, uploads_before_s)):
            total = 0
            while True:
                with self._tx():
                    n = max(self.run(statement, {"before": before, "batch": batch}).rowcount, 0)
                total += n
                if n < batch:
                    break
            counts.append(total)
        return counts[0], counts[1]
