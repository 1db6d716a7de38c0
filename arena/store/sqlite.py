"""The store: bots and their tokens, tournaments, matches; every SQL statement, once.

One file (``arena.db`` by default) in WAL mode through the standard ``sqlite3`` module, or, given
a ``postgresql://`` URL (:func:`open_store`), the same schema on PostgreSQL through
:mod:`arena.store.postgres`, which translates these statements into its dialect.
Every match is inserted as ``pending`` when its tournament is scheduled, so an interrupted
tournament knows exactly what is left; :meth:`Store.record_result` commits a result before
anyone is told of it (design.md, "Persistence and scale").

Tokens are never stored: only a random salt and a hash of the token, recorded per row with the
way it was made (``hash_scheme``): a keyed HMAC-SHA256 for the long random tokens the arena
issues, scrypt for a token a person chose (see :func:`fast_token_hash`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import time
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from arena.errors import DatabaseError
from arena.metrics import METRICS
from arena.names import check_name
from arena.store.archives import ArchiveLimits
from arena.store.archives import check as check_archive
from arena.store.archives import sha256 as archive_sha256
from arena.store.log_archive import read_stored
from arena.store.postgres import DatabaseLost, is_url, password_of, redact
from arena.store.postgres import connect as connect_postgres

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

SCHEMA_VERSION = 9
"""The schema version this code writes, kept in ``PRAGMA user_version``: 1 is the schema of the
first versioned release (the tables above; a database from before versions has 0 and is brought
to 1 by adding the columns added since); each later version is a step of :data:`MIGRATIONS`."""

FIRST_ELO = 1500.0
"""The rating a bot's provisional ladder row shows from its first result until the next fit:
the mean of the fit (``arena.stats.rating.ANCHOR``, not imported here: the fit loads numpy)."""

_PTS = "CASE {} WHEN 0 THEN 1.0 WHEN 1 THEN 0.0 ELSE 0.5 END"
"""SQL: seat 0's points of a finished match from its ``winner_seat`` (1, 0, or ½ for a draw)."""

MIGRATIONS: dict[int, list[str]] = {
    2: [
        # the contest server's view of each submitted bot (arena.schedule.supervisor) and of who is
        # connected, for `arena bots list` run from another process
        """CREATE TABLE IF NOT EXISTS bot_status (
            name        TEXT PRIMARY KEY,
            state       TEXT NOT NULL,
            failures    INTEGER NOT NULL DEFAULT 0,
            next_launch REAL,
            last_output TEXT NOT NULL DEFAULT '',
            connected   INTEGER NOT NULL DEFAULT 0,
            updated_at  REAL NOT NULL
        )""",
    ],
    3: [
        # bots stored as archives (arena.store.archives), one row per version, so that a worker
        # on any host can unpack and run them; the newest version is the one that plays
        """CREATE TABLE IF NOT EXISTS bot_archives (
            bot         TEXT NOT NULL,
            version     INTEGER NOT NULL,
            sha256      TEXT NOT NULL,
            size        INTEGER NOT NULL,
            data        BLOB NOT NULL,
            created_at  REAL NOT NULL,
            PRIMARY KEY (bot, version)
        )""",
    ],
    4: [
        # self-service (arena.net.accounts): authors with a hashed token, the bots they own,
        # invitation codes (a SHA-256 of each: they are long random strings), and each upload
        # with its doctor report; an upload's archive waits in its row until the doctor passes it
        """CREATE TABLE IF NOT EXISTS authors (
            id          INTEGER PRIMARY KEY,
            name        TEXT NOT NULL UNIQUE,
            salt        BLOB NOT NULL,
            token_hash  BLOB NOT NULL,
            status      TEXT NOT NULL DEFAULT 'active',
            created_at  REAL NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS bot_owners (
            bot         TEXT PRIMARY KEY,
            author_id   INTEGER NOT NULL,
            kind        TEXT NOT NULL,
            created_at  REAL NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS invitations (
            code_hash   TEXT PRIMARY KEY,
            note        TEXT NOT NULL DEFAULT '',
            created_at  REAL NOT NULL,
            used_by     INTEGER,
            used_at     REAL
        )""",
        """CREATE TABLE IF NOT EXISTS uploads (
            id          INTEGER PRIMARY KEY,
            bot         TEXT NOT NULL,
            author_id   INTEGER NOT NULL,
            status      TEXT NOT NULL,
            sha256      TEXT NOT NULL,
            size        INTEGER NOT NULL,
            data        BLOB,
            version     INTEGER,
            report      TEXT,
            created_at  REAL NOT NULL,
            finished_at REAL
        )""",
        "CREATE INDEX IF NOT EXISTS uploads_by_bot ON uploads(bot, id)",
    ],
    5: [
        # the match queue of the workers (arena.store.queue): a scheduled match to be played by
        # whichever worker claims it, under a lease that expires unless renewed; times in ms
        """CREATE TABLE IF NOT EXISTS match_queue (
            match_key     TEXT PRIMARY KEY REFERENCES matches(match_key),
            tournament_id INTEGER NOT NULL,
            idx           INTEGER NOT NULL,
            half          INTEGER NOT NULL DEFAULT 0,
            state         TEXT NOT NULL DEFAULT 'queued',
            worker        TEXT,
            lease         TEXT,
            lease_until   BIGINT,
            attempts      INTEGER NOT NULL DEFAULT 0,
            queued_at     BIGINT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS match_queue_claim ON match_queue(state, tournament_id, idx)",
        # live events of the matches workers play, for the front server's spectators (arena.store.queue)
        """CREATE TABLE IF NOT EXISTS match_events (
            id          INTEGER PRIMARY KEY,
            match_key   TEXT NOT NULL,
            body        TEXT NOT NULL,
            created_at  BIGINT NOT NULL
        )""",
    ],
    6: [
        # the persistent ladder's units (arena.stats.ladder), kept up to date by each result
        # (Store.record_result) instead of being counted again over every match at each commit;
        # filled here from the matches already finished (what Store.ladder_unit_counts counts)
        """CREATE TABLE IF NOT EXISTS ladder_units (
            game        TEXT NOT NULL,
            a           TEXT NOT NULL,
            b           TEXT NOT NULL,
            points      REAL NOT NULL,
            games       INTEGER NOT NULL,
            n           INTEGER NOT NULL,
            PRIMARY KEY (game, a, b, points, games)
        )""",
        "INSERT INTO ladder_units(game, a, b, points, games, n) SELECT game, bot0, bot1, "
        + _PTS.format("m.winner_seat")
        + ", 1, COUNT(*) FROM matches m WHERE status='done' AND (pair_key IS NULL OR NOT EXISTS (SELECT 1 "
        "FROM matches t WHERE t.tournament_id=m.tournament_id AND t.pair_key=m.pair_key AND t.id<>m.id "
        "AND t.status='done')) GROUP BY 1, 2, 3, 4",
        "INSERT INTO ladder_units(game, a, b, points, games, n) SELECT f.game, f.bot0, f.bot1, "
        + _PTS.format("f.winner_seat")
        + " + CASE WHEN s.bot0=f.bot0 THEN " + _PTS.format("s.winner_seat")
        + " ELSE 1.0 - " + _PTS.format("s.winner_seat")
        + " END, 2, COUNT(*) FROM matches f JOIN matches s ON s.tournament_id=f.tournament_id "
        "AND s.pair_key=f.pair_key AND s.id>f.id WHERE f.status='done' AND s.status='done' GROUP BY 1, 2, 3, 4",
    ],
    7: [
        # the match logs a worker commits with their results (arena.schedule.worker): a worker on
        # another host leaves its log folder there, the front reads the log from here
        """CREATE TABLE IF NOT EXISTS match_logs (
            match_key   TEXT PRIMARY KEY REFERENCES matches(match_key),
            data        BLOB NOT NULL
        )""",
    ],
    8: [
        # the season (issue 21): who met whom, kept by each result so that pairing never reads the
        # history (both orientations, so a lookup is one index probe): finished, not aborted,
        # matches between a and b of a game; filled here once from the matches already finished
        """CREATE TABLE IF NOT EXISTS pair_counts (
            game        TEXT NOT NULL,
            a           TEXT NOT NULL,
            b           TEXT NOT NULL,
            n           INTEGER NOT NULL,
            PRIMARY KEY (game, a, b)
        )""",
        "DELETE FROM pair_counts",
        "INSERT INTO pair_counts(game, a, b, n) SELECT game, a, b, SUM(n) FROM (SELECT game, bot0 AS a, bot1 AS b, "
        "COUNT(*) AS n FROM matches WHERE status='done' GROUP BY game, bot0, bot1 UNION ALL SELECT game, bot1, bot0, "
        "COUNT(*) FROM matches WHERE status='done' GROUP BY game, bot0, bot1) AS t GROUP BY game, a, b",
        # the background fit of the ladder (arena.schedule.fitter): results counted so far and at
        # the last fit, when that fit ran and how long it took; the fit reads ladder_units only
        """CREATE TABLE IF NOT EXISTS ladder_state (
            game            TEXT PRIMARY KEY,
            results         INTEGER NOT NULL DEFAULT 0,
            fitted_results  INTEGER NOT NULL DEFAULT 0,
            fitted_at       REAL,
            fit_ms          INTEGER
        )""",
        "DELETE FROM ladder_state",
        "INSERT INTO ladder_state(game, results) SELECT game, COUNT(*) FROM matches WHERE status='done' GROUP BY game",
    ],
    9: [
        # issue 21, "every bot gets in": how each row's token hash was made (TOKEN_SCHEMES); the
        # rows made before hold scrypt hashes, checked with scrypt (and upgraded on success when
        # the token has the shape the arena issues: arena.net.auth)
        "ALTER TABLE bots ADD COLUMN hash_scheme TEXT NOT NULL DEFAULT 'scrypt'",
        "ALTER TABLE spectators ADD COLUMN hash_scheme TEXT NOT NULL DEFAULT 'scrypt'",
        "ALTER TABLE authors ADD COLUMN hash_scheme TEXT NOT NULL DEFAULT 'scrypt'",
    ],
}
"""Version -> the statements that bring a database of the version before up to it. An ``ALTER
TABLE t ADD COLUMN c`` is skipped when ``t`` has ``c`` already, so every step can run again."""

_ADD_COLUMN = re.compile(r"^\s*ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(\w+)", re.I)

PAGE_INDEXES = [
    # a game's finished matches, newest first (the history page), without the pending ones
    "CREATE INDEX IF NOT EXISTS matches_done ON matches(game, id) WHERE status<>'pending'",
    # one bot's finished matches in each seat, newest first
    "CREATE INDEX IF NOT EXISTS matches_bot0_done ON matches(game, bot0, id) WHERE status<>'pending'",
    "CREATE INDEX IF NOT EXISTS matches_bot1_done ON matches(game, bot1, id) WHERE status<>'pending'",
    # the matches a bot lost by its own fault (few: small indexes)
    "CREATE INDEX IF NOT EXISTS matches_faults0 ON matches(bot0, id) WHERE faulty_seat=0",
    "CREATE INDEX IF NOT EXISTS matches_faults1 ON matches(bot1, id) WHERE faulty_seat=1",
    # the leaderboard by rank, and its search by a prefix of the name in any case
    "CREATE INDEX IF NOT EXISTS ladder_by_elo ON ladder(game, elo DESC, bot)",
    "CREATE INDEX IF NOT EXISTS ladder_by_name ON ladder(game, lower(bot), bot)",
    # a bot's games and points from its units, as either side (covering: read in the index alone)
    "CREATE INDEX IF NOT EXISTS ladder_units_by_a ON ladder_units(game, a, points, games, n)",
    "CREATE INDEX IF NOT EXISTS ladder_units_by_b ON ladder_units(game, b, points, games, n)",
]
"""The indexes of the web pages' statements (:mod:`arena.store.pages`), made at every open (a
database of any version gets them; on a large existing one the first open builds them once)."""

SCRYPT = {"n": 2**14, "r": 8, "p": 1}
"""scrypt cost parameters for the hashes of tokens a person chose (16 MiB and about 30 ms per
check on one core)."""

FAST = "hmac-sha256"
"""``hash_scheme`` of a token the arena generated (:func:`fast_token_hash`)."""

SLOW = "scrypt"
"""``hash_scheme`` of a token a person chose, and of every row made before schema 9 (:func:`hash_token`)."""

TOKEN_SCHEMES = (FAST, SLOW)
"""The values of the ``hash_scheme`` column of ``bots``, ``spectators`` and ``authors``."""

GENERATED_TOKEN_CHARS = 32
"""Length of the tokens the arena issues: ``secrets.token_urlsafe(24)``, 24 random bytes (192
bits) in 32 characters of the URL-safe base64 alphabet."""


WITHDRAWN = "SELECT o.bot FROM bot_owners o JOIN authors a ON a.id=o.author_id WHERE a.status<>'active'"
"""The bots of suspended authors: they neither connect nor are launched (a subquery)."""


def _points(winner_seat: int | None) -> float:
    """Seat 0's points of a finished match: 1 a win, 0 a loss, ½ a draw."""
    return 1.0 if winner_seat == 0 else 0.0 if winner_seat == 1 else 0.5


def hash_token(token: str, salt: bytes) -> bytes:
    """scrypt hash of ``token`` with ``salt`` (32-byte digest): the slow scheme (:data:`SLOW`),
    for a token a person chose. Costs :data:`SCRYPT` (about 30 ms of a core)."""
    return hashlib.scrypt(token.encode(), salt=salt, dklen=32, **SCRYPT)  # add_launched_bot: 32 random bytes


def fast_token_hash(token: str, salt: bytes) -> bytes:
    """HMAC-SHA256 of ``token`` keyed with the row's ``salt`` (32-byte digest): the fast scheme
    (:data:`FAST`), about a microsecond, for the tokens the arena generates.

    Why fast is enough: a generated token is 192 random bits (:data:`GENERATED_TOKEN_CHARS`), so
    whoever reads the database cannot find it by guessing, whatever the hash costs (2**191
    tries on average); a slow hash only protects secrets that can be guessed, the ones a person
    chooses, which keep scrypt. The key is the per-row random salt rather than a server key: two
    rows never share a function (no precomputed table, equal tokens give unrelated hashes), and
    there is no secret outside the database to keep, back up, move to another host or lose
    (losing a server key would void every token). This is how services that issue API tokens
    store them (a plain or keyed SHA-256 of a long random token)."""
    return hmac.new(salt, token.encode(), hashlib.sha256).digest()


def looks_generated(token: str) -> bool:
    """True if ``token`` has the shape of a token the arena issues (:data:`GENERATED_TOKEN_CHARS`
    characters of the URL-safe base64 alphabet). Before schema 9 every bot, spectator and author
    token the arena handed out had it, and no command let a person choose one (only
    ``Store.add_bot(name, token)`` in Python did)."""
    return len(token) == GENERATED_TOKEN_CHARS and all(c.isascii() and (c.isalnum() or c in "-_") for c in token)


class TokenHash(NamedTuple):
    """What a row stores of a token: ``salt`` (16 random bytes), ``digest`` (32 bytes) and
    ``scheme`` (:data:`FAST` or :data:`SLOW`: which function made ``digest``)."""

    salt: bytes
    digest: bytes
    scheme: str

    def matches(self, token: str) -> bool:
        """True if ``token`` is the token hashed here (its scheme's hash, compared in constant
        time). Costs scrypt for a :data:`SLOW` row: call it off the event loop then."""
        made = fast_token_hash(token, self.salt) if self.scheme == FAST else hash_token(token, self.salt)
        return hmac.compare_digest(made, self.digest)


DUMMY_TOKEN_HASH = TokenHash(b"0" * 16, b"", FAST)
"""Checked for an unknown name so that it costs what a generated token's check costs (and never matches)."""


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
    """The arena database at ``path``: an SQLite file (``":memory:"`` for tests) or a
    ``postgresql://`` URL (see :func:`open_store`). Not thread-safe: one ``Store`` per trio run;
    every method is a short blocking call. ``db`` is the connection (``sqlite3`` or its
    PostgreSQL stand-in, :class:`arena.store.postgres.PgConnection`); ``path`` is what to show
    (a URL without its password)."""

    def __init__(self, path: str | Path = "arena.db", create: bool = True) -> None:
        """Open (``create``: or create, with its folder) the store at ``path``. With ``create``
        False, as read-only commands open it, a missing SQLite file is
        :class:`arena.errors.DatabaseError` and nothing is created."""
        self.dialect = "postgresql" if is_url(path) else "sqlite"
        """``"sqlite"`` or ``"postgresql"``: the few statements that differ (row locks) ask."""
        if is_url(path):
            self._open_postgres(str(path))
            return
        self.path = str(path)
        if self.path != ":memory:" and not create and not Path(self.path).is_file():
            raise DatabaseError(f"no database at {self.path}: check --db (this command reads a database, it "
                                "creates none)")
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            version = self._check_version()
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise DatabaseError(f"{self.path} is not an arena database (SQLite: {exc}); use another file "
                                "(a missing one is created)") from None
        self._migrate(version)

    def _open_postgres(self, url: str) -> None:
        """Open the store on the PostgreSQL database ``url`` (:mod:`arena.store.postgres`):
        the same schema and versions, made or migrated in one transaction under the writer lock
        (workers on several hosts may open a new database at the same time).
        :class:`arena.errors.DatabaseError` if it cannot be reached or used."""
        self.path = redact(url)
        self._password = password_of(url)
        self.db = connect_postgres(url)
        import psycopg

        try:
            with self._tx():
                version = self._check_version()
                self.db.executescript(SCHEMA)
                self._migrate(version)
        except BaseException as exc:
            self.db.close()
            if not isinstance(exc, (psycopg.Error, DatabaseLost)):
                raise
            raise DatabaseError(f"cannot use {self.path}: {' '.join(str(exc).split())}; check that the role may "
                                "create tables in the database") from None

    def child_db(self) -> tuple[str, dict[str, str]]:
        """What a child process (``arena worker``) needs to open this same store: the ``--db``
        value for its command line, never with a password (command lines are public: ``ps``),
        and the environment to add, ``PGPASSWORD`` when the URL held one (the environment of a
        process is readable only by its user)."""
        password = getattr(self, "_password", None)
        return self.path, ({"PGPASSWORD": password} if password else {})

    def _check_version(self) -> int:
        """The database's schema version; :class:`arena.errors.DatabaseError` if it is newer
        than this code or an SQLite database of some other program."""
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise DatabaseError(f"{self.path} has schema version {version}, made by a newer arena than this one "
                                f"(which knows up to {SCHEMA_VERSION}): upgrade arena to use it")
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version == 0 and tables and not tables & {"bots", "matches", "tournaments"}:
            raise DatabaseError(f"{self.path} is an SQLite database of another program (tables: "
                                f"{', '.join(sorted(tables)[:5])}); use another file")
        return version

    def _migrate(self, version: int) -> None:
        """Bring a database of schema ``version`` up to :data:`SCHEMA_VERSION`: version 0 (made
        before versions) gets the columns added since, then each step of :data:`MIGRATIONS`,
        each in its own transaction together with the new ``user_version``."""
        have = {r[1] for r in self.db.execute("PRAGMA table_info(matches)")}
        for column, kind in (("margin", "INTEGER"), ("pair_key", "TEXT"), ("log_hash", "TEXT")):
            if column not in have:
                self.db.execute(f"ALTER TABLE matches ADD COLUMN {column} {kind}")
        # idempotent additions of the ladder's refit (arena.stats.ladder), whatever the version
        self.db.execute("CREATE INDEX IF NOT EXISTS matches_by_pair ON matches(tournament_id, pair_key)")
        if "ci95" not in {r[1] for r in self.db.execute("PRAGMA table_info(ladder)")}:
            self.db.execute("ALTER TABLE ladder ADD COLUMN ci95 REAL")
        for step in range(max(version, 1) + 1, SCHEMA_VERSION + 1):
            with self._tx():
                for statement in MIGRATIONS[step]:
                    added = _ADD_COLUMN.match(statement)
                    if added and added[2] in {r[1] for r in self.db.execute(f"PRAGMA table_info({added[1]})")}:
                        continue  # the column is there already (a version set back by hand): nothing to add
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version={step}")
        for index in PAGE_INDEXES:  # idempotent too: what the pages read (arena.store.pages), once the tables exist
            self.db.execute(index)
        if version < 1 and SCHEMA_VERSION == 1:
            self.db.execute("PRAGMA user_version=1")
        # idempotent indexes of tables made by the steps above
        self.db.execute("CREATE INDEX IF NOT EXISTS uploads_by_author ON uploads(author_id, id)")
        self.ensure_retention_indexes()

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    # ------------------------------------------------------------------ bots and tokens

    def add_bot(self, name: str, token: str | None = None, *, generated: bool = False) -> str:
        """Register ``name`` (or replace its token) and return the token. With no ``token`` a
        fresh one is generated (192 random bits) and stored as a salted HMAC-SHA256
        (:func:`fast_token_hash`); a ``token`` the caller chose is stored as a salted scrypt hash
        (:func:`hash_token`), since a person's choice may be guessable, unless ``generated``:
        the caller vouches that it made ``token`` with ``secrets.token_urlsafe(24)`` (say one
        token for many bots of a benchmark), and it is stored fast too. Raises
        :class:`arena.names.BadName` (a ``ValueError``) for a name outside the rule of
        :mod:`arena.names`, ``ValueError`` for a ``generated`` token of another shape
        (:func:`looks_generated`)."""
        if generated and (token is None or not looks_generated(token)):
            raise ValueError("a generated token is secrets.token_urlsafe(24): 32 URL-safe characters")
        return self._set_secret("bots", "bot", name, token, generated)

    def add_launched_bot(self, name: str) -> None:
        """Register ``name`` (or lock it out) with no token anyone holds, for a bot the arena
        launches (each copy gets a token in memory at launch: :mod:`arena.schedule.copies`): a
        random salt and a random 32-byte digest under the fast scheme, which no token's
        HMAC-SHA256 matches, so nothing slow is ever hashed for it. Raises
        :class:`arena.names.BadName` as :meth:`add_bot`."""
        check_name(name, "bot")
        self.db.execute(
            "INSERT INTO bots(name, salt, token_hash, hash_scheme, created_at) VALUES (?,?,?,?,?) "
            "ON CONFLICT(name) DO UPDATE SET salt=excluded.salt, token_hash=excluded.token_hash, "
            "hash_scheme=excluded.hash_scheme",
            (name, secrets.token_bytes(16), secrets.token_bytes(32), FAST, time.time()),
        )

    def _set_secret(self, table: str, what: str, name: str, token: str | None, generated: bool = False) -> str:
        """Store ``name``'s token in ``table`` (``bots`` or ``spectators``): a fresh generated
        one (if ``token`` is None) or a ``generated`` one under :data:`FAST`, a chosen one under
        :data:`SLOW` (see :meth:`add_bot`); return the token."""
        check_name(name, what)  # names are data: never markup or paths (arena.names)
        salt = secrets.token_bytes(16)
        if not token or generated:
            token = token or secrets.token_urlsafe(24)
            scheme, digest = FAST, fast_token_hash(token, salt)
        else:
            scheme, digest = SLOW, hash_token(token, salt)
        self.db.execute(
            f"INSERT INTO {table}(name, salt, token_hash, hash_scheme, created_at) VALUES (?,?,?,?,?) "
            "ON CONFLICT(name) DO UPDATE SET salt=excluded.salt, token_hash=excluded.token_hash, "
            "hash_scheme=excluded.hash_scheme",
            (name, salt, digest, scheme, time.time()),
        )
        return token

    def upgrade_token_hash(self, table: str, name: str, old: TokenHash, token: str) -> bool:
        """Re-store ``name``'s verified ``token`` in ``table`` (``bots``, ``spectators`` or
        ``authors``) under the fast scheme, keeping its salt (so the author pages' session
        fingerprints and the verified-token cache keep their meaning), if the row still holds
        ``old`` (a token replaced meanwhile is left alone). The caller has checked ``token``
        against ``old`` and that it :func:`looks_generated`. Returns True if the row changed."""
        if table not in ("bots", "spectators", "authors"):
            raise ValueError(f"no tokens in {table!r}")
        cur = self.db.execute(
            f"UPDATE {table} SET token_hash=?, hash_scheme=? "
            "WHERE name=? AND salt=? AND token_hash=? AND hash_scheme=?",
            (fast_token_hash(token, old.salt), FAST, name, old.salt, old.digest, old.scheme))
        return cur.rowcount == 1

    def bot_id(self, name: str) -> int:
        """The database id of registered bot ``name`` (for file names: never a name in a
        path). Raises ``KeyError`` if it is not registered."""
        row = self.db.execute("SELECT rowid FROM bots WHERE name=?", (name,)).fetchone()
        if row is None:
            raise KeyError(name)
        return int(row[0])

    def check_token(self, name: str, token: str) -> bool:
        """True if ``name`` is registered and ``token`` is its token (constant-time compare; the
        row's own scheme: scrypt costs about 30 ms, the fast hash a microsecond). For a server,
        :class:`arena.net.auth.Authenticator` does this with rate limits and off the event loop."""
        row = self.db.execute("SELECT salt, token_hash, hash_scheme FROM bots WHERE name=?", (name,)).fetchone()
        secret = DUMMY_TOKEN_HASH if row is None else TokenHash(bytes(row[0]), bytes(row[1]), row[2])
        return secret.matches(token) and row is not None  # an unknown name costs a generated token's check

    def bot_secret(self, name: str) -> TokenHash | None:
        """The :class:`TokenHash` of a registered bot whose author (if any) is active, or None
        (check it with :meth:`TokenHash.matches`, never ``==``: see :mod:`arena.net.auth`). One
        index probe per table, whatever the number of bots and authors."""
        row = self.db.execute(
            "SELECT salt, token_hash, hash_scheme FROM bots b WHERE name=? AND NOT EXISTS (SELECT 1 FROM bot_owners o "
            "JOIN authors a ON a.id=o.author_id WHERE o.bot=b.name AND a.status<>'active')", (name,)).fetchone()
        return TokenHash(bytes(row[0]), bytes(row[1]), row[2]) if row else None

    def bot_names(self) -> list[str]:
        """All registered bot names, sorted."""
        return [r[0] for r in self.db.execute("SELECT name FROM bots ORDER BY name")]

    # ------------------------------------------------------------------ spectators and wagers

    def add_spectator(self, name: str, token: str | None = None) -> str:
        """Register a betting spectator (or replace its token); return the token, stored only
        as a salted hash: HMAC-SHA256 of a generated one, scrypt of a chosen one (as :meth:`add_bot`)."""
        return self._set_secret("spectators", "spectator", name, token)

    def spectator_secret(self, name: str) -> TokenHash | None:
        """The :class:`TokenHash` of a betting spectator, or None."""
        row = self.db.execute("SELECT salt, token_hash, hash_scheme FROM spectators WHERE name=?",
                              (name,)).fetchone()
        return TokenHash(bytes(row[0]), bytes(row[1]), row[2]) if row else None

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
        self.add_launched_bot(name)
        self.db.execute(
            "INSERT INTO submissions(name, manifest, sandbox, created_at) VALUES (?,?,?,?) "
            "ON CONFLICT(name) DO UPDATE SET manifest=excluded.manifest, sandbox=excluded.sandbox, "
            "created_at=excluded.created_at",
            (name, manifest, int(sandbox), time.time()),
        )

    def put_archive(self, bot: str, data: bytes, limits: ArchiveLimits = ArchiveLimits()) -> int:
        """Store ``data`` (checked by :func:`arena.store.archives.check`; its
        :class:`~arena.store.archives.ArchiveError` propagates) as the next version of ``bot``'s
        archive and return that version (1, 2, ...). The same bytes as the newest version are
        not stored twice: its version is returned."""
        check_archive(data, limits)
        digest = archive_sha256(data)
        with self._tx():
            row = self.db.execute("SELECT version, sha256 FROM bot_archives WHERE bot=? ORDER BY version DESC LIMIT 1",
                                  (bot,)).fetchone()
            if row is not None and row[1] == digest:
                return row[0]
            version = 1 if row is None else row[0] + 1
            self.db.execute("INSERT INTO bot_archives(bot, version, sha256, size, data, created_at) "
                            "VALUES (?,?,?,?,?,?)", (bot, version, digest, len(data), data, time.time()))
        return version

    def archive(self, bot: str, version: int | None = None) -> tuple[int, str, bytes] | None:
        """``(version, sha256, bytes)`` of ``bot``'s archive (the newest when ``version`` is
        None), or None if there is none."""
        if version is None:
            row = self.db.execute("SELECT version, sha256, data FROM bot_archives WHERE bot=? ORDER BY version DESC "
                                  "LIMIT 1", (bot,)).fetchone()
        else:
            row = self.db.execute("SELECT version, sha256, data FROM bot_archives WHERE bot=? AND version=?",
                                  (bot, version)).fetchone()
        return None if row is None else (row[0], row[1], bytes(row[2]))

    def archive_versions(self, bot: str) -> list[tuple[int, str, int, float]]:
        """Every stored version of ``bot``'s archive, oldest first: ``(version, sha256, size in
        bytes, created at (Unix seconds))``."""
        return [tuple(r) for r in self.db.execute(
            "SELECT version, sha256, size, created_at FROM bot_archives WHERE bot=? ORDER BY version", (bot,))]

    def submissions(self) -> list[tuple[str, str, int]]:
        """Submitted bots as ``(name, manifest path, sandbox)``."""
        return [tuple(r) for r in self.db.execute(
            f"SELECT name, manifest, sandbox FROM submissions WHERE name NOT IN ({WITHDRAWN}) ORDER BY name")]

    def submission_times(self) -> dict[str, float]:
        """When each submitted bot was last submitted (Unix seconds): a new time means a fresh
        start for its supervision (:mod:`arena.schedule.supervisor`)."""
        return {r[0]: r[1] for r in self.db.execute("SELECT name, created_at FROM submissions")}

    def save_bot_status(self, rows: list[tuple]) -> None:
        """Replace the contest server's view of its bots: rows ``(name, state, failures, next
        launch (Unix seconds) or None, last output lines, connected 0/1)``, stamped now."""
        now = time.time()
        with self._tx():
            self.db.execute("DELETE FROM bot_status")
            self.db.executemany("INSERT INTO bot_status VALUES (?,?,?,?,?,?,?)", [(*r, now) for r in rows])

    def bot_status(self) -> dict[str, dict[str, Any]]:
        """The last view saved by :meth:`save_bot_status`, by bot name (with ``updated_at``)."""
        return {r["name"]: dict(r) for r in self.db.execute("SELECT * FROM bot_status")}

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
        """Insert a tournament and the matches already scheduled (``arena.schedule.formats.Pairing`` or
        ``(bot0, bot1, seed)`` tuples) as pending, in one transaction; return its id."""
        with self._tx():
            cur = self.db.execute(
                "INSERT INTO tournaments(game, format, seed, config, bots, created_at) VALUES (?,?,?,?,?,?) "
                "RETURNING id",
                (
                    game,
                    fmt,
                    seed,
                    json.dumps(msgspec.to_builtins(config), sort_keys=True),
                    json.dumps(bots),
                    time.time(),
                ),
            )
            tid = int(cur.fetchone()[0])
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

    def ladder_fit_input(self, game: str) -> tuple[int, dict[tuple[str, str, float, int], int], dict[str, float]]:
        """What the ladder's fit of ``game`` reads, without the writer lock: ``(results, units,
        start)``: the game's result count, read first (a result landing meanwhile is in the units
        and makes the next fit run once more, never goes unfitted), the units
        (:meth:`ladder_units`) and the stored ratings to start from (Elo by bot)."""
        row = self.db.execute("SELECT results FROM ladder_state WHERE game=?", (game,)).fetchone()
        results = 0 if row is None else row[0]
        units = self.ladder_units(game)
        start = {r[0]: r[1] for r in self.db.execute("SELECT bot, elo FROM ladder WHERE game=?", (game,))}
        return results, units, start

    def save_ladder_fit(self, game: str, ratings: list[Any], results: int, fit_ms: int) -> None:
        """Store a fit of ``game`` (``arena.stats.rating.Rating`` rows) made over its first
        ``results`` results, and when and how long (``fit_ms``) it took, in one write
        transaction. A bot's game count is kept by each result, not by the fit (a result
        committed during the fit is already counted)."""
        now = time.time()
        with self._tx():
            self.db.executemany(
                "INSERT INTO ladder(game, bot, elo, ci95, games, updated_at) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT(game, bot) DO UPDATE SET elo=excluded.elo, ci95=excluded.ci95, "
                "updated_at=excluded.updated_at",
                [(game, r.name, r.elo, r.ci95, r.games, now) for r in ratings])
            self.db.execute(
                "INSERT INTO ladder_state(game, results, fitted_results, fitted_at, fit_ms) VALUES (?,?,?,?,?) "
                "ON CONFLICT(game) DO UPDATE SET fitted_results=excluded.fitted_results, "
                "fitted_at=excluded.fitted_at, fit_ms=excluded.fit_ms", (game, results, results, now, fit_ms))

    def ladder_state(self, game: str) -> dict[str, Any]:
        """The ladder fit's state of ``game``: ``results`` recorded, ``fitted_results`` counted
        by the last fit, ``fitted_at`` (Unix seconds, None before the first fit) and ``fit_ms``
        (its duration); zeros for a game without results."""
        row = self.db.execute("SELECT results, fitted_results, fitted_at, fit_ms FROM ladder_state WHERE game=?",
                              (game,)).fetchone()
        if row is None:
            return {"results": 0, "fitted_results": 0, "fitted_at": None, "fit_ms": None}
        return {"results": row[0], "fitted_results": row[1], "fitted_at": row[2], "fit_ms": row[3]}

    def pair_counts(self, game: str, bot: str, others: list[str]) -> dict[str, int]:
        """How many finished matches of ``game`` ``bot`` played against each of ``others``
        (absent: none), from ``pair_counts``: one index probe of ``len(others)`` keys, whatever
        the history (the scheduler asks this for a bounded set of candidates)."""
        if not others:
            return {}
        marks = ",".join("?" * len(others))
        return dict(self.db.execute(f"SELECT b, n FROM pair_counts WHERE game=? AND a=? AND b IN ({marks})",
                                    (game, bot, *others)).fetchall())

    def opponents(self, game: str, bot: str) -> dict[str, int]:
        """Every bot ``bot`` has met in ``game`` and how many finished (not aborted) matches they
        played (table ``pair_counts``): one range of its primary key, as long as the bot's list of
        opponents, whatever the history (the contest's pairing loads it when a bot connects)."""
        return dict(self.db.execute("SELECT b, n FROM pair_counts WHERE game=? AND a=?", (game, bot)).fetchall())

    def ladder_units(self, game: str) -> dict[tuple[str, str, float, int], int]:
        """The ladder's units of ``game`` as kept by each result (table ``ladder_units``):
        ``{(a, b, points of a, games): count}``, the same as :meth:`ladder_unit_counts` counts
        over every finished match, read in one small query (its size grows with the pairs of bots
        and their outcomes, not with the matches)."""
        rows = self.db.execute(
            "SELECT a, b, points, games, n FROM ladder_units WHERE game=? AND n>0 ORDER BY a, b, points, games",
            (game,))
        return {(a, b, float(s), g): n for a, b, s, g, n in rows}

    def _count_ladder_unit(self, game: str, a: str, b: str, points: float, games: int, delta: int) -> None:
        self.db.execute(
            "INSERT INTO ladder_units(game, a, b, points, games, n) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(game, a, b, points, games) DO UPDATE SET n=ladder_units.n+excluded.n",
            (game, a, b, points, games, delta))

    def _count_result_unit(self, match_key: str) -> None:
        """Count the just finished match ``match_key`` in ``ladder_units``, inside the caller's
        transaction: a unit of one game, or, when it completes a duplicate pair, the pair's unit of
        two games in place of its other half's lone one (:func:`arena.stats.ladder.ladder_units`)."""
        m = self.db.execute("SELECT id, tournament_id, pair_key, game, bot0, bot1, winner_seat FROM matches "
                            "WHERE match_key=?", (match_key,)).fetchone()
        twin = None if m["pair_key"] is None else self.db.execute(
            "SELECT id, bot0, bot1, winner_seat FROM matches WHERE tournament_id=? AND pair_key=? AND id<>? "
            "AND status='done'", (m["tournament_id"], m["pair_key"], m["id"])).fetchone()
        if twin is None:
            self._count_ladder_unit(m["game"], m["bot0"], m["bot1"], _points(m["winner_seat"]), 1, 1)
            return
        self._count_ladder_unit(m["game"], twin["bot0"], twin["bot1"], _points(twin["winner_seat"]), 1, -1)
        first, second = (twin, m) if twin["id"] < m["id"] else (m, twin)
        s1 = _points(second["winner_seat"])
        self._count_ladder_unit(m["game"], first["bot0"], first["bot1"], _points(first["winner_seat"])
                                + (s1 if second["bot0"] == first["bot0"] else 1.0 - s1), 2, 1)

    def _count_pair(self, game: str, a: str, b: str) -> None:
        """One more finished match between ``a`` and ``b`` (table ``pair_counts``, both
        orientations), one more game for each on the ladder (a first result makes a provisional
        row: the anchor rating, no interval, until the next fit) and one more result of ``game``
        (``ladder_state``), inside the caller's transaction: single-row upserts, whatever the history."""
        now = time.time()
        for x, y in ((a, b), (b, a)):
            self.db.execute("INSERT INTO pair_counts(game, a, b, n) VALUES (?,?,?,1) "
                            "ON CONFLICT(game, a, b) DO UPDATE SET n=pair_counts.n+1", (game, x, y))
            self.db.execute("INSERT INTO ladder(game, bot, elo, ci95, games, updated_at) VALUES (?,?,?,NULL,1,?) "
                            "ON CONFLICT(game, bot) DO UPDATE SET games=ladder.games+1", (game, x, FIRST_ELO, now))
        self.db.execute("INSERT INTO ladder_state(game, results) VALUES (?,1) "
                        "ON CONFLICT(game) DO UPDATE SET results=ladder_state.results+1", (game,))

    def ladder_unit_counts(self, game: str) -> dict[tuple[str, str, float, int], int]:
        """The ladder's units of ``game`` counted in SQL: ``{(a, b, points of a, games): count}``,
        exactly what :func:`arena.stats.ladder.ladder_units` makes of the finished matches (the two
        finished halves of a duplicate pair, same tournament and pair key, are one unit of 2
        games scored from the first half's seat 0; every other finished match a unit of 1)."""
        out: dict[tuple[str, str, float, int], int] = {}

        def add(a: str, b: str, s: float, g: int, n: int) -> None:
            out[(a, b, s, g)] = out.get((a, b, s, g), 0) + n

        def pts(w: int | None) -> float:
            return 1.0 if w == 0 else 0.0 if w == 1 else 0.5

        twin = ("SELECT 1 FROM matches t WHERE t.tournament_id=m.tournament_id AND t.pair_key=m.pair_key "
                "AND t.id<>m.id AND t.status='done'")
        for b0, b1, w, n in self.db.execute(
            "SELECT bot0, bot1, winner_seat, COUNT(*) FROM matches m WHERE game=? AND status='done' "
            f"AND (pair_key IS NULL OR NOT EXISTS ({twin})) GROUP BY 1, 2, 3",
            (game,),
        ):
            add(b0, b1, pts(w), 1, n)
        for b0, b1, w0, c0, w1, n in self.db.execute(
            "SELECT f.bot0, f.bot1, f.winner_seat, s.bot0, s.winner_seat, COUNT(*) FROM matches f "
            "JOIN matches s ON s.tournament_id=f.tournament_id AND s.pair_key=f.pair_key AND s.id>f.id "
            "WHERE f.game=? AND f.status='done' AND s.status='done' GROUP BY 1, 2, 3, 4, 5",
            (game,),
        ):
            s1 = pts(w1)
            add(b0, b1, pts(w0) + (s1 if c0 == b0 else 1.0 - s1), 2, n)
        return out

    def ladder(self, game: str) -> list[tuple[str, float, int]]:
        """The persistent ladder of ``game``: ``(bot, elo, games)``, best first."""
        return [(bot, elo, games) for bot, elo, _, games in self.ladder_intervals(game)]

    def ladder_intervals(self, game: str) -> list[tuple[str, float, float, int]]:
        """The persistent ladder of ``game`` with intervals: ``(bot, elo, ci95, games)``, best
        first; ``ci95`` is the half-width of the 95% interval in Elo points (``inf`` for a
        row written by a version without intervals, until the next result refits it)."""
        rows = self.db.execute(
            "SELECT bot, elo, ci95, games FROM ladder WHERE game=? ORDER BY elo DESC, bot", (game,)
        )
        return [(r[0], r[1], float("inf") if r[2] is None else r[2], r[3]) for r in rows]

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
        """Commit a match result (an ``arena.match.referee.MatchResult``) in one transaction, with
        what the persistent ladder keeps of it: its unit (``ladder_units``), who met whom
        (``pair_counts``), the game's result count (``ladder_state``) and each bot's game count
        (``ladder``: a bot's first result gives it a provisional row at once). A handful of
        single-row statements, whatever the history; the ratings themselves are refitted off
        this path (:mod:`arena.schedule.fitter`). Raises ``LookupError`` if the match is unknown
        or already recorded (a result is never counted twice)."""
        t0 = time.perf_counter()
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
            if result.reason != "aborted":  # counted for the ladder's background fit (arena.schedule.fitter)
                self._count_result_unit(match_key)
                self._count_pair(row["game"], row["bot0"], row["bot1"])
        METRICS.result_commit.observe(time.perf_counter() - t0)

    def newest_tournament(self) -> int | None:
        """The id of the newest tournament (a contest's ladder included), None if there is none."""
        return self.db.execute("SELECT MAX(id) FROM tournaments").fetchone()[0]

    def recorded_matches(self, tournament_id: int | None) -> int:
        """How many matches of the tournament have a result (finished or aborted; 0 for None)."""
        if tournament_id is None:
            return 0
        return self.db.execute("SELECT COUNT(*) FROM matches WHERE tournament_id=? AND status<>'pending'",
                               (tournament_id,)).fetchone()[0]

    def finished_matches(self, tournament_id: int) -> int:
        """How many matches of the tournament finished (status ``done``; aborted ones not counted)."""
        return self.db.execute("SELECT COUNT(*) FROM matches WHERE tournament_id=? AND status='done'",
                               (tournament_id,)).fetchone()[0]

    def finish_tournament(self, tournament_id: int) -> None:
        """Mark a tournament finished."""
        self.db.execute(
            "UPDATE tournaments SET status='finished', finished_at=? WHERE id=?", (time.time(), tournament_id)
        )

    def probe_write(self, tournament_id: int) -> None:
        """A write transaction that changes nothing visible (rewrites tournament
        ``tournament_id``'s row); raises ``sqlite3.Error`` if the database cannot be written
        (full disk, read-only file). Used to tell when storage works again."""
        with self._tx():
            self.db.execute("UPDATE tournaments SET status=status WHERE id=?", (tournament_id,))

    def matches(self, tournament_id: int) -> list[dict[str, Any]]:
        """All matches of a tournament as dicts, in schedule order."""
        rows = self.db.execute("SELECT * FROM matches WHERE tournament_id=? ORDER BY idx", (tournament_id,))
        return [dict(r) for r in rows]

    def put_match_log(self, match_key: str, data: bytes) -> None:
        """Store the bytes of ``match_key``'s log file as written (gzip), inside the caller's
        transaction: the log a worker commits with the result (:meth:`match_log_bytes` reads it
        back where the file is not at hand). Taken at the commit, the copy holds every line, the
        result's included, but not the gzip trailer the file gets when it is closed just after:
        :func:`arena.match.log.decompress` reads both alike."""
        self.db.execute("INSERT INTO match_logs(match_key, data) VALUES (?,?) ON CONFLICT(match_key) "
                        "DO UPDATE SET data=excluded.data", (match_key, data))

    def match_log_bytes(self, match_key: str, log_path: str | None) -> bytes | None:
        """The uncompressed bytes of a match's log: its file at ``log_path`` (or its member of a
        daily archive bundle, :mod:`arena.store.log_archive`) if this host has it, else the copy
        its worker committed to the database; None if neither exists. Raises
        :class:`arena.match.log.ChainError` if what is there is corrupt."""
        from arena.match.log import decompress

        if log_path:
            try:
                return decompress(read_stored(log_path))
            except OSError:  # on a worker's host, or removed
                pass
        data = self.match_log_copy(match_key)
        return None if data is None else decompress(data)

    # ------------------------------------------------------------------ match logs: copies, archives, retention

    def match_log_copy(self, match_key: str) -> bytes | None:
        """The bytes of ``match_key``'s log as its worker committed them (:meth:`put_match_log`),
        or None once the front has the log (:meth:`move_match_logs`) or if none was committed."""
        row = self.db.execute("SELECT data FROM match_logs WHERE match_key=?", (match_key,)).fetchone()
        return None if row is None else bytes(row[0])

    def match_log_copies(self, tournament_id: int | None = None, limit: int = 100) -> list[tuple[str, int, str]]:
        """Up to ``limit`` worker copies still in the database (of tournament ``tournament_id``,
        or of any): ``(match_key, tournament_id, log_path)``. A copy is committed with its result
        and deleted once the front has the log, so this reads a few rows, not the history."""
        where, args = ("WHERE m.tournament_id=? ", [tournament_id]) if tournament_id is not None else ("", [])
        rows = self.db.execute(
            "SELECT l.match_key, m.tournament_id, m.log_path FROM match_logs l JOIN matches m "
            f"ON m.match_key=l.match_key {where}LIMIT ?", [*args, limit])
        return [(r[0], int(r[1]), r[2]) for r in rows]

    def move_match_logs(self, moves: list[tuple[str, str, str]]) -> int:
        """In one transaction, for each ``(match_key, old log_path, new log_path)``: the match's
        log is now at the new path (only if it was still at the old one: a move made meanwhile
        by another process is kept), and its worker copy, if any, is deleted. Returns how many
        paths were changed."""
        moved = 0
        with self._tx():
            for key, old, new in moves:
                if old != new:
                    cur = self.db.execute("UPDATE matches SET log_path=? WHERE match_key=? AND log_path=?",
                                          (new, key, old))
                    moved += max(cur.rowcount, 0)
                self.db.execute("DELETE FROM match_logs WHERE match_key=?", (key,))
        return moved

    def match_log_of(self, match_key: str) -> tuple[str | None, str | None] | None:
        """``(log_path, log_hash)`` of a match, or None if there is no such match."""
        row = self.db.execute("SELECT log_path, log_hash FROM matches WHERE match_key=?", (match_key,)).fetchone()
        return None if row is None else (row[0], row[1])

    def ensure_retention_indexes(self) -> None:
        """The indexes retention reads by (idempotent; built once, the first time): matches by
        the time they finished, live events by the time they were written, failed uploads by the
        time they were refused. With them an archive run reads what is older than its cut-off
        and nothing else."""
        for statement in ("CREATE INDEX IF NOT EXISTS matches_by_finished_at ON matches(finished_at)",
                          "CREATE INDEX IF NOT EXISTS match_events_by_time ON match_events(created_at)",
                          "CREATE INDEX IF NOT EXISTS uploads_failed_by_time ON uploads(finished_at) "
                          "WHERE status='failed'"):
            self.db.execute(statement)

    def first_finished_at(self, since: float) -> float | None:
        """The earliest ``finished_at`` (Unix seconds) at or after ``since`` of a match with a
        log, or None (one probe of ``matches_by_finished_at``)."""
        row = self.db.execute("SELECT MIN(finished_at) FROM matches WHERE finished_at>=? AND log_path IS NOT NULL",
                              (since,)).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def logs_finished_between(self, start: float, end: float) -> list[tuple[str, str]]:
        """``(match_key, log_path)`` of the matches with a log that finished in ``[start, end)``
        (Unix seconds), by time (a range of ``matches_by_finished_at``)."""
        rows = self.db.execute("SELECT match_key, log_path FROM matches WHERE finished_at>=? AND finished_at<? "
                               "AND log_path IS NOT NULL ORDER BY finished_at, id", (start, end))
        return [(r[0], r[1]) for r in rows]

    def prune_retention(self, events_before_ms: int, uploads_before_s: float, batch: int = 5000) -> tuple[int, int]:
        """Delete live events (``match_events``) written before ``events_before_ms`` (Unix ms) and
        failed uploads (their row, their report) refused before ``uploads_before_s``, ``batch``
        rows per transaction so that other writers never wait long. Returns ``(events,
        uploads)`` deleted."""
        counts = []
        for statement, before in (
            ("DELETE FROM match_events WHERE id IN (SELECT id FROM match_events WHERE created_at<? LIMIT ?)",
             events_before_ms),
            ("DELETE FROM uploads WHERE id IN (SELECT id FROM uploads WHERE status='failed' AND finished_at<? "
             "LIMIT ?)", uploads_before_s),
        ):
            total = 0
            while True:
                with self._tx():
                    n = max(self.db.execute(statement, (before, batch)).rowcount, 0)
                total += n
                if n < batch:
                    break
            counts.append(total)
        return counts[0], counts[1]

    def recorded_since(self, tournament_id: int, known: set[str]) -> list[dict[str, Any]]:
        """The matches of a tournament recorded (done or aborted) whose keys are not in ``known``,
        as dicts in schedule order: a front that follows its workers reads each result once, not
        the whole tournament at every look (only the keys of the recorded matches are scanned)."""
        keys = [r[0] for r in self.db.execute(
            "SELECT match_key FROM matches WHERE tournament_id=? AND status<>'pending' ORDER BY idx",
            (tournament_id,))]
        out = []
        for key in keys:
            if key not in known:
                row = self.db.execute("SELECT * FROM matches WHERE match_key=?", (key,)).fetchone()
                out.append(dict(row))
        return out

    def results(self, tournament_id: int) -> list[tuple[str, str, float]]:
        """Finished matches as ``(bot0, bot1, score of bot0)`` with 1 win, 0 loss, 0.5 draw."""
        rows = self.db.execute(
            "SELECT bot0, bot1, winner_seat FROM matches WHERE tournament_id=? AND status='done' ORDER BY idx",
            (tournament_id,),
        )
        return [(r[0], r[1], 1.0 if r[2] == 0 else 0.0 if r[2] == 1 else 0.5) for r in rows]

    def _tx(self) -> _Tx:
        return _Tx(self.db)

    def transaction(self, writer: bool = True) -> _Tx:
        """A context manager: everything the store writes inside it is one transaction
        (``BEGIN IMMEDIATE``: other processes wait), committed at the end or rolled back on an
        exception. Nested uses join the outermost. ``writer`` False, on PostgreSQL: without the
        writer lock (:mod:`arena.store.postgres`), for a short transaction that takes the row
        locks it needs itself (the queue's claim, ``SELECT ... FOR UPDATE SKIP LOCKED``), so that
        it never waits for another process's commit; SQLite always has its one writer."""
        return _Tx(self.db, "BEGIN IMMEDIATE" if writer or self.dialect == "sqlite" else "BEGIN")

    def abort_unfinished_ladder(self) -> int:
        """Mark ``aborted`` (``server stopped``) the ladder matches a dead contest server left
        ``pending``; returns how many. Run it inside :meth:`transaction` together with the
        settling of their wagers (contests.md, "Wagers after a crash")."""
        cur = self.db.execute(
            "UPDATE matches SET status='aborted', reason='aborted', detail='server stopped' WHERE status='pending' "
            "AND tournament_id IN (SELECT id FROM tournaments WHERE format='ladder')"
        )
        return cur.rowcount

    def match_outcomes(self, match_keys: list[str]) -> dict[str, tuple[str, int | None, str | None]]:
        """``match_key -> (status, winner seat, reason)`` for the known keys among ``match_keys``."""
        out: dict[str, tuple[str, int | None, str | None]] = {}
        for key in match_keys:
            row = self.db.execute(
                "SELECT status, winner_seat, reason FROM matches WHERE match_key=?", (key,)
            ).fetchone()
            if row is not None:
                out[key] = (row[0], row[1], row[2])
        return out

    # ------------------------------------------------------------------ authors (self-service)

    def add_author(self, name: str, invitation: str | None = None) -> tuple[int, str]:
        """Register author ``name`` and return ``(id, secret)``; the secret is generated (192
        random bits) and only its salted HMAC-SHA256 is stored (:func:`fast_token_hash`). With
        ``invitation``, that unused code is spent in the same transaction. Raises
        :class:`arena.names.BadName` for a bad name, ``ValueError`` if the name is taken or the
        code unknown or spent."""
        check_name(name, "author")
        secret = secrets.token_urlsafe(24)
        salt = secrets.token_bytes(16)
        digest = fast_token_hash(secret, salt)
        with self._tx():
            if self.db.execute("SELECT 1 FROM authors WHERE name=?", (name,)).fetchone() is not None:
                raise ValueError(f"the author name {name!r} is taken: choose another")
            author_id = int(self.db.execute("INSERT INTO authors(name, salt, token_hash, hash_scheme, created_at) "
                                            "VALUES (?,?,?,?,?) RETURNING id",
                                            (name, salt, digest, FAST, time.time())).fetchone()[0])
            if invitation is not None:
                used = self.db.execute(
                    "UPDATE invitations SET used_by=?, used_at=? WHERE code_hash=? AND used_by IS NULL",
                    (author_id, time.time(), hashlib.sha256(invitation.encode()).hexdigest()))
                if used.rowcount != 1:
                    raise ValueError("unknown or already used invitation code: ask the organiser for one")
        return author_id, secret

    def author_secret(self, name: str) -> TokenHash | None:
        """The :class:`TokenHash` of an *active* author, or None (unknown or suspended)."""
        row = self.db.execute("SELECT salt, token_hash, hash_scheme FROM authors WHERE name=? AND status='active'",
                              (name,)).fetchone()
        return TokenHash(bytes(row[0]), bytes(row[1]), row[2]) if row else None

    def author(self, name: str) -> dict[str, Any] | None:
        """Author ``name`` as ``{id, name, status, created_at, salt}``, or None."""
        row = self.db.execute("SELECT id, name, status, created_at, salt FROM authors WHERE name=?", (name,)).fetchone()
        return dict(row) if row else None

    def authors(self) -> list[dict[str, Any]]:
        """Every author with ``bots`` (how many they own), by name."""
        rows = self.db.execute(
            "SELECT a.id, a.name, a.status, a.created_at, COUNT(o.bot) AS bots FROM authors a "
            "LEFT JOIN bot_owners o ON o.author_id=a.id GROUP BY a.id, a.name, a.status, a.created_at ORDER BY a.name")
        return [dict(r) for r in rows]

    def set_author_status(self, name: str, status: str) -> bool:
        """Set ``status`` (``active`` or ``suspended``); False if there is no such author."""
        with self._tx():
            cur = self.db.execute("UPDATE authors SET status=? WHERE name=?", (status, name))
        return cur.rowcount > 0

    def delete_author(self, name: str) -> list[str] | None:
        """Delete author ``name`` with their bots' registrations, submissions, uploads and
        archives (their code); matches and results stay. Returns the bots removed, or None if
        there is no such author."""
        with self._tx():
            row = self.db.execute("SELECT id FROM authors WHERE name=?", (name,)).fetchone()
            if row is None:
                return None
            bots = [r[0] for r in self.db.execute("SELECT bot FROM bot_owners WHERE author_id=?", (row[0],))]
            for bot in bots:
                self.release_bot(bot)
            self.db.execute("DELETE FROM uploads WHERE author_id=?", (row[0],))
            self.db.execute("DELETE FROM authors WHERE id=?", (row[0],))
        return bots

    def release_bot(self, bot: str) -> None:
        """Delete an author's bot: registration, submission, uploads, stored versions and
        ownership (its matches stay; the name is free again)."""
        with self._tx():
            for table, column in (("submissions", "name"), ("bots", "name"), ("bot_archives", "bot"),
                                  ("uploads", "bot"), ("bot_owners", "bot")):
                self.db.execute(f"DELETE FROM {table} WHERE {column}=?", (bot,))

    def add_invitation(self, note: str = "") -> str:
        """A fresh single-use invitation code (stored as its SHA-256 only)."""
        code = secrets.token_urlsafe(12)
        self.db.execute("INSERT INTO invitations(code_hash, note, created_at) VALUES (?,?,?)",
                        (hashlib.sha256(code.encode()).hexdigest(), note, time.time()))
        return code

    def bot_owner(self, bot: str) -> tuple[int, str] | None:
        """``(author id, kind)`` of an author's bot (kind ``uploaded`` or ``remote``), or None."""
        row = self.db.execute("SELECT author_id, kind FROM bot_owners WHERE bot=?", (bot,)).fetchone()
        return (row[0], row[1]) if row else None

    def owned_bots(self, author_id: int) -> list[tuple[str, str]]:
        """The bots of an author: ``(name, kind)``, by name."""
        return [tuple(r) for r in self.db.execute(
            "SELECT bot, kind FROM bot_owners WHERE author_id=? ORDER BY bot", (author_id,))]

    def claim_bot(self, bot: str, author_id: int, kind: str, limit: int) -> None:
        """Make ``bot`` a bot of the author (registered with a fresh token no one is shown,
        until it is launched or given a remote token), unless it is already theirs. Raises
        :class:`arena.names.BadName`, or ``ValueError`` if the name belongs to someone else
        or the author already owns ``limit`` bots."""
        check_name(bot)
        with self._tx():
            owner = self.bot_owner(bot)
            if owner is not None and owner[0] == author_id:
                if owner[1] != kind:
                    raise ValueError(f"{bot} is your {owner[1]} bot: choose another name for a {kind} bot")
                return
            if owner is not None or self.db.execute("SELECT 1 FROM bots WHERE name=?", (bot,)).fetchone():
                raise ValueError(f"the bot name {bot!r} is taken: choose another (the manifest's name)")
            if len(self.owned_bots(author_id)) >= limit:
                raise ValueError(f"you already have {limit} bots, the most this contest allows")
            self.add_bot(bot)
            self.db.execute("INSERT INTO bot_owners(bot, author_id, kind, created_at) VALUES (?,?,?,?)",
                            (bot, author_id, kind, time.time()))

    def add_upload(self, bot: str, author_id: int, data: bytes) -> int:
        """Keep an uploaded archive (already checked) for the doctor: a ``queued`` upload; its id."""
        return int(self.db.execute(
            "INSERT INTO uploads(bot, author_id, status, sha256, size, data, created_at) VALUES (?,?,?,?,?,?,?) "
            "RETURNING id", (bot, author_id, "queued", archive_sha256(data), len(data), data, time.time())
        ).fetchone()[0])

    def upload(self, upload_id: int) -> dict[str, Any] | None:
        """An upload without its bytes: ``{id, bot, author_id, status, sha256, size, version,
        report (decoded or None), created_at, finished_at}``, or None."""
        row = self.db.execute("SELECT id, bot, author_id, status, sha256, size, version, report, created_at, "
                              "finished_at FROM uploads WHERE id=?", (upload_id,)).fetchone()
        if row is None:
            return None
        out = dict(row)
        out["report"] = json.loads(out["report"]) if out["report"] else None
        return out

    def upload_data(self, upload_id: int) -> bytes | None:
        """The archive of an upload the doctor has not decided yet, or None."""
        row = self.db.execute("SELECT data FROM uploads WHERE id=?", (upload_id,)).fetchone()
        return None if row is None or row[0] is None else bytes(row[0])

    def uploads_of(self, bot: str, limit: int = 20) -> list[dict[str, Any]]:
        """The newest uploads of ``bot`` (as :meth:`upload`), newest first."""
        ids = [r[0] for r in self.db.execute("SELECT id FROM uploads WHERE bot=? ORDER BY id DESC LIMIT ?",
                                             (bot, limit))]
        return [self.upload(i) for i in ids]

    def undecided_uploads(self) -> list[int]:
        """Uploads still ``queued`` or ``checking`` (a stopped server leaves some), oldest first."""
        return [r[0] for r in self.db.execute(
            "SELECT id FROM uploads WHERE status IN ('queued', 'checking') ORDER BY id")]

    def set_upload_status(self, upload_id: int, status: str) -> None:
        """Mark an undecided upload (``checking``)."""
        self.db.execute("UPDATE uploads SET status=? WHERE id=?", (status, upload_id))

    def refuse_upload(self, upload_id: int, report: dict[str, Any]) -> None:
        """The doctor refused the upload: keep its ``report`` (its author still sees it), drop
        its bytes, and, when the bot has nothing else (no version that passed, no submission,
        no match), free its name: a failed upload holds no name and no bot."""
        with self._tx():
            self.db.execute("UPDATE uploads SET status='failed', report=?, data=NULL, finished_at=? WHERE id=?",
                            (json.dumps(report), time.time(), upload_id))
            row = self.db.execute("SELECT bot FROM uploads WHERE id=?", (upload_id,)).fetchone()
            bot = None if row is None else row[0]
            if bot is None or self.db.execute(
                "SELECT 1 FROM bot_owners WHERE bot=? AND kind='uploaded' AND NOT EXISTS (SELECT 1 FROM bot_archives "
                "WHERE bot=?) AND NOT EXISTS (SELECT 1 FROM submissions WHERE name=?) AND NOT EXISTS (SELECT 1 FROM "
                "uploads WHERE bot=? AND status IN ('queued', 'checking'))", (bot, bot, bot, bot)).fetchone() is None:
                return
            if self.db.execute("SELECT 1 FROM ladder WHERE bot=? LIMIT 1", (bot,)).fetchone() is not None:
                return  # it played (under an earlier owner's version that was deleted): keep the name with its results
            self.db.execute("DELETE FROM bot_owners WHERE bot=?", (bot,))
            self.db.execute("DELETE FROM bots WHERE name=?", (bot,))

    def failed_uploads(self, author_id: int, limit: int = 10) -> list[dict[str, Any]]:
        """The author's newest failed uploads of bots they do not own (a failed first upload
        frees its name: :meth:`refuse_upload`), as :meth:`upload`, newest first."""
        ids = [r[0] for r in self.db.execute(
            "SELECT id FROM uploads WHERE author_id=? AND status='failed' AND NOT EXISTS (SELECT 1 FROM bot_owners o "
            "WHERE o.bot=uploads.bot AND o.author_id=uploads.author_id) ORDER BY id DESC LIMIT ?", (author_id, limit))]
        return [self.upload(i) for i in ids]

    def accept_upload(self, upload_id: int, manifest: str, report: dict[str, Any],
                      limits: ArchiveLimits = ArchiveLimits()) -> int:
        """The doctor passed the upload: in one transaction its archive becomes the bot's newest
        version (:meth:`put_archive`), the bot is submitted from ``manifest`` (the unpacked
        archive's manifest, sandboxed) and the upload marked ``passed``. Returns the version."""
        with self._tx():
            row = self.db.execute("SELECT bot, data FROM uploads WHERE id=?", (upload_id,)).fetchone()
            version = self.put_archive(row[0], bytes(row[1]), limits)
            self.submit_bot(row[0], manifest, sandbox=True)
            self.db.execute("UPDATE uploads SET status='passed', version=?, report=?, data=NULL, finished_at=? "
                            "WHERE id=?", (version, json.dumps(report), time.time(), upload_id))
        return version

    def bot_faults(self, bot: str, limit: int = 10) -> list[dict[str, Any]]:
        """The newest finished matches that ``bot`` lost by its own fault (a timeout, a crash,
        an illegal action...): ``{match_key, reason, detail, finished_at}``."""
        rows = self.db.execute(
            "SELECT match_key, reason, detail, finished_at FROM matches WHERE status='done' AND "
            "((bot0=? AND faulty_seat=0) OR (bot1=? AND faulty_seat=1)) ORDER BY finished_at DESC, id DESC LIMIT ?",
            (bot, bot, limit))
        return [dict(r) for r in rows]


def open_store(target: str | Path) -> Store:
    """The store at ``target`` (a ``--db`` value or the contest's ``db``): a ``postgresql://``
    (or ``postgres://``) URL opens it on PostgreSQL, anything else is an SQLite file, created if
    missing (``":memory:"`` for tests). ``Store(target)`` does the same. Raises
    :class:`arena.errors.DatabaseError` (one line, exit 4) for a database that is not an arena
    one, newer than this code, or a PostgreSQL server that cannot be reached."""
    return Store(target)


def _tuple_pairing(i: int, m: tuple) -> Any:
    from arena.schedule.formats import Pairing

    return Pairing(index=i, bot0=m[0], bot1=m[1], seed=m[2])


class _Tx:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK`` on error). Inside a transaction
    already open on the connection it joins it: the outer one commits or rolls back all."""

    def __init__(self, db: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> None:
        self.db = db
        self.begin = begin
        self.joined = False

    def __enter__(self) -> None:
        self.joined = self.db.in_transaction
        if not self.joined:
            self.db.execute(self.begin)

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if not self.joined:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")
