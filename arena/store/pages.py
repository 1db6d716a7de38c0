"""The read side of the web pages, the ``/api`` endpoints and ``arena bots list``: every SQL
statement they run, each one answered through an index, in time proportional to what it returns.

A season has 10,000 bots and 10 million matches (design.md, "A season"). No listing here counts
or skips the history: every list pages **by key**, never with ``OFFSET``:

* match lists (a game's history, one bot's, an author's bot's failures) go newest first by the
  match's ``id``: ``before=ID`` gives the matches older than ``ID`` (``WHERE id < ? ORDER BY id
  DESC LIMIT ?``), ``after=ID`` the page newer than ``ID`` (read upwards, then reversed);
* the leaderboard goes by rating, best first, keyed on ``(elo, bot)``: ``after=BOT`` gives the
  bots ranked below ``BOT``, ``before=BOT`` those above; a search (``q``) is a case-insensitive
  prefix of the name, listed by name (keyed on ``(lower(bot), bot)``), each row with its rank;
* counts come from the counters each result keeps (``ladder_state.results``, ``pair_counts``,
  the ``ladder`` row's ``games``, ``wins``, ``losses`` and ``draws`` for a bot's games and
  points), never from ``COUNT(*)`` over ``matches``: a
  page of the leaderboard costs the same after a bot's 10th match as after its 10,000th.

The indexes these statements need are part of the schema (:mod:`arena.store.schema`);
:data:`PLAN_CASES` lists every statement with example parameters, and
tests/test_query_plans.py reads each one's query plan on SQLite and PostgreSQL and fails on a full
scan of ``matches``.

**How old the ratings are.** The ladder is fitted in the background (issue 21): the table
``ladder_state`` says when the last fit ran and how many results it had seen; :func:`ratings_age`
turns that into "fitted N s ago, M results since". A rating is *provisional* while its 95%
interval is unknown or wider than :data:`arena.stats.rating.PROVISIONAL_CI95` (:func:`is_provisional`).

Names are user data: this module returns them as stored; every page escapes them.
"""

from __future__ import annotations

import math
import time
from typing import Any

from sqlalchemy import Text, bindparam, text

from arena.stats.rating import PROVISIONAL_CI95

LEADERBOARD_PAGE = 50
"""Bots on a page of the leaderboard."""
HISTORY_PAGE = 20
"""Matches on a page of a history."""
MAX_PAGE = 100
"""Most rows a caller may ask for in one page (``limit``)."""
NO_ID = 2**62
"""The ``before`` of a first page: above every match id."""

MATCH_COLUMNS = "id, match_key, tournament_id, bot0, bot1, winner, reason, score0, score1, deals, finished_at, log_path"
"""What a match list shows of each match."""


_OLDER = "id<:edge ORDER BY id DESC LIMIT :n"
_NEWER = "id>:edge ORDER BY id LIMIT :n"


def _bot_history(side: str) -> str:
    return (f"SELECT {MATCH_COLUMNS} FROM (SELECT {MATCH_COLUMNS} FROM matches WHERE game=:game AND bot0=:bot "
            f"AND status<>'pending' AND {side}) AS s0 UNION ALL "
            f"SELECT {MATCH_COLUMNS} FROM (SELECT {MATCH_COLUMNS} FROM matches WHERE game=:game AND bot1=:bot "
            f"AND status<>'pending' AND {side}) AS s1 ORDER BY id {'DESC ' if 'DESC' in side else ''}LIMIT :n")


LADDER_RANK = "SELECT COUNT(*) AS n FROM ladder WHERE game=:game AND elo>=:elo AND (elo>:elo OR bot<:bot)"
"""A bot's rank minus one: the rows above it (elo DESC, bot), counted in ``ladder_by_elo``."""

RANK_STEP = ("SELECT COUNT(*) AS n FROM ladder WHERE game=:game AND elo<=:ae{i} AND elo>=:e{i} AND "
             "(elo<:ae{i} OR bot>:ab{i}) AND (elo>:e{i} OR bot<=:b{i})")
"""The ranks of a page of search results, by rank: the rows above the first (:data:`LADDER_RANK`), then
from one to the next (step ``i``: from the row above, ``ae``/``ab``, to this one, ``e``/``b``), counted
in ``ladder_by_elo``; :func:`leaderboard_page` joins the steps in one statement (``UNION ALL``): together
one walk down the index to the lowest of them (no window, no sort)."""

_LADDER = "SELECT bot, elo, ci95, games, wins, losses, draws FROM ladder WHERE game=:game"
"""What a page shows of a ladder row (:func:`_rating_row`)."""

SQL: dict[str, Any] = {name: text(sql) for name, sql in {
    # how old the ratings are (one row per game; arena.store.results)
    "ratings_state": "SELECT results, fitted_results, fitted_at, fit_ms FROM ladder_state WHERE game=:game",
    # the leaderboard by rank: ladder_by_elo (game, elo DESC, bot)
    "ladder_top": _LADDER + " ORDER BY elo DESC, bot LIMIT :n",
    "ladder_below": _LADDER + " AND elo<=:elo AND "
                    "(elo<:elo OR bot>:bot) "
                    "ORDER BY elo DESC, bot LIMIT :n",
    "ladder_above": _LADDER + " AND elo>=:elo AND "
                    "(elo>:elo OR bot<:bot) "
                    "ORDER BY elo, bot DESC LIMIT :n",
    "ladder_rank": LADDER_RANK,
    "ladder_size": "SELECT COUNT(*) FROM ladder WHERE game=:game",
    # one bot's rating: the primary key (game, bot)
    "ladder_row": _LADDER + " AND bot=:bot",
    # a prefix of the name, any case: ladder_by_name (game, lower(bot), bot)
    "ladder_search": _LADDER + " AND lower(bot)>=:lo AND lower(bot)<:hi "
                     "AND (lower(bot)>:key OR bot>:bot) ORDER BY lower(bot), bot LIMIT :n",
    "ladder_search_back": _LADDER + " AND lower(bot)>=:lo AND "
                          "lower(bot)<=:key AND (lower(bot)<:key OR bot<:bot) ORDER BY lower(bot) DESC, bot DESC "
                          "LIMIT :n",
    # a game's finished matches: matches_done (game, id) WHERE status<>'pending'
    "history_older": f"SELECT {MATCH_COLUMNS} FROM matches WHERE game=:game AND status<>'pending' AND {_OLDER}",
    "history_newer": f"SELECT {MATCH_COLUMNS} FROM matches WHERE game=:game AND status<>'pending' AND {_NEWER}",
    # one bot's: its matches in either seat, each side by matches_bot0/1_done (game, botN, id)
    # WHERE status<>'pending', merged
    "bot_history_older": _bot_history(_OLDER),
    "bot_history_newer": _bot_history(_NEWER),
    # results (not aborted) so far: the counters each result keeps
    "bot_results": "SELECT COALESCE(SUM(n), 0) FROM pair_counts WHERE game=:game AND a=:bot",
    # which of a page's matches have their log stored in the database: the primary key
    "stored_logs": "SELECT match_key FROM match_logs WHERE match_key IN :keys",
    # the matches a bot lost by its own fault: matches_faults0/1 (botN, id) WHERE faulty_seat=N
    "faults_older": "SELECT id, match_key, reason, detail, finished_at FROM (SELECT id, match_key, reason, detail, "
                    "finished_at FROM matches WHERE bot0=:bot AND faulty_seat=0 AND status='done' AND " + _OLDER
                    + ") AS f0 UNION ALL SELECT id, match_key, reason, detail, finished_at "
                    "FROM (SELECT id, match_key, reason, detail, finished_at FROM matches WHERE bot1=:bot AND "
                    "faulty_seat=1 AND status='done' AND " + _OLDER + ") AS f1 ORDER BY id DESC LIMIT :n",
    # a replay: the match by its key (unique), its duplicate twin by matches_by_pair
    "replay_match": "SELECT status, pair_key, log_path, tournament_id FROM matches WHERE match_key=:key",
    "twin_pending": "SELECT COUNT(*) FROM matches WHERE tournament_id=:tid AND pair_key=:pair AND status='pending'",
    # `arena bots list`: every registered bot once, its rating by the ladder's primary key
    "bots_list": "SELECT b.name, s.name IS NOT NULL, l.elo, l.ci95, COALESCE(l.games, 0) FROM bots b "
                 "LEFT JOIN submissions s ON s.name=b.name LEFT JOIN ladder l ON l.game=:game AND l.bot=b.name "
                 "ORDER BY b.name",
    "bot_status": "SELECT name, state, failures, next_launch, last_output, connected, updated_at FROM bot_status",
}.items()}
"""Every statement of this module by name: ``text()`` with named binds (standard SQL, the same on
both backends), built once; ``:bots`` and ``:keys`` are expanding ``IN`` lists."""
SQL["stored_logs"] = SQL["stored_logs"].bindparams(bindparam("keys", expanding=True, type_=Text()))

PLAN_CASES: list[tuple[str, Any, dict[str, Any]]] = [
    ("ratings_state", SQL["ratings_state"], {"game": "ecarte"}),
    ("ladder_top", SQL["ladder_top"], {"game": "ecarte", "n": 50}),
    ("ladder_below", SQL["ladder_below"], {"game": "ecarte", "elo": 1500.0, "bot": "bot00042", "n": 50}),
    ("ladder_above", SQL["ladder_above"], {"game": "ecarte", "elo": 1500.0, "bot": "bot00042", "n": 50}),
    ("ladder_rank", SQL["ladder_rank"], {"game": "ecarte", "elo": 1500.0, "bot": "bot00042"}),
    ("ladder_rank_step", text(RANK_STEP.format(i=1)), {"game": "ecarte", "ae1": 1500.0, "e1": 1400.0,
                                                              "ab1": "bot00001", "b1": "bot00002"}),
    ("ladder_size", SQL["ladder_size"], {"game": "ecarte"}),
    ("ladder_row", SQL["ladder_row"], {"game": "ecarte", "bot": "bot00042"}),
    ("ladder_search", SQL["ladder_search"], {"game": "ecarte", "lo": "bot0004", "hi": "bot0005", "key": "",
                                             "bot": "", "n": 50}),
    ("ladder_search_back", SQL["ladder_search_back"], {"game": "ecarte", "lo": "bot0004", "key": "bot00045",
                                                       "bot": "bot00045", "n": 50}),
    ("history_older", SQL["history_older"], {"game": "ecarte", "edge": NO_ID, "n": 21}),
    ("history_older_deep", SQL["history_older"], {"game": "ecarte", "edge": 1000, "n": 21}),
    ("history_newer", SQL["history_newer"], {"game": "ecarte", "edge": 1000, "n": 21}),
    ("bot_history_older", SQL["bot_history_older"], {"game": "ecarte", "bot": "bot00042", "edge": NO_ID, "n": 21}),
    ("bot_history_newer", SQL["bot_history_newer"], {"game": "ecarte", "bot": "bot00042", "edge": 1000, "n": 21}),
    ("bot_results", SQL["bot_results"], {"game": "ecarte", "bot": "bot00042"}),
    ("stored_logs", SQL["stored_logs"], {"keys": ["t1-m1", "t1-m2", "t1-m3"]}),
    ("faults_older", SQL["faults_older"], {"bot": "bot00042", "edge": NO_ID, "n": 11}),
    ("replay_match", SQL["replay_match"], {"key": "t1-m1"}),
    ("twin_pending", SQL["twin_pending"], {"tid": 1, "pair": "p1"}),
    ("bots_list", SQL["bots_list"], {"game": "ecarte"}),
    ("bot_status", SQL["bot_status"], {}),
]
"""``(name, statement, example parameters)`` of every statement above, for the query-plan test
(tests/test_query_plans.py reads this list: add the scheduler's statements beside these)."""


class BadCursor(ValueError):
    """A ``before``/``after``/``limit`` value that is not one a page gave (one line, to show)."""


# ------------------------------------------------------------------------------ ratings


def is_provisional(ci95: float | None) -> bool:
    """True for a rating still provisional: its 95% half-width (Elo points) unknown (None, NaN,
    infinite) or wider than :data:`~arena.stats.rating.PROVISIONAL_CI95`."""
    return ci95 is None or not math.isfinite(ci95) or ci95 > PROVISIONAL_CI95


def ratings_age(store: Any, game: str, now: float | None = None) -> dict[str, Any]:
    """How old the ratings of ``game`` are: ``{"results" (recorded so far), "fitted_results"
    (seen by the last fit), "lag_results" (recorded since), "fitted_at" (Unix seconds, None
    before the first fit), "age_s" (seconds since, None before the first fit), "fit_ms" (how
    long that fit took), "provisional_ci95" (the width, Elo points, above which a rating is
    provisional)}``. One primary-key read."""
    row = store.run(SQL["ratings_state"], {"game": game}).first()
    results, fitted, at, fit_ms = (row[0], row[1], row[2], row[3]) if row else (0, 0, None, None)
    now = time.time() if now is None else now
    return {"results": results, "fitted_results": fitted, "lag_results": max(0, results - fitted),
            "fitted_at": at, "age_s": None if at is None else round(max(0.0, now - at), 1), "fit_ms": fit_ms,
            "provisional_ci95": PROVISIONAL_CI95}


def describe_age(age: dict[str, Any]) -> str:
    """One line for a page or the terminal: ``ratings fitted 12 s ago, 3 results since`` (or
    ``not fitted yet``), from :func:`ratings_age`."""
    lag = age["lag_results"]
    since = f"{lag:,} result{'' if lag == 1 else 's'} since"
    if age["fitted_at"] is None:
        return f"ratings not fitted yet ({since.replace(' since', ' so far')})"
    s = age["age_s"]
    ago = f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"
    return f"ratings fitted {ago} ago, {since}"


def _rating_row(r: Any) -> dict[str, Any]:
    """A ladder row ``(bot, elo, ci95, games, wins, losses, draws)`` as a page shows it."""
    ci95 = r[2]
    return {"bot": r[0], "elo": r[1], "ci95": None if ci95 is None or not math.isfinite(ci95) else ci95,
            "provisional": is_provisional(ci95), "games": r[3], "points": r[4] + r[6] / 2, "wins": r[4],
            "losses": r[5], "draws": r[6]}


def bot_ratings(store: Any, game: str, bots: list[str]) -> dict[str, dict[str, Any]]:
    """The ladder rows of ``bots`` (those that have one): ``{bot: {"bot", "elo", "ci95" (None
    if unknown), "provisional", "games" (at the last fit)}}``, one primary-key read each."""
    out = {}
    for bot in bots:
        row = store.run(SQL["ladder_row"], {"game": game, "bot": bot}).first()
        if row is not None:
            out[bot] = _rating_row(row)
    return out


def rank_of(store: Any, game: str, elo: float, bot: str) -> int:
    """The rank (from 1) of a ladder row: 1 + the rows before it by ``elo`` descending, then
    name. Reads the index entries above it."""
    return 1 + store.run(SQL["ladder_rank"], {"game": game, "elo": elo, "bot": bot}).scalar_one()


def _limit(limit: int | None, default: int) -> int:
    if limit is None:
        return default
    if not 1 <= limit <= MAX_PAGE:
        raise BadCursor(f"limit must be 1 to {MAX_PAGE}")
    return limit


MAX_TEXT = 64
"""Longest name, prefix or cursor a URL may give (the names of :mod:`arena.names` have 32)."""


def check_text(value: str | None, name: str) -> str | None:
    """A name, a prefix or a cursor from a URL as given (None when absent), or
    :class:`BadCursor`: over :data:`MAX_TEXT` characters, a control character, or not text
    (a lone surrogate) - what no name holds and a database may refuse."""
    if value is None or value == "":
        return None
    if len(value) > MAX_TEXT or any(c < " " or c == "\x7f" or "\ud800" <= c <= "\udfff" for c in value):
        raise BadCursor(f"{name} must be a bot's name or the start of one (at most {MAX_TEXT} printable characters)")
    return value


def _ascii_lower(text: str) -> str:
    """``text`` with A-Z lowered, as SQL's ``lower()`` does on both backends (SQLite lowers ASCII
    only; PostgreSQL's C collation too)."""
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def _prefix_bounds(q: str) -> tuple[str, str]:
    """The range ``[lo, hi)`` of lower-cased names that start with ``q`` (any case)."""
    lo = _ascii_lower(q)
    if lo[-1] == "\U0010ffff":  # no character above: every name from lo on
        return lo, "\U0010ffff" * (MAX_TEXT + 1)
    return lo, lo[:-1] + chr(ord(lo[-1]) + 1)


def leaderboard_page(store: Any, game: str, *, after: str | None = None, before: str | None = None,
                     q: str | None = None, limit: int | None = None) -> dict[str, Any]:
    """A page of the ladder of ``game``.

    Without ``q``: best first, ``limit`` (default :data:`LEADERBOARD_PAGE`) bots ranked just below
    bot ``after``, or just above bot ``before``, or the top. With ``q`` (a name prefix, any case):
    the bots whose name starts with it, by name, after/before the named bot in that order.

    Returns ``{"rows": [{"rank", "bot", "elo", "ci95", "provisional", "games" (finished, not
    aborted, matches, counted now: the ratings may lag them), "points" (1 a win, ½ a draw), "wins",
    "losses", "draws"}],
    "next" (the ``after`` of the next page,
    or None), "prev" (the ``before`` of the previous page, or None), "q", "bots" (bots in the
    ladder)}``. A cursor naming no bot of the ladder gives the first page. Reads the page's rows,
    the index entries above them (their ranks), never a whole
    table nor a bot's matches. Raises :class:`BadCursor` for a ``limit`` out of 1-:data:`MAX_PAGE`, or a
    prefix or cursor that no name could be (:func:`check_text`)."""
    n = _limit(limit, LEADERBOARD_PAGE)
    run = store.run
    q = check_text(q.strip() if q else None, "q")
    after, before = check_text(after, "after"), check_text(before, "before")
    cursor_name = before if before is not None else after
    cursor = run(SQL["ladder_row"], {"game": game, "bot": cursor_name}).first() if cursor_name else None
    backwards = cursor is not None and before is not None
    if q:
        lo, hi = _prefix_bounds(q)
        if backwards:
            key = _ascii_lower(cursor[0])
            rows = run(SQL["ladder_search_back"], {"game": game, "lo": lo, "key": key, "bot": cursor[0],
                                                    "n": n + 1}).all()
        else:
            key, name = (_ascii_lower(cursor[0]), cursor[0]) if cursor is not None else ("", "")
            rows = run(SQL["ladder_search"], {"game": game, "lo": max(lo, key), "hi": hi, "key": key, "bot": name,
                                               "n": n + 1}).all()
    elif cursor is None:
        rows = run(SQL["ladder_top"], {"game": game, "n": n + 1}).all()
    else:
        e = cursor[1]
        key = "ladder_above" if backwards else "ladder_below"
        rows = run(SQL[key], {"game": game, "elo": e, "bot": cursor[0], "n": n + 1}).all()
    more = len(rows) > n
    rows = rows[:n]
    if backwards:
        rows.reverse()
    out = [_rating_row(r) for r in rows]
    if q and out:  # listed by name: ranked in rank order, each from the one above it, in one statement
        by_rank = sorted(out, key=lambda r: (-r["elo"], r["bot"]))
        parts = [LADDER_RANK]
        params: dict[str, Any] = {"game": game, "elo": by_rank[0]["elo"], "bot": by_rank[0]["bot"]}
        for i, (above, row) in enumerate(zip(by_rank, by_rank[1:]), start=1):
            parts.append(RANK_STEP.format(i=i))
            params.update({f"ae{i}": above["elo"], f"ab{i}": above["bot"], f"e{i}": row["elo"], f"b{i}": row["bot"]})
        union = " UNION ALL ".join(f"SELECT {i} AS i, n FROM ({sql}) AS s{i}" for i, sql in enumerate(parts))
        steps = run(text(union), params).all()
        rank = 1
        for step, row in zip(sorted(steps, key=lambda r: r[0]), by_rank):
            rank += step[1]
            row["rank"] = rank
    elif out:
        first = rank_of(store, game, out[0]["elo"], out[0]["bot"])
        for i, row in enumerate(out):
            row["rank"] = first + i
    if backwards:
        prev, nxt = (out[0]["bot"] if more and out else None), (out[-1]["bot"] if out else None)
    else:
        nxt = out[-1]["bot"] if more and out else None
        prev = out[0]["bot"] if out and cursor is not None else None
    if not q and out and out[0]["rank"] == 1:
        prev = None
    return {"rows": [{"rank": r.pop("rank"), **r} for r in out], "next": nxt, "prev": prev, "q": q,
            "bots": run(SQL["ladder_size"], {"game": game}).scalar_one()}


# ------------------------------------------------------------------------------ match lists


def parse_id(value: Any, name: str = "before") -> int | None:
    """``before=``/``after=`` of a URL as a match id, or None when absent. Raises
    :class:`BadCursor` (one line) for anything else."""
    if value is None or value == "":
        return None
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise BadCursor(f"{name} must be a match number from a previous page (got {str(value)[:40]!r})") from None
    if not 0 <= out <= NO_ID:
        raise BadCursor(f"{name} must be a match number from a previous page (got {out})")
    return out


def history_page(store: Any, game: str, *, bot: str | None = None, before: int | None = None,
                 after: int | None = None, limit: int | None = None) -> dict[str, Any]:
    """A page of the finished (done or aborted) matches of ``game``, newest first (by id),
    only those of ``bot`` if given: older than match id ``before``, or the page just newer than
    ``after``, or the newest. Returns ``{"rows": [match rows as dicts: id, match_key,
    tournament_id, bot0, bot1, winner, reason, score0, score1, deals, finished_at, log_path,
    stored_log (bool)], "next" (the ``before`` of the next, older page, or None), "prev" (the
    ``after`` of the previous, newer page, or None), "results" (results of the game, or of the
    bot, so far: aborted matches are listed but not counted)}``. Raises :class:`BadCursor` for
    a ``limit`` out of range or a ``bot`` no name could be (:func:`check_text`)."""
    n = _limit(limit, HISTORY_PAGE)
    run = store.run
    bot = check_text(bot, "bot")
    newer = after is not None and before is None
    edge = after if newer else (NO_ID if before is None else before)
    if bot:
        key = "bot_history_newer" if newer else "bot_history_older"
        rows = run(SQL[key], {"game": game, "bot": bot, "edge": edge, "n": n + 1}).all()
        seen: set[int] = set()
        rows = [r for r in rows if not (r[0] in seen or seen.add(r[0]))]  # a bot against itself: once
    else:
        rows = run(SQL["history_newer" if newer else "history_older"], {"game": game, "edge": edge, "n": n + 1}).all()
    more = len(rows) > n
    rows = [dict(r._mapping) for r in rows[:n]]
    if newer:
        rows.reverse()
    if rows:
        keys = [r["match_key"] for r in rows]
        stored = {r[0] for r in run(SQL["stored_logs"], {"keys": keys})}
        for r in rows:
            r["stored_log"] = r["match_key"] in stored
    if newer:
        prev = rows[0]["id"] if more and rows else None
        nxt = rows[-1]["id"] if rows else None
    else:
        nxt = rows[-1]["id"] if more and rows else None
        prev = rows[0]["id"] if rows and before is not None else None
    if prev is not None:  # is anything newer there? one index probe
        probe = (run(SQL["bot_history_newer"], {"game": game, "bot": bot, "edge": prev, "n": 1}) if bot
                 else run(SQL["history_newer"], {"game": game, "edge": prev, "n": 1})).first()
        prev = prev if probe is not None else None
    if bot:
        results = int(run(SQL["bot_results"], {"game": game, "bot": bot}).scalar_one())
    else:
        state = run(SQL["ratings_state"], {"game": game}).first()
        results = state[0] if state else 0
    return {"rows": rows, "next": nxt, "prev": prev, "results": results}


def fault_page(store: Any, bot: str, *, before: int | None = None, limit: int = 10) -> dict[str, Any]:
    """The matches ``bot`` lost by its own fault (a timeout, a crash, an illegal action...),
    newest first, older than match id ``before``: ``{"rows": [{id, match_key, reason, detail,
    finished_at}], "next" (the ``before`` of the next page, or None)}``."""
    edge = NO_ID if before is None else before
    rows = store.run(SQL["faults_older"], {"bot": bot, "edge": edge, "n": limit + 1}).all()
    more = len(rows) > limit
    rows = [dict(r._mapping) for r in rows[:limit]]
    return {"rows": rows, "next": rows[-1]["id"] if more and rows else None}


def replay_row(store: Any, match_key: str) -> Any:
    """``(status, pair_key, log_path, tournament_id)`` of match ``match_key`` (a row indexable by
    those names), or None."""
    row = store.run(SQL["replay_match"], {"key": match_key}).first()
    return None if row is None else row._mapping


def twin_pending(store: Any, tournament_id: int, pair_key: str) -> bool:
    """True while a match of duplicate pair ``pair_key`` of the tournament is still pending."""
    return store.run(SQL["twin_pending"], {"tid": tournament_id, "pair": pair_key}).scalar_one() > 0


# ------------------------------------------------------------------------------ arena bots list


def bots_listing(store: Any, game: str) -> list[dict[str, Any]]:
    """Every registered bot by name, for ``arena bots list``: ``{"bot", "kind" (submitted or
    remote), "elo" (None: not rated), "ci95" (None: unknown), "provisional", "games" (at the last
    fit)}``. One pass over ``bots`` (the list has them all), each rating by primary key."""
    out = []
    for name, submitted, elo, ci95, games in store.run(SQL["bots_list"], {"game": game}):
        out.append({"bot": name, "kind": "submitted" if submitted else "remote", "elo": elo,
                    "ci95": None if ci95 is None or not math.isfinite(ci95) else ci95,
                    "provisional": elo is not None and is_provisional(ci95), "games": games})
    return out


def bot_status(store: Any) -> dict[str, dict[str, Any]]:
    """The contest server's last published view of its bots (:meth:`Store.save_bot_status`), by
    name: ``{state, failures, next_launch, last_output, connected, updated_at}``."""
    return {r[0]: dict(r._mapping) for r in store.run(SQL["bot_status"])}
