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
SQLAlchemy's compiled cache effective on the hot paths. A schema change is a new Alembic revision
in ``migrations/versions/`` and the same change in :mod:`~arena.store.schema` (bump
:data:`arena.store.schema.HEAD` and :data:`arena.store.upgrade.REVISIONS`).
``store.db`` (the driver's connection) is for tests and bulk loads only.
"""
