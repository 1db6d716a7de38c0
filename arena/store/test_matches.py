"""Test matches on demand (issue 22 item 6): the SQL of table ``test_matches`` (schema 10).

A test match is an unrated game an author asked for between their bot and a ladder bot
(:mod:`arena.schedule.on_demand` plays them, :mod:`arena.net.author_pages` takes the requests and
shows them). It never enters ``matches``: so no ladder unit, no pair count, no rating, no
leaderboard row, no public history and no spectator ever sees it. One row per game:

* ``author_id``, ``bot`` (the author's bot), ``opponent`` (the ladder bot), ``game``, ``seat``
  (the author's bot's seat, 0 or 1), ``seed`` (the deal's seed: the match can be replayed);
* ``status``: ``queued`` -> ``playing`` -> ``done`` (or ``aborted``: not played, or stopped, with a
  ``detail`` saying why); ``winner_seat``, ``score0``, ``score1``, ``reason``, ``detail`` as a
  ladder match's;
* ``view``: the author's seat's view of the match with their bot's output beside each of its
  decisions, gzip-compressed JSON (:func:`arena.schedule.on_demand.seat_view`); never the other
  seat's hidden cards or output;
* ``created_at``, ``started_at``, ``finished_at``: Unix seconds.

Every statement is answered through an index (``test_matches_by_author`` on ``(author_id, id)``,
``test_matches_by_status`` on ``(status, id)``) in time bounded by what it returns or by the
daily quota, never by the history: the quota reads at most ``per_day + 1`` of the author's
newest rows (:func:`asked_since`).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import msgspec
from sqlalchemy import text

COLUMNS = ("id, author_id, bot, opponent, game, seat, seed, status, winner_seat, score0, score1, reason, detail, "
           "created_at, started_at, finished_at")
"""Every column but ``view`` (read only by :func:`view_of`)."""

STATUSES = ("queued", "playing", "done", "aborted")

ASKED_SINCE = text("SELECT COUNT(*) FROM (SELECT created_at FROM test_matches WHERE author_id=:author "
                   "ORDER BY id DESC LIMIT :at_most) AS newest WHERE created_at>=:since")
ADD = text("INSERT INTO test_matches(author_id, bot, opponent, game, seat, seed, status, created_at) "
           "VALUES (:author, :bot, :opponent, :game, :seat, :seed, 'queued', :now) RETURNING id")
QUEUED = text(f"SELECT {COLUMNS} FROM test_matches WHERE status='queued' ORDER BY id LIMIT :limit")
START = text("UPDATE test_matches SET status='playing', started_at=:now WHERE id=:id AND status='queued'")
FINISH = text("UPDATE test_matches SET status=:status, winner_seat=:winner_seat, score0=:score0, score1=:score1, "
              "reason=:reason, detail=:detail, view=:view, finished_at=:now WHERE id=:id")
REQUEUE_PLAYING = text("UPDATE test_matches SET status='queued', started_at=NULL WHERE status='playing'")
REQUEUE = text("UPDATE test_matches SET status='queued', started_at=NULL WHERE id=:id AND status='playing'")
EXPIRE = text("UPDATE test_matches SET status='aborted', reason='expired', detail=:detail, finished_at=:now "
              "WHERE status='queued' AND created_at<:before")
DROP_BOT = text("UPDATE test_matches SET status='aborted', reason='withdrawn', detail=:detail, finished_at=:now "
                "WHERE status='queued' AND (bot=:bot OR opponent=:bot)")
OF_AUTHOR = text(f"SELECT {COLUMNS} FROM test_matches WHERE author_id=:author ORDER BY id DESC LIMIT :limit")
OF_AUTHOR_BEFORE = text(f"SELECT {COLUMNS} FROM test_matches WHERE author_id=:author AND id<:before "
                        "ORDER BY id DESC LIMIT :limit")
GET = text(f"SELECT {COLUMNS} FROM test_matches WHERE id=:id")
VIEW = text("SELECT view FROM test_matches WHERE id=:id")
COUNT = text("SELECT COUNT(*) FROM test_matches WHERE status=:status")
OLDEST = text("SELECT id, finished_at FROM test_matches WHERE status=:status ORDER BY id LIMIT :limit")
DELETE = text("DELETE FROM test_matches WHERE id=:id")


def _rows(result: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in result.mappings()]


def asked_since(store: Any, author_id: int, since: float, at_most: int) -> int:
    """Games the author asked for at or after ``since`` (Unix seconds), counting at most
    ``at_most`` (the newest rows only are read: ids grow with time, so past ``at_most`` the
    answer is "at least ``at_most``")."""
    return int(store.run(ASKED_SINCE, {"author": author_id, "at_most": at_most, "since": since}).scalar())


def add(store: Any, author_id: int, bot: str, opponent: str, game: str, games: list[tuple[int, int]],
        now: float, per_day: int, day_start: float) -> list[int] | int:
    """Queue one row per ``(seat, seed)`` of ``games`` for the author, in one transaction,
    unless that would take the author over ``per_day`` games asked since ``day_start``: then
    nothing is written and the count already asked is returned. Returns the new ids, oldest first."""
    with store.transaction():
        used = asked_since(store, author_id, day_start, per_day + 1)
        if used + len(games) > per_day:
            return used
        return [int(store.run(ADD, {"author": author_id, "bot": bot, "opponent": opponent, "game": game,
                                    "seat": seat, "seed": seed, "now": now}).scalar())
                for seat, seed in games]


def queued(store: Any, limit: int) -> list[dict[str, Any]]:
    """The oldest ``limit`` queued games (the scheduler's look at the queue)."""
    return _rows(store.run(QUEUED, {"limit": limit}))


def start(store: Any, test_id: int, now: float) -> bool:
    """Mark a queued game as playing; False if it is no longer queued."""
    with store.transaction():
        return store.run(START, {"now": now, "id": test_id}).rowcount == 1


def finish(store: Any, test_id: int, *, status: str, winner_seat: int | None, scores: list[int], reason: str,
           detail: str, view: dict[str, Any] | None, now: float) -> None:
    """Record a game's end: ``status`` ``done`` or ``aborted``, its result, and the author's
    seat's ``view`` (stored gzip-compressed)."""
    assert status in ("done", "aborted")
    blob = gzip.compress(msgspec.json.encode(view), mtime=0) if view is not None else None
    with store.transaction():
        store.run(FINISH, {"status": status, "winner_seat": winner_seat, "score0": scores[0], "score1": scores[1],
                           "reason": reason, "detail": detail, "view": blob, "now": now, "id": test_id})


def requeue_playing(store: Any) -> int:
    """Games a stopped server left ``playing`` are queued again (a new start plays them from their
    seed); returns how many."""
    with store.transaction():
        return int(store.run(REQUEUE_PLAYING).rowcount)


def requeue(store: Any, test_id: int) -> None:
    """A game stopped by a shutdown is queued again (played from its seed later)."""
    with store.transaction():
        store.run(REQUEUE, {"id": test_id})


def expire(store: Any, before: float, now: float, detail: str) -> int:
    """Games still queued that were asked before ``before`` are ``aborted`` with ``detail``
    (their bots were never both free); returns how many."""
    with store.transaction():
        return int(store.run(EXPIRE, {"detail": detail, "now": now, "before": before}).rowcount)


def drop_bot(store: Any, bot: str, now: float, detail: str) -> int:
    """Queued games of or against ``bot`` (withdrawn) are ``aborted`` with ``detail``."""
    with store.transaction():
        return int(store.run(DROP_BOT, {"detail": detail, "now": now, "bot": bot}).rowcount)


def of_author(store: Any, author_id: int, before: int | None = None, limit: int = 10) -> list[dict[str, Any]]:
    """The author's games, newest first: ``limit`` of them older than id ``before`` (or the newest)."""
    if before is None:
        return _rows(store.run(OF_AUTHOR, {"author": author_id, "limit": limit}))
    return _rows(store.run(OF_AUTHOR_BEFORE, {"author": author_id, "before": before, "limit": limit}))


def get(store: Any, test_id: int) -> dict[str, Any] | None:
    """One game (without its view), or None."""
    rows = _rows(store.run(GET, {"id": test_id}))
    return rows[0] if rows else None


def view_of(store: Any, test_id: int) -> dict[str, Any] | None:
    """The stored view of a finished game (:func:`finish`), or None."""
    blob = store.run(VIEW, {"id": test_id}).scalar()
    if blob is None:
        return None
    return msgspec.json.decode(gzip.decompress(bytes(blob)))


def counts(store: Any) -> dict[str, int]:
    """How many games are in each status (for tests and ``/metrics``-like checks; reads the
    status index)."""
    return {s: int(store.run(COUNT, {"status": s}).scalar()) for s in STATUSES}


def prune(store: Any, before: float, logs: Any = None, batch: int = 500) -> int:
    """Delete finished games (``done`` or ``aborted``) that finished before ``before`` (Unix
    seconds), with their organiser's log ``<logs>/tests/x<id>.jsonl.gz`` when ``logs`` is given
    (``[retention] test_matches_days``). Reads the oldest ``batch`` rows of each status per
    transaction through ``test_matches_by_status`` and stops at the first one finished too
    recently, so its cost is bounded by what it deletes, never by the history. Returns how many
    rows were deleted."""
    total = 0
    for status in ("done", "aborted"):
        while True:
            with store.transaction():
                old = []
                for test_id, finished_at in store.run(OLDEST, {"status": status, "limit": batch}).all():
                    if finished_at is None or finished_at >= before:
                        break
                    old.append(int(test_id))
                if old:
                    store.run(DELETE, [{"id": test_id} for test_id in old])
            if logs is not None:
                for test_id in old:
                    Path(logs, "tests", f"x{test_id}.jsonl.gz").unlink(missing_ok=True)
            total += len(old)
            if len(old) < batch:
                break
    return total
