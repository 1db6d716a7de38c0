"""SQLite persistence: bots and their tokens, tournaments, matches.

One file (``arena.db`` by default) in WAL mode through the standard ``sqlite3`` module.
Every match is inserted as ``pending`` when its tournament is scheduled, so an interrupted
tournament knows exactly what is left; :meth:`Store.record_result` commits a result before
anyone is told of it (design.md, "Persistence and scale").

Tokens are never stored: only a random salt and ``hashlib.scrypt(token, salt)``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import time
from pathlib import Path
from typing import Any

import msgspec

SCHEMA = """
CREATE TABLE IF NOT EXISTS bots (
    name        TEXT PRIMARY KEY,
    salt        BLOB NOT NULL,
    token_hash  BLOB NOT NULL,
    created_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS tournaments (
    id          INTEGER PRIMARY KEY,
    game        TEXT NOT NULL,
    format      TEXT NOT NULL,
    seed        INTEGER NOT NULL,
    config      TEXT NOT NULL,
    bots        TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'running',
    created_at  REAL NOT NULL,
    finished_at REAL
);
CREATE TABLE IF NOT EXISTS matches (
    id            INTEGER PRIMARY KEY,
    tournament_id INTEGER NOT NULL REFERENCES tournaments(id),
    idx           INTEGER NOT NULL,
    match_key     TEXT NOT NULL UNIQUE,
    game          TEXT NOT NULL,
    bot0          TEXT NOT NULL,
    bot1          TEXT NOT NULL,
    seed          INTEGER NOT NULL,
    status        TEXT NOT NULL DEFAULT 'pending',
    winner_seat   INTEGER,
    winner        TEXT,
    score0        INTEGER,
    score1        INTEGER,
    manches0      INTEGER,
    manches1      INTEGER,
    reason        TEXT,
    detail        TEXT,
    faulty_seat   INTEGER,
    decisions     INTEGER,
    deals         INTEGER,
    duration_ms   INTEGER,
    margin        INTEGER,
    log_hash      TEXT,
    log_path      TEXT,
    finished_at   REAL,
    UNIQUE (tournament_id, idx)
);
CREATE INDEX IF NOT EXISTS matches_by_status ON matches(tournament_id, status);
CREATE TABLE IF NOT EXISTS auctions (
    tournament_id INTEGER NOT NULL REFERENCES tournaments(id),
    idx           INTEGER NOT NULL,
    bids          TEXT NOT NULL,
    winner        TEXT NOT NULL,
    price         INTEGER NOT NULL,
    created_at    REAL NOT NULL,
    PRIMARY KEY (tournament_id, idx)
);
CREATE TABLE IF NOT EXISTS submissions (
    name        TEXT PRIMARY KEY REFERENCES bots(name) ON DELETE CASCADE,
    manifest    TEXT NOT NULL,
    sandbox     INTEGER NOT NULL DEFAULT 0,
    created_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS spectators (
    name        TEXT PRIMARY KEY,
    salt        BLOB NOT NULL,
    token_hash  BLOB NOT NULL,
    created_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS wager_ledger (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    snapshot        TEXT NOT NULL,
    settled_levies  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS wager_bets (
    match_key   TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    bettor      TEXT NOT NULL,
    seat        INTEGER NOT NULL,
    stake       INTEGER NOT NULL,
    matched     INTEGER NOT NULL,
    returned    INTEGER NOT NULL,
    payout      INTEGER NOT NULL,
    levy        INTEGER NOT NULL,
    status      TEXT NOT NULL,
    reason      TEXT NOT NULL,
    PRIMARY KEY (match_key, seq)
);
CREATE TABLE IF NOT EXISTS ladder (
    game        TEXT NOT NULL,
    bot         TEXT NOT NULL,
    elo         REAL NOT NULL,
    games       INTEGER NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (game, bot)
);
"""

SCRYPT = {"n": 2**14, "r": 8, "p": 1}
"""scrypt cost parameters for token hashes (about 30 ms per check on one core)."""


def hash_token(token: str, salt: bytes) -> bytes:
    """scrypt hash of ``token`` with ``salt`` (32-byte digest)."""
    return hashlib.scrypt(token.encode(), salt=salt, dklen=32, **SCRYPT)


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


class Store:
    """The arena database at ``path`` (``":memory:"`` for tests). Not thread-safe: one
    ``Store`` per trio run; every method is a short blocking call."""

    def __init__(self, path: str | Path = "arena.db") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Add columns that later versions introduced to a database made by an earlier one."""
        have = {r[1] for r in self.db.execute("PRAGMA table_info(matches)")}
        for column, kind in (("margin", "INTEGER"), ("pair_key", "TEXT"), ("log_hash", "TEXT")):
            if column not in have:
                self.db.execute(f"ALTER TABLE matches ADD COLUMN {column} {kind}")

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    # ------------------------------------------------------------------ bots and tokens

    def add_bot(self, name: str, token: str | None = None) -> str:
        """Register ``name`` (or replace its token) and return the token, which is stored only
        as a salted scrypt hash. Raises ``ValueError`` for an empty or over-long name."""
        return self._set_secret("bots", "bot", name, token)

    def _set_secret(self, table: str, what: str, name: str, token: str | None) -> str:
        """Store a salted scrypt hash of ``token`` (a fresh one if None) for ``name`` in
        ``table`` (``bots`` or ``spectators``); return the token."""
        if not name or len(name) > 64 or not name.isprintable():
            raise ValueError(f"a {what} name is 1-64 printable characters")
        token = token or secrets.token_urlsafe(24)
        salt = secrets.token_bytes(16)
        self.db.execute(
            f"INSERT INTO {table}(name, salt, token_hash, created_at) VALUES (?,?,?,?) "
            "ON CONFLICT(name) DO UPDATE SET salt=excluded.salt, token_hash=excluded.token_hash",
            (name, salt, hash_token(token, salt), time.time()),
        )
        return token

    def bot_id(self, name: str) -> int:
        """The database id of registered bot ``name`` (for file names: never a name in a
        path). Raises ``KeyError`` if it is not registered."""
        row = self.db.execute("SELECT rowid FROM bots WHERE name=?", (name,)).fetchone()
        if row is None:
            raise KeyError(name)
        return int(row[0])

    def check_token(self, name: str, token: str) -> bool:
        """True if ``name`` is registered and ``token`` is its token (constant-time compare)."""
        row = self.db.execute("SELECT salt, token_hash FROM bots WHERE name=?", (name,)).fetchone()
        if row is None:
            hash_token(token, b"0" * 16)  # same cost whether or not the name exists
            return False
        return hmac.compare_digest(hash_token(token, row["salt"]), row["token_hash"])

    def bot_names(self) -> list[str]:
        """All registered bot names, sorted."""
        return [r[0] for r in self.db.execute("SELECT name FROM bots ORDER BY name")]

    # ------------------------------------------------------------------ spectators and wagers

    def add_spectator(self, name: str, token: str | None = None) -> str:
        """Register a betting spectator (or replace its token); return the token, stored only
        as a salted scrypt hash."""
        return self._set_secret("spectators", "spectator", name, token)

    def spectator_secret(self, name: str) -> tuple[bytes, bytes] | None:
        """``(salt, token hash)`` of a betting spectator, or None."""
        row = self.db.execute("SELECT salt, token_hash FROM spectators WHERE name=?", (name,)).fetchone()
        return (row[0], row[1]) if row else None

    def load_ledger(self) -> tuple[bytes, int] | None:
        """The stored wager ledger: ``(snapshot JSON, levies of settled books dropped from it)``."""
        row = self.db.execute("SELECT snapshot, settled_levies FROM wager_ledger WHERE id=1").fetchone()
        return (row[0].encode(), row[1]) if row else None

    def save_ledger(self, snapshot: bytes, settled_levies: int, settled: list[tuple] = ()) -> None:
        """Store the ledger snapshot and, in the same transaction, the bets of books just settled
        (rows ``(match_key, seq, bettor, seat, stake, matched, returned, payout, levy, status,
        reason)``)."""
        with self._tx():
            self.db.execute(
                "INSERT INTO wager_ledger(id, snapshot, settled_levies) VALUES (1, ?, ?) ON CONFLICT(id) "
                "DO UPDATE SET snapshot=excluded.snapshot, settled_levies=excluded.settled_levies",
                (snapshot.decode(), settled_levies),
            )
            self.db.executemany("INSERT INTO wager_bets VALUES (?,?,?,?,?,?,?,?,?,?,?)", settled)

    def submit_bot(self, name: str, manifest: str, sandbox: bool = False) -> None:
        """Register ``name`` as a bot the contest server launches from ``manifest`` (an
        absolute path). Its token is made afresh at each launch."""
        self.add_bot(name)
        self.db.execute(
            "INSERT INTO submissions(name, manifest, sandbox, created_at) VALUES (?,?,?,?) "
            "ON CONFLICT(name) DO UPDATE SET manifest=excluded.manifest, sandbox=excluded.sandbox",
            (name, manifest, int(sandbox), time.time()),
        )

    def submissions(self) -> list[tuple[str, str, int]]:
        """Submitted bots as ``(name, manifest path, sandbox)``."""
        return [tuple(r) for r in self.db.execute("SELECT name, manifest, sandbox FROM submissions ORDER BY name")]

    def remove_bot(self, name: str) -> bool:
        """Unregister a bot (token and submission; its matches and ladder history stay).
        Returns False if it was not registered."""
        with self._tx():
            self.db.execute("DELETE FROM submissions WHERE name=?", (name,))
            cur = self.db.execute("DELETE FROM bots WHERE name=?", (name,))
        return cur.rowcount > 0

    def bots_overview(self, game: str) -> list[tuple[str, str, float | None, int]]:
        """Every registered bot: ``(name, kind, ladder Elo or None, ladder games)``; kind is
        ``submitted`` (launched by the server) or ``remote`` (connects with its token)."""
        rows = self.db.execute(
            "SELECT b.name, s.name IS NOT NULL, l.elo, COALESCE(l.games, 0) FROM bots b "
            "LEFT JOIN submissions s ON s.name=b.name LEFT JOIN ladder l ON l.bot=b.name AND l.game=? ORDER BY b.name",
            (game,),
        )
        return [(r[0], "submitted" if r[1] else "remote", r[2], r[3]) for r in rows]

    # ------------------------------------------------------------------ tournaments

    def create_tournament(
        self, game: str, fmt: str, seed: int, config: Any, bots: list[str], matches: list[Any] = ()
    ) -> int:
        """Insert a tournament and the matches already scheduled (``arena.formats.Pairing`` or
        ``(bot0, bot1, seed)`` tuples) as pending, in one transaction; return its id."""
        with self._tx():
            cur = self.db.execute(
                "INSERT INTO tournaments(game, format, seed, config, bots, created_at) VALUES (?,?,?,?,?,?)",
                (
                    game,
                    fmt,
                    seed,
                    json.dumps(msgspec.to_builtins(config), sort_keys=True),
                    json.dumps(bots),
                    time.time(),
                ),
            )
            tid = int(cur.lastrowid)
            for i, m in enumerate(matches):
                self._insert_match(tid, game, m if not isinstance(m, tuple) else _tuple_pairing(i, m))
        return tid

    def _insert_match(self, tid: int, game: str, p: Any) -> str:
        key = f"t{tid}-m{p.index + 1:04d}"
        self.db.execute(
            "INSERT OR IGNORE INTO matches(tournament_id, idx, match_key, game, bot0, bot1, seed, pair_key) "
            "VALUES (?,?,?,?,?,?,?,?)",
            (tid, p.index, key, game, p.bot0, p.bot1, p.seed, p.pair),
        )
        return key

    def add_match(self, tournament_id: int, game: str, pairing: Any) -> MatchRow:
        """Schedule one match (a ``Pairing``) of a format that decides as it goes; idempotent
        (a resumed tournament gets the existing row back). Returns its row."""
        with self._tx():
            key = self._insert_match(tournament_id, game, pairing)
        return self.match_row(key)

    def match_row(self, match_key: str) -> MatchRow:
        """The scheduled match ``match_key``; ``LookupError`` if unknown."""
        row = self.db.execute(
            "SELECT id, tournament_id, idx, match_key, game, bot0, bot1, seed, status FROM matches WHERE match_key=?",
            (match_key,),
        ).fetchone()
        if row is None:
            raise LookupError(match_key)
        return MatchRow(**dict(row))

    def match_by_index(self, tournament_id: int, idx: int) -> dict[str, Any] | None:
        """Match number ``idx`` of a tournament as a dict, or None."""
        row = self.db.execute("SELECT * FROM matches WHERE tournament_id=? AND idx=?", (tournament_id, idx)).fetchone()
        return dict(row) if row else None

    def record_auction(self, tournament_id: int, idx: int, bids: dict[str, int], winner: str, price: int) -> None:
        """Commit a chouette auction (ecarte.md §E9.3)."""
        with self._tx():
            self.db.execute(
                "INSERT INTO auctions(tournament_id, idx, bids, winner, price, created_at) VALUES (?,?,?,?,?,?)",
                (tournament_id, idx, json.dumps(bids, sort_keys=True), winner, price, time.time()),
            )

    def auction(self, tournament_id: int, idx: int) -> dict[str, Any] | None:
        """A recorded auction (``bids`` decoded), or None."""
        row = self.db.execute(
            "SELECT * FROM auctions WHERE tournament_id=? AND idx=?", (tournament_id, idx)
        ).fetchone()
        if row is None:
            return None
        out = dict(row)
        out["bids"] = json.loads(out["bids"])
        return out

    def pair_results(self, tournament_id: int) -> list[tuple[str, str, float]]:
        """Completed duplicate pairs as ``(a, b, points of a over the two matches)`` (0-2, a
        draw counting ½), ``a`` being seat 0 of the pair's first match."""
        rows = self.db.execute(
            "SELECT pair_key, bot0, bot1, winner_seat FROM matches WHERE tournament_id=? AND status='done' "
            "AND pair_key IS NOT NULL ORDER BY idx",
            (tournament_id,),
        ).fetchall()
        first: dict[str, tuple[str, str, float]] = {}
        out = []
        for key, b0, b1, w in rows:
            s0 = 1.0 if w == 0 else 0.0 if w == 1 else 0.5
            if key not in first:
                first[key] = (b0, b1, s0)
            else:
                a, b, sa = first.pop(key)
                out.append((a, b, sa + (s0 if b0 == a else 1.0 - s0)))
        return out

    def _ladder_step(self, game: str, bot0: str, bot1: str, score0: float) -> tuple[float, float]:
        """Incremental Elo for the persistent ladder (per bot, per game; K-factor and starting
        rating from ``arena.rating``), inside the caller's transaction."""
        from arena.rating import ANCHOR, elo_update

        def current(bot: str) -> tuple[float, int]:
            row = self.db.execute("SELECT elo, games FROM ladder WHERE game=? AND bot=?", (game, bot)).fetchone()
            return (row[0], row[1]) if row else (ANCHOR, 0)

        (r0, g0), (r1, g1) = current(bot0), current(bot1)
        n0, n1 = elo_update(r0, r1, score0)
        now = time.time()
        for bot, r, g in ((bot0, n0, g0 + 1), (bot1, n1, g1 + 1)):
            self.db.execute(
                "INSERT INTO ladder(game, bot, elo, games, updated_at) VALUES (?,?,?,?,?) ON CONFLICT(game, bot) "
                "DO UPDATE SET elo=excluded.elo, games=excluded.games, updated_at=excluded.updated_at",
                (game, bot, r, g, now),
            )
        return n0, n1

    def ladder(self, game: str) -> list[tuple[str, float, int]]:
        """The persistent ladder of ``game``: ``(bot, elo, games)``, best first."""
        rows = self.db.execute("SELECT bot, elo, games FROM ladder WHERE game=? ORDER BY elo DESC, bot", (game,))
        return [(r[0], r[1], r[2]) for r in rows]

    def tournament(self, tournament_id: int | None = None) -> dict[str, Any] | None:
        """A tournament row as a dict (``config`` and ``bots`` decoded from JSON): the given id,
        or without one the newest tournament that is not finished. None if there is none."""
        if tournament_id is None:
            row = self.db.execute(
                "SELECT * FROM tournaments WHERE status != 'finished' ORDER BY id DESC LIMIT 1"
            ).fetchone()
        else:
            row = self.db.execute("SELECT * FROM tournaments WHERE id=?", (tournament_id,)).fetchone()
        if row is None:
            return None
        out = dict(row)
        out["config"] = json.loads(out["config"])
        out["bots"] = json.loads(out["bots"])
        return out

    def pending_matches(self, tournament_id: int) -> list[MatchRow]:
        """Matches of the tournament not yet recorded, in schedule order."""
        rows = self.db.execute(
            "SELECT id, tournament_id, idx, match_key, game, bot0, bot1, seed, status FROM matches "
            "WHERE tournament_id=? AND status='pending' ORDER BY idx",
            (tournament_id,),
        ).fetchall()
        return [MatchRow(**dict(r)) for r in rows]

    def record_result(self, match_key: str, result: Any, log_path: str | None, log_hash: str | None = None) -> None:
        """Commit a match result (an ``arena.referee.MatchResult``) and its step on the
        persistent ladder, in one transaction. Raises ``LookupError`` if the match is unknown
        or already recorded (a result is never counted twice)."""
        with self._tx():
            row = self.db.execute(
                "SELECT bot0, bot1, status, game FROM matches WHERE match_key=?", (match_key,)
            ).fetchone()
            if row is None or row["status"] != "pending":
                raise LookupError(f"match {match_key} is not pending")
            winner = None if result.winner is None else (row["bot0"], row["bot1"])[result.winner]
            self.db.execute(
                "UPDATE matches SET status=?, winner_seat=?, winner=?, score0=?, score1=?, manches0=?, "
                "manches1=?, reason=?, detail=?, faulty_seat=?, decisions=?, deals=?, duration_ms=?, "
                "margin=?, log_hash=?, log_path=?, finished_at=? WHERE match_key=?",
                (
                    "aborted" if result.reason == "aborted" else "done",
                    result.winner,
                    winner,
                    result.scores[0],
                    result.scores[1],
                    result.manches[0],
                    result.manches[1],
                    result.reason,
                    result.detail,
                    result.faulty,
                    result.decisions,
                    result.deals,
                    result.duration_ms,
                    result.margin,
                    log_hash,
                    log_path,
                    time.time(),
                    match_key,
                ),
            )
            if result.reason != "aborted":  # the persistent ladder moves in the same commit
                score0 = 1.0 if result.winner == 0 else 0.0 if result.winner == 1 else 0.5
                self._ladder_step(row["game"], row["bot0"], row["bot1"], score0)

    def finish_tournament(self, tournament_id: int) -> None:
        """Mark a tournament finished."""
        self.db.execute(
            "UPDATE tournaments SET status='finished', finished_at=? WHERE id=?", (time.time(), tournament_id)
        )

    def matches(self, tournament_id: int) -> list[dict[str, Any]]:
        """All matches of a tournament as dicts, in schedule order."""
        rows = self.db.execute("SELECT * FROM matches WHERE tournament_id=? ORDER BY idx", (tournament_id,))
        return [dict(r) for r in rows]

    def results(self, tournament_id: int) -> list[tuple[str, str, float]]:
        """Finished matches as ``(bot0, bot1, score of bot0)`` with 1 win, 0 loss, 0.5 draw."""
        rows = self.db.execute(
            "SELECT bot0, bot1, winner_seat FROM matches WHERE tournament_id=? AND status='done' ORDER BY idx",
            (tournament_id,),
        )
        return [(r[0], r[1], 1.0 if r[2] == 0 else 0.0 if r[2] == 1 else 0.5) for r in rows]

    def _tx(self) -> _Tx:
        return _Tx(self.db)


def _tuple_pairing(i: int, m: tuple) -> Any:
    from arena.formats import Pairing

    return Pairing(index=i, bot0=m[0], bot1=m[1], seed=m[2])


class _Tx:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK`` on error)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
