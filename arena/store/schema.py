"""The arena's schema, once, as SQLAlchemy Core tables: what every statement of :mod:`arena.store` reads.

One :data:`metadata` holds every table and index of the store, the same on SQLite and PostgreSQL
(schema 9 of the hand-written migrations, which Alembic's baseline revision stands for:
:mod:`arena.store.migrations`). The types say what each backend stores:

* integers: ``INTEGER`` on SQLite (64-bit; ``INTEGER PRIMARY KEY`` is the row id), ``BIGINT`` on
  PostgreSQL, where an integer primary key is an identity column (:data:`Int`, :func:`_id`);
* reals: ``REAL`` on SQLite, ``DOUBLE PRECISION`` on PostgreSQL (:data:`Real`);
* bytes: ``BLOB`` / ``BYTEA``;
* text: ``TEXT``, with the ``"C"`` collation on PostgreSQL (:data:`Str`): text sorts by its bytes
  there as it does in SQLite, whatever the database's locale, so a keyset page (``ORDER BY bot``)
  reads the same rows on both;
* ``bots`` has SQLite's implicit ``rowid`` (``Store.bot_id`` reads it); on PostgreSQL it is a last
  identity column of the same name, added when the table is made (:data:`_PG_BOTS_ROWID`).

Times are Unix seconds (``REAL``) except in ``match_queue`` and ``match_events`` (milliseconds,
``BIGINT``). Where NULLs sort differs between the two (first in SQLite, last in PostgreSQL), the
statements that order by a nullable column say where they go.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Double,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    event,
    func,
    text,
)
from sqlalchemy.schema import DDL
from sqlalchemy.types import REAL

Int = BigInteger().with_variant(Integer(), "sqlite")
"""An integer column: ``INTEGER`` on SQLite (so that ``INTEGER PRIMARY KEY`` is the row id), ``BIGINT`` on
PostgreSQL."""

Real = Double().with_variant(REAL(), "sqlite")
"""A floating-point column: ``REAL`` on SQLite, ``DOUBLE PRECISION`` on PostgreSQL."""

Str = Text().with_variant(Text(collation="C"), "postgresql")
"""A text column: ``TEXT``; on PostgreSQL ``COLLATE "C"`` (sorted by bytes, as SQLite sorts)."""

Bytes = LargeBinary()
"""A bytes column: ``BLOB`` on SQLite, ``BYTEA`` on PostgreSQL."""

HEAD = "0005"
"""The Alembic revision this code writes (the head of :mod:`arena.store.migrations`); a test checks
that it is the scripts' head. A database stamped with another known revision is behind
(``arena db upgrade``); with an unknown one, made by a newer arena."""

LEGACY_VERSION = 9
"""The last schema version of the hand-written migrations (``PRAGMA user_version`` on SQLite, the
``schema_version`` table on PostgreSQL): Alembic's baseline revision is this schema. A new SQLite
database gets it as its ``user_version`` too, so that an arena from before Alembic opens it."""

metadata = MetaData()
"""Every table and index of the store."""


def _id() -> Column:
    """An integer primary key ``id``: SQLite's row id, a PostgreSQL identity (``BY DEFAULT``: a bulk
    load may give ids itself)."""
    return Column("id", Int, Identity(), primary_key=True)


bots = Table(
    "bots", metadata,
    Column("name", Str, primary_key=True),
    Column("salt", Bytes, nullable=False),
    Column("token_hash", Bytes, nullable=False),
    Column("created_at", Real, nullable=False),
    Column("hash_scheme", Str, nullable=False, server_default=text("'scrypt'")),
)

_PG_BOTS_ROWID = DDL("ALTER TABLE bots ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY")
"""PostgreSQL has no implicit row id: ``bots`` gets one as its last column when it is made."""
event.listen(bots, "after_create", _PG_BOTS_ROWID.execute_if(dialect="postgresql"))

tournaments = Table(
    "tournaments", metadata,
    _id(),
    Column("game", Str, nullable=False),
    Column("format", Str, nullable=False),
    Column("seed", Int, nullable=False),
    Column("config", Str, nullable=False),
    Column("bots", Str, nullable=False),
    Column("status", Str, nullable=False, server_default=text("'running'")),
    Column("created_at", Real, nullable=False),
    Column("finished_at", Real),
)

matches = Table(
    "matches", metadata,
    _id(),
    Column("tournament_id", Int, ForeignKey("tournaments.id"), nullable=False),
    Column("idx", Int, nullable=False),
    Column("match_key", Str, nullable=False, unique=True),
    Column("game", Str, nullable=False),
    Column("bot0", Str, nullable=False),
    Column("bot1", Str, nullable=False),
    Column("seed", Int, nullable=False),
    Column("status", Str, nullable=False, server_default=text("'pending'")),
    Column("winner_seat", Int),
    Column("winner", Str),
    Column("score0", Int),
    Column("score1", Int),
    Column("manches0", Int),
    Column("manches1", Int),
    Column("reason", Str),
    Column("detail", Str),
    Column("faulty_seat", Int),
    Column("decisions", Int),
    Column("deals", Int),
    Column("duration_ms", Int),
    Column("margin", Int),
    Column("log_hash", Str),
    Column("log_path", Str),
    Column("finished_at", Real),
    Column("pair_key", Str),
    UniqueConstraint("tournament_id", "idx"),
)
_m = matches.c
_finished = _m.status != "pending"
Index("matches_by_status", _m.tournament_id, _m.status)
Index("matches_by_game", _m.game, _m.status)
Index("matches_by_pair", _m.tournament_id, _m.pair_key)
# the web pages (arena.store.pages): a game's finished matches newest first, one bot's in each seat,
# the matches a bot lost by its own fault (few: small indexes)
Index("matches_done", _m.game, _m.id, sqlite_where=_finished, postgresql_where=_finished)
Index("matches_bot0_done", _m.game, _m.bot0, _m.id, sqlite_where=_finished, postgresql_where=_finished)
Index("matches_bot1_done", _m.game, _m.bot1, _m.id, sqlite_where=_finished, postgresql_where=_finished)
Index("matches_faults0", _m.bot0, _m.id, sqlite_where=_m.faulty_seat == 0, postgresql_where=_m.faulty_seat == 0)
Index("matches_faults1", _m.bot1, _m.id, sqlite_where=_m.faulty_seat == 1, postgresql_where=_m.faulty_seat == 1)
# retention (arena.store.log_archive): matches by the time they finished
Index("matches_by_finished_at", _m.finished_at)

auctions = Table(
    "auctions", metadata,
    Column("tournament_id", Int, ForeignKey("tournaments.id"), nullable=False),
    Column("idx", Int, nullable=False),
    Column("bids", Str, nullable=False),
    Column("winner", Str, nullable=False),
    Column("price", Int, nullable=False),
    Column("created_at", Real, nullable=False),
    PrimaryKeyConstraint("tournament_id", "idx"),
)

submissions = Table(
    "submissions", metadata,
    Column("name", Str, ForeignKey("bots.name", ondelete="CASCADE"), primary_key=True),
    Column("manifest", Str, nullable=False),
    Column("sandbox", Int, nullable=False, server_default=text("0")),
    Column("created_at", Real, nullable=False),
)

spectators = Table(
    "spectators", metadata,
    Column("name", Str, primary_key=True),
    Column("salt", Bytes, nullable=False),
    Column("token_hash", Bytes, nullable=False),
    Column("created_at", Real, nullable=False),
    Column("hash_scheme", Str, nullable=False, server_default=text("'scrypt'")),
)

wager_ledger = Table(
    "wager_ledger", metadata,
    Column("id", Int, CheckConstraint("id = 1"), primary_key=True, autoincrement=False),
    Column("snapshot", Str, nullable=False),
    Column("settled_levies", Int, nullable=False),
)

wager_bets = Table(
    "wager_bets", metadata,
    Column("match_key", Str, nullable=False),
    Column("seq", Int, nullable=False),
    Column("bettor", Str, nullable=False),
    Column("seat", Int, nullable=False),
    Column("stake", Int, nullable=False),
    Column("matched", Int, nullable=False),
    Column("returned", Int, nullable=False),
    Column("payout", Int, nullable=False),
    Column("levy", Int, nullable=False),
    Column("status", Str, nullable=False),
    Column("reason", Str, nullable=False),
    PrimaryKeyConstraint("match_key", "seq"),
)

ladder = Table(
    "ladder", metadata,
    Column("game", Str, nullable=False),
    Column("bot", Str, nullable=False),
    Column("elo", Real, nullable=False),
    Column("games", Int, nullable=False),
    Column("updated_at", Real, nullable=False),
    Column("ci95", Real),
    # each bot's finished (not aborted) matches by outcome, kept by each result (revision 0003):
    # the leaderboard reads its page's rows only; points = wins + draws / 2
    Column("wins", Int, nullable=False, server_default=text("0")),
    Column("losses", Int, nullable=False, server_default=text("0")),
    Column("draws", Int, nullable=False, server_default=text("0")),
    # the bot's place in the last fit's layout (revision 0005): a fitter that starts orders by it
    Column("place", Int),
    PrimaryKeyConstraint("game", "bot"),
)
# the leaderboard by rank, and its search by a prefix of the name in any case
Index("ladder_by_elo", ladder.c.game, ladder.c.elo.desc(), ladder.c.bot)
Index("ladder_by_name", ladder.c.game, func.lower(ladder.c.bot), ladder.c.bot)

bot_status = Table(
    "bot_status", metadata,
    Column("name", Str, primary_key=True),
    Column("state", Str, nullable=False),
    Column("failures", Int, nullable=False, server_default=text("0")),
    Column("next_launch", Real),
    Column("last_output", Str, nullable=False, server_default=text("''")),
    Column("connected", Int, nullable=False, server_default=text("0")),
    Column("updated_at", Real, nullable=False),
)

bot_archives = Table(
    "bot_archives", metadata,
    Column("bot", Str, nullable=False),
    Column("version", Int, nullable=False),
    Column("sha256", Str, nullable=False),
    Column("size", Int, nullable=False),
    Column("data", Bytes, nullable=False),
    Column("created_at", Real, nullable=False),
    PrimaryKeyConstraint("bot", "version"),
)

authors = Table(
    "authors", metadata,
    _id(),
    Column("name", Str, nullable=False, unique=True),
    Column("salt", Bytes, nullable=False),
    Column("token_hash", Bytes, nullable=False),
    Column("status", Str, nullable=False, server_default=text("'active'")),
    Column("created_at", Real, nullable=False),
    Column("hash_scheme", Str, nullable=False, server_default=text("'scrypt'")),
)

bot_owners = Table(
    "bot_owners", metadata,
    Column("bot", Str, primary_key=True),
    Column("author_id", Int, nullable=False),
    Column("kind", Str, nullable=False),
    Column("created_at", Real, nullable=False),
)

invitations = Table(
    "invitations", metadata,
    Column("code_hash", Str, primary_key=True),
    Column("note", Str, nullable=False, server_default=text("''")),
    Column("created_at", Real, nullable=False),
    Column("used_by", Int),
    Column("used_at", Real),
)

uploads = Table(
    "uploads", metadata,
    _id(),
    Column("bot", Str, nullable=False),
    Column("author_id", Int, nullable=False),
    Column("status", Str, nullable=False),
    Column("sha256", Str, nullable=False),
    Column("size", Int, nullable=False),
    Column("data", Bytes),
    Column("version", Int),
    Column("report", Str),
    Column("created_at", Real, nullable=False),
    Column("finished_at", Real),
)
Index("uploads_by_bot", uploads.c.bot, uploads.c.id)
Index("uploads_by_author", uploads.c.author_id, uploads.c.id)
_failed = uploads.c.status == "failed"
Index("uploads_failed_by_time", uploads.c.finished_at, sqlite_where=_failed, postgresql_where=_failed)

test_matches = Table(
    # issue 22 item 6 (revision 0002), :mod:`arena.store.test_matches`: one row per unrated game an
    # author asked for, never in matches, ladder_units, pair_counts or the ladder
    "test_matches", metadata,
    _id(),
    Column("author_id", Int, nullable=False),
    Column("bot", Str, nullable=False),
    Column("opponent", Str, nullable=False),
    Column("game", Str, nullable=False),
    Column("seat", Int, nullable=False),
    Column("seed", Int, nullable=False),
    Column("status", Str, nullable=False, server_default=text("'queued'")),
    Column("winner_seat", Int),
    Column("score0", Int),
    Column("score1", Int),
    Column("reason", Str),
    Column("detail", Str),
    Column("view", Bytes),
    Column("created_at", Real, nullable=False),
    Column("started_at", Real),
    Column("finished_at", Real),
)
Index("test_matches_by_author", test_matches.c.author_id, test_matches.c.id)
Index("test_matches_by_status", test_matches.c.status, test_matches.c.id)

match_queue = Table(
    "match_queue", metadata,
    Column("match_key", Str, ForeignKey("matches.match_key"), primary_key=True),
    Column("tournament_id", Int, nullable=False),
    Column("idx", Int, nullable=False),
    Column("half", Int, nullable=False, server_default=text("0")),
    Column("state", Str, nullable=False, server_default=text("'queued'")),
    Column("worker", Str),
    Column("lease", Str),
    Column("lease_until", BigInteger),
    Column("attempts", Int, nullable=False, server_default=text("0")),
    Column("queued_at", BigInteger, nullable=False),
)
Index("match_queue_claim", match_queue.c.state, match_queue.c.tournament_id, match_queue.c.idx)

match_events = Table(
    "match_events", metadata,
    _id(),
    Column("match_key", Str, nullable=False),
    Column("body", Str, nullable=False),
    Column("created_at", BigInteger, nullable=False),
)
Index("match_events_by_time", match_events.c.created_at)

ladder_units = Table(
    "ladder_units", metadata,
    Column("game", Str, nullable=False),
    Column("a", Str, nullable=False),
    Column("b", Str, nullable=False),
    Column("points", Real, nullable=False),
    Column("games", Int, nullable=False),
    Column("n", Int, nullable=False),
    PrimaryKeyConstraint("game", "a", "b", "points", "games"),
)
# a bot's games and points from its units, as either side (covering: read in the index alone)
_u = ladder_units.c
Index("ladder_units_by_a", _u.game, _u.a, _u.points, _u.games, _u.n)
Index("ladder_units_by_b", _u.game, _u.b, _u.points, _u.games, _u.n)

match_logs = Table(
    "match_logs", metadata,
    Column("match_key", Str, ForeignKey("matches.match_key"), primary_key=True),
    Column("data", Bytes, nullable=False),
)

pair_counts = Table(
    "pair_counts", metadata,
    Column("game", Str, nullable=False),
    Column("a", Str, nullable=False),
    Column("b", Str, nullable=False),
    Column("n", Int, nullable=False),
    PrimaryKeyConstraint("game", "a", "b"),
)

ladder_state = Table(
    "ladder_state", metadata,
    Column("game", Str, primary_key=True),
    Column("results", Int, nullable=False, server_default=text("0")),
    Column("fitted_results", Int, nullable=False, server_default=text("0")),
    Column("fitted_at", Real),
    Column("fit_ms", Int),
    # what the last fit cost and the last full refit (ratings and intervals), revision 0004: the
    # last fit computed the intervals when full_fit_at = fitted_at (arena.schedule.fitter)
    Column("fit_cpu_ms", Int),
    Column("full_fit_at", Real),
    Column("full_fit_ms", Int),
    Column("full_fit_cpu_ms", Int),
)

TABLES = tuple(metadata.tables)
"""The names of the store's tables."""
