"""Databases as an arena from before Alembic left them (tests of ``arena db upgrade``, arena/store/upgrade.py)."""

from __future__ import annotations

from sqlalchemy import text

from arena.store.sqlite import Store
from arena.store.upgrade import AFTER_BASELINE

LEGACY_SCHEMA = """
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
CREATE INDEX IF NOT EXISTS matches_by_game ON matches(game, status);
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
    ci95        REAL,
    PRIMARY KEY (game, bot)
);
"""
"""The tables of the first versioned release (schema 1), as arena before Alembic wrote them on SQLite."""


def as_legacy(store: Store, version: int) -> None:
    """Make ``store``'s database look as the hand-written migrations left it at ``version``: no
    Alembic stamp, no table of a later revision (:data:`arena.store.upgrade.AFTER_BASELINE`), the
    version in ``PRAGMA user_version`` (SQLite) or ``schema_version`` (PostgreSQL)."""
    store.run(text("DROP TABLE alembic_version"))
    for table in sorted(AFTER_BASELINE):
        store.run(text(f"DROP TABLE {table}"))
    if store.dialect == "sqlite":
        store.run(text(f"PRAGMA user_version={int(version)}"))
    else:
        store.run(text("CREATE TABLE schema_version (version BIGINT NOT NULL)"))
        store.run(text("INSERT INTO schema_version(version) VALUES (:v)"), {"v": version})


def sql(store: Store, statement: str, **params: object) -> object:
    """Run ``statement`` (standard SQL with named binds, ``:name``) on ``store``, either backend: a
    test's own look at the rows."""
    return store.run(text(statement), params)
