"""The store: every SQL statement of the arena, on SQLAlchemy Core 2, for SQLite and PostgreSQL.

Layout: :mod:`~arena.store.schema` (one ``MetaData``: every table and index),
:mod:`~arena.store.engine` (the connection, SQLite's pragmas, writer transactions),
:mod:`~arena.store.upgrade` with :mod:`arena.store.migrations` (Alembic; ``arena db upgrade``),
and one module per concern: :mod:`~arena.store.results`, :mod:`~arena.store.accounts`,
:mod:`~arena.store.wagers`, :mod:`~arena.store.logs`, :mod:`~arena.store.queue`,
:mod:`~arena.store.pages`; :class:`arena.store.sqlite.Store` is the facade callers use.

**Adding a statement.** Build it once, at module level, as a Core construct (``select``,
``insert``, ``update``, ``delete``; an upsert through :func:`arena.store.upserts.upsert`, picked
per dialect with ``UPSERT[store.dialect]``) or, where standard SQL reads the same on both
backends, as ``text()`` with named binds (``:name``; never string formatting of values). Run it
with ``store.run(STATEMENT, {"name": value})`` (a list of dicts runs it for many rows); writes
that belong together go inside ``with store.transaction():``. Module-level statements keep
SQLAlchemy's compiled cache effective.

**A hot statement** (run at every result, claim, hello or pairing: the tournament path's per-match
cost) is still built with SQLAlchemy but wrapped at module level in
:class:`arena.store.fast.Hot` (``hot_each`` for a per-dialect upsert); ``store.run`` then skips
SQLAlchemy's execution (some 30-40 µs of CPU a statement, cache hit or not): the construct is
compiled once per dialect and set of parameter names (positional binds, the statement's own bound
values and type processors kept), run on the driver's cursor, and its rows fetched at once into a
:class:`~arena.store.fast.Rows` (``first``, ``one``, ``scalar``, ``scalar_one``, ``scalars``,
``all``, iteration, ``rowcount``; rows with attribute names and ``_mapping``). Errors follow the
engine's rules (:meth:`arena.store.engine.Connection.fast`). Only what the result object offers
may be used on it (no ``.mappings()``; every row is fetched: not for long reads), and a new hot
statement gets a case in ``tests/test_store_fast.py``, which checks that it gives the rows and
effects of SQLAlchemy's own execution on both backends (the test fails for a ``Hot`` without a
case). Measure with ``python -m arena.tools.bench_store`` (``--pg`` for PostgreSQL).

A schema change is a new Alembic revision in ``migrations/versions/`` and the same change in
:mod:`~arena.store.schema` (bump :data:`arena.store.schema.HEAD` and
:data:`arena.store.upgrade.REVISIONS`). ``store.db`` (the driver's connection) is for tests and
bulk loads only.
"""
