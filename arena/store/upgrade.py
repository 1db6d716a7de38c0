"""``arena db upgrade``: bring a database to this code's schema; and what the store checks at each open.

The schema's history is Alembic's (:mod:`arena.store.migrations`; its baseline revision is schema
9 of the hand-written migrations that came before). At each open (:func:`open_schema`):

* an empty database is made at the head (every table and index of :mod:`arena.store.schema`,
  then stamped), in one writer transaction: workers on several hosts may open a new database at
  the same time;
* a database at the head opens;
* a database behind (an older revision, or made before Alembic: the hand-written version in
  ``PRAGMA user_version`` on SQLite or the ``schema_version`` table on PostgreSQL) is refused with
  one line that gives the exact ``arena db upgrade --db ...`` command; one made by a newer arena
  (an unknown revision, or a hand-written version over 9), or by another program, is refused too.

:func:`upgrade` (the command) brings a database made before Alembic to schema 9 with the old
steps (:func:`upgrade_legacy`: missing tables and columns made, the ladder's units and pair counts
filled once from the finished matches, as versions 6 and 8 did), stamps it with the baseline, then
runs Alembic's revisions up to the head (``arena db upgrade``, :mod:`arena.cli.db`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.schema import CreateColumn, CreateIndex

from arena.errors import DatabaseError
from arena.store.engine import Connection, connect
from arena.store.postgres import shown
from arena.store.schema import HEAD, LEGACY_VERSION, metadata

MIGRATIONS = Path(__file__).parent / "migrations"
"""The Alembic scripts (``env.py``, ``versions/``): inside the package, no ``alembic.ini`` to find."""

REVISIONS = ("0001", "0002", "0003", "0004", "0005")

AFTER_BASELINE = frozenset({"test_matches"})
"""Tables that revisions after the baseline make (0002: ``test_matches``): the legacy step
(:func:`upgrade_legacy`, up to the baseline's schema 9) leaves them to their revision."""
"""Every revision of :data:`MIGRATIONS`, oldest first (a test checks it against the scripts)."""

BASELINE = "0001"
"""The revision that is schema 9 of the hand-written migrations."""

ARENA_TABLES = {"bots", "matches", "tournaments"}
"""Tables every arena database has had: a database with none of them is another program's."""

_VERSION = sa.text("SELECT version_num FROM alembic_version")
_PG_LEGACY = sa.text("SELECT version FROM schema_version")

# the data steps of the hand-written versions 6 and 8 (standard SQL: the same on both backends)
_PTS = "CASE {} WHEN 0 THEN 1.0 WHEN 1 THEN 0.0 ELSE 0.5 END"
FILL_UNITS = [
    "INSERT INTO ladder_units(game, a, b, points, games, n) SELECT game, bot0, bot1, " + _PTS.format("m.winner_seat")
    + ", 1, COUNT(*) FROM matches m WHERE status='done' AND (pair_key IS NULL OR NOT EXISTS (SELECT 1 "
    "FROM matches t WHERE t.tournament_id=m.tournament_id AND t.pair_key=m.pair_key AND t.id<>m.id "
    "AND t.status='done')) GROUP BY 1, 2, 3, 4",
    "INSERT INTO ladder_units(game, a, b, points, games, n) SELECT f.game, f.bot0, f.bot1, "
    + _PTS.format("f.winner_seat") + " + CASE WHEN s.bot0=f.bot0 THEN " + _PTS.format("s.winner_seat")
    + " ELSE 1.0 - " + _PTS.format("s.winner_seat")
    + " END, 2, COUNT(*) FROM matches f JOIN matches s ON s.tournament_id=f.tournament_id "
    "AND s.pair_key=f.pair_key AND s.id>f.id WHERE f.status='done' AND s.status='done' GROUP BY 1, 2, 3, 4",
]
FILL_COUNTS = [
    "DELETE FROM pair_counts",
    "INSERT INTO pair_counts(game, a, b, n) SELECT game, a, b, SUM(n) FROM (SELECT game, bot0 AS a, bot1 AS b, "
    "COUNT(*) AS n FROM matches WHERE status='done' GROUP BY game, bot0, bot1 UNION ALL SELECT game, bot1, bot0, "
    "COUNT(*) FROM matches WHERE status='done' GROUP BY game, bot0, bot1) AS t GROUP BY game, a, b",
    "DELETE FROM ladder_state",
    "INSERT INTO ladder_state(game, results) SELECT game, COUNT(*) FROM matches WHERE status='done' GROUP BY game",
]


def hint(target: str) -> str:
    """The command that upgrades ``target``, as the user types it (without a password)."""
    return f"arena db upgrade --db {shown(target)}"


def state(conn: Connection) -> tuple[str, Any]:
    """What ``conn``'s database is: ``("new", None)`` (no table), ``("current", HEAD)``,
    ``("behind", revision)``, ``("legacy", hand-written version)``, ``("newer", revision or
    version)`` or ``("foreign", table names)``."""
    tables = set(sa.inspect(conn.conn).get_table_names())
    if "alembic_version" in tables:
        revision = conn.run(_VERSION).scalar()
        if revision == HEAD:
            return "current", revision
        return ("behind" if revision in REVISIONS or revision is None else "newer"), revision
    if not tables:
        return "new", None
    if not tables & ARENA_TABLES:
        return "foreign", sorted(tables)
    if conn.dialect == "sqlite":
        version = conn.run(sa.text("PRAGMA user_version")).scalar() or 0
    else:
        version = conn.run(_PG_LEGACY).scalar() if "schema_version" in tables else 0
    return ("newer" if version > LEGACY_VERSION else "legacy"), version


def _stamp(conn: Connection, revision: str) -> None:
    from alembic.runtime.migration import MigrationContext  # only when a schema is made or upgraded

    MigrationContext.configure(connection=conn.conn).stamp(_scripts(), revision)


def _scripts() -> Any:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS))


def create(conn: Connection) -> None:
    """Make every table and index of the head schema in the empty database of ``conn`` and stamp it,
    inside the caller's writer transaction."""
    metadata.create_all(conn.conn)
    _stamp(conn, HEAD)
    if conn.dialect == "sqlite":  # an arena from before Alembic reads it as its own last version
        conn.run(sa.text(f"PRAGMA user_version={LEGACY_VERSION}"))


def open_schema(conn: Connection, target: str) -> None:
    """Check the schema of ``conn`` at an open (see the module docstring): make a new database at
    the head; raise :class:`arena.errors.DatabaseError` (one line) for one that is behind, newer,
    or another program's."""
    kind, detail = state(conn)
    if kind == "new":
        with conn.transaction():
            if state(conn)[0] == "new":  # not made meanwhile by another process
                create(conn)
            kind, detail = state(conn)
    if kind == "current":
        return
    where = shown(target)
    if kind in ("behind", "legacy"):
        was = f"schema version {detail} (before Alembic)" if kind == "legacy" else f"schema revision {detail}"
        raise DatabaseError(f"{where} has {was}, older than this arena's ({HEAD}): run `{hint(target)}` "
                            "(back it up first)")
    if kind == "newer":
        raise DatabaseError(f"{where} has schema version {detail}, made by a newer arena than this one "
                            f"(which knows up to {HEAD}): upgrade arena to use it")
    raise DatabaseError(f"{where} is a database of another program (tables: {', '.join(detail[:5])}); use another "
                        "file or database")


def upgrade_legacy(conn: Connection, version: int) -> None:
    """Bring a database of hand-written schema ``version`` (0-9) to schema 9, inside the caller's
    transaction: the columns added since (``ALTER TABLE ... ADD COLUMN``, each as this backend
    writes it), the tables added since, their data (the ladder's units before version 6, the pair
    counts and result counts before 8), then every index."""
    had = set(sa.inspect(conn.conn).get_table_names())
    baseline = [table for table in metadata.sorted_tables if table.name not in AFTER_BASELINE]
    for table in baseline:
        if table.name not in had:
            continue
        have = {c["name"] for c in sa.inspect(conn.conn).get_columns(table.name)}
        for column in table.columns:
            if column.name not in have:
                ddl = CreateColumn(column).compile(dialect=conn.engine.dialect)
                conn.run(sa.text(f"ALTER TABLE {table.name} ADD COLUMN {ddl}"))
    for table in baseline:
        if table.name not in had:
            table.create(conn.conn)
    if version < 6:
        for statement in FILL_UNITS:
            conn.run(sa.text(statement))
    if version < 8:
        for statement in FILL_COUNTS:
            conn.run(sa.text(statement))
    for table in baseline:
        for index in table.indexes:
            conn.run(CreateIndex(index, if_not_exists=True))


def upgrade(target: str) -> str:
    """Upgrade the database at ``target`` (a path or URL) to the head; returns one line saying what
    was done. :class:`arena.errors.DatabaseError` for a database this code cannot upgrade."""
    if not target.startswith(("postgresql://", "postgres://")) and target != ":memory:" and \
            not Path(target).is_file():
        raise DatabaseError(f"no database at {target}: check --db (a new database is made at the latest schema "
                            "when it is first opened)")
    conn = connect(target)
    try:
        with conn.transaction():
            kind, detail = state(conn)
            if kind == "newer":
                raise DatabaseError(f"{shown(target)} has schema version {detail}, made by a newer arena: "
                                    "upgrade arena instead")
            if kind == "foreign":
                raise DatabaseError(f"{shown(target)} is a database of another program: nothing to upgrade")
            if kind == "new":
                create(conn)
                return f"{shown(target)}: made at schema revision {HEAD}"
            if kind == "legacy":
                upgrade_legacy(conn, detail)
                _stamp(conn, BASELINE)
                if conn.dialect == "sqlite":  # as create() leaves a new one
                    conn.run(sa.text(f"PRAGMA user_version={LEGACY_VERSION}"))
            _alembic_upgrade(conn)
        was = f"version {detail} (before Alembic)" if kind == "legacy" else f"revision {detail}"
        return f"{shown(target)}: schema {was} upgraded to revision {HEAD}" if kind != "current" else \
            f"{shown(target)}: already at schema revision {HEAD}"
    finally:
        conn.close()


def _alembic_upgrade(conn: Connection) -> None:
    """Run Alembic's revisions from the database's to the head, on ``conn`` (inside its transaction)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn.conn
    command.upgrade(config, "head")
