"""Admission control and the loop watch behind the fair clock (docs/protocol.md §10.4)."""

from __future__ import annotations

import time

import pytest
import trio

from arena.match import fairclock
from arena.match.referee import Referee
from arena.schedule import admission


class Lagging:
    lag_ms = 100.0


async def test_a_match_start_is_held_while_the_loop_is_behind(autojump_clock, monkeypatch: pytest.MonkeyPatch):
    watch = Lagging()
    monkeypatch.setattr(fairclock, "watch", lambda: watch)
    monkeypatch.setattr(Referee, "playing", 3)
    held = []

    async def start() -> None:
        held.append(await admission.admit())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(start)
        await trio.sleep(0.5)
        assert held == []  # still held: the loop is 100 ms behind
        watch.lag_ms = 5.0
    assert 0.5 <= held[0] <= 0.51  # released at the next look (every 5 ms)


async def test_a_match_always_starts_when_none_is_in_play(autojump_clock, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(fairclock, "watch", lambda: Lagging())
    monkeypatch.setattr(Referee, "playing", 0)
    assert await admission.admit() == 0.0


async def test_the_loop_watch_sees_a_long_turn():
    watch = fairclock.watch()
    assert fairclock.watch() is watch  # one per trio run
    assert watch.lag_ms == 0.0  # the first read starts the sampler
    await trio.sleep(0.02)
    before = watch.samples
    time.sleep(0.03)  # this turn lasts 30 ms: the sampler, due within 10 ms, runs at least 20 ms late
    await trio.sleep(0.001)
    assert watch.samples > before and watch.lag_ms >= 20 * fairclock.LoopWatch.SMOOTHING * 0.99


def test_the_lag_sampler_stops_when_nobody_reads_the_figure():
    async def main() -> tuple[int, int, float]:
        watch = fairclock.watch()
        watch.lag_ms  # noqa: B018 (the read starts the sampler)
        await trio.sleep(0.5)
        seen = watch.samples
        await trio.sleep(10.0)  # nobody reads it: the sampler stops after IDLE_S
        return seen, watch.samples, watch.lag_ms

    seen, total, lag = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert 45 <= seen <= 51  # every TICK_S of the loop's (virtual) clock
    assert total <= seen + (fairclock.LoopWatch.IDLE_S - 0.5) / fairclock.LoopWatch.TICK_S + 2
    assert lag == 0.0
