"""One schema (arena/store/schema.py), Alembic's baseline (arena/store/migrations/) and the old hand-written
steps (arena/store/upgrade.py) make the same tables, columns and indexes, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from arena.errors import DatabaseError
from arena.store.engine import connect
from arena.store.schema import HEAD
from arena.store.sqlite import Store
from arena.store.upgrade import MIGRATIONS, REVISIONS, _alembic_upgrade, state, upgrade
from tests.legacy_db import LEGACY_SCHEMA


def shape(target: str) -> dict:
    """Tables -> (columns as (name, type, nullable), indexes as (name, columns, unique)) of ``target``."""
    conn = connect(target)
    try:
        inspector = sa.inspect(conn.conn)
        out = {}
        for table in sorted(inspector.get_table_names()):
            # a primary key is never NULL; SQLite reports one declared without NOT NULL (the old DDL's) as nullable
            key = set(inspector.get_pk_constraint(table)["constrained_columns"])
            columns = sorted((c["name"], str(c["type"]), c["nullable"] and c["name"] not in key)
                             for c in inspector.get_columns(table))
            indexes = sorted((i["name"], tuple(str(x) for x in i.get("column_names") or ()), bool(i["unique"]))
                             for i in inspector.get_indexes(table) if i["name"])
            out[table] = (columns, indexes)
        return out
    finally:
        conn.close()


def test_the_head_is_the_scripts_head() -> None:
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory(str(MIGRATIONS))
    assert scripts.get_heads() == [HEAD] and [s.revision for s in scripts.walk_revisions()][::-1] == list(REVISIONS)


def _empty(db_target: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if db_target.startswith("postgresql"):
        cluster = request.getfixturevalue("pg_cluster")
        cluster.sql("DROP DATABASE IF EXISTS empty_schema WITH (FORCE)")
        cluster.sql("CREATE DATABASE empty_schema")
        return cluster.url("empty_schema")
    return str(tmp_path / "empty.db")


def test_a_new_database_and_the_baseline_revision_are_the_same_schema(db_target: str, request, tmp_path) -> None:
    Store(db_target).close()  # made from schema.py (create_all), stamped at the head
    empty = _empty(db_target, request, tmp_path)
    conn = connect(empty)  # the same through Alembic's revisions, from nothing
    with conn.transaction():
        _alembic_upgrade(conn)
    conn.close()
    made, migrated = shape(db_target), shape(empty)
    assert "matches" in made and len(made["matches"][1]) >= 9  # the page indexes are there
    assert made == migrated
    assert Store(empty).connection.dialect in ("sqlite", "postgresql")  # stamped at the head: it opens


def test_a_database_from_before_alembic_is_upgraded_to_the_same_schema(tmp_path: Path) -> None:
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    db = sqlite3.connect(old)
    db.executescript(LEGACY_SCHEMA.replace("    margin        INTEGER,\n", ""))
    db.execute("INSERT INTO bots VALUES ('old', x'00', x'00', 0)")
    db.commit()
    db.close()
    with pytest.raises(DatabaseError, match=f"run `arena db upgrade --db {old}`"):
        Store(old)
    assert "upgraded to revision" in upgrade(str(old))
    assert "already at" in upgrade(str(old))  # again: nothing to do
    Store(new).close()
    legacy, made = shape(str(old)), shape(str(new))
    assert legacy == made
    store = Store(old)
    assert state(store.connection) == ("current", HEAD) and store.bot_names() == ["old"]
    store.close()
