"""A synthetic season for ``make bench-season`` (:mod:`arena.tools.bench_season`): a store
holding what a contest of ``bots`` bots would hold after ``matches`` finished matches.

The history (:func:`make_season`, numpy, vectorised, seeded):

* bots ``{prefix}-0`` .. ``{prefix}-{bots-1}`` with a true strength each (normal, sd
  :attr:`SeasonSpec.spread_elo` Elo). The bench's remote bots connect under the first names, so
  in the full store they are players with a history among the others;
* the matches are duplicate pairs (two matches, one seed, seats swapped, as the contest plays
  submitted bots), ``matches / 2`` of them, in the order a contest schedules them. Each pair is
  between rating neighbours: a bot drawn uniformly and an opponent whose rank by strength is a
  geometric distance away (mean :attr:`SeasonSpec.window` ranks, either side), so each bot meets
  a few dozen to a few hundred opponents, most of them often;
* each match is won by seat 0 with the Elo model's probability for the two strengths (Écarté:
  never a draw), the winner scoring 5 and the loser 0-4; a fraction
  :attr:`SeasonSpec.forfeit_rate` are forfeits on time (the loser at fault). Deals, decisions,
  durations, seeds and log hashes are random; finishing times are spread evenly over
  :attr:`SeasonSpec.days` days ending now. The log files themselves are not written (ten million
  of them would be some hundred gigabytes): a seeded match's ``log_path`` names a file that does
  not exist, as once its log has been archived away.

What the store keeps of it (:func:`seed_store`), bulk-loaded, exactly what
:meth:`arena.store.sqlite.Store.record_result` would have left after these results (the tests
compare the two): the ``bots`` (no token anyone holds), one running contest ``tournaments`` row,
the ``matches`` (``done``), ``ladder_units`` (one unit of two games per pair, and the zero count
of the first half's lone unit that the pair's completion took back), ``pair_counts`` (both
orientations), ``ladder_state`` (every result counted and fitted) and a prior fit in ``ladder``
(each bot's games; its Elo is its true strength centred on 1500 plus the fit's error, and its
interval the model's, ``1.96 / sqrt(information)``: a synthetic fit, not one computed by
:mod:`arena.stats.ladder`).

Bulk loading: on SQLite ``executemany`` in transactions of :data:`CHUNK` rows with ``PRAGMA
synchronous=OFF`` and ``journal_mode=OFF`` while seeding (the file is the bench's own, made
afresh if seeding is interrupted), back to WAL at the end; on PostgreSQL ``COPY ... FROM STDIN``
(psycopg's ``cursor.copy``), then the identity sequence moved past the ids written and ``VACUUM
ANALYZE`` (what autovacuum does to a table that grew) and a ``CHECKPOINT`` (the seed written out
before the runs, not during the first one: ``checkpoint`` in the report). On both, the secondary indexes of
``matches`` (whatever the schema has) are dropped before the load and built again after it.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import func, select, update

from arena.store.schema import matches as match_table
from arena.store.schema import tournaments
from arena.store.sqlite import Store
from arena.store.tokens import FAST

FORMAT = 1
"""Version of what :func:`make_season` generates: a cached seed of another version is made again."""

CHUNK = 200_000
"""Matches per insert batch (SQLite transaction, PostgreSQL ``COPY``)."""

MATCH_COLUMNS = ("id", "tournament_id", "idx", "match_key", "game", "bot0", "bot1", "seed", "status", "winner_seat",
                 "winner", "score0", "score1", "manches0", "manches1", "reason", "detail", "faulty_seat", "decisions",
                 "deals", "duration_ms", "margin", "log_hash", "log_path", "finished_at", "pair_key")
"""The columns of ``matches`` the seed writes, in this order."""

FORFEIT_DETAIL = "no answer within the time limit (seeded history)"


@dataclass(frozen=True)
class SeasonSpec:
    """What to seed: ``bots`` bots (at least 2), ``matches`` finished matches (even: duplicate
    pairs), the generator's ``seed``; ``window``: mean distance in strength ranks between two
    opponents; ``spread_elo``: standard deviation of the true strengths (Elo); ``days``: how
    long the season has run; ``forfeit_rate``: fraction of matches forfeited on time;
    ``prefix``: of the bot names; ``logs``: the directory seeded ``log_path`` values name."""

    bots: int = 10_000
    matches: int = 10_000_000
    seed: int = 2026
    window: float = 30.0
    spread_elo: float = 200.0
    days: float = 30.0
    forfeit_rate: float = 0.005
    game: str = "ecarte"
    prefix: str = "bench"
    logs: str = "season-logs"

    def __post_init__(self) -> None:
        if self.bots < 2:
            raise ValueError("a season needs at least 2 bots")
        if self.matches < 2 or self.matches % 2:
            raise ValueError("a season's matches are duplicate pairs: an even number, at least 2")
        if self.window < 1:
            raise ValueError("window is at least 1 rank")

    def key(self) -> str:
        """A name for this history, for cache files: ``season-<bots>b-<matches>m-s<seed>-f<FORMAT>``."""
        return f"season-{self.bots}b-{self.matches}m-s{self.seed}-w{self.window:g}-f{FORMAT}"

    def names(self) -> list[str]:
        """The bot names, index order."""
        return [f"{self.prefix}-{i}" for i in range(self.bots)]


@dataclass
class Season:
    """A generated history (:func:`make_season`), per duplicate pair ``k`` (``P = matches / 2``):
    ``a[k]``, ``b[k]`` bot indexes (``a`` is seat 0 of the first half, which is match ``2k``; the
    second half, ``2k + 1``, has ``b`` in seat 0); per match (arrays of shape ``(P, 2)``):
    ``winner_seat`` (0/1), ``forfeit`` (bool), ``loser_score`` (0-4), ``deals``, ``decisions``,
    ``duration_ms``, ``finished_at`` (Unix seconds); ``seeds[k]``; ``strength`` (Elo, per bot)."""

    spec: SeasonSpec
    names: list[str]
    strength: np.ndarray
    a: np.ndarray
    b: np.ndarray
    winner_seat: np.ndarray
    forfeit: np.ndarray
    loser_score: np.ndarray
    deals: np.ndarray
    decisions: np.ndarray
    duration_ms: np.ndarray
    seeds: np.ndarray
    finished_at: np.ndarray
    started_at: float
    rng: np.random.Generator = field(repr=False)

    @property
    def pairs(self) -> int:
        """Duplicate pairs (``matches / 2``)."""
        return len(self.a)


def draw_pairs(spec: SeasonSpec) -> tuple[np.random.Generator, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The first draws of the history of ``spec``: ``(rng, strength, order, a, b)``, the generator
    to draw on from there, each bot's strength (Elo), the bots by rank (weakest first) and the
    two bots of each duplicate pair (a rating neighbour of ``a`` at a geometric distance of mean
    ``spec.window`` ranks). :func:`make_season` and ``arena.tools.bench_fit`` draw the same."""
    rng = np.random.default_rng(spec.seed)
    n, p = spec.bots, spec.matches // 2
    strength = rng.normal(0.0, spec.spread_elo, n)
    order = np.argsort(strength, kind="stable")  # rank -> bot
    ra = rng.integers(0, n, p)
    dist = np.minimum(rng.geometric(1.0 / spec.window, p), n - 1)
    sign = np.where(rng.random(p) < 0.5, -1, 1)
    rb = ra + sign * dist
    out = (rb < 0) | (rb >= n)
    rb[out] = ra[out] - sign[out] * dist[out]
    rb = np.clip(rb, 0, n - 1)
    same = rb == ra
    rb[same] = (ra[same] + 1) % n
    return rng, strength, order, order[ra], order[rb]


def make_season(spec: SeasonSpec, now: float | None = None) -> Season:
    """Generate the history of ``spec`` (see the module docstring); ``now`` (Unix seconds,
    default the clock) is when its last match finished. Memory: about 60 bytes per match."""
    rng, strength, order, a, b = draw_pairs(spec)
    p = spec.matches // 2
    a, b = a.astype(np.int32), b.astype(np.int32)
    p_a = 1.0 / (1.0 + 10.0 ** ((strength[b] - strength[a]) / 400.0))  # a beats b
    a_wins = rng.random((p, 2)) < p_a[:, None]
    winner_seat = np.empty((p, 2), dtype=np.int8)
    winner_seat[:, 0] = np.where(a_wins[:, 0], 0, 1)  # a is seat 0 of the first half
    winner_seat[:, 1] = np.where(a_wins[:, 1], 1, 0)  # and seat 1 of the second
    deals = rng.integers(3, 11, (p, 2), dtype=np.int16)
    end = time.time() if now is None else now
    start = end - spec.days * 86400.0
    step = (end - start) / spec.matches
    finished = start + step * (np.arange(spec.matches, dtype=np.float64) + 1.0)
    return Season(
        spec=spec, names=spec.names(), strength=strength, a=a, b=b, winner_seat=winner_seat,
        forfeit=rng.random((p, 2)) < spec.forfeit_rate, loser_score=rng.integers(0, 5, (p, 2), dtype=np.int8),
        deals=deals, decisions=deals * rng.integers(6, 11, (p, 2), dtype=np.int16),
        duration_ms=rng.integers(300, 20_000, (p, 2), dtype=np.int32),
        seeds=rng.integers(0, 2**62, p, dtype=np.int64), finished_at=finished.reshape(p, 2), started_at=start,
        rng=rng)


# --------------------------------------------------------------------------- rows


def match_rows(season: Season, tournament_id: int, k0: int, k1: int) -> Iterator[tuple]:
    """The ``matches`` rows (:data:`MATCH_COLUMNS`) of duplicate pairs ``k0`` to ``k1 - 1``, in
    schedule order, as :meth:`Store.record_result` leaves them (match keys as the contest makes
    them: ``t<tournament>-m<idx + 1>``; ``pair_key`` ``a|b|<idx of the first half>``)."""
    s, names = season.spec, np.array(season.names, dtype=object)
    n = k1 - k0
    a, b = season.a[k0:k1], season.b[k0:k1]
    bot0 = np.stack([a, b], axis=1).ravel()
    bot1 = np.stack([b, a], axis=1).ravel()
    w = season.winner_seat[k0:k1].ravel()
    lo = season.loser_score[k0:k1].ravel().astype(np.int64)
    forfeit = season.forfeit[k0:k1].ravel()
    idx = np.arange(2 * k0, 2 * k1, dtype=np.int64)
    keys = [f"t{tournament_id}-m{i + 1:04d}" for i in idx.tolist()]
    names0, names1 = names[bot0].tolist(), names[bot1].tolist()
    pair_keys = [f"{x}|{y}|{2 * k}" for x, y, k in zip(names[a].tolist(), names[b].tolist(), range(k0, k1))]
    hexes = season.rng.bytes(32 * 2 * n).hex()
    seeds = np.repeat(season.seeds[k0:k1], 2).tolist()
    return zip(
        (idx + 1).tolist(), itertools.repeat(tournament_id), idx.tolist(), keys, itertools.repeat(s.game), names0,
        names1, seeds, itertools.repeat("done"), w.tolist(), names[np.where(w == 0, bot0, bot1)].tolist(),
        np.where(w == 0, 5, lo).tolist(), np.where(w == 1, 5, lo).tolist(), (w == 0).astype(np.int64).tolist(),
        (w == 1).astype(np.int64).tolist(), np.where(forfeit, "forfeit_timeout", "target").tolist(),
        np.where(forfeit, FORFEIT_DETAIL, "").tolist(), [1 - x if f else None for x, f in zip(w.tolist(),
                                                                                             forfeit.tolist())],
        season.decisions[k0:k1].ravel().tolist(), season.deals[k0:k1].ravel().tolist(),
        season.duration_ms[k0:k1].ravel().tolist(), itertools.repeat(0),
        [hexes[i:i + 64] for i in range(0, 128 * n, 64)], [f"{s.logs}/t{tournament_id}/{k}.jsonl.gz" for k in keys],
        season.finished_at[k0:k1].ravel().tolist(), [p for p in pair_keys for _ in (0, 1)],
    )


def _name_rank(season: Season) -> np.ndarray:
    """Each bot's position among the names sorted as text (bytes): rows inserted in that order
    append to their primary key's index."""
    rank = np.empty(season.spec.bots, dtype=np.int64)
    rank[np.argsort(np.array(season.names))] = np.arange(season.spec.bots)
    return rank


def ladder_unit_rows(season: Season) -> Iterator[tuple]:
    """``ladder_units`` rows ``(game, a, b, points, games, n)``: per duplicate pair one unit of
    two games, ``a`` and ``b`` the first half's seats, ``points`` ``a``'s over both halves; and
    the first half's lone unit of one game with count 0 (counted when it finished, taken back when
    the second half completed the pair: :meth:`Store._count_result_unit`)."""
    n = season.spec.bots
    pair = season.a.astype(np.int64) * n + season.b
    first = (season.winner_seat[:, 0] == 0).astype(np.int64)  # a's point in the first half
    points = first + (season.winner_seat[:, 1] == 1)  # ... and in the second (a is seat 1 there)
    two, n_two = np.unique(pair * 3 + points, return_counts=True)
    one = np.unique(pair * 2 + first)
    rows_a = np.concatenate([two // 3 // n, one // 2 // n])
    rows_b = np.concatenate([two // 3 % n, one // 2 % n])
    rows_points = np.concatenate([two % 3, one % 2]).astype(np.float64)
    rows_games = np.concatenate([np.full(len(two), 2), np.full(len(one), 1)])
    rows_n = np.concatenate([n_two, np.zeros(len(one), dtype=np.int64)])
    rank = _name_rank(season)
    order = np.lexsort((rows_games, rows_points, rank[rows_b], rank[rows_a]))
    names = np.array(season.names, dtype=object)
    return zip(itertools.repeat(season.spec.game), names[rows_a[order]].tolist(), names[rows_b[order]].tolist(),
               rows_points[order].tolist(), rows_games[order].tolist(), rows_n[order].tolist())


def pair_count_rows(season: Season) -> Iterator[tuple]:
    """``pair_counts`` rows ``(game, a, b, n)``, both orientations: finished matches between
    ``a`` and ``b`` (two per duplicate pair)."""
    n = season.spec.bots
    lo, hi = np.minimum(season.a, season.b).astype(np.int64), np.maximum(season.a, season.b).astype(np.int64)
    keys, counts = np.unique(lo * n + hi, return_counts=True)
    x = np.concatenate([keys // n, keys % n])
    y = np.concatenate([keys % n, keys // n])
    c = np.concatenate([counts, counts]) * 2
    rank = _name_rank(season)
    order = np.lexsort((rank[y], rank[x]))
    names = np.array(season.names, dtype=object)
    return zip(itertools.repeat(season.spec.game), names[x[order]].tolist(), names[y[order]].tolist(),
               c[order].tolist())


def ladder_rows(season: Season, updated_at: float) -> list[tuple]:
    """``ladder`` rows ``(game, bot, elo, games, updated_at, ci95, wins, losses, draws)`` of every bot
    that played: ``games`` its matches and their outcomes (no draws: every match has a winner); a
    synthetic prior fit (module docstring)."""
    n = season.spec.bots
    games = 2 * (np.bincount(season.a, minlength=n) + np.bincount(season.b, minlength=n))
    p = 1.0 / (1.0 + 10.0 ** ((season.strength[season.b] - season.strength[season.a]) / 400.0))
    scale = math.log(10.0) / 400.0  # d(logit)/d(Elo)
    info = 2 * (np.bincount(season.a, p * (1 - p), n) + np.bincount(season.b, p * (1 - p), n)) * scale**2
    played = games > 0
    se = np.where(played, 1.0 / np.sqrt(np.where(played, info, 1.0)), np.inf)
    noise = np.random.default_rng(season.spec.seed + 1).normal(0.0, 1.0, n)
    elo = 1500.0 + season.strength - season.strength.mean() + noise * np.where(played, se, 0.0)
    a_wins = (season.winner_seat[:, 0] == 0).astype(np.int64) + (season.winner_seat[:, 1] == 1)  # of the pair's 2
    wins = np.bincount(season.a, a_wins, n).astype(np.int64) + np.bincount(season.b, 2 - a_wins, n).astype(np.int64)
    return [(season.spec.game, season.names[i], float(elo[i]), int(games[i]), updated_at, float(1.96 * se[i]),
             int(wins[i]), int(games[i] - wins[i]), 0)
            for i in np.flatnonzero(played).tolist()]


def bot_rows(season: Season, scheme: str | None = None) -> list[tuple]:
    """``bots`` rows ``(name, salt, token_hash, created_at[, hash_scheme])``: random bytes, so
    no token matches (the bench registers its own bots' tokens afterwards, :meth:`Store.add_bot`),
    under the hash ``scheme`` when the schema names one (that of the tokens the arena generates,
    as :meth:`Store.add_launched_bot` does: a wrong token costs no slow hash)."""
    rng = np.random.default_rng(season.spec.seed + 2)
    extra = () if scheme is None else (scheme,)
    return [(name, rng.bytes(16), rng.bytes(32), season.started_at, *extra) for name in season.names]


# --------------------------------------------------------------------------- loading


@dataclass
class SeedReport:
    """How seeding went: seconds per step (``generate``, ``bots``, ``matches``, ``indexes``,
    ``ladder``, ``finish``, ``checkpoint``) and in all, rows written per table."""

    seconds: dict[str, float] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def total_s(self) -> float:
        """Seconds in all."""
        return sum(self.seconds.values())


def seed_store(store: Store, spec: SeasonSpec, progress: Callable[[str], None] = lambda _: None,
               now: float | None = None) -> SeedReport:
    """Fill ``store`` (an SQLite or PostgreSQL :class:`Store` with no match yet) with the season
    of ``spec`` (module docstring). ``progress`` gets a line per step. Raises ``ValueError`` if
    the store already holds matches."""
    if store.run(select(func.count()).select_from(match_table)).scalar_one():
        raise ValueError(f"{store.path} already holds matches: seed an empty store")
    report = SeedReport()
    clock = time.perf_counter()

    def lap(step: str) -> None:
        nonlocal clock
        report.seconds[step] = report.seconds.get(step, 0.0) + time.perf_counter() - clock
        clock = time.perf_counter()

    season = make_season(spec, now)
    lap("generate")
    loader = _PgLoader(store) if store.dialect == "postgresql" else _SqliteLoader(store)
    tid = store.create_tournament(spec.game, "ladder", spec.seed, {"name": "bench-season (seeded history)",
                                                                   "game": spec.game, "pairing": "rating"}, [], [])
    store.run(update(tournaments).where(tournaments.c.id == tid).values(created_at=season.started_at))
    loader.begin()
    columns = ("name", "salt", "token_hash", "created_at", "hash_scheme")
    report.rows["bots"] = loader.load("bots", columns, bot_rows(season, FAST))
    lap("bots")
    indexes = loader.drop_indexes("matches")
    done = 0
    for k0 in range(0, season.pairs, CHUNK // 2):
        k1 = min(k0 + CHUNK // 2, season.pairs)
        done += loader.load("matches", MATCH_COLUMNS, match_rows(season, tid, k0, k1))
        progress(f"matches: {done:,} of {spec.matches:,}")
    report.rows["matches"] = done
    lap("matches")
    progress(f"indexes of matches: {', '.join(name for name, _ in indexes) or 'none'}")
    loader.create_indexes(indexes)
    lap("indexes")
    last = float(season.finished_at[-1, -1])
    for table, columns, rows in (
        ("ladder_units", ("game", "a", "b", "points", "games", "n"), ladder_unit_rows(season)),
        ("pair_counts", ("game", "a", "b", "n"), pair_count_rows(season)),
        ("ladder", ("game", "bot", "elo", "games", "updated_at", "ci95", "wins", "losses", "draws"),
         ladder_rows(season, last)),
        ("ladder_state", ("game", "results", "fitted_results", "fitted_at", "fit_ms"),
         [(spec.game, spec.matches, spec.matches, last, None)]),
    ):
        report.rows[table] = loader.load(table, columns, rows)
    lap("ladder")
    progress("finishing (PostgreSQL: VACUUM ANALYZE)" if store.dialect == "postgresql" else "finishing")
    loader.finish()
    lap("finish")
    loader.settle()
    lap("checkpoint")
    return report


class _SqliteLoader:
    """Bulk inserts into an SQLite store (module docstring): raw driver calls on the store's own
    connection (``store.db``), as :func:`arena.store.seed.season` does; millions of rows."""

    def __init__(self, store: Store) -> None:
        self.db = store.db

    def begin(self) -> None:
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "foreign_keys=OFF", "cache_size=-524288"):
            self.db.execute(f"PRAGMA {pragma}")

    def load(self, table: str, columns: tuple[str, ...], rows: Any) -> int:
        cur = self.db.cursor()
        cur.execute("BEGIN")
        cur.executemany(f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows)
        n = cur.rowcount
        cur.execute("COMMIT")
        return n

    def drop_indexes(self, table: str) -> list[tuple[str, str]]:
        indexes = [(r[0], r[1]) for r in self.db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type='index' AND tbl_name=? AND sql IS NOT NULL", (table,))]
        for name, _ in indexes:
            self.db.execute(f"DROP INDEX {name}")
        return indexes

    def create_indexes(self, indexes: list[tuple[str, str]]) -> None:
        for _, sql in indexes:
            self.db.execute(sql)

    def finish(self) -> None:
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")

    def settle(self) -> None:
        """Nothing to settle (the file is copied for each run)."""


class _PgLoader:
    """``COPY`` into a PostgreSQL store (module docstring), on the store's own connection."""

    def __init__(self, store: Store) -> None:
        self.conn = store.db  # psycopg, autocommit

    def begin(self) -> None:
        self.conn.execute("SET maintenance_work_mem = '256MB'")
        self.conn.execute("SET synchronous_commit = off")

    def load(self, table: str, columns: tuple[str, ...], rows: Any) -> int:
        n = 0
        with self.conn.transaction(), self.conn.cursor() as cur:
            with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
                    n += 1
        return n

    def drop_indexes(self, table: str) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = %s "
            "AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass)",
            (table, table)).fetchall()
        indexes = [(r[0], r[1]) for r in rows]
        for name, _ in indexes:
            self.conn.execute(f"DROP INDEX {name}")
        return indexes

    def create_indexes(self, indexes: list[tuple[str, str]]) -> None:
        for _, sql in indexes:
            self.conn.execute(sql)

    def finish(self) -> None:
        self.conn.execute("SELECT setval(pg_get_serial_sequence('matches', 'id'), (SELECT MAX(id) FROM matches))")
        for table in ("bots", "matches", "ladder_units", "pair_counts", "ladder", "ladder_state"):
            self.conn.execute(f"VACUUM ANALYZE {table}")
        self.conn.execute("RESET maintenance_work_mem")
        self.conn.execute("RESET synchronous_commit")

    def settle(self) -> None:
        """A checkpoint: the seed's gigabytes written out now, not by a checkpoint spread over the
        run that follows (``checkpoint_completion_target`` of ``checkpoint_timeout``: minutes) with
        its full-page images of every page first written after it: the full store starts at rest,
        as the empty one does. Skipped if the role may not (PostgreSQL 15: superuser or
        ``pg_checkpoint``)."""
        import psycopg

        try:
            self.conn.execute("CHECKPOINT")
        except psycopg.Error:
            pass


