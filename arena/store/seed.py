"""A synthetic season in a store, for benchmarks and scale tests: :func:`season`.

Bots, one ladder tournament of finished matches, the ladder and the counters each result keeps,
bulk-inserted in one transaction (``executemany`` on SQLite, ``COPY`` on PostgreSQL) without
playing anything. The matches are duplicate pairs (the second half with the seats swapped)
between bots at most 30 apart in strength, as a rating-neighbour pairing makes them; 0.5% are
aborted, 1% lost by a fault (a timeout); the winner follows the Elo model of the bots' hidden
strengths. The ladder holds those strengths with some noise: 2% of the bots have no interval
yet and 3% a wide one (both provisional). ``ladder_state`` says the ratings were fitted 12.3 s
ago and lag 37 results. No match has a log.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, func, insert, select, text

from arena.store.schema import ladder_state, tournaments

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
         "Mike", "november", "Oscar", "papa")
"""First parts of the seeded bots' names (two in capitals: a search by name ignores case)."""

MATCH_COLUMNS = ("id", "tournament_id", "idx", "match_key", "game", "bot0", "bot1", "seed", "status", "winner_seat",
                 "winner", "score0", "score1", "manches0", "manches1", "reason", "detail", "faulty_seat", "decisions",
                 "deals", "duration_ms", "margin", "log_hash", "log_path", "finished_at", "pair_key")

SEASON_S = 30 * 86400
"""The seeded matches finish evenly over this many seconds, up to now."""


_COUNT_TOURNAMENTS = select(func.count()).select_from(tournaments)


def bot_names(n: int) -> list[str]:
    """``n`` distinct valid bot names: ``alpha00000``, ``bravo00001``, ..."""
    return [f"{WORDS[i % len(WORDS)]}{i:05d}" for i in range(n)]


def is_empty(store: Any) -> bool:
    """True if ``store`` has no tournament yet (nothing to overwrite)."""
    return store.run(_COUNT_TOURNAMENTS).scalar_one() == 0


class _Matches:
    """The synthetic matches, made a chunk at a time, and what each result keeps (per bot games,
    pair counts, ladder units)."""

    def __init__(self, names: list[str], strength: list[float], game: str, total: int, rng: random.Random) -> None:
        self.names, self.strength, self.game, self.total, self.rng = names, strength, game, total, rng
        self.t0 = time.time() - SEASON_S
        self.games = dict.fromkeys(names, 0)
        self.wins = dict.fromkeys(names, 0)
        self.pairs: dict[tuple[str, str], int] = {}
        self.units: dict[tuple[str, str, float], int] = {}
        self.done = 0
        self._pair = (0, 0)

    def rows(self, lo: int, hi: int) -> list[tuple]:
        """Matches ``lo`` to ``hi - 1`` (ids from 1) as rows of :data:`MATCH_COLUMNS`."""
        rng, names = self.rng, self.names
        out = []
        for i in range(lo, hi):
            if i % 2 == 0:  # a new duplicate pair between rating neighbours
                a = rng.randrange(len(names))
                self._pair = (a, (a + rng.randint(1, 30) * rng.choice((-1, 1))) % len(names))
            else:  # its second half, seats swapped
                self._pair = self._pair[::-1]
            a, b = self._pair
            b0, b1 = names[a], names[b]
            roll = rng.random()
            seat = faulty = None
            if roll >= 0.005:
                seat = 0 if rng.random() < 1 / (1 + 10 ** ((self.strength[b] - self.strength[a]) / 400)) else 1
                faulty = 1 - seat if roll < 0.015 else None
                self._count(b0, b1, seat)
            s0, s1 = (5, rng.randint(0, 4)) if seat == 0 else (rng.randint(0, 4), 5) if seat == 1 else (0, 0)
            out.append((i + 1, 1, i, f"t1-m{i + 1:08d}", self.game, b0, b1, rng.getrandbits(31),
                        "aborted" if seat is None else "done", seat, None if seat is None else (b0, b1)[seat],
                        s0, s1, int(seat == 0), int(seat == 1),
                        "aborted" if seat is None else "forfeit_timeout" if faulty is not None else "target",
                        "did not answer in time" if faulty is not None else "", faulty, rng.randint(20, 80),
                        rng.randint(2, 9), rng.randint(50, 900), abs(s0 - s1), None, None,
                        self.t0 + (i + 1) * SEASON_S / max(1, self.total), f"p{i // 2}"))
        return out

    def _count(self, b0: str, b1: str, seat: int) -> None:
        self.done += 1
        self.games[b0] += 1
        self.games[b1] += 1
        self.wins[(b0, b1)[seat]] += 1
        for pair in ((b0, b1), (b1, b0)):
            self.pairs[pair] = self.pairs.get(pair, 0) + 1
        unit = (b0, b1, 1.0 if seat == 0 else 0.0)
        self.units[unit] = self.units.get(unit, 0) + 1


def _insert(store: Any, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """Bulk-insert ``rows`` into ``table`` inside the open transaction: the driver's own bulk path
    (``COPY`` on PostgreSQL, ``executemany`` on SQLite) on the store's connection (``store.db``),
    the one place the store runs SQL past SQLAlchemy: a season is millions of rows."""
    if not rows:
        return
    if store.dialect == "postgresql":
        with store.db.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    store.db.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({','.join('?' * len(columns))})", rows)


def season(store: Any, bots: int = 10_000, matches: int = 1_000_000, *, game: str = "ecarte", rng_seed: int = 1,
           chunk: int = 50_000, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Fill an empty ``store`` (:class:`arena.store.sqlite.Store`, SQLite or PostgreSQL; see
    :func:`is_empty`) with a season of ``bots`` bots and ``matches`` finished matches of
    ``game`` (see the module docstring), in one transaction, ``chunk`` matches at a time;
    ``progress(done, total)`` after each chunk. Returns ``{"bots", "matches", "results" (not
    aborted), "seconds"}``. Raises ``ValueError`` for a store that is not empty."""
    if not is_empty(store):
        raise ValueError("the store already holds a history: seed an empty one")
    start = time.perf_counter()
    rng = random.Random(rng_seed)
    names = bot_names(bots)
    made = _Matches(names, sorted((rng.gauss(1500, 200) for _ in names), reverse=True), game, matches, rng)
    now = time.time()
    with store.transaction():
        _insert(store, "bots", ("name", "salt", "token_hash", "created_at"),
                [(n, os.urandom(16), os.urandom(32), made.t0) for n in names])
        store.run(insert(tournaments), {"id": 1, "game": game, "format": "ladder", "seed": rng_seed, "config": "{}",
                                        "bots": "[]", "created_at": made.t0, "status": "finished"})
        for lo in range(0, matches, chunk):
            _insert(store, "matches", MATCH_COLUMNS, made.rows(lo, min(matches, lo + chunk)))
            if progress is not None:
                progress(min(matches, lo + chunk), matches)
        ladder = []
        for name, strength in zip(names, made.strength, strict=True):
            roll = rng.random()
            ci95 = None if roll < 0.02 else rng.uniform(110, 300) if roll < 0.05 else rng.uniform(20, 60)
            ladder.append((game, name, strength + rng.gauss(0, 15), made.games[name], now - 12.3, ci95,
                           made.wins[name], made.games[name] - made.wins[name], 0))
        _insert(store, "ladder", ("game", "bot", "elo", "games", "updated_at", "ci95", "wins", "losses", "draws"),
                ladder)
        _insert(store, "pair_counts", ("game", "a", "b", "n"), [(game, a, b, n) for (a, b), n in made.pairs.items()])
        _insert(store, "ladder_units", ("game", "a", "b", "points", "games", "n"),
                [(game, a, b, s, 1, n) for (a, b, s), n in made.units.items()])
        store.run(delete(ladder_state).where(ladder_state.c.game == game))
        store.run(insert(ladder_state), {"game": game, "results": made.done, "fitted_results": max(0, made.done - 37),
                                         "fitted_at": now - 12.3, "fit_ms": 850})
    if store.dialect == "postgresql":  # ids were given: the identity columns go on after them
        for table in ("tournaments", "matches"):
            store.run(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))"))
        store.run(text("ANALYZE"))
    return {"bots": bots, "matches": matches, "results": made.done, "seconds": time.perf_counter() - start}
