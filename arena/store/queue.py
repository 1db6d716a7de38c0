"""The match queue: scheduled matches that workers claim under a lease, play and commit once.

A scheduled match (a row of ``matches``, with its seed, bots and pair key) is *queued* by adding
a row to ``match_queue``. A worker (:mod:`arena.schedule.worker`) **claims** the first claimable
row in schedule order (oldest tournament first, then position ``idx``): one that is ``queued``,
or ``leased`` to a worker whose lease has expired. The claim gives it a **lease**: a fresh random
token and an expiry ``lease_s`` ahead, which it **renews** while it plays. When the match is
over it **commits**: in one transaction the lease is checked (same token, not expired), the
result and its log hash are written (:meth:`arena.store.sqlite.Store.record_result`, which also
refits the ladder) and the row becomes ``done``. So:

* a worker that dies mid-match (SIGKILL, a lost host) stops renewing; once its lease expires
  the match is claimable again and another worker plays it **from the same seed** (the deal
  depends only on the seed: the same log, byte for byte);
* a worker whose lease was lost (expired, or taken over) cannot commit (:class:`LeaseLost`):
  a match is counted once, whoever played it;
* two workers racing for one row: the claim is atomic, one gets it.

All of this is plain SQL with ``?`` placeholders on the store's connection (``store.db``) and
its transactions, so the same statements run on SQLite (``BEGIN IMMEDIATE``: one writer at a
time, so select-then-update is atomic) and on PostgreSQL (a store whose ``dialect`` is
``"postgresql"``), where :attr:`MatchQueue.CLAIM_LOCK` is ``" FOR UPDATE SKIP LOCKED"`` and
:attr:`MatchQueue.ROW_LOCK` ``" FOR UPDATE"``: concurrent claimers skip each other's rows
instead of waiting. The
guarded ``UPDATE`` of a claim re-checks the row, so a claim is safe even without the lock.

Times are integers in milliseconds from the queue's ``clock`` (injectable: tests drive leases
by hand). Live events of matches played by workers go to ``match_events`` (:meth:`push_events`,
:meth:`events_after`), which the front server polls for its spectators.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

import msgspec

from arena.store.sqlite import MatchRow

LEASE_S = 30.0
"""Default lease: a worker that has not renewed for this long is presumed dead (seconds)."""


class LeaseLost(Exception):
    """The worker's lease on a match expired or was taken over: its result is not recorded
    (another worker plays, or has played, the match from the same seed)."""


class Claim(msgspec.Struct, frozen=True):
    """A claimed match: its row, which ``half`` of its duplicate pair it is (0 first by
    position, 1 second; 0 without a pair: the copy of each bot that plays it,
    :mod:`arena.schedule.copies`), the lease ``token``, the claiming ``worker``, the lease expiry
    ``until_ms`` at claim time and how many times it has been claimed (``attempt``, 1 first)."""

    row: MatchRow
    half: int
    token: str
    worker: str
    until_ms: int
    attempt: int


class MatchQueue:
    """The queue on ``store`` (an :class:`arena.store.sqlite.Store` or a store with the same
    connection interface). ``clock()`` gives seconds (default ``time.time``); ``lease_s`` is
    the lease length in seconds. Every method is one short transaction."""

    CLAIM_LOCK = ""
    """Appended to the claim's SELECT: PostgreSQL sets ``" FOR UPDATE SKIP LOCKED"``."""
    ROW_LOCK = ""
    """Appended to the commit's lease check: PostgreSQL sets ``" FOR UPDATE"``."""

    def __init__(self, store: Any, clock: Callable[[], float] = time.time, lease_s: float = LEASE_S) -> None:
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self.store = store
        self.clock = clock
        self.lease_ms = int(lease_s * 1000)
        if getattr(store, "dialect", "sqlite") == "postgresql":  # row locks; SQLite has one writer at a time
            self.CLAIM_LOCK, self.ROW_LOCK = " FOR UPDATE SKIP LOCKED", " FOR UPDATE"

    def _row_locked(self) -> Any:
        """The transaction of a claim or a renewal: on PostgreSQL without the store's writer lock
        (:meth:`arena.store.sqlite.Store.transaction`), so that claimers only ever meet on the
        rows they lock (``FOR UPDATE SKIP LOCKED``: they skip each other's) and never wait for
        another worker's commit; on SQLite the one writer, as everywhere. A commit (which refits
        the ladder) and the live events (whose ids must become visible in order) keep the writer
        lock."""
        return self.store.transaction(writer=False)

    def now_ms(self) -> int:
        """The queue clock in whole milliseconds."""
        return int(self.clock() * 1000)

    # ------------------------------------------------------------------ scheduling side

    def enqueue(self, tournament_id: int, match_key: str | None = None) -> int:
        """Queue the pending matches of ``tournament_id`` not queued yet (or only ``match_key``);
        return how many were added. Each gets its ``half``: how many matches of the same
        tournament and pair key come before it by position. Idempotent."""
        where = "m.tournament_id=? AND m.status='pending'"
        args: list[Any] = [self.now_ms(), tournament_id]
        if match_key is not None:
            where += " AND m.match_key=?"
            args.append(match_key)
        with self.store.transaction():
            cur = self.store.db.execute(
                "INSERT INTO match_queue(match_key, tournament_id, idx, half, state, attempts, queued_at) "
                "SELECT m.match_key, m.tournament_id, m.idx, "
                "(SELECT COUNT(*) FROM matches t WHERE t.tournament_id=m.tournament_id AND t.pair_key=m.pair_key "
                "AND t.idx<m.idx), 'queued', 0, ? FROM matches m "
                f"WHERE {where} AND NOT EXISTS (SELECT 1 FROM match_queue q WHERE q.match_key=m.match_key)",
                args,
            )
        return max(cur.rowcount, 0)

    def release(self, worker: str) -> int:
        """Make the matches leased to ``worker`` claimable at once (its owner saw it die, e.g. the
        front process whose child exited); return how many."""
        with self.store.transaction():
            cur = self.store.db.execute(
                "UPDATE match_queue SET state='queued', worker=NULL, lease=NULL, lease_until=NULL "
                "WHERE state='leased' AND worker=?", (worker,))
        return max(cur.rowcount, 0)

    def cancel(self, match_key: str) -> None:
        """Take ``match_key`` out of the queue (the front recorded it itself, e.g. aborted at its
        shutdown): no worker claims it, and a worker playing it cannot commit."""
        with self.store.transaction():
            self.store.db.execute("UPDATE match_queue SET state='done', lease=NULL, lease_until=NULL "
                                  "WHERE match_key=?", (match_key,))

    def drop_recorded(self) -> int:
        """Take out of the queue every match already recorded (e.g. aborted by the front after a
        crash); return how many."""
        with self.store.transaction():
            cur = self.store.db.execute(
                "UPDATE match_queue SET state='done', lease=NULL, lease_until=NULL WHERE state<>'done' AND "
                "match_key IN (SELECT match_key FROM matches WHERE status<>'pending')")
        return max(cur.rowcount, 0)

    def leased_workers(self) -> list[str]:
        """The workers holding a lease now (expired or not)."""
        return [r[0] for r in self.store.db.execute(
            "SELECT DISTINCT worker FROM match_queue WHERE state='leased' ORDER BY worker")]

    def counts(self, tournament_id: int) -> dict[str, int]:
        """``state -> rows`` of the tournament's queue (``queued``, ``leased``, ``done``)."""
        rows = self.store.db.execute(
            "SELECT state, COUNT(*) FROM match_queue WHERE tournament_id=? GROUP BY state", (tournament_id,))
        return {r[0]: r[1] for r in rows}

    def upcoming(self, tournament_id: int, limit: int) -> list[tuple[str, str, int]]:
        """``(bot0, bot1, half)`` of the first ``limit`` queued matches of the tournament in
        schedule order: what a worker's next claims will most likely need (it launches their
        bots ahead)."""
        rows = self.store.db.execute(
            "SELECT m.bot0, m.bot1, q.half FROM match_queue q JOIN matches m ON m.match_key=q.match_key "
            "WHERE q.state='queued' AND q.tournament_id=? ORDER BY q.idx LIMIT ?", (tournament_id, limit))
        return [(r[0], r[1], r[2]) for r in rows]

    def state(self, match_key: str) -> tuple[str, str | None, int | None, int] | None:
        """``(state, worker, lease expiry in ms, attempts)`` of a queued match, or None."""
        row = self.store.db.execute(
            "SELECT state, worker, lease_until, attempts FROM match_queue WHERE match_key=?", (match_key,)).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3])

    # ------------------------------------------------------------------ worker side

    def _claim_candidate(self, now: int, tournament_id: int | None) -> str | None:
        """The claim's SELECT, the one statement PostgreSQL locks (:attr:`CLAIM_LOCK`): the key of
        the first claimable match in schedule order, or None."""
        # a match recorded some other way (a tournament resumed with --workers 0) is never claimed
        where = ("(q.state='queued' OR (q.state='leased' AND q.lease_until<?)) AND EXISTS (SELECT 1 FROM matches m "
                 "WHERE m.match_key=q.match_key AND m.status='pending')")
        args: list[Any] = [now]
        if tournament_id is not None:
            where += " AND q.tournament_id=?"
            args.append(tournament_id)
        row = self.store.db.execute(
            f"SELECT q.match_key FROM match_queue q WHERE {where} ORDER BY q.tournament_id, q.idx "
            f"LIMIT 1{self.CLAIM_LOCK}",
            args,
        ).fetchone()
        return None if row is None else row[0]

    def claim(self, worker: str, tournament_id: int | None = None) -> Claim | None:
        """Lease the first claimable match (of ``tournament_id`` if given) to ``worker``; None
        when nothing is claimable now. Atomic: two workers never hold the same match."""
        now = self.now_ms()
        token = secrets.token_hex(12)
        with self._row_locked():
            key = self._claim_candidate(now, tournament_id)
            if key is None:
                return None
            cur = self.store.db.execute(
                "UPDATE match_queue SET state='leased', worker=?, lease=?, lease_until=?, attempts=attempts+1 "
                "WHERE match_key=? AND (state='queued' OR (state='leased' AND lease_until<?))",
                (worker, token, now + self.lease_ms, key, now),
            )
            if cur.rowcount != 1:  # taken meanwhile (only possible without the lock): nothing claimed
                return None
            half, attempts = self.store.db.execute(
                "SELECT half, attempts FROM match_queue WHERE match_key=?", (key,)).fetchone()
        return Claim(self.store.match_row(key), half, token, worker, now + self.lease_ms, attempts)

    def renew(self, claim: Claim) -> bool:
        """Extend ``claim``'s lease by ``lease_s`` from now; False if it is lost (expired or taken
        over): the worker must stop playing that match."""
        now = self.now_ms()
        with self._row_locked():
            cur = self.store.db.execute(
                "UPDATE match_queue SET lease_until=? WHERE match_key=? AND state='leased' AND lease=? "
                "AND lease_until>=?", (now + self.lease_ms, claim.row.match_key, claim.token, now))
        return cur.rowcount == 1

    def commit(self, claim: Claim, result: Any, log_path: str | None, log_hash: str | None,
               before: Callable[[], None] | None = None) -> None:
        """Record ``result`` (a ``MatchResult``) of the claimed match with its log path and hash,
        in one transaction with the lease check; ``before()`` runs inside it once the lease is
        known good (the worker moves its log into place there). Raises :class:`LeaseLost` if the
        lease expired or is another's: nothing is written."""
        now = self.now_ms()
        with self.store.transaction():
            row = self.store.db.execute(
                f"SELECT state, lease, lease_until FROM match_queue WHERE match_key=?{self.ROW_LOCK}",
                (claim.row.match_key,)).fetchone()
            if row is None or row[0] != "leased" or row[1] != claim.token or row[2] < now:
                raise LeaseLost(f"match {claim.row.match_key}: the lease of {claim.worker} was lost")
            if before is not None:
                before()
            try:
                self.store.record_result(claim.row.match_key, result, log_path, log_hash)
            except LookupError:  # recorded meanwhile by the front (aborted at its shutdown): not ours to count
                raise LeaseLost(f"match {claim.row.match_key} was recorded by the front meanwhile") from None
            self.store.db.execute(
                "UPDATE match_queue SET state='done', lease_until=NULL WHERE match_key=?", (claim.row.match_key,))

    # ------------------------------------------------------------------ live events

    def push_events(self, rows: list[tuple[str, bytes]]) -> None:
        """Store live events ``(match_key, JSON body)`` of matches played by a worker, in order."""
        if not rows:
            return
        now = self.now_ms()
        with self.store.transaction():
            self.store.db.executemany("INSERT INTO match_events(match_key, body, created_at) VALUES (?,?,?)",
                                      [(k, b.decode(), now) for k, b in rows])

    def events_after(self, last_id: int, limit: int = 1000) -> list[tuple[int, str, bytes]]:
        """Live events with an id above ``last_id``, oldest first: ``(id, match_key, JSON body)``."""
        rows = self.store.db.execute(
            "SELECT id, match_key, body FROM match_events WHERE id>? ORDER BY id LIMIT ?", (last_id, limit))
        return [(r[0], r[1], r[2].encode()) for r in rows]

    def last_event_id(self) -> int:
        """The id of the newest live event (0 if none): where a new reader starts."""
        row = self.store.db.execute("SELECT MAX(id) FROM match_events").fetchone()
        return row[0] or 0

    def prune_events(self, before_ms: int) -> int:
        """Delete live events older than ``before_ms``; return how many."""
        with self.store.transaction():
            cur = self.store.db.execute("DELETE FROM match_events WHERE created_at<?", (before_ms,))
        return max(cur.rowcount, 0)
