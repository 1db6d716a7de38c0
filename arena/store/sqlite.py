"""The store: bots and their tokens, tournaments, matches; every SQL statement of the arena lives in ``store/``.

One file (``arena.db`` by default) in WAL mode, or, given a ``postgresql://`` URL
(:func:`open_store`), the same schema (:mod:`arena.store.schema`) on PostgreSQL, both through
SQLAlchemy Core (:mod:`arena.store.engine`). Every match is inserted as ``pending`` when its
tournament is scheduled, so an interrupted tournament knows exactly what is left;
:meth:`Store.record_result` commits a result before anyone is told of it (design.md,
"Persistence and scale").

:class:`Store` is a facade over the store's concerns, one module each: results
(:mod:`arena.store.results`: tournaments, matches, results, ladder units, pair counts), accounts
(:mod:`arena.store.accounts`: bots, tokens, spectators, authors, invitations, uploads, archives),
wagers (:mod:`arena.store.wagers`) and match logs (:mod:`arena.store.logs`); the queue
(:mod:`arena.store.queue`) and the pages (:mod:`arena.store.pages`) take a store. The module keeps
its historical name: ``from arena.store.sqlite import Store`` serves both backends.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from arena.errors import DatabaseError
from arena.store.accounts import WITHDRAWN, Accounts
from arena.store.engine import Connection, Transaction, connect
from arena.store.fast import Hot
from arena.store.logs import Logs
from arena.store.postgres import is_url
from arena.store.results import FIRST_ELO, MatchRow, Results
from arena.store.schema import HEAD, LEGACY_VERSION
from arena.store.tokens import (
    DUMMY_TOKEN_HASH,
    FAST,
    GENERATED_TOKEN_CHARS,
    SCRYPT,
    SLOW,
    TOKEN_SCHEMES,
    TokenHash,
    fast_token_hash,
    hash_token,
    looks_generated,
)
from arena.store.upgrade import open_schema
from arena.store.wagers import Wagers

SCHEMA_VERSION = LEGACY_VERSION
"""The last hand-written schema version (``PRAGMA user_version``), which Alembic's baseline is; the
schema's revision now is :data:`arena.store.schema.HEAD`."""

__all__ = ["DUMMY_TOKEN_HASH", "FAST", "FIRST_ELO", "GENERATED_TOKEN_CHARS", "HEAD", "SCHEMA_VERSION", "SCRYPT",
           "SLOW", "TOKEN_SCHEMES", "WITHDRAWN", "MatchRow", "Store", "TokenHash", "fast_token_hash", "hash_token",
           "looks_generated", "open_store"]


class _RawSqlite:
    """The driver's SQLite connection under a store, rows indexable by name (``sqlite3.Row``): for tests
    and bulk loads (see :attr:`Store.db`). Everything else is the ``sqlite3.Connection``'s."""

    def __init__(self, dbapi: sqlite3.Connection) -> None:
        self._dbapi = dbapi

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        """Run one statement of SQLite's dialect (``?`` placeholders) on the store's connection."""
        cursor = self._dbapi.cursor()
        cursor.row_factory = sqlite3.Row
        return cursor.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dbapi, name)


class Store(Results, Accounts, Wagers, Logs):
    """The arena database at ``path``: an SQLite file (``":memory:"`` for tests) or a
    ``postgresql://`` URL (see :func:`open_store`). Not thread-safe: one ``Store`` per trio run;
    every method is a short blocking call. ``connection`` is its :class:`arena.store.engine.Connection`;
    ``path`` is what to show (a URL without its password); ``dialect`` is ``"sqlite"`` or
    ``"postgresql"``."""

    def __init__(self, path: str | Path = "arena.db", create: bool = True) -> None:
        """Open (``create``: or create, with its folder) the store at ``path``. With ``create``
        False, as read-only commands open it, a missing SQLite file is
        :class:`arena.errors.DatabaseError` and nothing is created. A database made by an older
        arena is refused with the ``arena db upgrade`` command to run (:mod:`arena.store.upgrade`)."""
        target = str(path)
        self.dialect = "postgresql" if is_url(target) else "sqlite"
        if self.dialect == "sqlite":
            if target != ":memory:" and not create and not Path(target).is_file():
                raise DatabaseError(f"no database at {target}: check --db (this command reads a database, it "
                                    "creates none)")
            if target != ":memory:":
                Path(target).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.connection: Connection = connect(target)
        except sqlite3.DatabaseError as exc:
            raise DatabaseError(f"{target} is not an arena database (SQLite: {exc}); use another file "
                                "(a missing one is created)") from None
        self.path = self.connection.shown
        self._password = self.connection.password
        try:
            open_schema(self.connection, target)
        except sqlite3.DatabaseError as exc:
            self.connection.close()
            raise DatabaseError(f"{target} is not an arena database (SQLite: {exc}); use another file "
                                "(a missing one is created)") from None
        except BaseException:
            self.connection.close()
            raise

    # ------------------------------------------------------------------ running statements

    def run(self, statement: Any, params: Any = None) -> Any:
        """Run one statement (a Core construct, or ``text()`` with named binds where standard SQL
        serves both backends) with ``params`` (a dict, or a list of dicts for many rows); returns
        SQLAlchemy's result (a :class:`arena.store.fast.Hot` statement: its
        :class:`~arena.store.fast.Rows`). See :mod:`arena.store` for how to add a statement."""
        if statement.__class__ is Hot:
            return self.connection.fast(statement, params)
        return self.connection.run(statement, params)

    @property
    def db(self) -> Any:
        """The driver's connection under the store, in its transaction: on SQLite the
        ``sqlite3.Connection`` (rows as ``sqlite3.Row``), on PostgreSQL the ``psycopg.Connection``.
        For tests and bulk loads only (:mod:`arena.store.seed`); the store's own statements go
        through :meth:`run`."""
        dbapi = self.connection.dbapi
        return _RawSqlite(dbapi) if self.dialect == "sqlite" else dbapi

    def child_db(self) -> tuple[str, dict[str, str]]:
        """What a child process (``arena worker``) needs to open this same store: the ``--db``
        value for its command line, never with a password (command lines are public: ``ps``),
        and the environment to add, ``PGPASSWORD`` when the URL held one (the environment of a
        process is readable only by its user)."""
        return self.path, ({"PGPASSWORD": self._password} if self._password else {})

    def close(self) -> None:
        """Close the database."""
        self.connection.close()

    def _tx(self) -> Transaction:
        return self.connection.transaction()

    def transaction(self, writer: bool = True) -> Transaction:
        """A context manager: everything the store writes inside it is one transaction
        (``BEGIN IMMEDIATE``: other processes wait), committed at the end or rolled back on an
        exception. Nested uses join the outermost. ``writer`` False, on PostgreSQL: without the
        writer lock (:mod:`arena.store.engine`), for a short transaction that takes the row
        locks it needs itself (the queue's claim, ``SELECT ... FOR UPDATE SKIP LOCKED``), so that
        it never waits for another process's commit; SQLite always has its one writer."""
        return self.connection.transaction(writer)


def open_store(target: str | Path) -> Store:
    """The store at ``target`` (a ``--db`` value or the contest's ``db``): a ``postgresql://``
    (or ``postgres://``) URL opens it on PostgreSQL, anything else is an SQLite file, created if
    missing (``":memory:"`` for tests). ``Store(target)`` does the same. Raises
    :class:`arena.errors.DatabaseError` (one line, exit 4) for a database that is not an arena
    one, older (the ``arena db upgrade`` command to run) or newer than this code, or a PostgreSQL
    server that cannot be reached."""
    return Store(target)
