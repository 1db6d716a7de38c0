"""Finished matches for the web page: a list paged by key, and the replay of one match.

:func:`finished_matches` pages through the finished (played, forfeited or aborted) matches of a
game, newest first (by match id), optionally those of one bot: a page holds the matches older than
a ``before`` cursor, or the page newer than an ``after`` one, and gives the cursors of its
neighbours (:func:`arena.store.pages.history_page`: keyset pagination, no ``OFFSET``, an index
for each statement).

:func:`replay_feed` turns a match log into the messages a spectator would have received live
(``watch``, ``spectate``, ``reveal``, ``watch_end``; protocol.md), by playing the log's events
through a fresh :class:`arena.net.spectate.SpectatorHub`: public events as they happened, each deal's
hidden cards (hands, exchanges, the pack) only in a ``reveal`` once that deal is over. The page
shows a past match exactly as it shows a live one. A match of a duplicate pair (ecarte.md §E8.2)
is replayed only once its twin is over too: the twin deals the same cards with the seats
swapped, so its hidden cards would otherwise help the bots still playing it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from arena.match.log import LogSeen
from arena.match.referee import MatchConfig
from arena.net.spectate import SpectatorHub, Subscriber
from arena.store import pages
from arena.store.log_archive import is_bundle_ref
from arena.store.sqlite import Store


class NotReplayable(Exception):
    """A match that cannot be replayed (yet); ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def finished_matches(store: Store, game: str, bot: str | None = None, *, before: int | None = None,
                     after: int | None = None, per_page: int = pages.HISTORY_PAGE) -> dict[str, Any]:
    """A page of the finished matches of ``game``, newest first, only those of ``bot`` if given:
    those older than match id ``before``, or the page just newer than ``after``, or the newest.
    Returns ``{"matches": [...], "next" (the ``before`` of the older page, or None), "prev" (the
    ``after`` of the newer page, or None), "results" (results so far, of the game or of the bot;
    aborted matches are listed, not counted), "bot"}``; each match is ``{"id", "match_id",
    "tournament", "bots", "winner" (a name or None), "reason", "scores", "deals", "finished_at"
    (Unix seconds or None), "replay" (bool: a log exists)}``. Raises
    :class:`arena.store.pages.BadCursor` for ``per_page`` over :data:`arena.store.pages.MAX_PAGE`."""
    page = pages.history_page(store, game, bot=bot, before=before, after=after, limit=per_page)
    matches = [{"id": r["id"], "match_id": r["match_key"], "tournament": r["tournament_id"],
                "bots": [r["bot0"], r["bot1"]], "winner": r["winner"], "reason": r["reason"],
                "scores": [r["score0"] or 0, r["score1"] or 0], "deals": r["deals"] or 0,
                "finished_at": r["finished_at"],
                "replay": bool(r["log_path"]) and (r["stored_log"] or is_bundle_ref(r["log_path"])
                                                   or Path(r["log_path"]).exists())}
               for r in page["rows"]]
    return {"matches": matches, "next": page["next"], "prev": page["prev"], "results": page["results"], "bot": bot}


def replay_feed(store: Store, match_id: str) -> list[bytes]:
    """The spectator messages (encoded JSON, one per item) of finished match ``match_id``,
    regenerated from its log; see the module docstring. Raises :class:`NotReplayable` (404: no
    such match or no log; 409: still in play, or its duplicate twin is)."""
    row = pages.replay_row(store, match_id)
    if row is None:
        raise NotReplayable(f"no match {match_id}", 404)
    if row["status"] == "pending":
        raise NotReplayable(f"{match_id} is not over: watch it live", 409)
    if row["pair_key"] is not None and pages.twin_pending(store, row["tournament_id"], row["pair_key"]):
        raise NotReplayable(f"the twin of {match_id} in its duplicate pair is still being played: "
                            "the replay opens when it is over", 409)
    raw = store.match_log_bytes(match_id, row["log_path"]) if row["log_path"] else None
    if raw is None:  # the file on this host, else the copy a worker committed
        raise NotReplayable(f"no log for {match_id}", 404)
    return feed_from_log(raw)


def feed_from_log(raw: bytes) -> list[bytes]:
    """The spectator messages of a match log's bytes (uncompressed), as a hub would have sent
    them live (without a duplicate pair's hold: the caller checks the twin is over)."""
    lines = raw.splitlines()
    header = msgspec.json.decode(lines[0])
    config = msgspec.convert(header.get("config", {}), MatchConfig)
    mid = header["match_id"]
    hub = SpectatorHub()
    sub = Subscriber("replay", capacity=1 << 20)
    sub.matches.add("*")
    hub.subscribers.add(sub)  # not hub.add(): a replay is not a spectator in the metrics
    hub.match_started(mid, header.get("game", config.game), list(header["bots"]), config.rules, config.time)
    winner, reason, scores = None, "aborted", [0, 0]
    for line in lines[1:]:
        if line.startswith(b'{"type":"event"'):
            ev = msgspec.json.decode(line, type=LogSeen)
            hub.event(mid, ev.event, tuple(ev.seen_by))
        elif line.startswith(b'{"type":"result"'):
            result = msgspec.json.decode(line)
            winner, reason, scores = result["winner"], result["reason"], result["scores"]
    hub.match_ended(mid, winner, reason, scores)
    out = []
    while True:
        try:
            out.append(sub.receive_channel.receive_nowait())
        except Exception:  # noqa: BLE001 - trio.WouldBlock: all read
            return out
