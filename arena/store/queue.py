"""The match queue: scheduled matches that workers claim under a lease, play and commit once.

A scheduled match (a row of ``matches``, with its seed, bots and pair key) is *queued* by adding
a row to ``match_queue``. A worker (:mod:`arena.schedule.worker`) **claims** the first claimable
row in schedule order (oldest tournament first, then position ``idx``): one that is ``queued``,
or ``leased`` to a worker whose lease has expired. The claim gives it a **lease**: a fresh random
token and an expiry ``lease_s`` ahead, which it **renews** while it plays. When the match is
over it **commits**: in one transaction the lease is checked (same token, not expired), the
result and its log hash are written (:meth:`arena.store.sqlite.Store.record_result`) and the row becomes ``done``. So:

* a worker that dies mid-match (SIGKILL, a lost host) stops renewing; once its lease expires
  the match is claimable again and another worker plays it **from the same seed** (the deal
  depends only on the seed: the same log, byte for byte);
* a worker whose lease was lost (expired, or taken over) cannot commit (:class:`LeaseLost`):
  a match is counted once, whoever played it;
* two workers racing for one row: the claim is atomic, one gets it.

The statements are SQLAlchemy Core (built once, below; the worker's claim, renewal and commit
through the fast path, :class:`arena.store.fast.Hot`) run by the store (``store.run``) in its
transactions, so the same statements run on SQLite (``BEGIN IMMEDIATE``: one writer at a time,
so select-then-update is atomic) and on PostgreSQL, where the claim's SELECTs are ``FOR UPDATE SKIP
LOCKED`` and the commit's lease check ``FOR UPDATE`` (SQLAlchemy leaves both out on SQLite):
concurrent claimers skip each other's rows instead of waiting. The guarded ``UPDATE`` of a claim
re-checks the row, so a claim is safe even without the lock.

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
from sqlalchemy import bindparam, delete, func, insert, select, text, update

from arena.store.fast import Hot
from arena.store.results import MatchRow
from arena.store.schema import match_events, match_queue, matches

q = match_queue.c
_KEY = bindparam("key")
ENQUEUE = ("INSERT INTO match_queue(match_key, tournament_id, idx, half, state, attempts, queued_at) "
           "SELECT m.match_key, m.tournament_id, m.idx, (SELECT COUNT(*) FROM matches t WHERE "
           "t.tournament_id=m.tournament_id AND t.pair_key=m.pair_key AND t.idx<m.idx), 'queued', 0, :now "
           "FROM matches m WHERE m.tournament_id=:tid AND m.status='pending' {} AND NOT EXISTS (SELECT 1 FROM "
           "match_queue q WHERE q.match_key=m.match_key)")
ENQUEUE_ALL = text(ENQUEUE.format(""))
ENQUEUE_ONE = text(ENQUEUE.format("AND m.match_key=:key"))
RELEASE = update(match_queue).where(q.state == "leased", q.worker == bindparam("dead")).values(
    state="queued", worker=None, lease=None, lease_until=None)
CANCEL = update(match_queue).where(q.match_key == _KEY).values(state="done", lease=None, lease_until=None)
DROP_RECORDED = update(match_queue).where(q.state != "done", q.match_key.in_(
    select(matches.c.match_key).where(matches.c.status != "pending"))).values(state="done", lease=None,
                                                                             lease_until=None)
LEASED_WORKERS = select(q.worker).distinct().where(q.state == "leased").order_by(q.worker)
COUNTS = select(q.state, func.count()).where(q.tournament_id == bindparam("tid")).group_by(q.state)
UPCOMING = select(matches.c.bot0, matches.c.bot1, q.half).join(matches, matches.c.match_key == q.match_key).where(
    q.state == "queued", q.tournament_id == bindparam("tid")).order_by(q.idx).limit(bindparam("lim"))
STATE = select(q.state, q.worker, q.lease_until, q.attempts).where(q.match_key == _KEY)
_NOW = bindparam("now")
_UNRECORDED = select(matches.c.id).where(matches.c.match_key == q.match_key, matches.c.status == "pending").exists()
_QUEUED = select(q.match_key, q.tournament_id, q.idx).where(q.state == "queued", _UNRECORDED)
_EXPIRED = select(q.match_key, q.tournament_id, q.idx).where(q.state == "leased", q.lease_until < _NOW, _UNRECORDED)
_TID = bindparam("tid")


def _first(candidates: Any) -> Hot:
    """The first row of ``candidates`` in schedule order, locked (``FOR UPDATE SKIP LOCKED``)."""
    return Hot(candidates.order_by(q.tournament_id, q.idx).limit(1).with_for_update(skip_locked=True))


# Hot: the worker's claim, renewal and commit run on the driver's cursor (arena.store.fast). The claim's
# candidates are two reads in the order of the index match_queue_claim (state, tournament, idx), the first
# queued row and the first expired lease, each stopping at its first row: one query with an OR of the two
# states had SQLite sort every queued row at each claim.
CANDIDATES = (_first(_QUEUED), _first(_EXPIRED))
CANDIDATES_OF = (_first(_QUEUED.where(q.tournament_id == _TID)), _first(_EXPIRED.where(q.tournament_id == _TID)))
CLAIM = Hot(update(match_queue).where(q.match_key == _KEY, (q.state == "queued") | (
    (q.state == "leased") & (q.lease_until < _NOW))).values(
    state="leased", worker=bindparam("worker"), lease=bindparam("token"), lease_until=bindparam("until"),
    attempts=q.attempts + 1))
CLAIMED = Hot(select(q.half, q.attempts).where(q.match_key == _KEY))
RENEW = Hot(update(match_queue).where(q.match_key == _KEY, q.state == "leased", q.lease == bindparam("token"),
                                      q.lease_until >= _NOW).values(lease_until=bindparam("until")))
LEASE = Hot(select(q.state, q.lease, q.lease_until).where(q.match_key == _KEY).with_for_update())
DONE = Hot(update(match_queue).where(q.match_key == _KEY).values(state="done", lease_until=None))
PUSH_EVENTS = insert(match_events)
EVENTS_AFTER = select(match_events.c.id, match_events.c.match_key, match_events.c.body).where(
    match_events.c.id > bindparam("last")).order_by(match_events.c.id).limit(bindparam("lim"))
LAST_EVENT = select(func.max(match_events.c.id))
PRUNE_EVENTS = delete(match_events).where(match_events.c.created_at < bindparam("before"))

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

    def __init__(self, store: Any, clock: Callable[[], float] = time.time, lease_s: float = LEASE_S) -> None:
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self.store = store
        self.clock = clock
        self.lease_ms = int(lease_s * 1000)

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
        args = {"now": self.now_ms(), "tid": tournament_id, **({} if match_key is None else {"key": match_key})}
        with self.store.transaction():
            cur = self.store.run(ENQUEUE_ALL if match_key is None else ENQUEUE_ONE, args)
        return max(cur.rowcount, 0)

    def release(self, worker: str) -> int:
        """Make the matches leased to ``worker`` claimable at once (its owner saw it die, e.g. the
        front process whose child exited); return how many."""
        with self.store.transaction():
            cur = self.store.run(RELEASE, {"dead": worker})
        return max(cur.rowcount, 0)

    def cancel(self, match_key: str) -> None:
        """Take ``match_key`` out of the queue (the front recorded it itself, e.g. aborted at its
        shutdown): no worker claims it, and a worker playing it cannot commit."""
        with self.store.transaction():
            self.store.run(CANCEL, {"key": match_key})

    def drop_recorded(self) -> int:
        """Take out of the queue every match already recorded (e.g. aborted by the front after a
        crash); return how many."""
        with self.store.transaction():
            cur = self.store.run(DROP_RECORDED)
        return max(cur.rowcount, 0)

    def leased_workers(self) -> list[str]:
        """The workers holding a lease now (expired or not)."""
        return list(self.store.run(LEASED_WORKERS).scalars())

    def counts(self, tournament_id: int) -> dict[str, int]:
        """``state -> rows`` of the tournament's queue (``queued``, ``leased``, ``done``)."""
        rows = self.store.run(COUNTS, {"tid": tournament_id})
        return {r[0]: r[1] for r in rows}

    def upcoming(self, tournament_id: int, limit: int) -> list[tuple[str, str, int]]:
        """``(bot0, bot1, half)`` of the first ``limit`` queued matches of the tournament in
        schedule order: what a worker's next claims will most likely need (it launches their
        bots ahead)."""
        rows = self.store.run(UPCOMING, {"tid": tournament_id, "lim": limit})
        return [(r[0], r[1], r[2]) for r in rows]

    def state(self, match_key: str) -> tuple[str, str | None, int | None, int] | None:
        """``(state, worker, lease expiry in ms, attempts)`` of a queued match, or None."""
        row = self.store.run(STATE, {"key": match_key}).first()
        return None if row is None else (row[0], row[1], row[2], row[3])

    # ------------------------------------------------------------------ worker side

    def _claim_candidate(self, now: int, tournament_id: int | None) -> str | None:
        """The claim's SELECTs, the statements PostgreSQL locks (``FOR UPDATE SKIP LOCKED``): the
        key of the first claimable match in schedule order (the first queued one or the first
        whose lease expired, whichever comes first), or None. A match recorded some other way (a
        tournament resumed with --workers 0) is never claimed."""
        queued, expired = CANDIDATES if tournament_id is None else CANDIDATES_OF
        args = {"now": now} if tournament_id is None else {"now": now, "tid": tournament_id}
        first = self.store.run(queued, {} if tournament_id is None else {"tid": tournament_id}).first()
        late = self.store.run(expired, args).first()
        if first is None or (late is not None and (late[1], late[2]) < (first[1], first[2])):
            first = late
        return None if first is None else first[0]

    def claim(self, worker: str, tournament_id: int | None = None) -> Claim | None:
        """Lease the first claimable match (of ``tournament_id`` if given) to ``worker``; None
        when nothing is claimable now. Atomic: two workers never hold the same match."""
        now = self.now_ms()
        token = secrets.token_hex(12)
        with self._row_locked():
            key = self._claim_candidate(now, tournament_id)
            if key is None:
                return None
            cur = self.store.run(CLAIM, {"worker": worker, "token": token, "until": now + self.lease_ms, "key": key,
                                         "now": now})
            if cur.rowcount != 1:  # taken meanwhile (only possible without the lock): nothing claimed
                return None
            half, attempts = self.store.run(CLAIMED, {"key": key}).one()
        return Claim(self.store.match_row(key), half, token, worker, now + self.lease_ms, attempts)

    def renew(self, claim: Claim) -> bool:
        """Extend ``claim``'s lease by ``lease_s`` from now; False if it is lost (expired or taken
        over): the worker must stop playing that match."""
        now = self.now_ms()
        with self._row_locked():
            cur = self.store.run(RENEW, {"until": now + self.lease_ms, "key": claim.row.match_key,
                                         "token": claim.token, "now": now})
        return cur.rowcount == 1

    def commit(self, claim: Claim, result: Any, log_path: str | None, log_hash: str | None,
               before: Callable[[], None] | None = None) -> None:
        """Record ``result`` (a ``MatchResult``) of the claimed match with its log path and hash,
        in one transaction with the lease check; ``before()`` runs inside it once the lease is
        known good (the worker moves its log into place there). Raises :class:`LeaseLost` if the
        lease expired or is another's: nothing is written."""
        now = self.now_ms()
        with self.store.transaction():
            row = self.store.run(LEASE, {"key": claim.row.match_key}).first()
            if row is None or row[0] != "leased" or row[1] != claim.token or row[2] < now:
                raise LeaseLost(f"match {claim.row.match_key}: the lease of {claim.worker} was lost")
            if before is not None:
                before()
            try:
                self.store.record_result(claim.row.match_key, result, log_path, log_hash)
            except LookupError:  # recorded meanwhile by the front (aborted at its shutdown): not ours to count
                raise LeaseLost(f"match {claim.row.match_key} was recorded by the front meanwhile") from None
            self.store.run(DONE, {"key": claim.row.match_key})

    # ------------------------------------------------------------------ live events

    def push_events(self, rows: list[tuple[str, bytes]]) -> None:
        """Store live events ``(match_key, JSON body)`` of matches played by a worker, in order."""
        if not rows:
            return
        now = self.now_ms()
        with self.store.transaction():
            self.store.run(PUSH_EVENTS, [{"match_key": k, "body": b.decode(), "created_at": now} for k, b in rows])

    def events_after(self, last_id: int, limit: int = 1000) -> list[tuple[int, str, bytes]]:
        """Live events with an id above ``last_id``, oldest first: ``(id, match_key, JSON body)``."""
        rows = self.store.run(EVENTS_AFTER, {"last": last_id, "lim": limit})
        return [(r[0], r[1], r[2].encode()) for r in rows]

    def last_event_id(self) -> int:
        """The id of the newest live event (0 if none): where a new reader starts."""
        return self.store.run(LAST_EVENT).scalar() or 0

    def prune_events(self, before_ms: int) -> int:
        """Delete live events older than ``before_ms``; return how many."""
        with self.store.transaction():
            cur = self.store.run(PRUNE_EVENTS, {"before": before_ms})
        return max(cur.rowcount, 0)
