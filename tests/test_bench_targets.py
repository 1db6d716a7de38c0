"""``make bench``'s issue-24 report (arena/tools/bench_targets.py): every target is printed with
its same-run baseline, the verdicts follow the numbers fed in, and a miss is named. No speed is
asserted: the figures here are made up, or counts."""

from __future__ import annotations

import io
import shutil

import pytest
from rich.console import Console

from arena.tools import bench_targets as bt
from arena.tools.bench_path import PathFigures, TournamentRun

GOOD = bt.Figures(one_us=46.0, core_us=8.0, log_us=4.0, trip_us=30.0, path_us=55.0, think_p99_ms=0.6,
                  saturated_p99_ms=9.0, littles_ms=5.0, speedup={"ecarte": 1.8, "piquet": 1.85},
                  machine={"ecarte": 1.9, "piquet": 1.9})


def _figures(**changes: object) -> bt.Figures:
    f = bt.Figures(**{**GOOD.__dict__, "speedup": dict(GOOD.speedup), "machine": dict(GOOD.machine)})
    for key, value in changes.items():
        setattr(f, key, value)
    return f


def test_good_figures_meet_every_target() -> None:
    ts = bt.targets(GOOD)
    assert len(ts) == 7
    assert [t.verdict for t in ts] == ["met"] * 7
    assert bt.missed(ts) == []
    by_name = {t.name: t for t in ts}
    assert by_name["1. tournament path CPU/decision vs one match"].ratio == pytest.approx(55 / 46)
    assert by_name["2. match core + log vs raw trio round trip"].ratio == pytest.approx(12 / 30)
    assert by_name["2. driver: one match vs the floor"].ratio == pytest.approx(46 / 42)
    assert by_name["4. every core, piquet: 2 workers ÷ 1"].ratio == pytest.approx(1.85 / 1.9)


@pytest.mark.parametrize(("change", "name"), [
    ({"path_us": 60.0}, "1. tournament path"),          # 1.30 > 1.25
    ({"core_us": 12.0}, "2. match core + log"),         # 16 / 30 = 0.53 > 0.5
    ({"one_us": 49.0}, "2. driver"),                    # 49 / 42 = 1.17 > 1.15 (the path: 55 / 49 = 1.12)
    ({"think_p99_ms": 1.0}, "3. p99, 100 matches"),      # strict: 1 ms is not under 1 ms
    ({"saturated_p99_ms": 15.5}, "3. saturated p99"),   # 3.1 × W
    ({"speedup": {"ecarte": 1.6, "piquet": 1.85}}, "4. every core, ecarte"),  # 1.6 / 1.9 = 0.84
])
def test_one_bad_figure_misses_exactly_its_target(change: dict[str, object], name: str) -> None:
    bad = bt.missed(bt.targets(_figures(**change)))
    assert [t.name.startswith(name) for t in bad] == [True]
    assert bad[0].verdict == "missed" and "missed" in bad[0].line()


def test_the_limits_themselves_are_met() -> None:
    # 57.5 / 46 = 1.25, (11 + 4) / 30 = 0.5, 51.75 / 45 = 1.15, 15 / 5 = 3, 0.9 × 1.9 / 1.9 = 0.9
    f = _figures(path_us=57.5, core_us=11.0, one_us=51.75, saturated_p99_ms=15.0,
                 speedup={"ecarte": 0.9 * 1.9, "piquet": 0.9 * 1.9})
    assert bt.missed(bt.targets(f)) == []


def test_a_figure_not_measured_counts_as_missed() -> None:
    f = _figures(trip_us=None, speedup={"ecarte": 1.8}, machine={"ecarte": 1.9})
    bad = bt.missed(bt.targets(f))
    assert [t.name[:10] for t in bad] == ["2. match c", "2. driver:", "4. every c"]
    assert all(t.verdict == "not measured" for t in bad)
    assert "no figure" in bad[0].line()


def _run(figures: bt.Figures) -> bt.Run:
    short = TournamentRun("path-40", 40, 10_000, 1.5, 10.0, [float(i) for i in range(40)])
    long = TournamentRun("path-200", 200, 50_000, 3.7, 40.0, [float(i) for i in range(200)])
    return bt.Run(figures=figures, path=PathFigures(((short, long),)), seconds=12.0)


def test_the_report_prints_every_target_with_its_baseline_and_verdict() -> None:
    out = io.StringIO()
    f = _figures(think_p99_ms=3.5)
    ts = bt.print_report(Console(file=out, width=200), _run(f))
    text = out.getvalue()
    assert len(ts) == 7
    for t in ts:
        assert t.name in text and t.value in text and t.baseline in text
    for figure in ("55.0 µs", "one match 46.0 µs", "12.0 µs", "trio round trip 30.0 µs", "core+log+trip 42.0 µs",
                   "3.50 ms", "target 1 ms", "9.00 ms", "Little's law W = L/λ 5.00 ms", "1.80 ×",
                   "machine's 2-core scaling 1.90 ×", "1.20", "0.40", "1.10", "3.50", "1.80", "0.95"):
        assert figure in text, figure
    assert text.count("missed") == 1  # the thinking p99 (3.5 ms)
    assert text.count(" met ") == 6
    # where the path's time goes, from the two runs: (3.7 - 1.5) s / 40,000 decisions = 55 µs each
    assert "start-up 0.95 s CPU per run" in text
    assert "250 decisions per match" in text and "each match costs 2,250 µs CPU above" in text
    assert "ACPC dealer: not run" in text


def test_path_figures_are_the_difference_of_the_two_runs() -> None:
    p = _run(GOOD).path
    assert p.cpu_us_per_decision == pytest.approx(55.0)
    assert p.fixed_cpu_s == pytest.approx(1.5 - 10_000 * 55e-6)
    assert p.long.steady_rate == pytest.approx((200 - 1 - 40) / (199 - 40))


def test_path_pairs_pool_their_differences() -> None:
    # two pairs measured at different moments: (2.2 + 2.6) s over (40,000 + 40,000) decisions
    first = _run(GOOD).path
    short = TournamentRun("path-40", 40, 10_000, 1.6, 10.0, [float(i) for i in range(40)])
    long = TournamentRun("path-200", 200, 50_000, 4.2, 40.0, [float(i) for i in range(200)])
    both = PathFigures.pooled([first, PathFigures(((short, long),))])
    assert both.slopes_us() == pytest.approx([55.0, 65.0])
    assert both.cpu_us_per_decision == pytest.approx(60.0)
    assert both.fixed_cpu_s == pytest.approx(((1.5 - 0.6) + (1.6 - 0.6)) / 2)
    assert both.decisions_per_s() == pytest.approx(100_000 / 80.0)


def test_rounds_pool_into_one_figure_per_measurement() -> None:
    from arena.tools.bench_floor import CoreFigures, PingPongFigures
    from arena.tools.bench_server import OneMatchFigures, WireCounts

    ones = [OneMatchFigures(1000, 4, 2.0, 0.07, WireCounts(requests=1000, request_bytes=300_000)),
            OneMatchFigures(3000, 12, 2.0, 0.25, WireCounts(requests=3000, request_bytes=900_000))]
    one = bt.pooled(ones)
    assert (one.decisions, one.matches, one.seconds) == (4000, 16, 4.0)
    assert one.cpu_us_per_decision == pytest.approx(80.0)  # not the mean of 70 and 83.3
    assert one.wire.avg_request_bytes == pytest.approx(300.0)
    trip = bt.pooled([PingPongFigures("trio", 1000, 1.0, 0.03, 300, 40),
                      PingPongFigures("trio", 3000, 1.0, 0.1, 300, 40)])
    assert (trip.kind, trip.rounds, trip.request_bytes, trip.answer_bytes) == ("trio", 4000, 300, 40)
    assert trip.cpu_us_per_round_trip == pytest.approx(32.5)
    core = bt.pooled([CoreFigures(1000, 4, 0.01, 0.004), CoreFigures(1000, 4, 0.014, 0.004)])
    assert (core.core_us, core.log_us) == (pytest.approx(12.0), pytest.approx(4.0))


def test_acpc_decisions_count_the_actions_of_state_lines() -> None:
    log = ("# name/game/hands/seed x\n"
           "STATE:0:r300c/cc/r600f:9s8h|KdTc/6dJc8c/Ah:-300|300:Alice|Bob\n"
           "STATE:1:cc/r250c/cc/cc:Ah2c|3d3s/4h5h6h/7c/8d:0|0:Bob|Alice\n"
           "SCORE:-300|300:Alice|Bob\n")
    assert bt.acpc_decisions(log) == 6 + 8
    assert bt.acpc_decisions("") == 0


def test_a_wrong_option_is_one_line_and_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert bt.main(["--path-games", "200", "40"]) == 2
    out = capsys.readouterr().out
    assert "--path-games SHORT LONG needs 1 <= SHORT < LONG" in out and "Traceback" not in out


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the instant bot is C: needs gcc")
async def test_thinking_bots_answer_no_sooner_than_their_think_time() -> None:
    from arena.tools.bench_server import concurrent_matches

    c = await concurrent_matches(2, seconds=0.5, think_ms=20.0)
    assert c.think_ms == 20.0 and c.charges.decisions > 0
    # each decision waits at least 10 ms (20 ± 10): no match can make more than wall / 10 ms + 1
    assert c.charges.decisions <= 2 * (c.seconds / 0.010 + 1)
    assert len(c.latency_us) > 0 and c.timeouts == 0


def test_path_bots_that_are_not_files_are_one_line_and_status_2(capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # a narrow terminal: still one line
    assert bt.main(["--path-bots", "sample_bots/c_bot.toml", "no/such/bot.toml"]) == 2
    out = capsys.readouterr().out
    assert "--path-bots needs two or more manifest files (no/such/bot.toml: not found)" in out
    assert out.count("\n") == 1  # one line, whatever the terminal's width (COLUMNS)
    assert "Traceback" not in out


def test_the_machine_s_scaling_is_capped_at_its_cores() -> None:
    """Two cores cannot do more than twice the work of one: a machine figure above 2 (a neighbour
    slowed the lone process) is compared as 2, a lower one as measured, none as 0."""
    from arena.tools.bench_path import ScalingFigures

    def run(n: int) -> TournamentRun:
        return TournamentRun("x", n, n, 1.0, 1.0, [float(t) for t in range(n)])

    assert ScalingFigures("ecarte", 2, [run(10)], [run(10)], [2.3, 2.5, 2.4]).machine_scaling == 2.0
    assert ScalingFigures("ecarte", 2, [run(10)], [run(10)], [1.7, 1.9, 2.2]).machine_scaling == 1.9
    assert ScalingFigures("ecarte", 2, [run(10)], [run(10)], []).machine_scaling == 0.0
