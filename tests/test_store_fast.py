"""The store's fast path (arena/store/fast.py): every hot statement gives, on both backends, the rows
(and for a write the row count and the table after it) that SQLAlchemy's own execution of the same
construct gives; rows keep their names; an expanding ``IN`` keeps a bounded set of compiled forms;
a lost PostgreSQL connection is mapped and retried as the engine does."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import InvalidRequestError

from arena.match.core import MatchResult
from arena.schedule.formats import Pairing
from arena.store import accounts, fast, queue, results
from arena.store.fast import Hot, Rows
from arena.store.postgres import DatabaseLost
from arena.store.queue import MatchQueue
from arena.store.schema import ladder, ladder_state, ladder_units, match_queue, matches, pair_counts
from arena.store.sqlite import Store

BOTS = ["a", "b", "c", "d"]


class Undo(Exception):
    """Raised to roll a write back once its effect is read."""


def seeded(store: Store) -> dict[str, Any]:
    """A store with bots, a tournament of duplicate pairs half recorded (one pair complete, one
    half) and a queued tournament with one match claimed: what the hot statements read."""
    tokens = {b: store.add_bot(b) for b in BOTS}
    pairs = [Pairing(index=i, bot0=BOTS[i // 2 % 4], bot1=BOTS[(i // 2 + 1) % 4], seed=i // 2, pair=f"p{i // 2}")
             for i in range(8)]
    tid = store.create_tournament("ecarte", "test", 1, {}, BOTS, pairs)
    for i, winner in enumerate((0, 1, None)):
        store.record_result(f"t{tid}-m{i + 1:04d}", MatchResult(match_id="x", winner=winner, reason="score",
                                                                scores=[5, 3], manches=[1, 0]), None, "h")
    qid = store.create_tournament("ecarte", "test", 2, {}, BOTS, [("a", "b", 1), ("c", "d", 2), ("b", "a", 3)])
    q = MatchQueue(store, clock=lambda: 100.0, lease_s=10)
    q.enqueue(qid)
    claim = q.claim("w1")
    row = store.match_row(f"t{tid}-m0002")
    return {"tid": tid, "qid": qid, "tokens": tokens, "claim": claim, "row": row}


def read_cases(s: dict[str, Any]) -> list[tuple[Hot, dict[str, Any]]]:
    """Hot reads with parameters that find rows, and some that find none."""
    tid, qid, key = s["tid"], s["qid"], s["claim"].row.match_key
    return [
        (results.MATCH_ROW, {"key": f"t{tid}-m0001"}), (results.MATCH_ROW, {"key": "nope"}),
        (results.RESULT_ROW, {"key": f"t{tid}-m0004"}), (results.RESULT_ROW, {"key": "nope"}),
        (results.TWIN, {"tid": tid, "pair": "p0", "id": s["row"].id}),
        (results.TWIN, {"tid": tid, "pair": "p1", "id": 0}), (results.TWIN, {"tid": tid, "pair": "p9", "id": 0}),
        (results.PAIR_COUNTS, {"game": "ecarte", "bot": "a", "others": ["b"]}),
        (results.PAIR_COUNTS, {"game": "ecarte", "bot": "b", "others": ["a", "c", "zz"]}),
        (results.PAIR_COUNTS, {"game": "ecarte", "bot": "a", "others": ["b", "c"]}),
        (results.OPPONENTS, {"game": "ecarte", "bot": "a"}), (results.OPPONENTS, {"game": "ecarte", "bot": "nobody"}),
        (results.LADDER, {"game": "ecarte"}), (results.LADDER, {"game": "piquet"}),
        (accounts.BOT_TOKEN, {"name": "a"}), (accounts.BOT_TOKEN, {"name": "nobody"}),
        (accounts.BOT_SECRET, {"name": "b"}), (accounts.BOT_SECRET, {"name": "nobody"}),
        (queue.CANDIDATES[0], {}), (queue.CANDIDATES[1], {"now": 100_000}), (queue.CANDIDATES[1], {"now": 200_000}),
        (queue.CANDIDATES_OF[0], {"tid": qid}), (queue.CANDIDATES_OF[0], {"tid": tid}),
        (queue.CANDIDATES_OF[1], {"now": 200_000, "tid": qid}),
        (queue.CLAIMED, {"key": key}), (queue.CLAIMED, {"key": "nope"}),
        (queue.LEASE, {"key": key}), (queue.LEASE, {"key": "nope"}),
    ]


def write_cases(s: dict[str, Any], dialect: str) -> list[tuple[Hot, dict[str, Any], Any]]:
    """Hot writes, their parameters and the table they change."""
    tid, claim = s["tid"], s["claim"]
    key = claim.row.match_key
    record = {"key": f"t{tid}-m0004", "status": "done", "winner_seat": 1, "winner": "b", "score0": 2, "score1": 5,
              "manches0": 0, "manches1": 1, "reason": "score", "detail": "", "faulty_seat": None, "decisions": 90,
              "deals": 7, "duration_ms": 31, "margin": 3, "log_hash": "h", "log_path": None, "finished_at": 12.5}
    unit = {"game": "ecarte", "a": "a", "b": "b", "points": 1, "games": 1, "n": 1}
    return [
        (results.RECORD, record, matches), (results.RECORD, {**record, "key": "nope"}, matches),
        (results.COUNT_UNIT[dialect], unit, ladder_units),
        (results.COUNT_UNIT[dialect], {**unit, "b": "zz", "points": 0.5}, ladder_units),
        (results.COUNT_PAIR[dialect], {"game": "ecarte", "a": "a", "b": "b", "n": 1}, pair_counts),
        (results.COUNT_PAIR[dialect], {"game": "ecarte", "a": "a", "b": "zz", "n": 1}, pair_counts),
        (results.COUNT_GAME[dialect], {"game": "ecarte", "bot": "a", "elo": 1500, "ci95": None, "games": 1,
                                       "updated_at": 3.0, "wins": 1, "losses": 0, "draws": 0}, ladder),
        (results.COUNT_GAME[dialect], {"game": "ecarte", "bot": "zz", "elo": 1500.0, "ci95": None, "games": 1,
                                       "updated_at": 3.0, "wins": 0, "losses": 0, "draws": 1}, ladder),
        (results.COUNT_RESULT[dialect], {"game": "ecarte", "results": 1}, ladder_state),
        (results.COUNT_RESULT[dialect], {"game": "piquet", "results": 1}, ladder_state),
        (queue.CLAIM, {"worker": "w2", "token": "t", "until": 9, "key": key, "now": 200_000}, match_queue),
        (queue.CLAIM, {"worker": "w2", "token": "t", "until": 9, "key": key, "now": 100}, match_queue),
        (queue.RENEW, {"until": 500_000, "key": key, "token": claim.token, "now": 100_000}, match_queue),
        (queue.RENEW, {"until": 500_000, "key": key, "token": "other", "now": 100_000}, match_queue),
        (queue.DONE, {"key": key}, match_queue),
    ]


def table_rows(store: Store, table: Any) -> list[tuple]:
    return sorted((tuple(r) for r in store.run(select(table))), key=repr)


def effect(store: Store, statement: Any, params: dict[str, Any], table: Any) -> tuple[int, list[tuple]]:
    """The row count of a write and its table after it, rolled back."""
    out: tuple[int, list[tuple]] = (0, [])
    with pytest.raises(Undo):
        with store.transaction():
            count = store.run(statement, params).rowcount
            out = (count, table_rows(store, table))
            raise Undo
    return out


def test_every_hot_statement_gives_what_sqlalchemy_gives(any_store: Store) -> None:
    s = seeded(any_store)
    reads = read_cases(s)
    found = 0
    for hot, params in reads:
        mine = any_store.run(hot, dict(params))
        assert isinstance(mine, Rows)
        theirs = [tuple(r) for r in any_store.run(hot.statement, dict(params))]
        assert [tuple(r) for r in mine] == theirs, (hot, params)
        found += bool(theirs)
    assert found >= len(reads) // 2  # the cases read rows, not only nothing
    writes = write_cases(s, any_store.dialect)
    changed = 0
    for hot, params, table in writes:
        before = table_rows(any_store, table)
        theirs = effect(any_store, hot.statement, params, table)
        mine = effect(any_store, hot, params, table)
        assert mine[1] == theirs[1], (hot, params)
        # the driver's row count; SQLAlchemy says -1 for psycopg's INSERT (no caller reads an upsert's count)
        assert mine[0] == theirs[0] or (theirs[0] == -1 and mine[0] == 1), (hot, params)
        assert table_rows(any_store, table) == before  # rolled back
        changed += mine[0] == 1 and theirs[1] != before
    assert changed >= len(writes) // 2
    covered = {id(hot) for hot, _ in reads} | {id(hot) for hot, _, _ in writes}
    for module in (results, queue, accounts):
        for name, value in vars(module).items():
            items = [value.get(any_store.dialect)] if isinstance(value, dict) else (
                value if isinstance(value, tuple) else [value])
            for hot in items:
                if isinstance(hot, Hot):
                    assert id(hot) in covered, f"{module.__name__}.{name} has no case here"


def test_rows_have_the_column_names_and_a_mapping(store: Store) -> None:
    s = seeded(store)
    row = store.run(results.RESULT_ROW, {"key": f"t{s['tid']}-m0004"}).one()
    assert (row.bot0, row.bot1, row.status, row.pair_key) == ("b", "c", "pending", "p1")
    assert row._mapping["game"] == "ecarte" and list(row._mapping) == ["id", "tournament_id", "pair_key", "game",
                                                                      "bot0", "bot1", "status"]
    none = store.run(results.RESULT_ROW, {"key": "nope"})
    assert none.first() is None and none.scalar() is None and none.all() == []
    with pytest.raises(Exception, match="one row"):
        none.one()


def test_an_expanding_in_keeps_a_bounded_set_of_compiled_forms(store: Store, monkeypatch) -> None:
    seeded(store)
    monkeypatch.setattr(fast, "EXPANDED_KEEP", 3)
    hot = Hot(results.PAIR_COUNTS.statement)
    for n in range(1, 9):
        others = (BOTS + [f"x{i}" for i in range(n)])[:n]
        got = {r[0]: r[1] for r in store.run(hot, {"game": "ecarte", "bot": "a", "others": others})}
        assert got == {r[0]: r[1] for r in store.run(hot.statement, {"game": "ecarte", "bot": "a", "others": others})}
        assert len(hot._prepared) <= 3
    assert store.pair_counts("ecarte", "b", ["a", "c", "d"]) == {"a": 2, "c": 1}


def test_statements_bound_values_and_missing_parameters(store: Store) -> None:
    seeded(store)
    hot = Hot(select(matches.c.match_key).where(matches.c.status == "done", matches.c.game == "ecarte").order_by(
        matches.c.id))
    assert len(store.run(hot).all()) == 3  # the bound "done" and "ecarte" travel with the statement
    with pytest.raises(InvalidRequestError, match="bind parameter 'key'"):
        store.run(results.MATCH_ROW, {})


def test_a_lost_postgresql_connection_is_retried_outside_a_transaction_and_lost_inside(pg_cluster, pg_url) -> None:
    store = Store(pg_url)
    s = seeded(store)

    backend = Hot(select(func.pg_backend_pid()))

    def kill() -> int:
        pid = store.run(backend).scalar()
        pg_cluster.sql(f"SELECT pg_terminate_backend({pid})")
        return pid

    killed = kill()
    assert store.check_token("a", s["tokens"]["a"])  # the dead connection is dropped, the read tried once more
    assert store.run(backend).scalar() != killed
    with pytest.raises(DatabaseLost, match="PostgreSQL at"):
        with store.transaction():
            store.run(results.LADDER, {"game": "ecarte"})
            kill()
            store.run(results.LADDER, {"game": "ecarte"})
    assert not store.connection.in_transaction
    store.record_result(f"t{s['tid']}-m0004", MatchResult(match_id="x", winner=0, reason="score", scores=[5, 0],
                                                          manches=[1, 0]), None)
    assert store.match_outcomes([f"t{s['tid']}-m0004"]) == {f"t{s['tid']}-m0004": ("done", 0, "score")}
    store.close()


def test_the_store_bench_runs_and_prints_its_three_figures(capsys) -> None:
    from arena.tools import bench_store

    assert bench_store.main(["--results", "12"]) == 0
    line = capsys.readouterr().out
    assert "sqlite" in line and all(f"{k} " in line for k in ("record_result", "claim+commit", "check_token"))
