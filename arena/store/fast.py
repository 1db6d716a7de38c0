"""The hot statements' fast path: a SQLAlchemy statement compiled once per dialect, run on the driver's cursor.

SQLAlchemy's ``Connection.execute`` costs some 30-40 µs of CPU a statement even when its compiled
cache is hit (the cache key is walked, an execution context and a result are built); a result of
the tournament path is about ten statements. The statements of that path are still written with
SQLAlchemy Core (the schema and the constructs stay the one source); they are wrapped in
:class:`Hot`, and ``store.run(HOT, params)`` then runs them here:

* the first call for a dialect and a set of parameter names compiles the construct with that
  dialect in a positional paramstyle (``?`` on SQLite, ``%s`` on PostgreSQL: the same SQL as
  SQLAlchemy sends, casts and all) and keeps the SQL string, the parameter order, the values
  bound in the statement itself (``status == "pending"``), the type processors of the
  parameters (SQLite's ``REAL`` columns take floats) and, for an ``IN`` over an expanding
  parameter, one string per list length (:data:`EXPANDED_KEEP` lengths kept);
* each call builds the parameter tuple (``operator.itemgetter`` when nothing needs converting),
  runs ``cursor.execute`` on the driver's cursor and fetches every row at once: the hot
  statements return a handful of rows.

The result (:class:`Rows`) has the part of SQLAlchemy's ``Result`` the store uses: iteration,
``first``, ``one``, ``scalar``, ``scalar_one``, ``scalars``, ``all``, ``rowcount``; rows are
tuples with the statement's column names as attributes (``row.status``) and ``row._mapping``.
Errors are the driver's; :meth:`arena.store.engine.Connection.fast` maps them as the engine does.
Parameters are a dict (or a list of dicts: ``executemany``), as for ``store.run``.
"""

from __future__ import annotations

import copy
from collections import namedtuple
from collections.abc import Callable, Iterator
from operator import itemgetter
from typing import Any

from sqlalchemy.exc import InvalidRequestError, MultipleResultsFound, NoResultFound

EXPANDED_KEEP = 64
"""How many compiled strings of one statement with an expanding ``IN`` (one per list length) a
dialect keeps; beyond that, the oldest is compiled again when needed."""


class Rows:
    """The rows of one fast statement, all fetched (``rows``: a list of tuples), and ``rowcount``
    (the driver's: rows changed by an ``UPDATE``/``INSERT``/``DELETE``, -1 or the row count for a
    ``SELECT``). Raises ``sqlalchemy.exc.NoResultFound`` / ``MultipleResultsFound`` as
    SQLAlchemy's ``Result`` does."""

    __slots__ = ("rows", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)

    def all(self) -> list[Any]:
        """Every row."""
        return self.rows

    def first(self) -> Any:
        """The first row, or None."""
        return self.rows[0] if self.rows else None

    def one(self) -> Any:
        """The only row; raises if there is none or more than one."""
        if len(self.rows) != 1:
            raise (NoResultFound if not self.rows else MultipleResultsFound)(
                f"expected one row, got {len(self.rows)}")
        return self.rows[0]

    def scalar(self) -> Any:
        """The first column of the first row, or None."""
        return self.rows[0][0] if self.rows else None

    def scalar_one(self) -> Any:
        """The first column of the only row; raises if there is none or more than one."""
        return self.one()[0]

    def scalars(self) -> list[Any]:
        """The first column of every row."""
        return [r[0] for r in self.rows]


def _row_type(names: list[str]) -> type:
    """A tuple type with ``names`` as attributes (renamed where not identifiers) and ``_mapping``."""
    base = namedtuple("Row", names, rename=True)  # type: ignore[misc]  # noqa: PYI024

    class Row(base):  # type: ignore[valid-type, misc]
        __slots__ = ()

        @property
        def _mapping(self) -> dict[str, Any]:
            return dict(zip(names, self, strict=True))

    return Row


class Prepared:
    """One statement compiled for one dialect and one set of parameter names: ``sql``, and how to
    make the driver's parameters of a call's dict (``args``; None: the statement has no
    parameters, and runs as a simple query). ``make_row`` (None: plain tuples,
    for a statement without rows) is set at the first execution, from the cursor's columns."""

    __slots__ = ("sql", "args", "columns", "make_row", "ready", "expanding")

    def __init__(self, sql: str, args: Callable[[dict[str, Any]], tuple] | None, columns: list[str] | None,
                 expanding: tuple[str, ...] = ()) -> None:
        self.sql = sql
        self.args = args
        self.columns = columns
        self.make_row: Callable[[Any], Any] | None = None
        self.ready = False
        self.expanding = expanding


def _args_maker(order: list[tuple[int, Any]], procs: dict[int, Callable[[Any], Any]]) -> Callable[[dict], Any]:
    """The function from a call's parameter dict to the driver's sequence. ``order``: per placeholder
    ``(0, name)`` (the call's parameter), ``(1, value)`` (bound in the statement) or ``(2, (name,
    i))`` (item ``i`` of an expanding list); ``procs``: type processors by placeholder index.
    Without an expanding list, one ``operator.itemgetter`` (the statement's own values merged in
    under names no parameter has), then the processors, if any."""
    if any(kind == 2 for kind, _ in order):
        def expanded(params: dict[str, Any]) -> list:
            out = [params[v] if kind == 0 else v if kind == 1 else params[v[0]][v[1]] for kind, v in order]
            for i, proc in procs.items():
                out[i] = proc(out[i])
            return out

        return expanded
    names = [v if kind == 0 else f"\0{i}" for i, (kind, v) in enumerate(order)]
    consts = {f"\0{i}": v for i, (kind, v) in enumerate(order) if kind == 1}
    get: Callable[[dict], Any] = itemgetter(*names) if len(names) > 1 else (lambda p, name=names[0]: (p[name],))
    if consts:
        pick = get

        def get(params: dict[str, Any]) -> Any:
            return pick({**consts, **params})
    if not procs:
        return get
    converts = list(procs.items())

    def args(params: dict[str, Any]) -> list:
        out = list(get(params))
        for i, proc in converts:
            out[i] = proc(out[i])
        return out

    return args


class Hot:
    """A module-level SQLAlchemy statement (``statement``: a Core construct or ``text()``) that
    ``store.run`` runs through the fast path (see the module docstring). One per statement, made
    at import; it keeps its compiled forms per dialect name and parameter names."""

    __slots__ = ("statement", "_prepared", "_expanding")

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self._prepared: dict[tuple, Prepared] = {}
        self._expanding: dict[str, tuple[str, ...]] = {}

    def __repr__(self) -> str:
        return f"Hot({str(self.statement)[:60]!r})"

    def prepared(self, dialect: Any, params: dict[str, Any]) -> Prepared:
        """The compiled form of this statement for ``dialect`` (a positional SQLAlchemy dialect) and the
        names (and expanding list lengths) of ``params``, compiled at the first call."""
        keys = tuple(params)
        expanding = self._expanding.get(dialect.name, ())
        key = (dialect.name, keys, *(len(params[n]) for n in expanding)) if expanding else (dialect.name, keys)
        found = self._prepared.get(key)
        if found is None:
            found = self._prepare(dialect, params, keys)
            if found.expanding:
                self._expanding[dialect.name] = found.expanding
                key = (dialect.name, keys, *(len(params[n]) for n in found.expanding))
                olds = [k for k in self._prepared if len(k) > 2 and k[:2] == key[:2]]
                if len(olds) >= EXPANDED_KEEP:
                    del self._prepared[olds[0]]
            self._prepared[key] = found
        return found

    def _prepare(self, dialect: Any, params: dict[str, Any], keys: tuple[str, ...]) -> Prepared:
        compiled = self.statement.compile(dialect=dialect, column_keys=list(keys))
        expanding = tuple(name for name, bind in compiled.binds.items() if bind.expanding)
        if expanding:
            marks = {n: [object() for _ in params[n]] for n in expanding}
            state = compiled.construct_expanded_state({**params, **marks})
            where = {id(mark): (n, i) for n, ms in marks.items() for i, mark in enumerate(ms)}
            sql, names = state.statement, state.positiontup or []
            slot_of = {name: where.get(id(value)) for name, value in state.parameters.items()}
        else:
            sql, names, slot_of = compiled.string, compiled.positiontup or [], {}
        order: list[tuple[int, Any]] = []
        procs: dict[int, Callable[[Any], Any]] = {}
        for i, name in enumerate(names):
            source = slot_of.get(name)
            bind = compiled.binds.get(name) if source is None else compiled.binds[source[0]]
            if source is not None:
                order.append((2, source))
            elif name in params:
                order.append((0, name))
            elif bind is not None and not bind.required:
                order.append((1, bind.effective_value))
            else:
                raise InvalidRequestError(f"A value is required for bind parameter {name!r}")
            proc = None if bind is None else bind.type._cached_bind_processor(dialect)
            if proc is not None:
                procs[i] = proc
        selected = getattr(self.statement, "selected_columns", None)
        columns = list(selected.keys()) if selected is not None else None
        return Prepared(sql, _args_maker(order, procs) if order else None, columns, expanding)

    def execute(self, cursor: Any, dialect: Any, params: Any) -> Rows:
        """Run the statement on ``cursor`` (the driver's) with ``params`` (a dict, a list of dicts,
        or None) and fetch its rows; ``dialect`` is the engine's, positional (:func:`positional`).
        Raises the driver's errors."""
        if params.__class__ is dict and not self._expanding:  # the common case, one dict lookup
            prepared = self._prepared.get((dialect.name, tuple(params))) or self.prepared(dialect, params)
            return self._one(cursor, dialect, prepared, params)
        if params is None:
            params = {}
        if isinstance(params, list):
            prepared = self.prepared(dialect, params[0])
            args = prepared.args or (lambda p: ())
            cursor.executemany(prepared.sql, [args(p) for p in params])
            return Rows([], cursor.rowcount)
        return self._one(cursor, dialect, self.prepared(dialect, params), params)

    def _one(self, cursor: Any, dialect: Any, prepared: Prepared, params: dict[str, Any]) -> Rows:
        """Run ``prepared`` once with ``params`` and fetch its rows (named once the first
        description is known)."""
        if prepared.args is None:
            cursor.execute(prepared.sql)
        else:
            cursor.execute(prepared.sql, prepared.args(params))
        if cursor.description is None:
            return Rows([], cursor.rowcount)
        if not prepared.ready:
            _ready(prepared, dialect, self.statement, cursor.description)
        rows = cursor.fetchall()
        make = prepared.make_row
        return Rows(rows if make is None else list(map(make, rows)), cursor.rowcount)


def _ready(prepared: Prepared, dialect: Any, statement: Any, description: Any) -> None:
    """Set ``prepared.make_row`` from the first execution's columns: a named tuple of the
    statement's column names, through the result types' processors where a type has one (none
    of the schema's types has today, on either backend)."""
    names = prepared.columns if prepared.columns and len(prepared.columns) == len(description) else [
        d[0] for d in description]
    kind = _row_type(names)
    types = [c.type for c in statement.selected_columns] if prepared.columns else []
    procs = [(i, t._cached_result_processor(dialect, description[i][1])) for i, t in enumerate(types)]
    procs = [(i, p) for i, p in procs if p is not None]
    if procs:
        def make(row: Any) -> Any:
            values = list(row)
            for i, proc in procs:
                values[i] = proc(values[i])
            return kind._make(values)

        prepared.make_row = make
    else:
        prepared.make_row = kind._make
    prepared.ready = True


def positional(dialect: Any) -> Any:
    """``dialect`` itself if its paramstyle is positional (pysqlite's ``qmark``), else a copy of it
    in the ``format`` style (psycopg's ``%s``), which renders the same SQL with positional binds.
    Made once per engine (:class:`arena.store.engine.Connection`): the dialect :meth:`Hot.execute`
    takes."""
    if dialect.positional:
        return dialect
    twin = copy.copy(dialect)
    twin.paramstyle, twin.positional = "format", True
    return twin


def hot_each(statements: dict[str, Any]) -> dict[str, Hot]:
    """``{dialect: Hot(statement)}`` of ``{dialect: statement}`` (an upsert of
    :func:`arena.store.upserts.upsert`)."""
    return {name: Hot(statement) for name, statement in statements.items()}
