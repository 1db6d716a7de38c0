"""``arena bench`` at tiny sizes: the phases run end to end and their figures are consistent.

Only counts and the arithmetic of the figures are checked; speed never is (a unit test
on a shared machine cannot say anything about performance).
"""

from __future__ import annotations

import argparse

import pytest

from arena.tools import bench


def test_engine_counts_whole_matches_and_is_reproducible() -> None:
    figures = bench.engine_deals_per_second(200, seed=3)
    assert figures.deals >= 200
    assert figures.matches >= 1
    assert figures.decisions > figures.deals  # every deal asks for several decisions
    assert figures.seconds > 0
    assert figures.deals_per_s == pytest.approx(figures.deals / figures.seconds)
    assert figures.decisions_per_deal == pytest.approx(figures.decisions / figures.deals)
    again = bench.engine_deals_per_second(200, seed=3)
    assert (again.deals, again.decisions, again.matches) == (figures.deals, figures.decisions, figures.matches)


async def test_referee_decisions_match_what_the_bots_answered() -> None:
    figures = await bench.referee_rate(300)
    wire = figures.wire
    assert figures.decisions >= 300
    assert figures.matches >= 1 and figures.deals >= figures.matches
    # every decision was one request seen and one answer sent, nothing more, nothing less
    assert wire.lines("request") == figures.decisions
    assert wire.answers == figures.decisions
    assert wire.lines("welcome") == 2
    assert wire.lines("match_start") == wire.lines("match_end") == 2 * figures.matches
    assert wire.lines("error") == 0
    assert wire.lines("event") > 0
    # sizes: a request carries the legal list and the view, an answer a single action
    assert figures.avg_answer_bytes > len(b'{"type":"action","id":1,"action":""}')
    assert figures.avg_request_bytes > figures.avg_answer_bytes
    assert figures.avg_request_bytes == pytest.approx(wire.nbytes("request") / wire.lines("request"))
    assert figures.avg_answer_bytes == pytest.approx(wire.answer_bytes / wire.answers)
    assert figures.lines_per_decision > 1  # events travel too
    assert figures.seconds > 0
    assert figures.decisions_per_s == pytest.approx(figures.decisions / figures.seconds)


async def test_pingpong_uses_the_requested_sizes() -> None:
    figures = await bench.pingpong_rate(300, 500, 40)
    assert figures.rounds == 300
    assert (figures.request_bytes, figures.answer_bytes) == (500, 40)
    assert figures.client_received == 300 * 500
    assert figures.server_received == 300 * 40
    assert figures.seconds > 0
    assert figures.round_trips_per_s == pytest.approx(figures.rounds / figures.seconds)


async def test_pingpong_sizes_are_at_least_one_byte() -> None:
    figures = await bench.pingpong_rate(5, 0, 0)
    assert (figures.request_bytes, figures.answer_bytes) == (1, 1)
    assert figures.client_received == figures.server_received == 5


def test_run_bench_ratios_are_the_quotients() -> None:
    said: list[str] = []
    report = bench.run_bench(200, 300, progress=said.append)
    assert len(said) == 4
    assert report.pingpong.rounds == 300
    assert report.pingpong.request_bytes == round(report.referee.avg_request_bytes)
    assert report.pingpong.answer_bytes == round(report.referee.avg_answer_bytes)
    assert report.referee_ratio == pytest.approx(
        report.referee.decisions_per_s / report.pingpong.round_trips_per_s
    )
    assert report.engine_ratio == pytest.approx(report.engine.deals_per_s / bench.ENGINE_TARGET_DEALS_PER_S)
    assert report.referee_ratio > 0 and report.engine_ratio > 0
    assert report.piquet_ratio == pytest.approx(report.piquet_compact.deals_per_s / report.piquet.deals_per_s)
    full, compact = report.wire
    assert (full.form, compact.form) == ("full", "compact")


def test_piquet_wire_compact_lines_are_short_and_full_lists_are_not() -> None:
    """Issue 12's byte targets are properties of the encoding, not of the machine: checked here
    (the bench prints them). Both forms play the same deals (the seats' policy differs only in
    how a discard is drawn)."""
    full = bench.piquet_wire(3, seed=7)
    compact = bench.piquet_wire(3, seed=7, compact=True)
    assert compact.largest < bench.LARGEST_LINE_TARGET < full.largest
    assert full.largest_kind == "Request"  # a discard request's list
    assert compact.nbytes < full.nbytes / 2
    assert bench.piquet_wire(3, seed=7, compact=True) == compact  # reproducible byte for byte
    assert compact.bytes_per_match == compact.nbytes / 3


def test_piquet_engine_plays_the_same_matches_in_both_forms() -> None:
    full = bench.engine_deals_per_second(30, seed=2, game="piquet")
    compact = bench.engine_deals_per_second(30, seed=2, game="piquet", compact=True)
    assert full.deals >= 30 and compact.deals >= 30
    assert abs(full.decisions_per_deal - compact.decisions_per_deal) < 5


def test_main_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(argparse.Namespace(deals=200, decisions=300)) == 0
    out = capsys.readouterr().out
    for text in ("deals/s", "decisions/deal", "decisions/s", "round trips/s", "bytes", "ratio", "target"):
        assert text in out


@pytest.mark.slow
async def test_flood_phase_counts_answers_and_keeps_refereeing() -> None:
    """Phase 4 at a tiny size: the flooders only ever get refusals, matches go on in every
    window, and the scrypt work stays within the overall failure budget."""
    f = await bench.flood_rate(window_s=0.5, clients=8, spectators=40)
    assert f.quiet_decisions_per_s > 0 and f.hello_decisions_per_s > 0 and f.spectator_decisions_per_s > 0
    assert set(f.hello_answers) <= {"auth_failed", "rate_limited", "reset", "closed"}
    assert "welcome" not in f.hello_answers and sum(f.hello_answers.values()) > 0
    assert f.scrypt_checks <= 10 + 2 * 5  # burst + 2/s over the flood's few seconds
    assert f.spectator_answers == {"welcome": 40} and f.spectators_refused == 0
    assert f.hello_peak_rss_mib > 0 and len(f.cpu_share) == 3
def test_piquet_forms_interleave_the_same_seeds() -> None:
    full, compact = bench.piquet_forms(20, seed=2, rounds=2)
    one = [bench.engine_deals_per_second(10, 2 + 7919 * r, game="piquet") for r in range(2)]
    assert (full.deals, full.decisions, full.matches) == (
        sum(f.deals for f in one), sum(f.decisions for f in one), sum(f.matches for f in one))
    assert compact.deals >= 20 and compact.seconds > 0


def test_piquet_forms_play_the_same_matches() -> None:
    """The bench's policy picks legal set number ``int(u * count)`` in both forms, so the full
    and the compact form play the very same matches and differ only in what is built."""
    full = bench.engine_deals_per_second(12, seed=5, game="piquet")
    compact = bench.engine_deals_per_second(12, seed=5, game="piquet", compact=True)
    assert full.deals >= 12 and full.decisions > 20 * full.deals
    assert (compact.deals, compact.decisions, compact.matches) == (full.deals, full.decisions, full.matches)


def test_the_workers_table_compares_medians_of_alternating_runs() -> None:
    """The workers phase's table: a row per kind of run with the median of its runs, the ratio
    of the medians, each side-by-side pair's ratio and the machine's own scaling."""
    from rich.console import Console

    from arena.tools.bench_workers import RUNS, WorkersPhase, WorkersRun, print_workers

    assert RUNS[:2] == ((1, True), (2, True)) and RUNS.count((1, True)) == RUNS.count((2, True)) >= 3

    def run(workers: int, wall_s: float, pinned: bool = True) -> WorkersRun:  # 100 matches, 80 steady
        return WorkersRun(workers, 80, wall_s, wall_s * 0.8, [("a", "1500.000", 1, 0, 0)], 1.0, 0.5, 100, pinned)

    # pinned pairs: 1 worker 10 s / 12 s / 8 s (medians 10 matches/s); 2 workers 5.5 s / 6 s / 100 s
    runs = [run(1, 10), run(2, 5.5), run(1, 12), run(2, 6), run(1, 8), run(2, 100),
            run(1, 9, pinned=False), run(2, 7, pinned=False)]
    console = Console(width=200, record=True)
    print_workers(console, WorkersPhase(runs, [1.9, 1.5, 1.7]), None)
    out = console.export_text()
    rows = {line.split()[0] + (" u" if "not pinned" in line else ""): line for line in out.splitlines()
            if line.strip()[:1].isdigit()}
    assert rows["1"].split()[1:3] == ["3", "10.00"]  # three runs, median 10 matches/s
    assert rows["2"].split()[1:3] == ["3", "16.67"]  # median of 18.18, 16.67, 1.00: the bad run does not rule
    assert "1.67" in rows["2"].split()  # ratio of the medians, wall
    assert "each pair" in out and "1.82 / 1.82, 2.00 / 2.00, 0.08 / 0.08" in out
    assert "1.70× the work of one" in out and "1.90, 1.50, 1.70; 2.00 on two free cores" in out
    assert "identical across the 8 runs" in out
