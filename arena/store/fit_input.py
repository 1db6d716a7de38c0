"""What the ladder's background fit reads (:mod:`arena.schedule.fitter`): every unit of the ladder
once, at its start, then only the matches finished since its last read.

The fitter keeps the ladder's units summed per pair of bots in memory
(:class:`arena.stats.rating.LadderTotals`) between fits. Two reads feed them, each inside one
read snapshot (:func:`read_snapshot`: SQLite's deferred ``BEGIN``, PostgreSQL's ``REPEATABLE
READ``; never the writer lock), so that the result count, the matches and the units it reads
agree:

* :func:`read_totals`, at the fitter's start: every unit counted (table ``ladder_units``, one
  pass in the table's order, fetched in chunks and handed on as arrays), the game's result
  count (``ladder_state.results``), the highest ``matches.id`` and the ids of the game's matches
  still pending. Its cost grows with the distinct units; on the 10,000-bot season store (2.8
  million units counted at least once, 5.2 million rows) about 7.5-10.5 s of CPU, 500 MB at the
  peak (docs/contests.md §12). Summing them per pair in SQL (``GROUP BY a, b``) was slower on
  SQLite: its eight sums cost more than fetching the rows. The units are read in ranges of
  pages (PostgreSQL) or rowids (SQLite, whose long snapshot keeps the WAL from being
  checkpointed), each in a short snapshot of its own with the matches finished since the
  previous one, the rows those touched read anew at the end (:func:`read_totals_chunked`:
  exact, each unit once): a snapshot held for the whole read (seconds) keeps, on PostgreSQL, every row version
  the results write meanwhile, and each result updates the same few rows (``ladder_state``, the
  bots' ``ladder`` rows), so that every result's updates and lookups walk longer and longer
  chains of dead versions.
* :func:`read_new`, before each refit: the units of the matches finished since, found from the
  :class:`FitCursor` the last read left: every ``matches`` row above its highest id (one range
  of the primary key: the matches created since), and, when that does not account for every
  new result, the rows of the matches that were pending at the last read, the newest first,
  until it does (a contest's matches in play: they finish in any order; the pending matches of
  an abandoned tournament, older, are not read again at each refit). A match finished since is
  turned into its unit exactly as :meth:`arena.store.sqlite.Store.record_result` counts it into
  ``ladder_units``: a unit of one game, or, when it completes a duplicate pair (same tournament,
  same ``pair_key``), the pair's unit of two games (scored from the first half's seat 0) in place
  of its other half's lone one (:func:`arena.stats.ladder.ladder_units`). Aborted matches count
  for nothing. So a refit reads rows in proportion to the results and matches since the last
  one, never the history.

This relies on ``matches.id`` growing in the order matches are committed: they are inserted
only under the store's writer lock (SQLite's one writer; on PostgreSQL the advisory lock of
every write transaction), so a match committed after a read never has an id below the ones it
read. A check keeps the two in step: the new finished matches found must be exactly as many as the
result count grew (both read in the same snapshot). If they are not (matches edited by hand, a
store restored from a backup, a pending match the cursor never saw), :func:`read_new` returns
None and the fitter reads the totals afresh.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np
from sqlalchemy import bindparam, text

log = logging.getLogger(__name__)

CHUNK = 50_000
"""Rows fetched at a time by :func:`read_totals` (a chunk of Python rows at a time in memory)."""

PG_CHUNK_PAGES = 128
"""Pages (8 KiB) of ``ladder_units`` per read snapshot of :func:`read_totals` on PostgreSQL
(:func:`read_totals_chunked`): about 12,000 rows, a snapshot of a few ms, not the whole read (the
fitter runs at a low priority: on a busy machine a snapshot lasts longer)."""

SQLITE_CHUNK_ROWS = 100_000
"""Rowids of ``ladder_units`` per read snapshot of :func:`read_totals` on SQLite: about 0.2 s of
reading each (52 snapshots on the season store's 5.2 million rows). A snapshot held for the whole
read (10-20 s there) keeps every passive checkpoint from finishing: the WAL grows by every commit
of the contest meanwhile (about 100 MB in 25 s with 500 instant bots), each reader looks its pages
up there, and the checkpoint after the read copies all of it back at once."""

BATCH = 1_000_000
"""Units per batch :func:`read_totals` hands on (as arrays: 40 bytes per unit)."""

IN_CHUNK_FIRST = 64
IN_CHUNK = 512
"""Ids per ``IN (...)`` list when :func:`read_new` reads the matches pending at the last read:
:data:`IN_CHUNK_FIRST` at first, doubling up to this."""


class FitCursor(msgspec.Struct):
    """Where the fitter's last read stopped: ``last_id``, the highest ``matches.id`` it read (of
    any game); ``pending``, the ids up to ``last_id`` of this game's matches that were pending
    then (sorted); ``results``, the game's result count (``ladder_state.results``) then."""

    last_id: int
    pending: list[int]
    results: int


class Units(msgspec.Struct):
    """Units of a ladder as arrays of one length: bot ``names[a[k]]`` scored ``s[k]`` points in
    ``g[k]`` games against ``names[b[k]]``, counted ``c[k]`` times (-1: a lone match taken back as
    its duplicate pair completes); in the order they apply. ``a``, ``b``: int64 arrays; ``s``,
    ``g``, ``c``: float64 arrays; ``names``: the bots they index (each once, in no order)."""

    names: list[str]
    a: Any
    b: Any
    s: Any
    g: Any
    c: Any

    @classmethod
    def of(cls, rows: list[tuple[str, str, float, int, int]]) -> Units:
        """Units from ``(a, b, s, g, c)`` tuples."""
        return _columns(rows, {})


class NewUnits(msgspec.Struct):
    """What :func:`read_new` found: the :class:`Units` to add, the new finished (not aborted)
    matches (``finished``) and the rows the read fetched (``rows_read``)."""

    units: Units
    finished: int
    rows_read: int


def _columns(rows: list[tuple], index: dict[str, int]) -> Units:
    """``rows`` of ``(a, b, s, g, c)`` as :class:`Units` over the names of ``index`` (the new
    ones added to it)."""
    if not rows:
        return Units(list(index), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
    ca, cb, cs, cg, cn = zip(*rows)
    for name in set(ca).union(cb).difference(index):
        index[name] = len(index)
    return Units(list(index), np.fromiter(map(index.__getitem__, ca), np.int64, len(ca)),
                 np.fromiter(map(index.__getitem__, cb), np.int64, len(cb)),
                 np.array(cs, float), np.array(cg, float), np.array(cn, float))


def _tuples(result: Any) -> list[tuple]:
    """Every row of a SQLAlchemy ``result``, as the driver's own tuples: SQLAlchemy's row objects
    (and making tuples of them again) cost about 0.65 us a row more, 3.4 s of the 12 s of CPU the
    season store's first load took."""
    try:
        return result.cursor.fetchall()  # type: ignore[no-any-return]
    finally:
        result.close()


def read_snapshot(store: Any) -> Any:
    """One read transaction: every statement inside sees the same committed state, and no writer
    waits for it (:meth:`arena.store.engine.Connection.snapshot`: SQLite's deferred ``BEGIN``,
    PostgreSQL's ``REPEATABLE READ READ ONLY``). Inside a transaction already open, it joins it."""
    return store.connection.snapshot()


RESULTS = text("SELECT results FROM ladder_state WHERE game=:game")
LAST_MATCH = text("SELECT MAX(id) FROM matches")
PENDING = text("SELECT id FROM matches WHERE game=:game AND status='pending'")
_RANGE = "SELECT a, b, points, games, n FROM ladder_units WHERE "
_RANGE_SQLITE = "SELECT a, b, points, games, n FROM ladder_units NOT INDEXED WHERE "
RANGE = {"sqlite": text(_RANGE_SQLITE + "rowid>=:lo AND rowid<:hi AND game=:game AND n<>0"),
         "postgresql": text(_RANGE + "ctid>=CAST(:lo AS tid) AND ctid<CAST(:hi AS tid) AND game=:game AND n<>0")}
RANGE_LAST = {"sqlite": text(_RANGE_SQLITE + "rowid>=:lo AND game=:game AND n<>0"),
              "postgresql": text(_RANGE + "ctid>=CAST(:lo AS tid) AND game=:game AND n<>0")}
"""A range of ``ladder_units`` by its rows' places (:func:`read_totals_chunked`): SQLite's rowids,
PostgreSQL's pages (``ctid``: a TID range scan, PostgreSQL 14 and later); the last range open-ended.
SQLite's is ``NOT INDEXED``: on an analysed store its planner preferred the index on ``game`` and
walked every unit of the game for each range (the season store's first load took 39 s of CPU
instead of 11)."""
EXTENT = {"sqlite": text("SELECT MAX(rowid) + 1 FROM ladder_units"),
          "postgresql": text("SELECT pg_relation_size('ladder_units') / current_setting('block_size')::int")}
"""Where ``ladder_units`` ends: the rowid after the last (SQLite), its pages (PostgreSQL)."""
FILE = {"sqlite": None, "postgresql": text("SELECT pg_relation_filenode('ladder_units')")}
"""The file of ``ladder_units`` on PostgreSQL: a rewrite of the table (``VACUUM FULL``, ``CLUSTER``)
moves every row to a new one."""


@functools.lru_cache(maxsize=4)
def rows_in(n: int) -> Any:
    """The statement reading the ``ladder_units`` rows of ``n`` keys ``(a, b, points, games)``
    (parameters ``game``, ``a0``, ``b0``, ``p0``, ``g0``, ... ``g{n-1}``): the keys as a ``VALUES``
    list joined to the table, one primary-key lookup per key (SQLite keeps the join's order as
    written: ``CROSS JOIN``). A row-value ``IN (...)`` list is what it replaced: SQLite walked
    the whole game's index for it, 5.2 million entries per statement on the season store (the
    chunked first load's last step took 100 s)."""
    keys = ", ".join(f"(:a{i}, :b{i}, :p{i}, :g{i})" for i in range(n))
    return text(f"WITH k(a, b, points, games) AS (VALUES {keys}) "
                "SELECT u.a, u.b, u.points, u.games, u.n FROM k CROSS JOIN ladder_units u "
                "WHERE u.game=:game AND u.a=k.a AND u.b=k.b AND u.points=k.points AND u.games=k.games AND u.n<>0")


UNITS = {  # one pass in the table's order (SQLite would otherwise walk an index and look up each row)
    "sqlite": text("SELECT a, b, points, games, n FROM ladder_units NOT INDEXED WHERE game=:game AND n<>0"),
    "postgresql": text("SELECT a, b, points, games, n FROM ladder_units WHERE game=:game AND n<>0"),
}
_MATCH = "SELECT id, game, tournament_id, pair_key, bot0, bot1, winner_seat, status FROM matches"
MATCHES_AFTER = text(_MATCH + " WHERE id>:after ORDER BY id")
MATCHES_IN = text(_MATCH + " WHERE id IN :ids").bindparams(bindparam("ids", expanding=True))
TWIN = text("SELECT id, bot0, bot1, winner_seat, status FROM matches WHERE tournament_id=:tid AND pair_key=:pair "
            "AND id<>:id")
"""The other half of a duplicate pair, finished or not (the caller keeps a finished one): no status term,
which could make SQLite's planner walk ``matches_by_status`` over every finished match of the tournament
instead of ``matches_by_pair`` (as :data:`arena.store.results.TWIN`)."""
RATINGS = text("SELECT bot, elo, ci95, place FROM ladder WHERE game=:game")
RATINGS_0004 = text("SELECT bot, elo, ci95, NULL FROM ladder WHERE game=:game")
""":data:`RATINGS` of a store older than revision 0005 read as it is (no ``place``: the fit bench's
cached season, :class:`arena.tools.bench_fit.ReadOnlyStore`)."""
RANKED = text("SELECT bot FROM ladder WHERE game=:game ORDER BY elo DESC")
"""The game's bots, best rated first (the fit bench's made-up results, :mod:`arena.tools.bench_fit`)."""


def _results(store: Any, game: str) -> int:
    found = store.run(RESULTS, {"game": game}).scalar()
    return 0 if found is None else int(found)


def read_totals(store: Any, game: str, sink: Callable[[Units | None], None], chunk: int | None = None,
                between: Callable[[], None] | None = None) -> FitCursor:
    """The whole ladder of ``game`` for a fitter starting: every unit counted (``ladder_units``),
    handed to ``sink`` in batches of about :data:`BATCH` units (memory: one batch at a time),
    and the :class:`FitCursor` to read on from. Raises what the store raises.

    By default (``chunk`` None) :func:`read_totals_chunked`, in short snapshots of
    :data:`PG_CHUNK_PAGES` pages (PostgreSQL) or :data:`SQLITE_CHUNK_ROWS` rowids (SQLite) each, so
    that no snapshot lasts the whole read; ``chunk`` 0: in one read snapshot, one pass over the
    table (what a failed chunked read falls back to).
    ``between`` (tests) is called between two chunks' snapshots. If the chunked read cannot
    account for the results committed meanwhile (see :func:`read_new`), ``sink(None)`` says to
    forget the batches handed on so far, and the ladder is read again in one snapshot."""
    if chunk is None:
        chunk = PG_CHUNK_PAGES if store.dialect == "postgresql" else SQLITE_CHUNK_ROWS
    if chunk:
        cursor = read_totals_chunked(store, game, sink, chunk, between)
        if cursor is not None:
            return cursor
        sink(None)
        log.warning("ladder fit of %s: the matches finished during the chunked read do not account for the "
                    "results counted; reading the whole ladder in one snapshot", game)
    index: dict[str, int] = {}
    parts: list[Units] = []
    with read_snapshot(store):
        cursor = _cursor_now(store, game)
        # streamed (a server-side cursor on PostgreSQL): one chunk in memory at a time
        cur = store.run(UNITS[store.dialect].execution_options(stream_results=True, yield_per=CHUNK), {"game": game})
        while rows := cur.fetchmany(CHUNK):
            parts.append(_columns(rows, index))
            if sum(p.a.size for p in parts) >= BATCH:
                sink(_concatenate(parts, index))
                parts = []
        if parts:
            sink(_concatenate(parts, index))
    return cursor


def _cursor_now(store: Any, game: str) -> FitCursor:
    """The :class:`FitCursor` of the store as the caller's snapshot sees it."""
    results = _results(store, game)
    last_id = store.run(LAST_MATCH).scalar() or 0
    pending = sorted(r[0] for r in store.run(PENDING, {"game": game}))
    return FitCursor(last_id=last_id, pending=pending, results=results)


def read_totals_chunked(store: Any, game: str, sink: Callable[[Units | None], None], chunk: int = CHUNK,
                        between: Callable[[], None] | None = None) -> FitCursor | None:
    """:func:`read_totals` in short read snapshots, results committed between them: ``ladder_units``
    in ranges of its rows' places in the table (PostgreSQL: ``chunk`` pages by ``ctid``, a TID
    range scan; SQLite: ``chunk`` rowids), the last range open-ended. One pass over the table
    whatever its order, as the one-snapshot read, and exact whatever the results committed
    meanwhile:

    * the first snapshot takes the :class:`FitCursor` (results, matches, pending) with the first
      range; each later snapshot reads, with its range, the units of the matches finished since
      the previous snapshot (:func:`read_new` from the previous snapshot's cursor), and keeps
      their keys ``(a, b, points, games)``: the rows the results touched during the read;
    * a row no result touched during the read kept its value and its place (only a result's
      upsert changes a row, and on PostgreSQL moves it): it was read once, in its range. A
      touched row may have been read at an older value, or twice, or not at all (moved into a
      range already read): whatever was read of the touched keys is taken back, and their rows
      are read anew, by key, in the last snapshot;
    * the last snapshot's cursor is the one returned: the totals handed on are those of that
      snapshot, each unit once.

    Memory: the rows read are kept as packed keys and counts (12 bytes a row) until the end, to
    take back those of the touched keys. No snapshot lasts longer than one range (on PostgreSQL a
    long one keeps every row version written meanwhile, and each result updates the same few
    rows: ``ladder_state``, the bots' ``ladder`` rows, ``pair_counts``). Returns None when the
    matches finished between two snapshots do not account for the results counted
    (:func:`read_new` returns None), when a unit does not pack (points not a multiple of 1/2), or
    on PostgreSQL when the table was rewritten meanwhile (``VACUUM FULL``: every row moved; its
    file changed): then some batches may have been handed on already, incomplete."""
    index: dict[str, int] = {}
    parts: list[Units] = []
    seen_keys: list[Any] = []  # per range: packed keys of the rows read, and their counts
    seen_n: list[Any] = []
    touched: set[tuple[str, str, float, int]] = set()
    cursor: FitCursor | None = None
    lo, end, first_file = 0, 0, None
    while True:
        with read_snapshot(store):
            if FILE[store.dialect] is not None:
                file = store.run(FILE[store.dialect]).scalar()
                if cursor is not None and file != first_file:  # the table was rewritten (VACUUM FULL)
                    return None
                first_file = file
            if cursor is None:
                cursor = _cursor_now(store, game)
                end = int(store.run(EXTENT[store.dialect]).scalar() or 0)
            else:
                got = read_new(store, game, cursor)
                if got is None:
                    return None
                cursor, new = got
                u = new.units
                touched.update(zip((u.names[k] for k in u.a), (u.names[k] for k in u.b), u.s.tolist(),
                                   (int(x) for x in u.g.tolist())))
            last = lo + chunk >= end
            rows = _tuples(store.run(RANGE_LAST[store.dialect] if last else RANGE[store.dialect],
                                     {"game": game, **_bounds(store.dialect, lo, lo + chunk)}))
            if last:
                fresh = _rows_of(store, game, sorted(touched))
        if rows:
            units = _columns(rows, index)
            packed = _pack(units)
            if packed is None:
                return None
            seen_keys.append(packed)
            seen_n.append(units.c.astype(np.int32))
            parts.append(units)
        if parts and (last or sum(p.a.size for p in parts) >= BATCH):  # a few large batches: each costs a merge
            sink(_concatenate(parts, index))
            parts = []
        if last:
            break
        lo += chunk
        if between is not None:
            between()
    if touched and not _take_back(touched, fresh, seen_keys, seen_n, index, sink):
        return None
    return cursor


def _take_back(touched: set[tuple[str, str, float, int]], fresh: list[Any], seen_keys: list[Any],
               seen_n: list[Any], index: dict[str, int], sink: Callable[[Units | None], None]) -> bool:
    """The end of :func:`read_totals_chunked`: hand ``sink`` the negated counts of what the ranges
    read of the ``touched`` keys, then their rows as they are now (``fresh``); False when a key
    does not pack (nothing handed on)."""
    keys = np.concatenate(seen_keys) if seen_keys else np.zeros(0, np.int64)
    counts = np.concatenate(seen_n) if seen_n else np.zeros(0, np.int32)
    of_touched = _pack(_columns([(a, b, s_, g, 1) for a, b, s_, g in touched], index))
    if of_touched is None:
        return False
    mask = np.isin(keys, of_touched)
    if mask.any():
        a, b, pts, g = _unpack(keys[mask])
        sink(Units(list(index), a, b, pts, g, -counts[mask].astype(float)))
    if fresh:
        sink(_columns(fresh, index))  # the driver's tuples (_rows_of)
    return True


PACK_BOTS = 1 << 24
"""Bots a packed key can tell apart (:func:`_pack`)."""


def _pack(u: Units) -> Any:
    """Each unit's key ``(a, b, points, games)`` as one int64 (``a``, ``b`` indexes below
    :data:`PACK_BOTS`, twice the points below 16, games below 8); None if one does not fit."""
    twice = u.s * 2
    if u.a.size and (len(u.names) > PACK_BOTS or not np.array_equal(twice, np.round(twice))
                     or twice.min() < 0 or twice.max() >= 16 or u.g.min() < 0 or u.g.max() >= 8):
        return None
    return ((u.a * PACK_BOTS + u.b) * 16 + twice.astype(np.int64)) * 8 + u.g.astype(np.int64)


def _unpack(keys: Any) -> tuple[Any, Any, Any, Any]:
    """:func:`_pack` undone: ``(a, b, points, games)`` arrays."""
    g, rest = keys % 8, keys // 8
    twice, rest = rest % 16, rest // 16
    return rest // PACK_BOTS, rest % PACK_BOTS, twice / 2.0, g.astype(float)


def _bounds(dialect: str, lo: int, hi: int) -> dict[str, Any]:
    if dialect == "postgresql":
        return {"lo": f"({lo},0)", "hi": f"({hi},0)"}
    return {"lo": lo, "hi": hi}


KEYS_IN = 500
"""Keys per statement when :func:`read_totals_chunked` reads the touched rows anew."""


def _rows_of(store: Any, game: str, keys: list[tuple[str, str, float, int]]) -> list[Any]:
    """The ``ladder_units`` rows ``(a, b, points, games, n)`` of ``keys``, counted (``n <> 0``)."""
    out: list[Any] = []
    for k in range(0, len(keys), KEYS_IN):
        part = keys[k:k + KEYS_IN]
        params: dict[str, Any] = {"game": game}
        for i, (a, b, points, games) in enumerate(part):
            params.update({f"a{i}": a, f"b{i}": b, f"p{i}": points, f"g{i}": games})
        out += _tuples(store.run(rows_in(len(part)), params))
    return out


def _concatenate(parts: list[Units], index: dict[str, int]) -> Units:
    return Units(list(index), *(np.concatenate([getattr(p, f) for p in parts]) for f in ("a", "b", "s", "g", "c")))


def _points(winner_seat: int | None) -> float:
    return 1.0 if winner_seat == 0 else 0.0 if winner_seat == 1 else 0.5


def read_new(store: Any, game: str, cursor: FitCursor) -> tuple[FitCursor, NewUnits] | None:
    """The units of ``game``'s matches finished since ``cursor`` (see the module docstring), and
    the cursor to read on from; None when the matches found do not account for the results
    counted since (then read everything again: :func:`read_totals`). Reads the matches created
    since the cursor, the rows of the matches pending at the cursor when some results are
    still unaccounted for, and the other half of each new finished match of a duplicate pair:
    no row in proportion to the history. Raises what the store raises."""
    units: list[tuple[str, str, float, int, int]] = []
    rows_read = 0
    with read_snapshot(store):
        results = _results(store, game)
        expected = results - cursor.results
        if expected < 0:
            return None
        done: dict[int, Any] = {}
        pending: list[int] = []
        last_id = cursor.last_id
        if expected > 0:
            for row in store.run(MATCHES_AFTER, {"after": cursor.last_id}):
                rows_read += 1
                last_id = row[0]
                if row[1] != game:
                    continue
                if row[7] == "pending":
                    pending.append(row[0])
                elif row[7] == "done":
                    done[row[0]] = row
        before = set(cursor.pending)
        # some of the matches pending at the last read finished since: look at them, the newest
        # first (a contest's matches in play; matches of an abandoned tournament, pending for
        # ever, lie below them), in growing chunks, until the results are accounted for
        newest_first = cursor.pending[::-1]
        looked, chunk, still = 0, IN_CHUNK_FIRST, []
        while len(done) < expected and looked < len(newest_first):
            ids = newest_first[looked:looked + chunk]
            looked += len(ids)
            chunk = min(2 * chunk, IN_CHUNK)
            for row in store.run(MATCHES_IN, {"ids": ids}):
                rows_read += 1
                if row[7] == "pending":
                    still.append(row[0])
                elif row[7] == "done":
                    done[row[0]] = row
        kept = sorted(still + newest_first[looked:])
        if len(done) != expected:
            return None
        applied: set[int] = set()

        def counted(match_id: int) -> bool:  # in the totals already (read before, or earlier in this batch)
            return match_id in applied or (match_id <= cursor.last_id and match_id not in before)

        for match_id in sorted(done):
            m = done[match_id]
            twin = None
            if m[3] is not None:
                twin = next((r for r in store.run(TWIN, {"tid": m[2], "pair": m[3], "id": match_id})
                             if r[4] == "done"), None)
                rows_read += twin is not None
            if twin is not None and counted(twin[0]):
                units.append((twin[1], twin[2], _points(twin[3]), 1, -1))
                this = (match_id, m[4], m[5], m[6])
                first, second = (twin, this) if twin[0] < match_id else (this, twin)
                s1 = _points(second[3])
                pair = _points(first[3]) + (s1 if second[1] == first[1] else 1.0 - s1)
                units.append((first[1], first[2], pair, 2, 1))
            else:
                units.append((m[4], m[5], _points(m[6]), 1, 1))
            applied.add(match_id)
    return (FitCursor(last_id=last_id, pending=sorted(kept + pending), results=results),
            NewUnits(units=Units.of(units), finished=len(done), rows_read=rows_read))


def places_kept(raw: Any) -> bool:
    """Whether the SQLite file behind the driver connection ``raw`` keeps the fit's places
    (``ladder.place``, revision 0005): a store of an older revision read as it is, without an
    upgrade (:class:`arena.tools.bench_fit.ReadOnlyStore`), has none."""
    return "place" in {row[1] for row in raw.execute("PRAGMA table_info(ladder)")}


def read_ratings(store: Any, game: str) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    """The stored ladder of ``game``: ``(Elo by bot, ci95 by bot, place by bot)``, the intervals
    only where known (finite) and the places (``ladder.place``: the last fit's layout, revision
    0005) only where stored: where a fitter starting warms up from. A store whose ``places`` is
    False (one read below revision 0005) gives no place."""
    elo, ci95, place = {}, {}, {}
    query = RATINGS if getattr(store, "places", True) else RATINGS_0004
    for bot, e, c, p in store.run(query, {"game": game}):
        elo[bot] = e
        if c is not None and math.isfinite(c):
            ci95[bot] = c
        if p is not None:
            place[bot] = int(p)
    return elo, ci95, place
