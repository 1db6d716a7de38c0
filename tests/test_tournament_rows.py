"""A static tournament's rows are read once (arena/schedule/tournament.py, issue 24): no query per
match to find or schedule its row, the same steps left to play, and a stored seed that differs
still refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from arena.match.core import MatchResult
from arena.schedule.formats import make_format
from arena.schedule.tournament import TournamentConfig, _play_format, pending_by_index, settle_stored
from arena.store.sqlite import MatchRow, Store


def _tournament(tmp: Path) -> tuple[Store, int, object]:
    store = Store(tmp / "a.db")
    fmt = make_format("round-robin", ["a", "b", "c"], 2, 5, True, None)
    tid = store.create_tournament("ecarte", "round-robin", 5, {}, ["a", "b", "c"], fmt.schedule)
    return store, tid, fmt


def test_the_pending_rows_are_read_once_and_settle_without_a_query_each(tmp_path: Path, monkeypatch) -> None:
    store, tid, fmt = _tournament(tmp_path)
    first = fmt.schedule[0]
    store.record_result(store.match_by_index(tid, first.index)["match_key"],
                        MatchResult(match_id="x", winner=0, reason="target", scores=[5, 0], manches=[0, 0]), None)
    pending = pending_by_index(store, tid, fmt)
    assert pending is not None and sorted(pending) == [s.index for s in fmt.schedule[1:]]
    asked: list[int] = []
    real = store.match_by_index
    monkeypatch.setattr(store, "match_by_index", lambda t, i: asked.append(i) or real(t, i))
    left = settle_stored(store, tid, fmt, list(fmt.schedule), pending)
    assert [s.index for s in left] == [s.index for s in fmt.schedule[1:]]
    assert asked == [first.index]  # only the recorded match is looked up (its winner feeds the format)
    assert settle_stored(store, tid, make_format("round-robin", ["a", "b", "c"], 2, 5, True, None),
                         list(fmt.schedule)) == left  # the same as one query per step


def test_a_preloaded_row_whose_seed_differs_is_refused(tmp_path: Path) -> None:
    store, tid, fmt = _tournament(tmp_path)
    pending = pending_by_index(store, tid, fmt)
    assert pending is not None
    step = fmt.schedule[0]
    row = pending[step.index]
    pending[step.index] = MatchRow(row.id, row.tournament_id, row.idx, row.match_key, row.game, row.bot0, row.bot1,
                                   row.seed + 1, row.status)
    with pytest.raises(ValueError, match="stored seed differs"):
        settle_stored(store, tid, fmt, [step], pending)


def test_a_static_tournament_plays_every_row_without_scheduling_it_again(tmp_path: Path, monkeypatch) -> None:
    store, tid, fmt = _tournament(tmp_path)
    monkeypatch.setattr(store, "add_match", lambda *a: pytest.fail("a static match scheduled again"))
    monkeypatch.setattr(store, "match_by_index", lambda *a: pytest.fail("a pending row looked up again"))
    played: list[str] = []

    async def play(row: MatchRow, copies: tuple[int, int]) -> MatchResult:
        played.append(row.match_key)
        result = MatchResult(match_id=row.match_key, winner=1, reason="target", scores=[0, 5], manches=[0, 0])
        store.record_result(row.match_key, result, None)
        return result

    trio.run(_play_format, store, tid, fmt, TournamentConfig(concurrency=1), play)
    assert sorted(played) == sorted(r["match_key"] for r in store.matches(tid))
    assert all(r["status"] == "done" for r in store.matches(tid))
