"""Upserts (``INSERT ... ON CONFLICT``) built once per dialect: SQLite's and PostgreSQL's insert constructs
have the same ``on_conflict_do_update`` / ``on_conflict_do_nothing``, but each is its own class.

:func:`upsert` returns ``{dialect name: statement}``; a store picks its dialect's at run time
(``UPSERT[store.dialect]``). Built at import, so SQLAlchemy's compiled cache sees one statement
object per use, whatever the number of calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite

DIALECTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def upsert(table: Table, index: Sequence[str], update: Callable[[Any], dict[str, Any]] | None) -> dict[str, Any]:
    """``{dialect: INSERT INTO table ... ON CONFLICT (index) DO UPDATE SET update(excluded)}``;
    ``update`` None: ``DO NOTHING`` (on any conflict). The values come as parameters at execution."""
    out = {}
    for name, insert in DIALECTS.items():
        stmt = insert(table)
        out[name] = (stmt.on_conflict_do_nothing() if update is None
                     else stmt.on_conflict_do_update(index_elements=list(index), set_=update(stmt.excluded)))
    return out


def replace(table: Table, index: Sequence[str], columns: Sequence[str]) -> dict[str, Any]:
    """An upsert that sets ``columns`` to the new row's values on a conflict over ``index``."""
    return upsert(table, index, lambda new: {c: new[c] for c in columns})
