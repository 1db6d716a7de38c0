"""The store's connection: one SQLAlchemy engine and connection per :class:`arena.store.sqlite.Store`.

:func:`connect` makes it for a ``--db`` value: an SQLite file (``":memory:"`` for tests) or a
``postgresql://`` URL, which SQLAlchemy opens with psycopg 3 (``postgresql+psycopg://``; users keep
writing ``postgresql://``). Every statement of the store goes through :meth:`Connection.run`.

Transactions (:meth:`Connection.transaction`) work as the store always had them:

* statements outside a transaction commit by themselves (the engine runs in SQLAlchemy's
  ``AUTOCOMMIT`` isolation: on SQLite that is the pysqlite recipe of SQLAlchemy's documentation,
  the driver's own ``BEGIN`` turned off, ``isolation_level=None``, so that we say when a
  transaction starts and how);
* a writer transaction starts with ``BEGIN IMMEDIATE`` on SQLite (the write lock is taken at once:
  a select-then-update inside it is atomic, and a second writer waits up to the busy timeout rather
  than failing later on a stale snapshot); on PostgreSQL with ``BEGIN`` and
  ``pg_advisory_xact_lock(`` :data:`WRITER_LOCK` ``)``: write transactions of every process run one
  at a time, as on SQLite, so code that re-reads under that lock (the wager desk, archive versions,
  the ladder's counts) keeps its meaning. ``writer=False`` on PostgreSQL is a plain ``BEGIN`` (the
  queue's claim: it takes its own row locks, ``FOR UPDATE SKIP LOCKED``);
* nested uses join the outermost, which commits or rolls back all.

The hot statements (:class:`arena.store.fast.Hot`: the result path, the queue's claim, renewal
and commit, the token checks at hello, the pairing's reads) and ``BEGIN``/``COMMIT`` themselves
skip SQLAlchemy's execution and run on the driver's cursor (:meth:`Connection.fast`), with the
same error rules.

SQLite's pragmas (WAL, ``synchronous=NORMAL``, foreign keys, a 5 s busy timeout) are set on each
new driver connection by an engine ``connect`` event; PostgreSQL's session settings (lock timeout,
connect timeout, TCP keepalives) are connection arguments.

Errors: the driver's own exception is raised, not SQLAlchemy's wrapper (``sqlite3.Error`` on
SQLite, what :mod:`arena.store.health` and the callers catch), except that any
``psycopg.OperationalError`` (connection lost, server stopping, disk full, a lock wait over
:data:`LOCK_TIMEOUT_S`) is :class:`arena.store.postgres.DatabaseLost`, an ``OSError``: a storage
fault, paused and retried. After a lost connection the next statement reconnects; a statement
outside a transaction that finds its connection dead is tried once more on a new one (such
statements are reads or idempotent upserts); a transaction cut by the loss is retried whole by its
caller.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from arena.errors import DatabaseError
from arena.store.fast import Hot, positional
from arena.store.postgres import DatabaseLost, password_of, redact

WRITER_LOCK = 0x61726E61  # "arna"
"""The advisory lock key that stands for SQLite's single writer lock on PostgreSQL."""

LOCK_TIMEOUT_S = 10
"""Longest wait for a lock on PostgreSQL (the writer lock or a row) before the statement fails as a
storage fault and is retried (SQLite's busy timeout is :data:`BUSY_TIMEOUT_S`)."""

BUSY_TIMEOUT_S = 5.0
"""SQLite: how long a writer waits for another's lock before ``database is locked``."""

CONNECT_TIMEOUT_S = 10
"""Longest wait for a connection to a PostgreSQL server."""

_LOCK = Hot(sa.text("SELECT pg_advisory_xact_lock(:key)").bindparams(key=WRITER_LOCK))
_BEGINS = {sql: Hot(sa.text(sql)) for sql in ("BEGIN IMMEDIATE", "BEGIN", "BEGIN ISOLATION LEVEL REPEATABLE READ "
                                              "READ ONLY")}
_COMMIT, _ROLLBACK = Hot(sa.text("COMMIT")), Hot(sa.text("ROLLBACK"))


def sqlalchemy_url(target: str) -> str:
    """The SQLAlchemy URL of a ``postgresql://`` (or ``postgres://``) URL: the psycopg 3 driver."""
    scheme, rest = target.split("://", 1)
    return f"postgresql+psycopg://{rest}" if scheme in ("postgresql", "postgres") else target


SQLITE_CACHE_KIB = 32768
"""Each SQLite connection's page cache (KiB; SQLite's default is 2,000): a result's commit walks
a dozen B-trees (the match, its unit, both orientations of its pair's count, the bots' ladder
rows and the indexes), and on a season's store (5 GB) their interior pages no longer fit in 2 MB,
so each walk read them again from the operating system. Pages are cached only as they are read:
a small store's connections stay small."""


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Each new SQLite connection: no implicit ``BEGIN`` from the driver (the store says when), WAL,
    ``synchronous=NORMAL`` (durable at each checkpoint, safe with WAL), foreign keys checked, a
    page cache of :data:`SQLITE_CACHE_KIB`."""
    dbapi_connection.isolation_level = None
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON", f"cache_size=-{SQLITE_CACHE_KIB}"):
        dbapi_connection.execute(f"PRAGMA {pragma}")


def make_engine(target: str) -> Engine:
    """An engine for ``target``: a ``postgresql://`` URL or an SQLite path (``":memory:"``). Opens no
    connection yet. :class:`arena.errors.DatabaseError` comes later, from :func:`connect`."""
    if target.startswith(("postgresql://", "postgres://")):
        given = target.split("?", 1)[1] if "?" in target else ""
        args = {k: v for k, v in (("connect_timeout", CONNECT_TIMEOUT_S), ("keepalives_idle", 10),
                                  ("keepalives_interval", 5), ("keepalives_count", 3)) if f"{k}=" not in given}
        # the URL's own libpq options (e.g. ``options=-csearch_path=myschema``) are kept: connect_args
        # would otherwise replace them
        own = parse_qs(given).get("options", [""])[-1]
        args["options"] = f"{own} -c lock_timeout={LOCK_TIMEOUT_S * 1000}".strip()
        return sa.create_engine(sqlalchemy_url(target), isolation_level="AUTOCOMMIT", connect_args=args,
                                pool_size=1, max_overflow=0, pool_reset_on_return=None)
    engine = sa.create_engine("sqlite+pysqlite:///" + target, isolation_level="AUTOCOMMIT",
                              connect_args={"timeout": BUSY_TIMEOUT_S}, pool_reset_on_return=None)
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


class Connection:
    """The store's one connection to its database (see the module docstring). ``dialect`` is
    ``"sqlite"`` or ``"postgresql"``; ``shown`` is the target without a password."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.shown = redact(target) if target.startswith(("postgresql://", "postgres://")) else target
        self.password = password_of(target) if self.shown != target or "password" in target else None
        self.conn: Any = None
        self.engine = make_engine(target)
        self.dialect = self.engine.dialect.name
        self.depth = 0
        """How many :meth:`transaction` blocks are open (0: statements commit by themselves)."""
        self._begin = "BEGIN IMMEDIATE" if self.dialect == "sqlite" else "BEGIN"
        self._positional = positional(self.engine.dialect)
        self._cursor: Any = None
        """The driver's cursor of the fast path (:meth:`fast`), made at its first use, dropped with
        the connection (:meth:`_reset`)."""
        self._driver_error: Any = ()
        """What :meth:`fast` catches: psycopg's errors on PostgreSQL, nothing on SQLite (its errors
        are raised as they are, as :meth:`run` does)."""
        self._lost_error: Any = ()
        if self.dialect == "postgresql":
            import psycopg

            self._driver_error, self._lost_error = psycopg.Error, psycopg.OperationalError
        self.conn = self._wrap(self.engine.connect)

    # ------------------------------------------------------------------ statements

    def run(self, statement: Any, params: Any = None) -> Any:
        """Run ``statement`` (a Core construct or ``text()`` with named binds; ``params`` a dict, or
        a list of dicts for many rows) and return its result; a :class:`~arena.store.fast.Hot`
        statement goes through :meth:`fast`. Raises the driver's error, or
        :class:`~arena.store.postgres.DatabaseLost` for a storage fault on PostgreSQL."""
        if statement.__class__ is Hot:
            return self.fast(statement, params)
        try:
            return self.conn.execute(statement, params)
        except DBAPIError as exc:
            if self.depth or not exc.connection_invalidated:
                self._raise(exc)
            self._reset()  # found dead outside a transaction (the server restarted): once more
        return self._wrap(lambda: self.conn.execute(statement, params))

    def fast(self, statement: Hot, params: Any = None, retry: bool = True) -> Any:
        """Run a hot statement on the driver's cursor (:mod:`arena.store.fast`), its errors mapped as
        :meth:`run` maps SQLAlchemy's: the driver's error, or on PostgreSQL
        :class:`~arena.store.postgres.DatabaseLost` for a storage fault; a lost connection is
        dropped (the next statement reconnects), and outside a transaction the statement is tried
        once more on a new one. Returns a :class:`~arena.store.fast.Rows`."""
        cursor = self._cursor
        try:
            if cursor is None:
                cursor = self._cursor = self._wrap(lambda: self.conn.connection.dbapi_connection).cursor()
            return statement.execute(cursor, self._positional, params)
        except self._driver_error as exc:
            self._cursor = None
            dbapi = self.conn.connection.dbapi_connection if not self.conn.invalidated else None
            lost = self.engine.dialect.is_disconnect(exc, dbapi, cursor)
            depth = self.depth
            if lost:
                self.conn.invalidate(exc)
                self._reset()
                if retry and not depth:  # found dead outside a transaction (the server restarted): once more
                    return self.fast(statement, params, retry=False)
            if lost or isinstance(exc, self._lost_error):
                raise DatabaseLost(self._lost_text(exc)) from None
            raise

    def _lost_text(self, orig: BaseException) -> str:
        """What a :class:`DatabaseLost` says: the target (no password) and the driver's message."""
        text = " ".join(str(orig).split())
        if self.password:
            text = text.replace(self.password, "***")
        return f"PostgreSQL at {self.shown}: {text}"

    def _wrap(self, call: Any) -> Any:
        try:
            return call()
        except DBAPIError as exc:
            self._raise(exc)

    def _raise(self, exc: DBAPIError) -> None:
        """Raise the driver's error behind ``exc`` (see the module docstring)."""
        orig = exc.orig
        if exc.connection_invalidated:
            self._reset()
        if self.dialect == "postgresql":
            import psycopg

            if isinstance(orig, psycopg.OperationalError) or exc.connection_invalidated:
                raise DatabaseLost(self._lost_text(orig)) from None
        if isinstance(orig, BaseException):
            raise orig from None
        raise exc

    def _reset(self) -> None:
        """After a lost connection: forget its transaction, so that the next statement reconnects."""
        self.depth = 0
        self._cursor = None
        if self.conn is None:
            return
        try:
            self.conn.rollback()
        except DBAPIError:
            pass

    # ------------------------------------------------------------------ transactions

    @property
    def in_transaction(self) -> bool:
        """True inside :meth:`transaction`."""
        return self.depth > 0

    def transaction(self, writer: bool = True) -> Transaction:
        """A context manager: one transaction (see the module docstring); nested ones join it."""
        return Transaction(self, writer)

    def snapshot(self) -> Transaction:
        """A context manager: one read-only transaction whose statements all see the same
        committed state, taking no writer lock (SQLite: a deferred ``BEGIN``, a WAL read
        snapshot, writers go on; PostgreSQL: ``REPEATABLE READ READ ONLY``, no advisory lock).
        For long reads (the ladder's fitter); inside a transaction already open it joins it."""
        return Transaction(self, None)

    def _start(self, writer: bool | None) -> None:
        if writer is None:
            begin = "BEGIN" if self.dialect == "sqlite" else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        else:
            begin = self._begin if writer or self.dialect == "sqlite" else "BEGIN"
        if self.dialect == "postgresql" and self.conn.invalidated:
            self._reset()
        if not self.conn.in_transaction():  # SQLAlchemy's own (a no-op on the driver, AUTOCOMMIT): what
            self._wrap(self.conn.begin)  # Alembic looks at to join ours rather than commit in the middle
        self.fast(_BEGINS[begin], retry=False)
        self.depth = 1
        if writer and self.dialect == "postgresql":
            try:
                self.fast(_LOCK, retry=False)
            except BaseException:
                self._end(rollback=True)
                raise

    def _end(self, rollback: bool) -> None:
        self.depth = 0
        if self.conn.invalidated:  # lost: the server dropped the transaction
            self._reset()
            if rollback:
                return
            raise DatabaseLost(f"PostgreSQL at {self.shown}: the connection was lost before the commit")
        try:
            self.fast(_ROLLBACK if rollback else _COMMIT, retry=False)
        except DatabaseLost:
            if not rollback:
                raise

    # ------------------------------------------------------------------ the driver

    @property
    def dbapi(self) -> Any:
        """The driver's connection under this one (``sqlite3.Connection`` or ``psycopg.Connection``),
        in the same transaction: for bulk loads (``COPY``, ``executemany``) and tests only."""
        return self.conn.connection.dbapi_connection

    def close(self) -> None:
        """Close the connection and the engine."""
        self._cursor = None
        try:
            self.conn.close()
        finally:
            self.engine.dispose()


class Transaction:
    """``with`` block of :meth:`Connection.transaction`: begins (unless one is open: it joins),
    commits at the end, rolls back on an exception."""

    def __init__(self, connection: Connection, writer: bool | None) -> None:
        self.connection = connection
        self.writer = writer
        self.joined = False

    def __enter__(self) -> None:
        self.joined = self.connection.depth > 0
        if self.joined:
            self.connection.depth += 1
        else:
            self.connection._start(self.writer)

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if self.joined:
            self.connection.depth = max(1, self.connection.depth - 1)
        else:
            self.connection._end(rollback=exc_type is not None)


def connect(target: str | Path) -> Connection:
    """The :class:`Connection` of ``target``, connected: see :class:`Connection`. Raises
    :class:`arena.errors.DatabaseError` when psycopg is missing or the server cannot be reached
    (one line, no password); ``sqlite3.DatabaseError`` for a file that is not a database."""
    target = str(target)
    if target.startswith(("postgresql://", "postgres://")):
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise DatabaseError(f"{redact(target)} needs psycopg 3: pip install 'ecarte-arena[postgres]'") from None
        try:
            return Connection(target)
        except DatabaseLost as exc:
            raise DatabaseError(f"cannot connect to {redact(target)}: {str(exc).split(': ', 1)[-1]}; start "
                                "PostgreSQL or fix --db") from None
    return Connection(target)

