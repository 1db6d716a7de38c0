"""Every statement the web pages, the ``/api`` endpoints and ``arena bots list`` run reads
``matches`` through an index, never by a full scan: the query plans of the list
``arena.store.pages.PLAN_CASES`` (name, statement, example parameters; the scheduler's statements
can be added to it), on both backends.

* SQLite: ``EXPLAIN QUERY PLAN``; a ``SCAN`` of ``matches`` (or of an alias of it) fails, with
  or without an index (a full index scan reads as many entries as the history), and so does a
  ``SCAN`` of the other tables that grow with the history or the field (``ladder``,
  ``ladder_units``, ``pair_counts``, ``match_logs``).
* PostgreSQL: ``EXPLAIN`` on a store seeded with a synthetic season (arena/store/seed.py: 1,000
  bots, 40,000 matches) and ``ANALYZE``d, so that the planner weighs real statistics rather than
  being forced (``enable_seqscan`` stays on); a ``Seq Scan on matches`` fails. PostgreSQL may
  rightly read a small table whole (the bots for ``arena bots list``), so only ``matches`` is
  checked there.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text

from arena.store.pages import PLAN_CASES, SQL
from arena.store.seed import season
from arena.store.sqlite import Store

BOTS, MATCHES = 1000, 40_000
GROWING = ("matches", "ladder", "ladder_units", "pair_counts", "match_logs")
"""Tables whose size grows with the history or the field: never scanned whole on SQLite."""


def aliases(sql: str, table: str) -> set[str]:
    """``table`` and the names it goes by in ``sql`` (``FROM matches m``, ``JOIN matches AS t``)."""
    found = {table}
    for m in re.finditer(rf"\b(?:FROM|JOIN)\s+{table}\s+(?:AS\s+)?(\w+)", sql, re.I):
        if m.group(1).upper() not in ("WHERE", "ON", "JOIN", "LEFT", "INNER", "ORDER", "GROUP", "LIMIT", "UNION"):
            found.add(m.group(1))
    return found


def inline(store: Store, statement, params: dict) -> str:
    """``statement`` (a ``text()`` of pages.SQL, or a string with named binds) with ``params`` written
    into it, as the store's backend reads it: what EXPLAIN is given."""
    stmt = text(statement) if isinstance(statement, str) else statement
    return str(stmt.bindparams(**params).compile(dialect=store.connection.engine.dialect,
                                                 compile_kwargs={"literal_binds": True}))


def sqlite_scans(store: Store, statement, params: dict) -> list[str]:
    """The plan lines of ``statement`` that scan a growing table whole."""
    sql = inline(store, statement, params)
    plan = [row[3] for row in store.db.execute("EXPLAIN QUERY PLAN " + sql)]
    names = set().union(*(aliases(sql, t) for t in GROWING))
    return [line for line in plan if (m := re.match(r"SCAN (\w+)", line)) and m.group(1) in names] or \
        ([] if plan else ["(no plan)"])


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    store = Store(tmp_path_factory.mktemp("plans") / "arena.db")
    season(store, BOTS, MATCHES)
    yield store
    store.close()


def test_every_statement_of_the_pages_has_a_plan_case() -> None:
    assert {name for name, _, _ in PLAN_CASES} >= set(SQL)
    assert all(set(stmt.compile().params) == set(params) for _, stmt, params in PLAN_CASES)


def test_the_check_sees_a_full_scan_of_matches(sqlite_store: Store) -> None:
    """The check can fail: a statement without a usable index is caught, alias or not."""
    assert sqlite_scans(sqlite_store, "SELECT COUNT(*) FROM matches WHERE reason=:r", {"r": "target"})
    assert sqlite_scans(sqlite_store, "SELECT m.id FROM matches m WHERE m.detail=:d LIMIT 5", {"d": "x"})
    full_index_scan = "SELECT COUNT(*) FROM matches INDEXED BY matches_bot0_done"
    assert sqlite_scans(sqlite_store, full_index_scan, {})
    assert not sqlite_scans(sqlite_store, "SELECT id FROM matches WHERE match_key=:k", {"k": "t1-m00000001"})


@pytest.mark.parametrize("name,sql,params", PLAN_CASES, ids=[c[0] for c in PLAN_CASES])
def test_no_page_scans_matches_on_sqlite(sqlite_store: Store, name: str, sql, params: dict) -> None:
    assert sqlite_scans(sqlite_store, sql, params) == [], name
    sqlite_store.run(sql, params).all()  # and it runs


@pytest.fixture(scope="module")
def pg_store(pg_cluster) -> Store:
    pg_cluster.sql("CREATE DATABASE plans TEMPLATE arena_template")
    store = Store(pg_cluster.url("plans"))
    season(store, BOTS, MATCHES)  # ends with ANALYZE
    yield store
    store.close()
    pg_cluster.sql("DROP DATABASE plans WITH (FORCE)")


def pg_plan(store: Store, statement, params: dict) -> str:
    return "\n".join(row[0] for row in store.db.execute("EXPLAIN " + inline(store, statement, params)))


def test_the_check_sees_a_seq_scan_on_postgresql(pg_store: Store) -> None:
    assert "Seq Scan on matches" in pg_plan(pg_store, "SELECT COUNT(*) FROM matches WHERE reason=:r", {"r": "target"})
    assert "Seq Scan on matches" not in pg_plan(pg_store, "SELECT id FROM matches WHERE match_key=:k", {"k": "t1-m1"})


@pytest.mark.parametrize("name,sql,params", PLAN_CASES, ids=[c[0] for c in PLAN_CASES])
def test_no_page_scans_matches_on_postgresql(pg_store: Store, name: str, sql, params: dict) -> None:
    plan = pg_plan(pg_store, sql, params)
    assert "Seq Scan on matches" not in plan, f"{name}:\n{plan}"
    pg_store.run(sql, params).all()
