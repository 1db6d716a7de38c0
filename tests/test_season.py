"""A season's costs do not grow with its history (issue 21): a result's commit and a pairing
decision touch no row in proportion to the matches already played, and the ladder is refitted in
the background, debounced, never inside a result's transaction."""

from __future__ import annotations

import random

import pytest
import trio
import trio.testing

from arena.match.referee import MatchResult
from arena.schedule.fitter import FitPolicy, LadderFitter, fit_ladder
from arena.schedule.formats import Pairing
from arena.schedule.formats.ladder import CANDIDATES, SMALL_FIELD, LadderPairing
from arena.store.sqlite import FIRST_ELO, Store


def _history(store: Store, n_bots: int, n_matches: int, seed: int = 1, pending: int = 1) -> tuple[int, list[str]]:
    """A tournament of ``n_matches`` finished matches among ``n_bots`` bots, and ``pending``
    more matches not played yet (the first is ``t{tid}-m{n_matches + 1:04d}``)."""
    rng = random.Random(seed)
    bots = [f"bot{i:03d}" for i in range(n_bots)]
    pairs = [tuple(rng.sample(bots, 2)) for _ in range(n_matches + pending)]
    tid = store.create_tournament("ecarte", "test", 1, {}, bots,
                                  [Pairing(index=i, bot0=a, bot1=b, seed=i) for i, (a, b) in enumerate(pairs)])
    for i in range(n_matches):
        key = f"t{tid}-m{i + 1:04d}"
        store.record_result(key, MatchResult(match_id=key, winner=rng.randrange(2), reason="target", scores=[0, 0],
                                             manches=[0, 0]), None)
    return tid, bots


def _statements(store: Store, call) -> list[str]:
    """The SQL statements ``call()`` runs on ``store`` (SQLite), with their values bound."""
    seen: list[str] = []
    store.db.set_trace_callback(seen.append)
    try:
        call()
    finally:
        store.db.set_trace_callback(None)
    return [s for s in seen if not s.lstrip().upper().startswith(("BEGIN", "COMMIT", "ROLLBACK"))]


def _scans(store: Store, statements: list[str]) -> list[str]:
    """The plan lines of ``statements`` that read a whole table (``SCAN`` without an index)."""
    out = []
    for sql in statements:
        for row in store.db.execute("EXPLAIN QUERY PLAN " + sql):
            detail = row[3]
            if detail.startswith("SCAN") and "USING" not in detail and "CONSTANT ROW" not in detail:
                out.append(f"{detail}: {sql}")
    return out


def test_a_result_commit_reads_no_row_in_proportion_to_the_history():
    store = Store(":memory:")
    tid, _ = _history(store, 30, 600)
    key = f"t{tid}-m{601:04d}"
    result = MatchResult(match_id=key, winner=0, reason="target", scores=[0, 0], manches=[0, 0])
    statements = _statements(store, lambda: store.record_result(key, result, None))
    assert statements and not any("ladder_units" in s and s.lstrip().upper().startswith("SELECT") and "WHERE game"
                                  in s and "a=" not in s for s in statements)
    assert _scans(store, statements) == []  # every statement is an index search
    assert store.ladder_state("ecarte")["results"] == 601


def test_the_first_result_shows_a_provisional_rating_at_once_and_the_fit_replaces_it():
    store = Store(":memory:")
    tid, bots = _history(store, 6, 0)
    key = f"t{tid}-m0001"
    store.record_result(key, MatchResult(match_id=key, winner=0, reason="target", scores=[0, 0], manches=[0, 0]),
                        None)
    rows = {bot: (elo, ci95, games) for bot, elo, ci95, games in store.ladder_intervals("ecarte")}
    assert len(rows) == 2 and all(r == (FIRST_ELO, float("inf"), 1) for r in rows.values())
    report = fit_ladder(store, "ecarte")
    assert report.results == 1 and report.bots == 2
    rows = {bot: (elo, ci95, games) for bot, elo, ci95, games in store.ladder_intervals("ecarte")}
    assert all(ci95 < float("inf") and games == 1 for _, ci95, games in rows.values())
    assert len({elo for elo, _, _ in rows.values()}) == 2  # the winner above the loser
    state = store.ladder_state("ecarte")
    assert state["fitted_results"] == state["results"] == 1 and state["fitted_at"] is not None


def test_pair_counts_kept_by_each_result_are_those_of_the_history():
    store = Store(":memory:")
    _, bots = _history(store, 12, 300)
    counted: dict[frozenset, int] = {}
    for b0, b1 in store.db.execute("SELECT bot0, bot1 FROM matches WHERE status='done'"):
        counted[frozenset((b0, b1))] = counted.get(frozenset((b0, b1)), 0) + 1
    for a in bots:
        others = [b for b in bots if b != a]
        assert store.pair_counts("ecarte", a, others) == {b: n for b in others
                                                           if (n := counted.get(frozenset((a, b)), 0))}


def test_aborted_matches_count_neither_as_meetings_nor_as_results():
    store = Store(":memory:")
    tid, _ = _history(store, 4, 0)
    key = f"t{tid}-m0001"
    store.record_result(key, MatchResult(match_id=key, winner=None, reason="aborted", scores=[0, 0], manches=[0, 0]),
                        None)
    assert store.ladder_state("ecarte")["results"] == 0 and store.ladder_intervals("ecarte") == []


class _Counts:
    """Pair counts from a dict, recording every question (how many candidates it was asked for)."""

    def __init__(self, met: dict[frozenset, int]) -> None:
        self.met = met
        self.asked: list[tuple[str, int]] = []

    def __call__(self, bot: str, others: list[str]) -> dict[str, int]:
        self.asked.append((bot, len(others)))
        return {o: self.met[frozenset((bot, o))] for o in others if frozenset((bot, o)) in self.met}


def test_a_large_field_pairs_the_longest_waiting_bot_among_a_bounded_set_of_candidates():
    bots = [f"b{i:04d}" for i in range(2000)]
    counts = _Counts({})
    pairing = LadderPairing("round-robin", counts, seed=5)
    pairing.idle(*bots[:1000])  # these ended a unit; the other 1,000 have just connected
    first = pairing.choose(bots, bots, running=0)
    assert "b1000" in first  # never played and first by name among those
    assert all(n <= CANDIDATES for _, n in counts.asked) and len(counts.asked) == 1
    # once everyone has played, the anchor is the bot whose unit ended first
    pairing.idle(*bots[1000:])
    assert "b0000" in pairing.choose(bots, bots, running=0)


def test_round_robin_meets_the_least_met_candidate():
    bots = [f"b{i:02d}" for i in range(SMALL_FIELD + 10)]
    met = {frozenset(("b00", b)): 5 for b in bots[1:]}
    met[frozenset(("b00", "b17"))] = 1
    pairing = LadderPairing("round-robin", _Counts(met), seed=1)
    pairing.idle(*bots[1:])  # b00 has waited longest
    assert pairing.choose(bots, bots, running=3) == ("b00", "b17")  # the field is within CANDIDATES


def test_rating_pairing_meets_a_near_rival_in_a_large_field():
    bots = [f"b{i:03d}" for i in range(300)]
    pairing = LadderPairing("rating", _Counts({}), seed=1)
    pairing.elo = {b: 1000.0 + 7 * i for i, b in enumerate(bots)}
    pairing.idle(*[b for b in bots if b != "b150"])
    a, b = pairing.choose(bots, bots, running=0)
    assert "b150" in (a, b) and {a, b} & {"b149", "b151"}


def test_a_small_round_robin_waits_for_the_pair_that_is_due():
    met = {frozenset(("a", "b")): 2, frozenset(("c", "d")): 1, frozenset(("a", "c")): 1,
           frozenset(("b", "d")): 1, frozenset(("a", "d")): 1, frozenset(("b", "c")): 1}
    pairing = LadderPairing("round-robin", _Counts(met))
    assert pairing.choose(["a", "b"], ["a", "b", "c", "d"], running=1) is None  # a-b met more than the rest
    assert pairing.choose(["a", "b"], ["a", "b", "c", "d"], running=0) == ("a", "b")


def test_pairing_never_reads_the_history(tmp_path):
    from arena.schedule.contest import Contest, ContestConfig

    store = Store(tmp_path / "x.db")
    _, bots = _history(store, 60, 400)

    class Conn:
        closed = trio.Event()

    contest = Contest(ContestConfig(db=str(tmp_path / "x.db")), store=store)
    contest.server.bots = {n: Conn() for n in bots}
    pair = None

    def decide() -> None:
        nonlocal pair
        pair = contest.next_pair()

    statements = _statements(store, decide)  # the bots have just connected: each one's pair counts are read
    assert pair is not None and len(statements) == len(bots)
    assert not any("matches" in s for s in statements) and _scans(store, statements) == []
    contest.busy.update(pair)
    assert _statements(store, decide) == [] and pair is not None  # then a decision runs no SQL at all


@pytest.fixture
def autojump_clock():
    return trio.testing.MockClock(autojump_threshold=0)


async def _inline(f, *args):
    """Run the fit's computation in the trio thread: with the mock clock, a thread would let
    time jump while it computes."""
    return f(*args)


def _finish(store: Store, key: str, winner: int) -> None:
    store.record_result(key, MatchResult(match_id=key, winner=winner, reason="target", scores=[0, 0],
                                         manches=[0, 0]), None)


async def test_the_background_fit_is_debounced_and_computes_outside_any_transaction(monkeypatch, autojump_clock):
    import arena.schedule.fitter as fitter

    store = Store(":memory:")
    tid, _ = _history(store, 5, 0, pending=8)
    computed: list[bool] = []
    real = fitter.compute_fit

    def spy(*args):
        computed.append(store.db.in_transaction)
        return real(*args)

    monkeypatch.setattr(fitter, "compute_fit", spy)
    fits: list[int] = []
    job = LadderFitter(store, "ecarte", FitPolicy(min_interval_s=10.0), on_fit=lambda r: fits.append(r.results),
                      run_sync=_inline)
    async with trio.open_nursery() as nursery:
        await nursery.start(job.run)
        for i, row in enumerate(store.pending_matches(tid)):  # a burst of results, a poke after each
            _finish(store, row.match_key, i % 2)
            job.poke()
            await trio.sleep(1.0 if i < 3 else 0.0)
        await trio.sleep(60)
        nursery.cancel_scope.cancel()
    assert computed and not any(computed)  # never inside a transaction: no write lock held meanwhile
    assert fitter.LadderFitter(store, "ecarte").run_sync is trio.to_thread.run_sync  # by default, in a thread
    assert fits == [1, 8]  # the first result at once, the burst during the 10 s rest in one more fit
    assert store.ladder_state("ecarte")["fitted_results"] == 8


async def test_the_fitter_sees_results_of_other_processes_after_its_rest(autojump_clock):
    store = Store(":memory:")
    tid, _ = _history(store, 6, 0, pending=2)
    fits: list[int] = []
    job = LadderFitter(store, "ecarte", FitPolicy(min_interval_s=5.0), on_fit=lambda r: fits.append(r.results),
                      run_sync=_inline)
    async with trio.open_nursery() as nursery:
        await nursery.start(job.run)
        _finish(store, f"t{tid}-m0001", 0)
        job.poke()
        await trio.sleep(0.5)
        assert fits == [1]
        _finish(store, f"t{tid}-m0002", 1)  # as a worker would commit it: nobody pokes
        await trio.sleep(2.0)
        assert fits == [1]  # resting
        await trio.sleep(10.0)
        assert fits == [1, 2]  # seen at the next look
        nursery.cancel_scope.cancel()


def test_the_servers_watch_hands_on_each_new_fit_once():
    """A contest fits in a process of its own; the server's FitWatch reads ``ladder_state`` and
    hands each new fit on once, with the ratings read back when the pairing needs them."""
    from arena.schedule.fitter import FitWatch

    store = Store(":memory:")
    tid, _ = _history(store, 6, 0, pending=2)
    seen = []
    watch = FitWatch(store, "ecarte", on_fit=seen.append)
    watch.look()
    assert seen == []  # nothing fitted yet
    _finish(store, f"t{tid}-m0001", 0)
    fit_ladder(store, "ecarte")
    watch.look()
    watch.look()
    assert len(seen) == 1 and seen[0].results == 1 and {r.name for r in seen[0].ratings} == set(
        b for b, _, _, _ in store.ladder_intervals("ecarte"))
    _finish(store, f"t{tid}-m0002", 1)
    fit_ladder(store, "ecarte")
    store.db.execute("UPDATE ladder_state SET fitted_at=fitted_at+1")  # a later time, whatever the clock's grain
    watch.look()
    assert [r.results for r in seen] == [1, 2]
