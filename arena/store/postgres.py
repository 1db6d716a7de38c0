"""The store on PostgreSQL: a psycopg 3 connection that speaks the part of ``sqlite3`` the store uses.

:class:`arena.store.sqlite.Store` holds every SQL statement once, written for SQLite with ``?``
placeholders. Given a ``postgresql://`` URL instead of a file, it talks to a :class:`PgConnection`,
which offers the subset of the ``sqlite3.Connection`` API the store (and the few readers beside
it) use, and translates each statement once (cached) into PostgreSQL's dialect:

* placeholders: ``?`` becomes ``%s`` (outside quoted literals), a literal ``%`` becomes ``%%``;
* schema types: ``INTEGER`` -> ``BIGINT`` (SQLite integers are 64-bit), ``INTEGER PRIMARY KEY``
  -> an identity column, ``REAL`` -> ``DOUBLE PRECISION``, ``BLOB`` -> ``BYTEA``, ``TEXT`` ->
  ``TEXT COLLATE "C"`` (text sorts by bytes, as in SQLite, whatever the database's locale);
  ``AUTOINCREMENT`` is dropped; the tables in :data:`ROWID_TABLES` get SQLite's implicit ``rowid``
  as a last identity column;
* ``INSERT OR IGNORE`` -> ``INSERT ... ON CONFLICT DO NOTHING``;
* ``sqlite_master`` (tables) reads ``information_schema.tables``; ``PRAGMA user_version`` reads and
  writes the one-row table ``schema_version``; ``PRAGMA table_info(t)`` reads
  ``information_schema.columns``; other pragmas (WAL, synchronous, foreign keys: PostgreSQL
  always checks them) do nothing;
* not translated: where NULLs sort (SQLite puts them first in ascending order, PostgreSQL last).
  Rewriting every ``ORDER BY`` would keep PostgreSQL from reading its indexes in order, so a
  statement that orders by a column that may be NULL says where they go, the same on both
  (``ORDER BY x IS NULL, x DESC``: NULLs last);
* ``BEGIN IMMEDIATE`` (SQLite's "take the writer lock now") is ``BEGIN`` followed by
  ``pg_advisory_xact_lock`` on one key per database: as on SQLite, write transactions of every
  process run one at a time, so code that re-reads under that lock (the wager desk, the ladder
  refit, archive versions) keeps its meaning. Statements outside a transaction autocommit.

Rows are :class:`Row`: tuples that are also indexable by column name, like ``sqlite3.Row``.

Faults: any ``psycopg.OperationalError`` (connection lost, server shutting down or restarting,
disk full, a lock wait over :data:`LOCK_TIMEOUT_S`) is raised as :class:`DatabaseLost`, a
``ConnectionError``: an ``OSError``, so :mod:`arena.store.health` treats it like a full disk
(pause, retry, resume). After a lost connection the next statement outside a transaction
reconnects (a statement outside a transaction that finds its connection dead, say after a
server restart, is tried once more on a new one); a transaction cut by the loss is gone (its
``ROLLBACK`` is a no-op) and is retried whole by its caller. A database that cannot be reached
when the store opens is one line (:class:`arena.errors.DatabaseError`, exit 4) that never shows a
password.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from arena.errors import DatabaseError

SCHEMES = ("postgresql://", "postgres://")
"""The URL schemes that mean PostgreSQL; anything else given as ``--db`` is an SQLite file."""

ROWID_TABLES = ("bots",)
"""Tables whose SQLite ``rowid`` the store reads (``Store.bot_id``): on PostgreSQL they get a
``rowid`` identity column, last so that positional ``INSERT ... VALUES`` keep their meaning."""

WRITER_LOCK = 0x61726E61  # "arna"
"""The advisory lock key that stands for SQLite's single writer lock (see the module docstring)."""

LOCK_TIMEOUT_S = 10
"""Longest wait for a lock (the writer lock or a row) before the statement fails as a storage
fault and is retried (SQLite's busy timeout is 5 s)."""

CONNECT_TIMEOUT_S = 10
"""Longest wait for a connection to the server."""


def is_url(target: object) -> bool:
    """True if ``target`` (a ``--db`` value) names a PostgreSQL database rather than an SQLite file."""
    return isinstance(target, str) and target.startswith(SCHEMES)


def redact(url: str) -> str:
    """``url`` without its password (in the authority or as a ``password=`` parameter), to show."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        auth, host = netloc.rsplit("@", 1)
        netloc = f"{auth.split(':', 1)[0]}@{host}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k.lower() != "password"], safe="/")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def password_of(url: str) -> str | None:
    """The password in ``url`` (authority or ``password=`` parameter), or None."""
    password = urlsplit(url).password
    for k, v in parse_qsl(urlsplit(url).query):
        if k.lower() == "password":
            password = v
    return password


def shown(target: object) -> str:
    """A ``--db`` value as it may be shown: a URL without its password, a file path as it is."""
    return redact(str(target)) if is_url(target) else str(target)


class DatabaseLost(ConnectionError):
    """PostgreSQL could not do a statement for a reason of the server or the network (connection
    lost or refused, server restarting, disk full, lock wait too long): a storage fault, retried."""


class Row(tuple):
    """A result row: a tuple, also indexable by column name (``row["name"]``) with ``keys()``, so
    that ``dict(row)`` works as with ``sqlite3.Row``."""

    _index: dict[str, int]

    def __new__(cls, values: Any, index: dict[str, int]) -> Row:
        row = super().__new__(cls, values)
        row._index = index
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._index)


def _row_factory(cursor: Any) -> Any:
    index = {c.name: i for i, c in enumerate(cursor.description or ())}
    return lambda values: Row(values, index)


class _Result:
    """What ``execute`` returns for an emulated pragma: rows already computed."""

    def __init__(self, rows: list[tuple]) -> None:
        self.rows = rows
        self.rowcount = len(rows)

    def fetchone(self) -> tuple | None:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple]:
        return list(self.rows)

    def __iter__(self) -> Any:
        return iter(self.rows)


_DDL = re.compile(r"^\s*(CREATE\s+TABLE|ALTER\s+TABLE)", re.I)


@lru_cache(maxsize=1024)
def translate(sql: str, placeholders: bool = True) -> str:
    """``sql`` (SQLite's dialect, ``?`` placeholders) in PostgreSQL's (``%s``): see the module
    docstring for the rules. ``placeholders`` False: the statement takes no parameters (``%``
    stays as it is)."""
    if _DDL.match(sql):
        sql = re.sub(r"\bINTEGER\s+PRIMARY\s+KEY(\s+AUTOINCREMENT)?", "BIGINT GENERATED BY DEFAULT AS IDENTITY "
                     "PRIMARY KEY", sql, flags=re.I)
        sql = re.sub(r"\bINTEGER\b", "BIGINT", sql, flags=re.I)
        sql = re.sub(r"\bREAL\b", "DOUBLE PRECISION", sql, flags=re.I)
        sql = re.sub(r"\bBLOB\b", "BYTEA", sql, flags=re.I)
        sql = re.sub(r"\bTEXT\b", 'TEXT COLLATE "C"', sql, flags=re.I)
        for table in ROWID_TABLES:
            sql = re.sub(rf"^(\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{table}\s*\(.*?)\s*\)\s*;?\s*$",
                         r"\1,\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY\n)", sql, flags=re.I | re.S)
    if re.match(r"\s*INSERT\s+OR\s+IGNORE\s+", sql, re.I):
        sql = re.sub(r"^\s*INSERT\s+OR\s+IGNORE\s+", "INSERT ", sql, flags=re.I) + " ON CONFLICT DO NOTHING"
    sql = re.sub(r"\bsqlite_master\b", "(SELECT table_name AS name, 'table' AS type FROM information_schema.tables "
                 "WHERE table_schema = current_schema()) AS sqlite_master", sql)
    if not placeholders:
        return sql
    out, quoted = [], False
    for ch in sql:
        if ch == "'":
            quoted = not quoted
        out.append("%%" if ch == "%" else "%s" if ch == "?" and not quoted else ch)
    return "".join(out)


_PRAGMA = re.compile(r"^\s*PRAGMA\s+(\w+)\s*(?:=\s*(\w+)|\((\w+)\))?\s*;?\s*$", re.I)


class PgConnection:
    """A PostgreSQL database behind the ``sqlite3.Connection`` subset the store uses:
    ``execute``, ``executemany``, ``executescript``, ``in_transaction``, ``close`` (see the module
    docstring). ``url`` is kept to reconnect; :attr:`shown` is it without a password."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = redact(url)
        self._in_tx = False
        self.conn = self._connect()

    def _connect(self) -> Any:
        import psycopg
        from psycopg.adapt import Dumper, Loader
        from psycopg.conninfo import conninfo_to_dict

        class BoolAsInt(Dumper):  # SQLite has no booleans: True is stored as 1
            oid = psycopg.adapters.types["int8"].oid

            def dump(self, obj: bool) -> bytes:
                return b"1" if obj else b"0"

        class NumericAsNumber(Loader):  # SUM()/AVG() give numeric: int or float, as from SQLite
            def load(self, data: Any) -> int | float:
                text = bytes(data).decode()
                return int(text) if text.lstrip("-").isdigit() else float(text)

        given = conninfo_to_dict(self.url)
        # what the URL does not set: give up on an unreachable server, and notice a dead peer
        # (TCP keepalives; ignored on a unix socket)
        extra = {k: v for k, v in (("connect_timeout", CONNECT_TIMEOUT_S), ("keepalives_idle", 10),
                                   ("keepalives_interval", 5), ("keepalives_count", 3)) if k not in given}
        try:
            conn = psycopg.connect(self.url, autocommit=True, row_factory=_row_factory, **extra)
            conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_S * 1000}")
        except psycopg.OperationalError as exc:
            raise DatabaseLost(self._clean(exc)) from None
        conn.adapters.register_dumper(bool, BoolAsInt)
        conn.adapters.register_loader("numeric", NumericAsNumber)
        return conn

    def _clean(self, exc: BaseException) -> str:
        """The error's message on one line, without the URL's password."""
        text = " ".join(str(exc).split())
        password = password_of(self.url)
        return text.replace(password, "***") if password else text

    @property
    def in_transaction(self) -> bool:
        """True inside ``BEGIN`` ... ``COMMIT``/``ROLLBACK`` (as ``sqlite3.Connection.in_transaction``)."""
        return self._in_tx

    def _ready(self) -> Any:
        """The live connection: after a loss, a new one (outside a transaction)."""
        if self.conn.closed or self.conn.broken:
            if self._in_tx:
                raise DatabaseLost("the connection to PostgreSQL was lost during a transaction")
            self.conn.close()
            self.conn = self._connect()
        return self.conn

    def execute(self, sql: str, params: Any = None) -> Any:
        """Run one statement (``?`` placeholders); returns a cursor (``fetchone``, ``fetchall``,
        ``rowcount``, iteration) of :class:`Row`. Raises :class:`DatabaseLost` for a fault of the
        server or the network, ``psycopg.Error`` for an error in the statement."""
        word = sql.lstrip()[:8].upper()
        if word.startswith("PRAGMA"):
            return self._pragma(sql)
        if word.startswith("BEGIN"):
            return self._begin(lock="IMMEDIATE" in sql.upper() or "EXCLUSIVE" in sql.upper())
        if word.startswith(("COMMIT", "ROLLBACK", "END")):
            return self._end(sql, rollback=word.startswith("ROLLBACK"))
        query = translate(sql, params is not None)
        try:
            conn = self._ready()
            return self._run(lambda: conn.execute(query, params))
        except DatabaseLost:
            if self._in_tx or not self.conn.broken:
                raise
        # a connection found dead outside a transaction (the server restarted since its last
        # use): once more on a new one. Statements outside a transaction are reads or idempotent
        # upserts; a transaction is never replayed here: its caller retries it whole.
        conn = self._ready()
        return self._run(lambda: conn.execute(query, params))

    def _begin(self, lock: bool) -> _Result:
        """``BEGIN``, then (``lock``) the writer lock; if either fails, no transaction is open."""
        conn = self._ready()
        try:
            self._run(lambda: conn.execute("BEGIN"))
            self._in_tx = True
            if lock:
                self._run(lambda: conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,)))
        except BaseException:
            self._end("ROLLBACK", rollback=True)
            raise
        return _Result([])

    def _end(self, sql: str, rollback: bool) -> Any:
        """``COMMIT`` or ``ROLLBACK``: a rollback on a lost connection is a no-op (the server
        dropped the transaction); a commit there is :class:`DatabaseLost`."""
        in_tx, self._in_tx = self._in_tx, False
        if self.conn.broken or self.conn.closed:
            if rollback:
                return _Result([])
            raise DatabaseLost("the connection to PostgreSQL was lost before the commit")
        if not in_tx:
            return _Result([])
        try:
            return self._run(lambda: self.conn.execute(sql))
        except DatabaseLost:
            if rollback:  # lost now: the server drops the transaction by itself
                return _Result([])
            raise

    def _run(self, call: Any) -> Any:
        import psycopg

        try:
            return call()
        except psycopg.OperationalError as exc:
            raise DatabaseLost(f"PostgreSQL at {self.shown}: {self._clean(exc)}") from None

    def executemany(self, sql: str, rows: Any) -> Any:
        """Run one statement for each parameter row (see :meth:`execute`)."""
        rows = list(rows)
        conn = self._ready()
        cur = conn.cursor()
        if rows:
            self._run(lambda: cur.executemany(translate(sql), rows))
        return cur

    def executescript(self, script: str) -> None:
        """Run ``;``-separated statements without parameters (the schema)."""
        for statement in script.split(";"):
            if statement.strip():
                self.execute(statement.strip())

    def _pragma(self, sql: str) -> _Result:
        """The SQLite pragmas the store runs, on PostgreSQL (see the module docstring)."""
        m = _PRAGMA.match(sql)
        if m is None:
            raise ValueError(f"unsupported pragma on PostgreSQL: {sql}")
        name, value, arg = m.group(1).lower(), m.group(2), m.group(3)
        if name == "user_version":
            exists = self.execute("SELECT to_regclass('schema_version')").fetchone()[0] is not None
            if value is None:
                row = self.execute("SELECT version FROM schema_version").fetchone() if exists else None
                return _Result([(row[0] if row else 0,)])
            if not exists:
                self.execute("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
            self.execute("DELETE FROM schema_version")
            self.execute("INSERT INTO schema_version(version) VALUES (?)", (int(value),))
            return _Result([])
        if name == "table_info":
            rows = self.execute(
                "SELECT ordinal_position - 1, column_name, data_type, is_nullable = 'NO', column_default, 0 "
                "FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? "
                "ORDER BY ordinal_position", (arg,)).fetchall()
            return _Result([tuple(r) for r in rows])
        return _Result([])  # journal_mode, synchronous, foreign_keys: nothing to do

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def connect(url: str) -> PgConnection:
    """A :class:`PgConnection` to ``url``; :class:`arena.errors.DatabaseError` (one line, no
    password) when psycopg is missing or the server cannot be reached."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise DatabaseError(f"{redact(url)} needs psycopg 3: pip install 'ecarte-arena[postgres]'") from None
    try:
        return PgConnection(url)
    except DatabaseLost as exc:
        raise DatabaseError(f"cannot connect to {redact(url)}: {exc}; start PostgreSQL or fix --db") from None


def schema_bytes(url: str) -> int:
    """Bytes the tables of ``url``'s current schema take, with their indexes and TOAST
    (``pg_total_relation_size``): what a store on PostgreSQL weighs (the season benchmark)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'").fetchone()[0])


def reset_schemas(url: str, schemas: list[str] | tuple[str, ...], make: bool = True) -> None:
    """Drop the ``schemas`` of ``url``'s database with all they hold and (``make``) create them
    empty again: the throwaway stores of the season benchmark. The names are ours, never a user's.
    :class:`arena.errors.DatabaseError` if the server cannot be reached or refuses."""
    import psycopg

    for schema in schemas:
        if not schema.replace("_", "").isalnum():
            raise ValueError(f"not a schema name: {schema!r}")
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
                if make:
                    conn.execute(f"CREATE SCHEMA {schema}")
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot reset the schemas of {redact(url)}: {' '.join(str(exc).split())}") from None
