"""The ladder fit at a season's scale (issue 21): the fitter keeps the units summed per pair of
bots in memory and reads only the matches finished since its last read; what it keeps equals a
full recount whatever the order of the results, and the fit of the sums equals the fit of the
units (and the dense reference)."""

from __future__ import annotations

import logging
import math
import random
from functools import partial

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arena.schedule.fitter as fitter
from arena.match.referee import MatchResult
from arena.schedule.fitter import FitPolicy, FitState, LadderFitter, fit_ladder
from arena.schedule.formats import Pairing
from arena.stats.ladder import refit
from arena.stats.rating import LadderTotals, fit_totals, fit_units
from arena.stats.synthetic import synthetic_field
from arena.store.fit_input import Units, read_new, read_ratings, read_totals
from arena.store.results import SAVE_CHUNK
from arena.store.sqlite import Store
from tests.dense_fit import dense_fit_units
from tests.test_rating import _close_to_dense
from tests.test_season import _history, _scans, _statements


def _reference(store: Store, game: str = "ecarte") -> LadderTotals:
    """The totals of the units the store keeps (``ladder_units``, counted by each result)."""
    units = Units.of([(a, b, s, g, n) for (a, b, s, g), n in store.ladder_units(game).items()])
    out = LadderTotals()
    out.add_units(units.names, units.a, units.b, units.s, units.g, units.c)
    return out


def _finish(store: Store, key: str, outcome: str) -> None:
    winner = {"0": 0, "1": 1, "draw": None, "abort": None}[outcome]
    store.record_result(key, MatchResult(match_id=key, winner=winner, reason="aborted" if outcome == "abort"
                                         else "target", scores=[0, 0], manches=[0, 0]), None)


def _plan(rng: random.Random, bots: list[str], n: int, start: int = 0) -> list[Pairing]:
    """``n`` matches or so: duplicate pairs (both seat orders, one key) and unpaired matches."""
    out: list[Pairing] = []
    while len(out) < n:
        a, b = rng.sample(bots, 2)
        k = start + len(out)
        if rng.random() < 0.6:
            out += [Pairing(index=k, bot0=a, bot1=b, seed=k, pair=f"{a}|{b}|{k}"),
                    Pairing(index=k + 1, bot0=b, bot1=a, seed=k, pair=f"{a}|{b}|{k}")]
        else:
            out.append(Pairing(index=k, bot0=a, bot1=b, seed=k))
    return out


def test_totals_are_those_of_the_units_whatever_the_order_and_the_takebacks():
    rng = random.Random(4)
    rows = [(rng.choice("abcdef"), rng.choice("ghij"), rng.choice([0.0, 0.5, 1.0]), 1, 1) for _ in range(300)]
    rows += [(rng.choice("ghij"), rng.choice("abcdef"), rng.choice([0.0, 0.5, 1.0, 1.5, 2.0]), 2, 1)
             for _ in range(200)]
    whole = LadderTotals()
    u = Units.of(rows)
    whole.add_units(u.names, u.a, u.b, u.s, u.g, u.c)
    parts = LadderTotals()
    shuffled = rows + [r[:4] + (-1,) for r in rows[:50]] + rows[:50]  # some taken back and counted again
    rng.shuffle(shuffled)
    for k in range(0, len(shuffled), 37):  # in chunks, new bots arriving as they come
        u = Units.of(shuffled[k:k + 37])
        parts.add_units(u.names, u.a, u.b, u.s, u.g, u.c)
    assert parts.as_dict() == whole.as_dict()  # exact: the ladder's points are multiples of 1/2
    assert parts.names == sorted(parts.names) and whole.results() == 300 + 2 * 200


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), steps=st.lists(st.sampled_from(["finish", "finish", "finish", "more", "update"]),
                                                  min_size=5, max_size=60))
def test_the_fitters_totals_equal_a_full_recount_after_any_series_of_results(seed, steps):
    """Matches scheduled up front and one by one, finished in any order (pairs completed before
    or after the fitter read their first half, draws, aborts), the fitter reading at any point:
    what it keeps equals what a fresh full read finds and what the store's units sum to."""
    rng = random.Random(seed)
    store = Store(":memory:")
    bots = [f"b{i}" for i in range(7)]
    tid = store.create_tournament("ecarte", "ladder", 1, {}, bots, _plan(rng, bots, 10))
    other = store.create_tournament("piquet", "ladder", 1, {}, bots, [("b0", "b1", 1)])  # another game's match
    state = FitState("ecarte")
    state.update(store)
    scheduled = 10
    for step in steps:
        pending = [m.match_key for m in store.pending_matches(tid)]
        if step == "finish" and pending:
            _finish(store, rng.choice(pending), rng.choice(["0", "1", "1", "draw", "abort"]))
        elif step == "more":
            for p in _plan(rng, bots, rng.randint(1, 3), start=scheduled):
                store.add_match(tid, "ecarte", p)
                scheduled = max(scheduled, p.index + 1)
        elif step == "update":
            state.update(store)
        if rng.random() < 0.1:
            _finish(store, store.pending_matches(other)[0].match_key, "0") if store.pending_matches(other) else None
    state.update(store)
    fresh = FitState("ecarte")
    fresh.update(store)
    assert state.loads == 1  # never read the whole ladder again
    assert state.totals.as_dict() == fresh.totals.as_dict() == _reference(store).as_dict()
    assert state.cursor.results == store.ladder_state("ecarte")["results"] == state.totals.results()


def test_a_refit_reads_only_the_rows_of_the_new_matches_whatever_the_history():
    rows_read = []
    for history in (300, 1200):
        store = Store(":memory:")
        tid, bots = _history(store, 30, history, pending=0)
        state = FitState("ecarte")
        state.update(store)
        rng = random.Random(1)
        for p in _plan(rng, bots, 6, start=history):
            store.add_match(tid, "ecarte", p)
        statements = _statements(store, partial(state.update, store))  # nothing finished yet: nothing read
        assert state.rows_read == 0 and not any("FROM matches" in s for s in statements)
        for m in store.pending_matches(tid)[:5]:
            _finish(store, m.match_key, "0")
        statements = _statements(store, partial(state.update, store))
        assert _scans(store, statements) == []  # index searches only: no table read whole
        assert not any("ladder_units" in s for s in statements)
        rows_read.append(state.rows_read)
        assert state.loads == 1 and state.totals.as_dict() == _reference(store).as_dict()
    assert rows_read[0] == rows_read[1] <= 6 + 5  # the new matches and the halves their pairs joined


def test_matches_finished_out_of_order_are_found_among_those_pending_at_the_last_read():
    store = Store(":memory:")
    tid, bots = _history(store, 8, 20, pending=6)
    state = FitState("ecarte")
    state.update(store)
    assert len(state.cursor.pending) == 6
    keys = [m.match_key for m in store.pending_matches(tid)]
    _finish(store, keys[4], "1")  # a later match first, then an earlier one
    state.update(store)
    _finish(store, keys[1], "draw")
    _finish(store, keys[2], "abort")
    state.update(store)
    assert state.rows_read == 5  # the five still pending at the last read, nothing else
    assert len(state.cursor.pending) == 3 and state.loads == 1
    assert state.totals.as_dict() == _reference(store).as_dict()


def test_results_the_cursor_cannot_account_for_make_the_fitter_read_everything_again(caplog):
    store = Store(":memory:")
    tid, _ = _history(store, 8, 30, pending=2)
    state = FitState("ecarte")
    state.update(store)
    state.cursor.pending = []  # as if it had never seen the pending matches
    _finish(store, store.pending_matches(tid)[0].match_key, "0")
    assert read_new(store, "ecarte", state.cursor) is None
    with caplog.at_level(logging.WARNING):
        state.update(store)
    assert state.loads == 2 and "reading the whole ladder again" in caplog.text
    assert state.totals.as_dict() == _reference(store).as_dict()


def test_the_incremental_reads_agree_on_both_databases(any_store):
    store = any_store
    rng = random.Random(7)
    bots = [f"b{i}" for i in range(6)]
    tid = store.create_tournament("ecarte", "ladder", 1, {}, bots, _plan(rng, bots, 24))
    keys = [m.match_key for m in store.pending_matches(tid)]
    rng.shuffle(keys)
    for key in keys[:8]:
        _finish(store, key, rng.choice(["0", "1", "draw"]))
    state = FitState("ecarte")
    state.update(store)
    for key in keys[8:20]:
        _finish(store, key, rng.choice(["0", "1", "draw", "abort"]))
        if rng.random() < 0.5:
            state.update(store)
    state.update(store)
    assert state.loads == 1 and state.totals.as_dict() == _reference(store).as_dict()
    report = fit_ladder(store, "ecarte")
    assert report.results == store.ladder_state("ecarte")["results"] > 0


def test_the_fit_of_the_totals_is_the_fit_of_the_units():
    for n, graph in ((40, "random"), (200, "mixed"), (600, "neighbours")):
        f = synthetic_field(n, 20, 20, graph, seed=n)
        totals = LadderTotals()
        u = Units.of([(a, b, s, g, c) for (a, b, s, g), c in f.units.items()])
        totals.add_units(u.names, u.a, u.b, u.s, u.g, u.c)
        one, two = fit_units(f.units), fit_totals(totals)
        assert [r.name for r in one.ratings] == [r.name for r in two.ratings]
        for x, y in zip(one.ratings, two.ratings):
            assert abs(x.elo - y.elo) < 1e-9 and abs(x.ci95 - y.ci95) < 1e-9
            assert (x.wins, x.losses, x.draws, x.games) == (y.wins, y.losses, y.draws, y.games)
        alone = fit_totals(totals, intervals="none")
        assert [r.elo for r in alone.ratings] == [r.elo for r in two.ratings]
        assert all(math.isnan(r.ci95) for r in alone.ratings)


def test_the_fit_of_the_totals_equals_the_dense_fit_on_a_small_field():
    f = synthetic_field(60, 20, 20, "mixed", seed=3)
    totals = LadderTotals()
    u = Units.of([(a, b, s, g, c) for (a, b, s, g), c in f.units.items()])
    totals.add_units(u.names, u.a, u.b, u.s, u.g, u.c)
    _close_to_dense(fit_totals(totals), dense_fit_units(f.units, f.names, "robust"))  # 1e-6 Elo, 1e-6 relative


def test_fit_ladder_gives_the_ratings_of_the_units_the_store_keeps():
    store = Store(":memory:")
    _history(store, 12, 200, pending=0)
    report = fit_ladder(store, "ecarte")
    expected = refit(store.ladder_units("ecarte"))
    assert [(r.name, round(r.elo, 9), round(r.ci95, 9)) for r in report.ratings] == [
        (r.name, round(r.elo, 9), round(r.ci95, 9)) for r in expected.ratings]


@pytest.fixture
def autojump_clock():
    return trio.testing.MockClock(autojump_threshold=0)


async def _inline(f, *args):
    return f(*args)


async def test_beyond_the_exact_size_the_intervals_are_refitted_less_often_than_the_ratings(monkeypatch,
                                                                                             autojump_clock):
    monkeypatch.setattr(fitter, "EXACT_BOTS", 3)  # a "large" field of 6 bots
    store = Store(":memory:")
    tid, _ = _history(store, 6, 0, pending=12)
    keys = [m.match_key for m in store.pending_matches(tid)]
    for key in keys[:6]:
        _finish(store, key, "0")
    intervals: list[bool] = []
    real = fitter.compute_fit

    def spy(totals, start, with_intervals, known):
        intervals.append(with_intervals)
        return real(totals, start, with_intervals, known)

    monkeypatch.setattr(fitter, "compute_fit", spy)
    job = LadderFitter(store, "ecarte", FitPolicy(min_interval_s=1.0, rest_ratio=0.0, intervals_s=30.0),
                       run_sync=_inline)
    await job.step()
    first = {bot: ci95 for bot, _, ci95, _ in store.ladder_intervals("ecarte")}
    assert intervals == [True] and all(math.isfinite(x) for x in first.values())
    store.add_match(tid, "ecarte", Pairing(index=100, bot0="bot000", bot1="new", seed=1))
    _finish(store, f"t{tid}-m0101", "1")
    await trio.sleep(5)
    await job.step()
    kept = {bot: ci95 for bot, _, ci95, _ in store.ladder_intervals("ecarte")}
    assert intervals == [True, False]
    assert kept["new"] == math.inf and all(kept[b] == first[b] for b in first)  # the newcomer: provisional
    _finish(store, keys[6], "1")
    await trio.sleep(30)
    await job.step()
    assert intervals == [True, False, True]
    assert math.isfinite(dict((b, c) for b, _, c, _ in store.ladder_intervals("ecarte"))["new"])
    assert job.state.loads == 1
    restarted = LadderFitter(store, "ecarte", job.policy, run_sync=_inline)  # a contest restarted
    _finish(store, keys[7], "0")
    await restarted.step()
    assert intervals == [True, False, True, False]  # the stored intervals count as fresh at the start
    assert all(math.isfinite(c) for _, _, c, _ in store.ladder_intervals("ecarte"))


def test_the_fit_bench_reads_a_store_without_writing_it(tmp_path, capsys):
    from arena.tools.bench_fit import main

    path = tmp_path / "season.db"
    store = Store(str(path))
    _history(store, 10, 120, pending=0)
    fit_ladder(store, "ecarte")
    store.close()
    before = path.read_bytes()
    assert main([str(path), "--rounds", "1", "--results", "10"]) == 0
    out = capsys.readouterr().out
    assert "first load" in out and "120 results" in out and "refit 1, ratings alone" in out
    assert "refit 2, full (ratings and intervals)" in out
    assert path.read_bytes() == before
    assert main([str(tmp_path / "missing.db")]) == 2
    assert "run `make bench-season` first" in capsys.readouterr().err


def test_the_fit_bench_reads_a_store_older_than_the_places_as_it_is(tmp_path, capsys):
    """A store of revision 0004 (no ladder.place: the cached season seeded by an older arena) is
    read by the fit bench without an upgrade: no place, the same ratings."""
    import sqlite3

    from arena.tools.bench_fit import ReadOnlyStore, main

    path = tmp_path / "season.db"
    store = Store(str(path))
    _history(store, 10, 120, pending=0)
    fit_ladder(store, "ecarte")
    want = read_ratings(store, "ecarte")[:2]
    store.close()
    raw = sqlite3.connect(path)
    raw.execute("ALTER TABLE ladder DROP COLUMN place")
    raw.commit()
    raw.close()
    old = ReadOnlyStore(path)
    assert not old.places and read_ratings(old, "ecarte") == (*want, {})
    assert main([str(path), "--rounds", "1", "--results", "10"]) == 0
    assert "refit 2, full (ratings and intervals)" in capsys.readouterr().out


def test_matches_left_pending_long_ago_are_not_read_again_at_each_refit():
    """An abandoned tournament's 300 matches stay pending for ever; a contest's matches in play
    finish: a refit reads the newest pending ids first and stops once the results are found."""
    store = Store(":memory:")
    rng = random.Random(3)
    bots = [f"b{i}" for i in range(6)]
    store.create_tournament("ecarte", "round-robin", 1, {}, bots, _plan(rng, bots, 300))  # abandoned
    tid = store.create_tournament("ecarte", "ladder", 1, {}, bots, [])
    for p in _plan(rng, bots, 8):
        store.add_match(tid, "ecarte", p)
    state = FitState("ecarte")
    state.update(store)
    assert len(state.cursor.pending) >= 308
    for m in store.pending_matches(tid)[:3]:
        _finish(store, m.match_key, "1")
    state.update(store)
    assert state.rows_read <= 64 + 3  # one chunk of the newest pending ids (and the twins found)
    assert state.loads == 1 and state.totals.as_dict() == _reference(store).as_dict()


def test_the_fitter_command_defaults_to_the_default_policy(monkeypatch):
    seen = []
    monkeypatch.setattr(fitter.trio, "run", lambda f, *args: seen.append(args))
    assert fitter.main(["--db", "x.db", "--game", "ecarte"]) == 0
    assert seen == [("x.db", "ecarte", FitPolicy())]


def _totals_of(store: Store, chunk: int | None, between=None) -> tuple[LadderTotals, object]:
    totals = LadderTotals()

    def add(u):
        nonlocal totals
        if u is None:
            totals = LadderTotals()
        else:
            totals.add_units(u.names, u.a, u.b, u.s, u.g, u.c)

    cursor = read_totals(store, "ecarte", add, chunk=chunk, between=between)
    return totals, cursor


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_chunked_first_load_is_exact_whatever_results_are_committed_between_its_chunks(any_store, seed):
    """The first load in short snapshots (PostgreSQL's default): results committed between two
    chunks (completing duplicate pairs whose first half was read before or after, new pairs of
    bots, draws, aborts, matches scheduled meanwhile) are each counted once: the totals are those
    of a fresh read at the end, its cursor counts the same results, and the fitter reads on from
    there exactly."""
    store = any_store
    rng = random.Random(seed)
    bots = [f"{'a long name, so that a page holds few rows ' * 2}{i}" for i in range(9)] + ["é", "Z", "a-b", "b0 "]
    tid = store.create_tournament("ecarte", "ladder", 1, {}, bots, _plan(rng, bots, 900))
    keys = [m.match_key for m in store.pending_matches(tid)]
    rng.shuffle(keys)
    for key in keys[:600]:
        _finish(store, key, rng.choice(["0", "1", "draw"]))
    chunks = []
    scheduled = 1000

    def between():
        nonlocal scheduled
        chunks.append(store.ladder_state("ecarte")["results"])
        for _ in range(rng.randint(0, 4)):
            pending = [m.match_key for m in store.pending_matches(tid)]
            if rng.random() < 0.2:
                for p in _plan(rng, bots + [f"new{len(chunks)}"], 2, start=scheduled):
                    store.add_match(tid, "ecarte", p)
                    scheduled = max(scheduled, p.index + 1)
            elif pending:
                _finish(store, rng.choice(pending), rng.choice(["0", "1", "1", "draw", "abort"]))

    # ranges of 1 page (PostgreSQL: about 100 rows; rows move when updated) or of 16 rowids (SQLite)
    totals, cursor = _totals_of(store, chunk=1 if store.dialect == "postgresql" else 16, between=between)
    assert len(chunks) >= 4 and chunks[-1] > chunks[0]  # results did come between the chunks
    whole, fresh = _totals_of(store, chunk=0)
    assert totals.as_dict() == whole.as_dict() == _reference(store).as_dict()
    assert cursor.results == fresh.results == store.ladder_state("ecarte")["results"] == totals.results()
    state = FitState("ecarte")  # and a fitter reading on from that cursor stays exact
    state.totals, state.cursor = totals, cursor
    for key in [m.match_key for m in store.pending_matches(tid)][:10]:
        _finish(store, key, rng.choice(["0", "1", "draw"]))
    state.update(store)
    assert state.loads == 0 and state.totals.as_dict() == _reference(store).as_dict()


def test_a_chunked_first_load_that_cannot_account_for_the_results_reads_again_in_one_snapshot(caplog):
    store = Store(":memory:")
    tid, _ = _history(store, 8, 40, pending=3)
    pending = [m.match_key for m in store.pending_matches(tid)]

    def between():  # a match finished that the load never saw pending (as if edited by hand)
        if pending:
            key = pending.pop()
            store.db.execute("UPDATE matches SET status='done', winner_seat=0 WHERE match_key=?", (key,))
            store.db.execute("UPDATE ladder_state SET results=results+1 WHERE game='ecarte'")
            store.db.execute("UPDATE matches SET status='pending' WHERE match_key=?", (key,))

    with caplog.at_level(logging.WARNING):
        totals, cursor = _totals_of(store, chunk=5, between=between)
    assert "reading the whole ladder in one snapshot" in caplog.text
    whole, fresh = _totals_of(store, chunk=0)
    assert totals.as_dict() == whole.as_dict() and cursor.results == fresh.results


def test_both_databases_read_the_first_load_in_chunks_by_default(monkeypatch):
    """No snapshot lasts the whole first load: PostgreSQL by pages, SQLite by rowids (a long one
    there keeps the WAL from being checkpointed); ``chunk=0`` reads in one snapshot."""
    import arena.store.fit_input as fit_input

    seen = []

    def chunked(store, game, sink, rows, between):
        seen.append((store.dialect, rows))
        return fit_input.FitCursor(last_id=0, pending=[], results=0)

    monkeypatch.setattr(fit_input, "read_totals_chunked", chunked)

    class Fake:
        dialect = "postgresql"

    assert fit_input.read_totals(Fake(), "ecarte", lambda u: None).results == 0
    assert seen == [("postgresql", fit_input.PG_CHUNK_PAGES)]
    fit_input.read_totals(Store(":memory:"), "ecarte", lambda u: None)
    assert seen == [("postgresql", fit_input.PG_CHUNK_PAGES), ("sqlite", fit_input.SQLITE_CHUNK_ROWS)]
    fit_input.read_totals(Store(":memory:"), "ecarte", lambda u: None, chunk=0)
    assert len(seen) == 2


def test_a_fit_is_saved_in_chunks_one_statement_each_on_postgresql_and_row_by_row_values_are_kept(any_store):
    """A fit's ratings are written under the writer lock, which every result commit waits for:
    in chunks of SAVE_CHUNK bots, one write transaction each, the fit's state with the last; on
    PostgreSQL a chunk is one statement (the rows as arrays), not one per bot; on both databases
    the rows are the fit's (an interval not known yet: inf), a new bot gets its row, and the
    counts each result keeps (games, wins) stay as the results left them."""
    from sqlalchemy import event, text

    from arena.stats.rating import Rating

    store = any_store
    _, bots = _history(store, 6, 30, pending=0)
    before = {b: (g, w) for b, g, w in store.run(text("SELECT bot, games, wins FROM ladder WHERE game='ecarte'"))}
    ratings = [Rating(name=b, elo=1400.0 + i, ci95=math.inf if i == 0 else 20.0 + i, games=99, wins=0, losses=0,
                      draws=0) for i, b in enumerate(bots + [f"extra{k}" for k in range(2500)])]
    executions, commits = [], []  # commits: the transactions' starts
    listen = partial(event.listen, store.connection.engine)
    listen("before_cursor_execute", lambda conn, cursor, statement, params, context, many:
           executions.append((many, "ladder_state" in statement)))
    opened = store.connection.transaction

    def transaction(*args, **kwargs):  # where each write transaction starts, in statements run so far
        commits.append(len(executions))
        return opened(*args, **kwargs)

    store.connection.transaction = transaction
    try:
        store.save_ladder_fit("ecarte", ratings, 30, 12)
    finally:
        del store.connection.transaction
    chunks = -(-len(ratings) // SAVE_CHUNK)
    assert chunks == 3 and executions[-1][1] and not any(state for _, state in executions[:-1])
    assert len(commits) == chunks and commits[0] == 0  # one write transaction per chunk, the state in the last
    if store.dialect == "postgresql":  # a chunk's ratings in one statement, then the fit's state
        assert executions == [(False, False)] * chunks + [(False, True)]
    saved = {r[0]: r[1:] for r in store.ladder_intervals("ecarte")}
    assert len(saved) == len(ratings)
    for r in ratings:
        elo, ci95, games = saved[r.name]
        assert elo == r.elo and ci95 == r.ci95 and games == before.get(r.name, (99, 0))[0]
    after = {b: (g, w) for b, g, w in store.run(text("SELECT bot, games, wins FROM ladder WHERE game='ecarte'"))}
    assert all(after[b] == before[b] for b in before) and after["extra7"] == (99, 0)
    assert store.ladder_state("ecarte")["fitted_results"] == 30


def test_a_fit_stores_each_bots_place_and_a_fitter_that_starts_takes_that_order(any_store):
    """save_ladder_fit keeps each named bot's place in the fit's layout (ladder.place, revision
    0005; NULL for a bot it does not name); a fitter that starts reads the places back and offers
    them to its first fit as the earlier order, which it may try but never reuses as it is."""
    from arena.stats.rating import Rating

    store = any_store
    _, bots = _history(store, 6, 30, pending=0)
    ratings = [Rating(name=b, elo=1400.0 + i, ci95=20.0, games=9, wins=0, losses=0, draws=0)
               for i, b in enumerate(bots)]
    places = {b: 10 * i for i, b in enumerate(bots[:-1])}  # the last bot unplaced
    store.save_ladder_fit("ecarte", ratings, 30, 12, places=places)
    elo, ci95, got = read_ratings(store, "ecarte")
    assert got == places and set(elo) == set(bots)
    state = FitState("ecarte")
    state.update(store)
    names, order, pairs = state.totals.layout
    assert dict(zip(names, order.position.tolist())) == places and pairs == 0
    store.save_ladder_fit("ecarte", ratings, 30, 12)  # a fit with no layout: the places go
    assert read_ratings(store, "ecarte")[2] == {}


def test_a_table_rewritten_during_a_chunked_first_load_is_read_again_in_one_snapshot(pg_url, caplog):
    """``VACUUM FULL`` between two ranges moves every row to a new file: the ranges read so far
    mean nothing there, so the load starts over in one snapshot, exact."""
    import psycopg

    store = Store(pg_url)
    try:
        rng = random.Random(5)
        bots = [f"{'a long name, so that a page holds few rows ' * 2}{i}" for i in range(12)]
        tid = store.create_tournament("ecarte", "ladder", 1, {}, bots, _plan(rng, bots, 500))
        for m in store.pending_matches(tid)[:400]:
            _finish(store, m.match_key, rng.choice(["0", "1", "draw"]))
        done = []

        def between():
            if not done:
                with psycopg.connect(pg_url, autocommit=True) as conn:
                    conn.execute("VACUUM FULL ladder_units")
                _finish(store, store.pending_matches(tid)[0].match_key, "1")
                done.append(True)

        with caplog.at_level(logging.WARNING):
            totals, cursor = _totals_of(store, chunk=1, between=between)
        assert done and "reading the whole ladder in one snapshot" in caplog.text
        assert totals.as_dict() == _reference(store).as_dict()
        assert cursor.results == store.ladder_state("ecarte")["results"]
    finally:
        store.close()


def test_sqlite_reads_a_range_of_units_by_rowid_not_through_an_index(tmp_path):
    """A range of the chunked first load is one stretch of the table's rowids: without ``NOT
    INDEXED`` SQLite's planner took the index on ``game`` (no statistics: every store the arena
    makes) and walked every unit of the game for each range (the season's first load: 39 s of
    CPU instead of 11)."""
    import sqlite3

    import arena.store.fit_input as fit_input

    Store(tmp_path / "a.db").close()
    raw = sqlite3.connect(tmp_path / "a.db")
    for statement in (fit_input.RANGE["sqlite"], fit_input.RANGE_LAST["sqlite"]):
        sql = str(statement).replace(":lo", "1").replace(":hi", "1001").replace(":game", "'ecarte'")
        plan = " ".join(row[3] for row in raw.execute("EXPLAIN QUERY PLAN " + sql))
        assert "USING INTEGER PRIMARY KEY" in plan and "INDEX" not in plan.replace("INTEGER PRIMARY KEY", ""), plan
    raw.close()


def test_sqlite_reads_the_touched_units_by_their_keys_not_through_the_whole_game(tmp_path):
    """The chunked first load's last step reads the units the results touched meanwhile by key:
    one primary-key lookup per key. The row-value ``IN (...)`` list it replaced made SQLite walk
    the whole game's index for each statement (100 s on the season store); the check sees that."""
    import sqlite3

    import arena.store.fit_input as fit_input

    Store(tmp_path / "a.db").close()
    raw = sqlite3.connect(tmp_path / "a.db")

    def plan(sql: str, keys: int) -> str:
        values = {"game": "ecarte", **{f"{c}{i}": v for i in range(keys) for c, v in
                                       (("a", "x"), ("b", "y"), ("p", 1.0), ("g", 2))}}
        return " ".join(row[3] for row in raw.execute("EXPLAIN QUERY PLAN " + sql, values))

    found = plan(str(fit_input.rows_in(3)), 3)
    assert "SEARCH u USING INDEX sqlite_autoindex_ladder_units_1 (game=? AND a=? AND b=? AND points=? AND games=?)" \
        in found and "SCAN u" not in found, found
    old = ("SELECT a, b, points, games, n FROM ladder_units WHERE game=:game AND n<>0 AND (a, b, points, games) "
           "IN (VALUES (:a0, :b0, :p0, :g0), (:a1, :b1, :p1, :g1), (:a2, :b2, :p2, :g2))")
    assert "(game=?)" in plan(old, 3)  # what the check catches: the whole game's entries walked
    raw.close()
