"""Tournaments, matches and their results, and what the ladder keeps of them: units, pair counts, counts.

Every statement is built once, at import (SQLAlchemy's compiled cache then serves each call); the
result path (:meth:`Results.record_result`) is a handful of single-row statements whatever the
history, run through the fast path (:class:`arena.store.fast.Hot`), as are the pairing's reads. A
mixin of :class:`arena.store.sqlite.Store`: ``self.run`` runs a statement, ``self._tx()`` opens a
writer transaction, ``self.dialect`` picks an upsert.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import msgspec
from sqlalchemy import bindparam, func, insert, select, text, update

from arena.metrics import METRICS
from arena.store.fast import Hot, hot_each
from arena.store.schema import auctions, ladder, ladder_state, ladder_units, matches, pair_counts, tournaments
from arena.store.upserts import upsert

FIRST_ELO = 1500.0
"""The rating a bot's provisional ladder row shows from its first result until the next fit:
the mean of the fit (``arena.stats.rating.ANCHOR``, not imported here: the fit loads numpy)."""


class MatchRow(msgspec.Struct):
    """A scheduled match as stored: position ``idx`` in its tournament, bots per seat, seed."""

    id: int
    tournament_id: int
    idx: int
    match_key: str
    game: str
    bot0: str
    bot1: str
    seed: int
    status: str


def _points(winner_seat: int | None) -> float:
    """Seat 0's points of a finished match: 1 a win, 0 a loss, ½ a draw."""
    return 1.0 if winner_seat == 0 else 0.0 if winner_seat == 1 else 0.5


m = matches.c
_ROW_COLUMNS = (m.id, m.tournament_id, m.idx, m.match_key, m.game, m.bot0, m.bot1, m.seed, m.status)
_KEY = bindparam("key")
_TID = bindparam("tid")
_GAME = bindparam("game")

INSERT_TOURNAMENT = insert(tournaments).returning(tournaments.c.id)
INSERT_MATCH = upsert(matches, (), None)  # INSERT ... ON CONFLICT DO NOTHING: a resumed tournament keeps its rows
MATCH_ROW = Hot(select(*_ROW_COLUMNS).where(m.match_key == _KEY))
MATCH_BY_INDEX = select(matches).where(m.tournament_id == _TID, m.idx == bindparam("idx"))
PENDING = select(*_ROW_COLUMNS).where(m.tournament_id == _TID, m.status == "pending").order_by(m.idx)
TOURNAMENT = select(tournaments).where(tournaments.c.id == _TID)
OPEN_TOURNAMENT = select(tournaments).where(tournaments.c.status != "finished").order_by(
    tournaments.c.id.desc()).limit(1)
NEWEST_TOURNAMENT = select(func.max(tournaments.c.id))
RECORDED = select(func.count()).select_from(matches).where(m.tournament_id == _TID, m.status != "pending")
FINISHED = select(func.count()).select_from(matches).where(m.tournament_id == _TID, m.status == "done")
FINISH_TOURNAMENT = update(tournaments).where(tournaments.c.id == _TID).values(status="finished",
                                                                            finished_at=bindparam("now"))
PROBE_WRITE = update(tournaments).where(tournaments.c.id == _TID).values(status=tournaments.c.status)
ALL_MATCHES = select(matches).where(m.tournament_id == _TID).order_by(m.idx)
RECORDED_KEYS = select(m.match_key).where(m.tournament_id == _TID, m.status != "pending").order_by(m.idx)
MATCH_BY_KEY = select(matches).where(m.match_key == _KEY)
RESULTS = select(m.bot0, m.bot1, m.winner_seat).where(m.tournament_id == _TID, m.status == "done").order_by(m.idx)
OUTCOME = select(m.status, m.winner_seat, m.reason).where(m.match_key == _KEY)
PAIR_KEY = select(m.pair_key).where(m.match_key == _KEY)
ABORT_LADDER = update(matches).where(
    m.status == "pending",
    m.tournament_id.in_(select(tournaments.c.id).where(tournaments.c.format == "ladder")),
).values(status="aborted", reason="aborted", detail="server stopped")

INSERT_AUCTION = insert(auctions)
AUCTION = select(auctions).where(auctions.c.tournament_id == _TID, auctions.c.idx == bindparam("idx"))

# ------------------------------------------------------------------ the result path
# Hot: run on the driver's cursor (arena.store.fast), each a single-row statement.
RESULT_ROW = Hot(select(m.id, m.tournament_id, m.pair_key, m.game, m.bot0, m.bot1, m.status).where(
    m.match_key == _KEY))
RECORD = Hot(update(matches).where(m.match_key == _KEY))  # the values come as parameters (RESULT_COLUMNS)
TWIN = Hot(select(m.id, m.bot0, m.bot1, m.winner_seat, m.status).where(
    m.tournament_id == _TID, m.pair_key == bindparam("pair"), m.id != bindparam("id")))
"""The other half of a duplicate pair (finished or not: the caller looks at ``status``). No status
term in SQL: with one, SQLite's planner may take ``matches_by_status`` (tournament, status) over
``matches_by_pair`` and read every finished match of the tournament at each result."""
COUNT_UNIT = hot_each(upsert(ladder_units, ("game", "a", "b", "points", "games"),
                             lambda new: {"n": ladder_units.c.n + new.n}))
COUNT_PAIR = hot_each(upsert(pair_counts, ("game", "a", "b"), lambda new: {"n": pair_counts.c.n + 1}))
COUNT_GAME = hot_each(upsert(ladder, ("game", "bot"), lambda new: {
    "games": ladder.c.games + 1, "wins": ladder.c.wins + new.wins, "losses": ladder.c.losses + new.losses,
    "draws": ladder.c.draws + new.draws}))
"""One more finished match for a bot on the ladder: its game count and the count of its outcome
(``wins``/``losses``/``draws`` given as 1 or 0); a first result makes its provisional row."""
COUNT_RESULT = hot_each(upsert(ladder_state, ("game",), lambda new: {"results": ladder_state.c.results + 1}))

# ------------------------------------------------------------------ the ladder's fit and reads
STATE = select(ladder_state.c.results, ladder_state.c.fitted_results, ladder_state.c.fitted_at,
               ladder_state.c.fit_ms, ladder_state.c.fit_cpu_ms, ladder_state.c.full_fit_at,
               ladder_state.c.full_fit_ms, ladder_state.c.full_fit_cpu_ms).where(ladder_state.c.game == _GAME)
SAVE_RATING = upsert(ladder, ("game", "bot"), lambda new: {"elo": new.elo, "ci95": new.ci95,
                                                           "updated_at": new.updated_at, "place": new.place})
SAVE_RATINGS_PG = text(
    "INSERT INTO ladder (game, bot, elo, ci95, games, updated_at, place) "
    "SELECT :game, t.bot, t.elo, t.ci95, t.games, :updated_at, t.place "
    "FROM unnest(CAST(:bots AS text[]), CAST(:elos AS double precision[]), CAST(:ci95s AS double precision[]), "
    "CAST(:games AS bigint[]), CAST(:places AS bigint[])) AS t(bot, elo, ci95, games, place) "
    "ON CONFLICT (game, bot) DO UPDATE SET elo=excluded.elo, ci95=excluded.ci95, updated_at=excluded.updated_at, "
    "place=excluded.place")
""":data:`SAVE_RATING` of a whole fit in one statement on PostgreSQL: the rows as arrays, so that the
writer lock is held for the server's work alone, not for the client's row by row (every result
commit waits for that lock meanwhile; the fitter's process writes from its main thread, at the
server's priority, and computes in a niced one: :class:`arena.schedule.fitter.NicedThread`)."""
SAVE_CHUNK = 1_000
"""Bots per write transaction when a fit's ratings are stored (:meth:`save_ladder_fit`): at a
season's 10,000 bots, ten short holds of the writer lock instead of one long one."""
SAVE_FIT = upsert(ladder_state, ("game",), lambda new: {"fitted_results": new.fitted_results,
                                                        "fitted_at": new.fitted_at, "fit_ms": new.fit_ms,
                                                        "fit_cpu_ms": new.fit_cpu_ms})
SAVE_FULL_FIT = upsert(ladder_state, ("game",), lambda new: {
    "fitted_results": new.fitted_results, "fitted_at": new.fitted_at, "fit_ms": new.fit_ms,
    "fit_cpu_ms": new.fit_cpu_ms, "full_fit_at": new.full_fit_at, "full_fit_ms": new.full_fit_ms,
    "full_fit_cpu_ms": new.full_fit_cpu_ms})
""":data:`SAVE_FIT` of a full refit (ratings and intervals): the last full refit's figures too."""
PAIR_COUNTS = Hot(select(pair_counts.c.b, pair_counts.c.n).where(
    pair_counts.c.game == _GAME, pair_counts.c.a == bindparam("bot"),
    pair_counts.c.b.in_(bindparam("others", expanding=True))))
OPPONENTS = Hot(select(pair_counts.c.b, pair_counts.c.n).where(pair_counts.c.game == _GAME,
                                                               pair_counts.c.a == bindparam("bot")))
UNITS = select(ladder_units.c.a, ladder_units.c.b, ladder_units.c.points, ladder_units.c.games,
               ladder_units.c.n).where(ladder_units.c.game == _GAME, ladder_units.c.n > 0).order_by(
    ladder_units.c.a, ladder_units.c.b, ladder_units.c.points, ladder_units.c.games)
LADDER = Hot(select(ladder.c.bot, ladder.c.elo, ladder.c.ci95, ladder.c.games).where(
    ladder.c.game == _GAME).order_by(ladder.c.elo.desc(), ladder.c.bot))
SINGLE_UNITS = text(
    "SELECT bot0, bot1, winner_seat, COUNT(*) FROM matches m WHERE game=:game AND status='done' "
    "AND (pair_key IS NULL OR NOT EXISTS (SELECT 1 FROM matches t WHERE t.tournament_id=m.tournament_id "
    "AND t.pair_key=m.pair_key AND t.id<>m.id AND t.status='done')) GROUP BY bot0, bot1, winner_seat")
PAIR_UNITS = text(
    "SELECT f.bot0, f.bot1, f.winner_seat, s.bot0, s.winner_seat, COUNT(*) FROM matches f "
    "JOIN matches s ON s.tournament_id=f.tournament_id AND s.pair_key=f.pair_key AND s.id>f.id "
    "WHERE f.game=:game AND f.status='done' AND s.status='done' "
    "GROUP BY f.bot0, f.bot1, f.winner_seat, s.bot0, s.winner_seat")


class Results:
    """The tournaments, matches and results of :class:`arena.store.sqlite.Store` (a mixin)."""

    dialect: str
    run: Any
    _tx: Any

    def create_tournament(
        self, game: str, fmt: str, seed: int, config: Any, bots: list[str], matches: list[Any] = ()
    ) -> int:
        """Insert a tournament and the matches already scheduled (``arena.schedule.formats.Pairing`` or
        ``(bot0, bot1, seed)`` tuples) as pending, in one transaction; return its id."""
        with self._tx():
            tid = int(self.run(INSERT_TOURNAMENT, {
                "game": game, "format": fmt, "seed": seed, "config": json.dumps(msgspec.to_builtins(config),
                                                                                sort_keys=True),
                "bots": json.dumps(bots), "created_at": time.time()}).scalar_one())
            rows = [self._match_values(tid, game, m) if not isinstance(m, tuple) else
                    self._values(tid, game, i, m[0], m[1], m[2], None) for i, m in enumerate(matches)]
            if rows:
                self.run(INSERT_MATCH[self.dialect], rows)
        return tid

    @staticmethod
    def _values(tid: int, game: str, idx: int, bot0: str, bot1: str, seed: int, pair: str | None) -> dict[str, Any]:
        return {"tournament_id": tid, "idx": idx, "match_key": f"t{tid}-m{idx + 1:04d}", "game": game,
                "bot0": bot0, "bot1": bot1, "seed": seed, "pair_key": pair}

    @classmethod
    def _match_values(cls, tid: int, game: str, p: Any) -> dict[str, Any]:
        """The row of a ``Pairing`` (any object with ``index``, ``bot0``, ``bot1``, ``seed``, ``pair``:
        the store does not import the formats, which sit above it)."""
        return cls._values(tid, game, p.index, p.bot0, p.bot1, p.seed, p.pair)

    def add_match(self, tournament_id: int, game: str, pairing: Any) -> MatchRow:
        """Schedule one match (a ``Pairing``) of a format that decides as it goes; idempotent
        (a resumed tournament gets the existing row back). Returns its row."""
        values = self._match_values(tournament_id, game, pairing)
        with self._tx():
            self.run(INSERT_MATCH[self.dialect], values)
        return self.match_row(values["match_key"])

    def match_row(self, match_key: str) -> MatchRow:
        """The scheduled match ``match_key``; ``LookupError`` if unknown."""
        row = self.run(MATCH_ROW, {"key": match_key}).first()
        if row is None:
            raise LookupError(match_key)
        return MatchRow(*row)

    def match_by_index(self, tournament_id: int, idx: int) -> dict[str, Any] | None:
        """Match number ``idx`` of a tournament as a dict, or None."""
        row = self.run(MATCH_BY_INDEX, {"tid": tournament_id, "idx": idx}).first()
        return dict(row._mapping) if row else None

    def match_pair_key(self, match_key: str) -> str | None:
        """The duplicate pair key of match ``match_key`` (None: not part of a pair, or unknown)."""
        return self.run(PAIR_KEY, {"key": match_key}).scalar()

    def record_auction(self, tournament_id: int, idx: int, bids: dict[str, int], winner: str, price: int) -> None:
        """Commit a chouette auction (ecarte.md §E9.3)."""
        with self._tx():
            self.run(INSERT_AUCTION, {"tournament_id": tournament_id, "idx": idx, "bids": json.dumps(bids,
                                      sort_keys=True), "winner": winner, "price": price, "created_at": time.time()})

    def auction(self, tournament_id: int, idx: int) -> dict[str, Any] | None:
        """A recorded auction (``bids`` decoded), or None."""
        row = self.run(AUCTION, {"tid": tournament_id, "idx": idx}).first()
        if row is None:
            return None
        out = dict(row._mapping)
        out["bids"] = json.loads(out["bids"])
        return out


    # ------------------------------------------------------------------ the ladder

    def save_ladder_fit(self, game: str, ratings: list[Any], results: int, fit_ms: int, cpu_ms: int | None = None,
                        full: bool = True, places: Mapping[str, int] | None = None) -> None:
        """Store a fit of ``game`` (``arena.stats.rating.Rating`` rows) made over its first
        ``results`` results, and when it was made, how long it took (``fit_ms``, wall ms) and
        its CPU time (``cpu_ms``, ms; None: not measured). ``full``: it computed the intervals
        (a full refit), whose figures are then kept apart too (``full_fit_at``, ``full_fit_ms``,
        ``full_fit_cpu_ms``: the fits that refit the ratings alone leave them). A bot's game count is
        kept by each result, not by the fit (a result committed during the fit is already
        counted). The rows go in write transactions of :data:`SAVE_CHUNK` bots each, the fit's
        state with the last: the writer lock, which every result commit waits for, is held for
        one chunk at a time (10,000 rows in one transaction held it 250-450 ms on PostgreSQL, a
        stall of every commit at each fit of a season). So a reader may see, for the moments
        between two chunks, some bots at this fit's rating and others still at the last fit's;
        ``fitted_results`` and ``fitted_at`` change with the last chunk only. On PostgreSQL a
        chunk is one statement (:data:`SAVE_RATINGS_PG`, its arrays made before the lock).
        ``places``: each bot's place in the fit's layout (``ladder.place``, revision 0005: what
        a fitter that starts orders the field by); NULL for a bot it does not name."""
        places = places or {}
        now = time.time()
        ordered = sorted(ratings, key=lambda r: r.name)  # one order for every writer: no lock cycles
        chunks = [ordered[k:k + SAVE_CHUNK] for k in range(0, len(ordered), SAVE_CHUNK)] or [[]]
        for number, chunk in enumerate(chunks, 1):
            if self.dialect == "postgresql":
                rows: Any = {"game": game, "updated_at": now, "bots": [r.name for r in chunk],
                             "elos": [float(r.elo) for r in chunk], "ci95s": [float(r.ci95) for r in chunk],
                             "games": [int(r.games) for r in chunk], "places": [places.get(r.name) for r in chunk]}
                statement = SAVE_RATINGS_PG
            else:
                rows = [{"game": game, "bot": r.name, "elo": r.elo, "ci95": r.ci95, "games": r.games,
                         "updated_at": now, "place": places.get(r.name)} for r in chunk]
                statement = SAVE_RATING[self.dialect]
            with self._tx():
                if chunk:
                    self.run(statement, rows)
                if number == len(chunks):
                    row = {"game": game, "results": results, "fitted_results": results, "fitted_at": now,
                           "fit_ms": fit_ms, "fit_cpu_ms": cpu_ms}
                    if full:
                        row |= {"full_fit_at": now, "full_fit_ms": fit_ms, "full_fit_cpu_ms": cpu_ms}
                    self.run((SAVE_FULL_FIT if full else SAVE_FIT)[self.dialect], row)

    def ladder_state(self, game: str) -> dict[str, Any]:
        """The ladder fit's state of ``game``: ``results`` recorded, ``fitted_results`` counted
        by the last fit, ``fitted_at`` (Unix seconds, None before the first fit), ``fit_ms`` (its
        wall duration, ms) and ``fit_cpu_ms`` (its CPU time, ms), ``full`` (whether it computed
        the intervals), and the last full refit's ``full_fit_at``, ``full_fit_ms`` and
        ``full_fit_cpu_ms``; None where not known (a fit by an older arena, or none yet), zeros
        for a game without results."""
        row = self.run(STATE, {"game": game}).first()
        if row is None:
            row = (0, 0, None, None, None, None, None, None)
        keys = ("results", "fitted_results", "fitted_at", "fit_ms", "fit_cpu_ms", "full_fit_at", "full_fit_ms",
                "full_fit_cpu_ms")
        out = dict(zip(keys, row))
        out["full"] = out["fitted_at"] is not None and out["full_fit_at"] == out["fitted_at"]
        return out

    def pair_counts(self, game: str, bot: str, others: list[str]) -> dict[str, int]:
        """How many finished matches of ``game`` ``bot`` played against each of ``others``
        (absent: none), from ``pair_counts``: one index probe of ``len(others)`` keys, whatever
        the history (the scheduler asks this for a bounded set of candidates)."""
        if not others:
            return {}
        return {r[0]: r[1] for r in self.run(PAIR_COUNTS, {"game": game, "bot": bot, "others": list(others)})}

    def opponents(self, game: str, bot: str) -> dict[str, int]:
        """Every bot ``bot`` has met in ``game`` and how many finished (not aborted) matches they
        played (table ``pair_counts``): one range of its primary key, as long as the bot's list of
        opponents, whatever the history (the contest's pairing loads it when a bot connects)."""
        return {r[0]: r[1] for r in self.run(OPPONENTS, {"game": game, "bot": bot})}

    def ladder_units(self, game: str) -> dict[tuple[str, str, float, int], int]:
        """The ladder's units of ``game`` as kept by each result (table ``ladder_units``):
        ``{(a, b, points of a, games): count}``, the same as :meth:`ladder_unit_counts` counts
        over every finished match, read in one small query (its size grows with the pairs of bots
        and their outcomes, not with the matches)."""
        return {(a, b, float(s), g): n for a, b, s, g, n in self.run(UNITS, {"game": game})}

    def _count_ladder_unit(self, game: str, a: str, b: str, points: float, games: int, delta: int) -> None:
        self.run(COUNT_UNIT[self.dialect], {"game": game, "a": a, "b": b, "points": points, "games": games,
                                            "n": delta})

    def _count_result_unit(self, m: Any, winner_seat: int | None) -> None:
        """Count the just finished match ``m`` (its :data:`RESULT_ROW`) in ``ladder_units``, inside
        the caller's transaction: a unit of one game, or, when it completes a duplicate pair, the
        pair's unit of two games in place of its other half's lone one
        (:func:`arena.stats.ladder.ladder_units`)."""
        twin = None if m.pair_key is None else next(
            (r for r in self.run(TWIN, {"tid": m.tournament_id, "pair": m.pair_key, "id": m.id}) if r.status == "done"),
            None)
        if twin is None:
            self._count_ladder_unit(m.game, m.bot0, m.bot1, _points(winner_seat), 1, 1)
            return
        self._count_ladder_unit(m.game, twin.bot0, twin.bot1, _points(twin.winner_seat), 1, -1)
        this = (m.id, m.bot0, m.bot1, winner_seat)
        first, second = (tuple(twin)[:4], this) if twin.id < m.id else (this, tuple(twin)[:4])
        s1 = _points(second[3])
        self._count_ladder_unit(m.game, first[1], first[2], _points(first[3])
                                + (s1 if second[1] == first[1] else 1.0 - s1), 2, 1)

    def _count_pair(self, game: str, a: str, b: str, winner_seat: int | None) -> None:
        """One more finished match between ``a`` (seat 0) and ``b`` (seat 1) won by ``winner_seat``
        (None: a draw) (table ``pair_counts``, both orientations), one more game and win, loss or
        draw for each on the ladder (a first result makes a provisional row: the anchor rating, no
        interval, until the next fit) and one more result of ``game`` (``ladder_state``), inside the
        caller's transaction: single-row upserts, whatever the history."""
        now = time.time()
        pairs, games = COUNT_PAIR[self.dialect], COUNT_GAME[self.dialect]
        for seat, (x, y) in enumerate(((a, b), (b, a))):
            self.run(pairs, {"game": game, "a": x, "b": y, "n": 1})
            won, lost = winner_seat == seat, winner_seat == 1 - seat
            self.run(games, {"game": game, "bot": x, "elo": FIRST_ELO, "ci95": None, "games": 1, "updated_at": now,
                             "wins": int(won), "losses": int(lost), "draws": int(not (won or lost))})
        self.run(COUNT_RESULT[self.dialect], {"game": game, "results": 1})

    def ladder_unit_counts(self, game: str) -> dict[tuple[str, str, float, int], int]:
        """The ladder's units of ``game`` counted in SQL: ``{(a, b, points of a, games): count}``,
        exactly what :func:`arena.stats.ladder.ladder_units` makes of the finished matches (the two
        finished halves of a duplicate pair, same tournament and pair key, are one unit of 2
        games scored from the first half's seat 0; every other finished match a unit of 1)."""
        out: dict[tuple[str, str, float, int], int] = {}

        def add(a: str, b: str, s: float, g: int, n: int) -> None:
            out[(a, b, s, g)] = out.get((a, b, s, g), 0) + n

        for b0, b1, w, n in self.run(SINGLE_UNITS, {"game": game}):
            add(b0, b1, _points(w), 1, n)
        for b0, b1, w0, c0, w1, n in self.run(PAIR_UNITS, {"game": game}):
            s1 = _points(w1)
            add(b0, b1, _points(w0) + (s1 if c0 == b0 else 1.0 - s1), 2, n)
        return out

    def ladder(self, game: str) -> list[tuple[str, float, int]]:
        """The persistent ladder of ``game``: ``(bot, elo, games)``, best first."""
        return [(bot, elo, games) for bot, elo, _, games in self.ladder_intervals(game)]

    def ladder_intervals(self, game: str) -> list[tuple[str, float, float, int]]:
        """The persistent ladder of ``game`` with intervals: ``(bot, elo, ci95, games)``, best
        first; ``ci95`` is the half-width of the 95% interval in Elo points (``inf`` for a
        row written by a version without intervals, until the next result refits it)."""
        return [(r[0], r[1], float("inf") if r[2] is None else r[2], r[3]) for r in self.run(LADDER, {"game": game})]

    # ------------------------------------------------------------------ tournaments and results

    def tournament(self, tournament_id: int | None = None) -> dict[str, Any] | None:
        """A tournament row as a dict (``config`` and ``bots`` decoded from JSON): the given id,
        or without one the newest tournament that is not finished. None if there is none."""
        row = (self.run(OPEN_TOURNAMENT) if tournament_id is None
               else self.run(TOURNAMENT, {"tid": tournament_id})).first()
        if row is None:
            return None
        out = dict(row._mapping)
        out["config"] = json.loads(out["config"])
        out["bots"] = json.loads(out["bots"])
        return out

    def pending_matches(self, tournament_id: int) -> list[MatchRow]:
        """Matches of the tournament not yet recorded, in schedule order."""
        return [MatchRow(*r) for r in self.run(PENDING, {"tid": tournament_id})]

    def record_result(self, match_key: str, result: Any, log_path: str | None, log_hash: str | None = None) -> None:
        """Commit a match result (an ``arena.match.referee.MatchResult``) in one transaction, with
        what the persistent ladder keeps of it: its unit (``ladder_units``), who met whom
        (``pair_counts``), the game's result count (``ladder_state``) and each bot's game count
        and outcome count (``ladder``: a bot's first result gives it a provisional row at once). A handful of
        single-row statements, whatever the history; the ratings themselves are refitted off
        this path (:mod:`arena.schedule.fitter`). Raises ``LookupError`` if the match is unknown
        or already recorded (a result is never counted twice)."""
        t0 = time.perf_counter()
        with self._tx():
            row = self.run(RESULT_ROW, {"key": match_key}).first()
            if row is None or row.status != "pending":
                raise LookupError(f"match {match_key} is not pending")
            winner = None if result.winner is None else (row.bot0, row.bot1)[result.winner]
            self.run(RECORD, {
                "key": match_key, "status": "aborted" if result.reason == "aborted" else "done",
                "winner_seat": result.winner, "winner": winner, "score0": result.scores[0],
                "score1": result.scores[1], "manches0": result.manches[0], "manches1": result.manches[1],
                "reason": result.reason, "detail": result.detail, "faulty_seat": result.faulty,
                "decisions": result.decisions, "deals": result.deals, "duration_ms": result.duration_ms,
                "margin": result.margin, "log_hash": log_hash, "log_path": log_path, "finished_at": time.time()})
            if result.reason != "aborted":  # counted for the ladder's background fit (arena.schedule.fitter)
                self._count_result_unit(row, result.winner)
                self._count_pair(row.game, row.bot0, row.bot1, result.winner)
        METRICS.result_commit.observe(time.perf_counter() - t0)

    def newest_tournament(self) -> int | None:
        """The id of the newest tournament (a contest's ladder included), None if there is none."""
        return self.run(NEWEST_TOURNAMENT).scalar()

    def recorded_matches(self, tournament_id: int | None) -> int:
        """How many matches of the tournament have a result (finished or aborted; 0 for None)."""
        if tournament_id is None:
            return 0
        return self.run(RECORDED, {"tid": tournament_id}).scalar_one()

    def finished_matches(self, tournament_id: int) -> int:
        """How many matches of the tournament finished (status ``done``; aborted ones not counted)."""
        return self.run(FINISHED, {"tid": tournament_id}).scalar_one()

    def finish_tournament(self, tournament_id: int) -> None:
        """Mark a tournament finished."""
        self.run(FINISH_TOURNAMENT, {"tid": tournament_id, "now": time.time()})

    def probe_write(self, tournament_id: int) -> None:
        """A write transaction that changes nothing visible (rewrites tournament
        ``tournament_id``'s row); raises ``sqlite3.Error`` (or ``DatabaseLost`` on PostgreSQL) if
        the database cannot be written (full disk, read-only file). Used to tell when storage
        works again."""
        with self._tx():
            self.run(PROBE_WRITE, {"tid": tournament_id})

    def matches(self, tournament_id: int) -> list[dict[str, Any]]:
        """All matches of a tournament as dicts, in schedule order."""
        return [dict(r._mapping) for r in self.run(ALL_MATCHES, {"tid": tournament_id})]

    def recorded_since(self, tournament_id: int, known: set[str]) -> list[dict[str, Any]]:
        """The matches of a tournament recorded (done or aborted) whose keys are not in ``known``,
        as dicts in schedule order: a front that follows its workers reads each result once, not
        the whole tournament at every look (only the keys of the recorded matches are scanned)."""
        keys = [r[0] for r in self.run(RECORDED_KEYS, {"tid": tournament_id})]
        return [dict(self.run(MATCH_BY_KEY, {"key": key}).one()._mapping) for key in keys if key not in known]

    def results(self, tournament_id: int) -> list[tuple[str, str, float]]:
        """Finished matches as ``(bot0, bot1, score of bot0)`` with 1 win, 0 loss, 0.5 draw."""
        return [(r[0], r[1], _points(r[2])) for r in self.run(RESULTS, {"tid": tournament_id})]

    def abort_unfinished_ladder(self) -> int:
        """Mark ``aborted`` (``server stopped``) the ladder matches a dead contest server left
        ``pending``; returns how many. Run it inside :meth:`transaction` together with the
        settling of their wagers (contests.md, "Wagers after a crash")."""
        return self.run(ABORT_LADDER).rowcount

    def match_outcomes(self, match_keys: list[str]) -> dict[str, tuple[str, int | None, str | None]]:
        """``match_key -> (status, winner seat, reason)`` for the known keys among ``match_keys``."""
        out: dict[str, tuple[str, int | None, str | None]] = {}
        for key in match_keys:
            row = self.run(OUTCOME, {"key": key}).first()
            if row is not None:
                out[key] = (row[0], row[1], row[2])
        return out

