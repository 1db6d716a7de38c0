"""``make bench``'s instant-bot phases (arena/tools/bench_server.py) at tiny sizes: the counts
behind every figure add up. Speed is never asserted (a unit test on a shared machine says
nothing about it)."""

from __future__ import annotations

import io
import shutil

import pytest

from arena.match.clock import Clock
from arena.tools import bench_server as bs
from protocol.messages import TimeControl

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="the instant bot is C: needs gcc")


def test_percentile_is_the_nearest_rank() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert bs.percentile(values, 0.5) == 3.0
    assert bs.percentile(values, 0.99) == 5.0
    assert bs.percentile(values, 0.2) == 1.0
    assert bs.percentile([], 0.5) == 0.0


def test_the_clock_record_sees_every_charge_and_is_removed_after() -> None:
    original = Clock.charge
    with bs.recording_charges() as record:
        clock = Clock(TimeControl(move_ms=100, bank_ms=0, grace_ms=10))
        assert clock.charge(3.7) and clock.charge(40.2)
        assert not clock.charge(500.0)  # over the limit: a timeout
    assert Clock.charge is original
    assert record.decisions == 3 and record.over_limit == 1
    assert record.charged_ms == [3.0, 40.0, 500.0]  # what the clock added to used_ms
    assert record.largest_ms == 500.0
    Clock(TimeControl()).charge(7.0)
    assert record.decisions == 3  # not recorded any more


@needs_gcc
async def test_one_match_counts_what_the_bots_answered() -> None:
    figures = await bs.one_match(seconds=60.0, max_decisions=1)
    wire = figures.wire
    assert figures.matches == 1 and figures.decisions > 10
    assert wire.requests == wire.answers == figures.decisions  # one request, one answer per decision
    assert wire.avg_request_bytes > wire.avg_answer_bytes > len('{"type":"action","id":1,"action":""}')
    assert figures.cpu_s > 0 and figures.seconds > 0
    assert figures.cpu_us_per_decision == pytest.approx(figures.cpu_s * 1e6 / figures.decisions)


@needs_gcc
async def test_the_core_alone_plays_the_matches_the_instant_bots_play() -> None:
    # the same seed, the same answers (the first legal action) as phase 1's first match over TCP
    over_tcp = await bs.one_match(seconds=60.0, max_decisions=1)
    alone = bs.core_alone(seconds=60.0, max_decisions=1)
    assert (alone.matches, alone.decisions) == (1, over_tcp.decisions)
    assert alone.core_s > 0 and alone.log_s > 0
    assert alone.core_us == pytest.approx(alone.core_s * 1e6 / alone.decisions)
    two = bs.core_alone(seconds=60.0, max_decisions=alone.decisions + 1)
    assert two.matches == 2 and two.decisions > alone.decisions  # whole matches, the next seed


@needs_gcc
async def test_trio_pingpong_uses_the_requested_sizes() -> None:
    figures = await bs.trio_pingpong(500, 40, 300)
    assert (figures.kind, figures.rounds, figures.request_bytes, figures.answer_bytes) == ("trio", 300, 500, 40)
    assert figures.round_trips_per_s == pytest.approx(300 / figures.seconds)


@needs_gcc
def test_blocking_pingpong_uses_the_requested_sizes() -> None:
    figures = bs.blocking_pingpong(500, 40, 300)
    assert (figures.kind, figures.rounds, figures.request_bytes, figures.answer_bytes) == ("blocking", 300, 500, 40)
    assert figures.cpu_s >= 0


@needs_gcc
async def test_concurrent_matches_record_charges_latency_and_wire() -> None:
    figures = await bs.concurrent_matches(3, seconds=1.0)
    charges, wire = figures.charges, figures.wire
    assert figures.matches == 3
    assert charges.decisions > 0 and len(charges.charged_ms) == charges.decisions
    assert charges.largest_ms == max(charges.charged_ms)
    # a bot answers every request it reads; the clock charges the answers the server read in time
    assert wire.requests >= wire.answers >= charges.decisions - figures.timeouts
    assert figures.timeouts >= 0
    assert 0 < len(figures.latency_us) <= wire.requests
    assert all(x >= 0 for x in figures.latency_us)
    assert figures.latency_ms(0.99) >= figures.latency_ms(0.5)
    assert figures.gc_s >= 0


def test_the_report_prints_each_figure_next_to_its_target() -> None:
    from rich.console import Console

    wire = bs.WireCounts(lines=30, bytes=9000, requests=10, request_bytes=5000, answers=10, answer_bytes=400)
    one = bs.OneMatchFigures(10, 1, 0.01, 0.0004, wire)
    pp = bs.PingPongFigures("trio", 100, 0.02, 0.001, 500, 40)
    bp = bs.PingPongFigures("blocking", 100, 0.01, 0.0005, 500, 40)
    record = bs.ChargeRecord()
    for ms in (0.0, 1.0, 70.0):
        record.add(ms, True)
    latency_us = [100.0, 200.0, 6000.0]
    conc = bs.ConcurrentFigures(100, 1.0, 0.5, 2, record, latency_us, wire, 0.1, {"forfeit_timeout": 1}, 0.01, 3)
    out = io.StringIO()
    core = bs.CoreFigures(10, 1, 0.0002, 0.00005)  # 20 µs and 5 µs per decision
    undispatched = bs.ConcurrentFigures(100, 1.0, 0.9, 2, record, [300.0, 9000.0], wire, 0.1, {}, 0.01, 0)
    bs.print_server_bench(Console(file=out, width=200), bs.ServerBench(one, core, pp, bp, conc, undispatched, [], 1.0))
    text = out.getvalue()
    # the floor: core 20 + log 5 + trio's 10 µs of CPU per round trip; the driver is the other 5 µs
    assert "floor: core+log+trio trip" in text and "35.0" in text and "the driver: 5.0 µs more" in text
    assert f"{100 * (0.5e6 / 3) / 1000:,.2f}" in text  # saturated: 100 matches × 0.5 s CPU / 3 decisions
    assert "without the dispatcher" in text and f"{0.9e6 / 3:,.1f} µs CPU each; p50 / p99 0.30 / 9.00 ms" in text
    assert "40.0" in text and f"target ≤ {bs.CPU_TARGET_US:g} µs" in text  # 0.4 ms CPU / 10 decisions
    assert f"target p99 < {bs.LATENCY_P99_TARGET_MS:g} ms" in text and "6.00" in text
    assert f"target ≤ {bs.CHARGED_TARGET_MS:g} ms" in text and "70" in text
    assert "1 forfeit_timeout" in text and "not met" in text and "met" in text
