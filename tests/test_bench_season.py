"""``make bench-season`` (arena/tools/bench_season.py): the seeded season is what the store would
hold after the same results, on SQLite and PostgreSQL; the figures read from ``/metrics`` and the
targets. No timing: the bench's own figures are its business."""

from __future__ import annotations

import json
import math
import shutil

import pytest
from sqlalchemy import text

from arena.match.core import MatchResult
from arena.metrics import Metrics
from arena.schedule.formats import Pairing
from arena.store.season_seed import MATCH_COLUMNS, SeasonSpec, make_season, seed_store
from arena.store.sqlite import Store
from arena.tools import bench_season
from arena.tools.season_report import (
    FIT_NOTE,
    PageFigures,
    RunFigures,
    check_targets,
    fit_figures,
    histogram_quantile,
    parse_metrics,
    pool_runs,
    report_rows,
    window_figures,
)

SPEC = SeasonSpec(bots=50, matches=2000, seed=7, window=6)
NOW = 1.9e9


def _rows(store: Store, table: str, order: str, columns: str = "*") -> list[tuple]:
    return [tuple(r) for r in store.db.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")]


def _replay(seeded: Store, into: Store) -> None:
    """Play the seeded matches' results again through the store's own API, in schedule order."""
    tid = into.create_tournament(SPEC.game, "ladder", SPEC.seed, {}, [], [])
    for m in seeded.db.execute("SELECT * FROM matches ORDER BY id").fetchall():
        row = into.add_match(tid, m["game"], Pairing(index=m["idx"], bot0=m["bot0"], bot1=m["bot1"], seed=m["seed"],
                                                     pair=m["pair_key"]))
        assert row.match_key == m["match_key"]
        into.record_result(row.match_key, MatchResult(
            match_id=row.match_key, winner=m["winner_seat"], reason=m["reason"], scores=[m["score0"], m["score1"]],
            manches=[m["manches0"], m["manches1"]], detail=m["detail"], faulty=m["faulty_seat"],
            decisions=m["decisions"], deals=m["deals"], duration_ms=m["duration_ms"], margin=m["margin"]),
            m["log_path"], m["log_hash"])


def test_seeded_store_is_what_record_result_keeps(tmp_path, monkeypatch) -> None:
    """The same 2,000 results recorded one by one with Store.record_result leave the same
    matches, ladder units (zero counts included), pair counts and result count as the bulk seed."""
    # the counting is compared here, not the ratings: a branch that still refits inside
    # record_result would refit 2,000 times
    monkeypatch.setattr(Store, "_ladder_refit", lambda self, game: None, raising=False)
    seeded, replayed = Store(tmp_path / "seeded.db"), Store(tmp_path / "replayed.db")
    report = seed_store(seeded, SPEC, now=NOW)
    assert report.rows["matches"] == SPEC.matches and report.rows["bots"] == SPEC.bots
    _replay(seeded, replayed)
    columns = ", ".join(c for c in MATCH_COLUMNS if c != "finished_at")
    assert _rows(seeded, "matches", "id", columns) == _rows(replayed, "matches", "id", columns)
    for table, order in (("ladder_units", "a, b, points, games"), ("pair_counts", "a, b")):
        assert _rows(seeded, table, order) == _rows(replayed, table, order), table
    state = seeded.db.execute("SELECT results, fitted_results FROM ladder_state WHERE game=?", (SPEC.game,)).fetchone()
    assert tuple(state) == (SPEC.matches, SPEC.matches)
    assert replayed.db.execute("SELECT results FROM ladder_state").fetchone()[0] == SPEC.matches
    assert seeded.ladder_units(SPEC.game) == seeded.ladder_unit_counts(SPEC.game)
    assert seeded.db.execute("SELECT COUNT(*) FROM ladder_units WHERE n=0").fetchone()[0] > 0


def test_seeded_ladder_is_a_fit_of_every_bot_that_played(store) -> None:
    """Each bot's ladder games are its matches; ratings and intervals are finite; the history
    pairs rating neighbours: each bot meets several opponents, not the whole field."""
    seed_store(store, SPEC, now=NOW)
    games = dict(store.db.execute(
        "SELECT bot, SUM(n) FROM (SELECT bot0 AS bot, COUNT(*) AS n FROM matches GROUP BY bot0 UNION ALL "
        "SELECT bot1, COUNT(*) FROM matches GROUP BY bot1) AS t GROUP BY bot").fetchall())
    ladder = {bot: (elo, ci95, g) for bot, elo, ci95, g in store.ladder_intervals(SPEC.game)}
    assert {bot: g for bot, (_, _, g) in ladder.items()} == games
    assert all(math.isfinite(elo) and 0 < ci95 < 1000 for elo, ci95, _ in ladder.values())
    met = [n for (n,) in store.db.execute("SELECT COUNT(*) FROM pair_counts GROUP BY a")]
    assert len(met) == SPEC.bots and 2 <= min(met) and max(met) < SPEC.bots - 1
    assert store.db.execute("SELECT COUNT(*) FROM matches WHERE reason='forfeit_timeout' AND faulty_seat IS NULL"
                            ).fetchone()[0] == 0


def test_seed_refuses_a_store_with_matches(store) -> None:
    seed_store(store, SeasonSpec(bots=4, matches=10), now=NOW)
    with pytest.raises(ValueError, match="already holds matches"):
        seed_store(store, SeasonSpec(bots=4, matches=10), now=NOW)


def test_postgres_seed_equals_sqlite_seed(pg_url, tmp_path) -> None:
    """COPY on PostgreSQL writes the same rows as executemany on SQLite, and the store goes on
    scheduling matches after the seeded ids (the identity sequence was moved past them)."""
    lite, pg = Store(tmp_path / "seeded.db"), Store(pg_url)
    seed_store(lite, SPEC, now=NOW)
    checkpoint = text("SELECT checkpoint_lsn - '0/0'::pg_lsn FROM pg_control_checkpoint()")
    before = pg.run(checkpoint).scalar()
    report = seed_store(pg, SPEC, now=NOW)
    # the seed is written out before the runs (a checkpoint), not during the first one
    assert "checkpoint" in report.seconds and pg.run(checkpoint).scalar() > before
    for table, order in (("matches", "id"), ("ladder_units", "a, b, points, games"), ("pair_counts", "a, b"),
                         ("ladder", "bot"), ("ladder_state", "game"), ("bots", "name")):
        columns = "name" if table == "bots" else "*"
        assert _rows(lite, table, order, columns) == _rows(pg, table, order, columns), table
    assert pg.ladder_units(SPEC.game) == pg.ladder_unit_counts(SPEC.game)
    row = pg.add_match(1, SPEC.game, Pairing(index=SPEC.matches, bot0="bench-0", bot1="bench-1", seed=1))
    assert row.id == SPEC.matches + 1 and row.match_key == f"t1-m{SPEC.matches + 1:04d}"


def test_season_is_reproducible_and_pairs_neighbours() -> None:
    a, b = make_season(SPEC, now=NOW), make_season(SPEC, now=NOW)
    assert (a.a == b.a).all() and (a.winner_seat == b.winner_seat).all()
    rank = a.strength.argsort().argsort()
    assert abs(rank[a.a] - rank[a.b]).mean() < SPEC.bots / 4  # neighbours, not uniform opponents
    assert (a.a != a.b).all()


# --------------------------------------------------------------------------- figures


def test_histogram_quantile_interpolates_within_the_bucket() -> None:
    inf = float("inf")
    before = [(0.001, 10.0), (0.01, 10.0), (inf, 10.0)]
    after = [(0.001, 60.0), (0.01, 110.0), (inf, 110.0)]  # 50 below 1 ms, 50 between 1 and 10 ms since
    assert histogram_quantile(0.5, before, after) == (pytest.approx(0.001), 100)
    assert histogram_quantile(0.99, before, after) == (pytest.approx(0.001 + 0.009 * 49 / 50), 100)
    assert histogram_quantile(0.99, [], [(0.001, 0.0), (0.01, 0.0), (inf, 4.0)]) == (0.01, 4)  # beyond: last bound
    assert histogram_quantile(0.99, after, after) == (None, 0)


def test_metrics_of_a_server_are_read_back() -> None:
    """The bench reads what arena.metrics exposes: histograms, counters and labelled gauges."""
    m = Metrics()
    for seconds in (0.0002, 0.0002, 0.003):
        m.result_commit.observe(seconds)
    m.matches_finished.labels("ecarte", "win", "target").inc(7)
    m.matches_finished.labels("ecarte", "aborted", "aborted").inc(2)
    m.fit_seconds.labels("ecarte").set(1.25)
    m.connections.labels("bot").set(3)
    scrape = parse_metrics(m.exposition().decode(), t=5.0)
    assert scrape.value("arena_connections", role="bot") == 3
    assert scrape.value("arena_ladder_fit_seconds", game="ecarte") == 1.25
    assert scrape.value("arena_ladder_fit_seconds", game="piquet") is None
    buckets = scrape.buckets("arena_result_commit_seconds")
    assert buckets[-1] == (float("inf"), 3.0) and dict(buckets)[0.00025] == 2.0
    start = parse_metrics(Metrics().exposition().decode(), t=0.0)
    fig = RunFigures(label="x", bots=2)
    window_figures(fig, [start, scrape], "ecarte")
    assert fig.window_s == 5.0 and fig.results == 7 and fig.results_per_s == 7 / 5
    assert fig.commits == 3 and 0.0001 <= fig.commit_p50_s <= 0.00025 and fig.fit_s == 1.25
    assert fig.pairings == 0 and fig.pairing_p99_s is None and any("pairing" in n for n in fig.notes)


def _met(label: str) -> RunFigures:
    return RunFigures(label=label, bots=10, welcomed=10, welcomed_in_target=10, welcome_s=1.0, results=100,
                      results_per_s=10.0, pairing_p99_s=0.0005, pairings=50, fit_s=0.5, full_fit_s=0.5,
                      full_fit_cpu_s=0.4,
                      pages={"leaderboard": PageFigures(path="/api/leaderboard", requests=5, p99_s=0.02)})


def test_targets_name_each_miss() -> None:
    assert check_targets(_met("full"), _met("empty"), 10_000) == []
    full, empty = _met("full"), _met("empty")
    full.results_per_s, full.welcome_s, full.welcomed_in_target, full.rate_limited = 8.0, None, 3, 7
    full.pages["leaderboard"].p99_s, full.full_fit_s, full.full_fit_cpu_s = 0.25, None, None
    empty.pairing_p99_s, empty.pages["leaderboard"].errors = 0.004, 2
    misses = check_targets(full, empty, 10_000)
    assert len(misses) == 6, misses
    text = "\n".join(misses)
    for part in ("3 of 10 bots welcomed", "7 rate_limited", "0.80x", "leaderboard p99 250 ms",
                 "full refit of 10,000 bots not measured: arena_ladder_full_fit_cpu_seconds absent",
                 "empty: pairing decision p99 4.00 ms", "2 of 5 answers"):
        assert part in text


def test_a_store_s_runs_pool_their_rate_and_keep_each_worst_figure() -> None:
    """Results per second over every window of a store; every judged figure the worst run's, so a
    target missed in one run is missed; sizes summed; each run's rate shown and named in a miss."""
    one, two = _met("full-1"), _met("full-2")
    one.window_s, one.results, one.results_per_s, one.recorded, one.db_bytes = 60.0, 2400.0, 40.0, 2400, 1000
    two.window_s, two.results, two.results_per_s, two.recorded, two.db_bytes = 60.0, 3000.0, 50.0, 3000, 2000
    two.pairing_p99_s, two.full_fit_cpu_s, one.welcome_s = 0.002, 1.5, 4.0
    one.pages["leaderboard"].p99_s, two.pages["leaderboard"].errors = 0.09, 1
    one.notes.append("slow start")
    full = pool_runs("sqlite-full", [one, two])
    assert full.label == "sqlite-full" and full.window_s == 120.0 and full.results_per_s == 45.0
    assert full.run_rates == [40.0, 50.0] and full.recorded == 5400 and full.per_match(full.db_bytes) == 3000 / 5400
    assert (full.pairing_p99_s, full.full_fit_cpu_s, full.welcome_s) == (0.002, 1.5, 4.0)
    assert full.pages["leaderboard"].errors == 1 and full.notes == ["full-1: slow start"]
    one.welcome_s = None  # one run never welcomed every bot: the pool did not either
    assert pool_runs("x", [one, two]).welcome_s is None and pool_runs("x", [two]).run_rates == [50.0]
    e1, e2 = _met("empty-1"), _met("empty-2")
    e1.window_s, e1.results, e1.results_per_s = 60.0, 3000.0, 50.0
    e2.window_s, e2.results, e2.results_per_s = 60.0, 3600.0, 60.0
    empty = pool_runs("sqlite-empty", [e1, e2])
    assert empty.results_per_s == 55.0
    misses = check_targets(full, empty, 10_000)
    assert any("pairing decision p99 2.00 ms" in m for m in misses)
    rate = next(m for m in misses if m.startswith("results per second"))
    assert "0.82x" in rate and "each run: full 40.0, 50.0; empty 50.0, 60.0" in rate
    rows = {row[0]: row[1:] for row in report_rows(full, empty, 10_000)}
    assert rows["results per second, each run in order"] == ("40.0, 50.0", "50.0, 60.0", "")
    assert rows["results per second, all runs"][0] == "45.0 (0.82x)"
    with pytest.raises(ValueError):
        pool_runs("x", [])


def test_the_runs_alternate_and_mirror_so_a_drift_weighs_alike() -> None:
    assert bench_season.run_order(1) == ["full", "empty"]
    assert bench_season.run_order(2) == ["full", "empty", "empty", "full"]
    order = bench_season.run_order(4)
    assert order.count("full") == order.count("empty") == 4
    assert sum(i for i, x in enumerate(order) if x == "full") == sum(i for i, x in enumerate(order) if x == "empty")


def _fit_scrape(t: float, fit: tuple[float, float | None, int | None], full: tuple[float, float] | None = None,
                age: float | None = None):
    """A scrape whose last fit took ``fit`` = (wall s, CPU s or None, full 1/0 or None), made ``age``
    seconds before, and whose last full refit ``full`` = (wall s, CPU s), as the server's FitWatch
    exports them."""
    m = Metrics()
    m.fit_seconds.labels("ecarte").set(fit[0])
    if age is not None:
        m.fit_age.labels("ecarte").set(age)
    if fit[1] is not None:
        m.fit_cpu.labels("ecarte").set(fit[1])
        m.fit_full.labels("ecarte").set(fit[2])
    if full is not None:
        m.full_fit_seconds.labels("ecarte").set(full[0])
        m.full_fit_cpu.labels("ecarte").set(full[1])
    return parse_metrics(m.exposition().decode(), t=t)


def test_the_full_refit_is_judged_on_its_cpu_time_and_the_ratings_alone_shown_apart() -> None:
    """A synthetic run on a busy machine: the seeded fit (no CPU figure), a fit of the ratings
    alone, a full refit whose wall time is 4x its CPU time (a niced fitter waiting for a core),
    then the ratings alone again (the full refit's gauges stay)."""
    scrapes = [_fit_scrape(0.0, (0.0, None, None)), _fit_scrape(1.0, (3.0, 0.8, 0)),
               _fit_scrape(2.0, (6.0, 1.5, 1), (6.0, 1.5)), _fit_scrape(3.0, (2.0, 0.6, 0), (6.0, 1.5))]
    fig = RunFigures(label="full", bots=10)
    window_figures(fig, scrapes, "ecarte")
    assert (fig.ratings_fit_s, fig.ratings_fit_cpu_s) == (3.0, 0.8)
    assert (fig.full_fit_s, fig.full_fit_cpu_s, fig.fit_s) == (6.0, 1.5, 6.0)
    full, empty = _met("full"), _met("empty")
    full.full_fit_s, full.full_fit_cpu_s = fig.full_fit_s, fig.full_fit_cpu_s
    assert check_targets(full, empty, 10_000) == []  # 6 s of wall, 1.5 s of CPU: met
    fit_figures(fig, [_fit_scrape(9.0, (9.0, 2.5, 1), (9.0, 2.5))], "ecarte")  # a later one, after the window
    assert (fig.full_fit_s, fig.full_fit_cpu_s, fig.ratings_fit_cpu_s) == (9.0, 2.5, 0.8)
    full.full_fit_s, full.full_fit_cpu_s = fig.full_fit_s, fig.full_fit_cpu_s
    (miss,) = check_targets(full, empty, 10_000)
    assert "full refit of 10,000 bots took 2.50 s of CPU (9.00 s wall; target < 2 s of CPU)" in miss
    rows = {row[0]: row[1:] for row in report_rows(fig, empty, 10_000)}
    assert rows["ladder fit, ratings alone: longest wall / CPU (s)"][0] == "3.00 / 0.80"
    assert rows["ladder full refit: longest wall / CPU (s)"] == ("9.00 / 2.50", "0.50 / 0.40",
                                                                 "CPU < 2 s (10,000 bots)")
    assert "niced" in FIT_NOTE and "CPU" in FIT_NOTE
    seeded = RunFigures(label="full", bots=10)  # only the seeded fit seen: no full refit, a miss
    window_figures(seeded, scrapes[:2], "ecarte")
    assert seeded.full_fit_cpu_s is None and seeded.ratings_fit_cpu_s == 0.8
    none_yet = RunFigures(label="full", bots=10)  # no fit in the window, one seen after it
    window_figures(none_yet, scrapes[:1], "ecarte")
    assert any("no ladder fit duration" in n for n in none_yet.notes)
    fit_figures(none_yet, scrapes[2:3], "ecarte")
    assert not any("no ladder fit duration" in n for n in none_yet.notes) and none_yet.full_fit_cpu_s == 1.5
    assert any("full refit of 10,000 bots not measured" in m for m in check_targets(seeded, empty, 10_000))


def test_the_contest_file_sets_the_fit_interval(tmp_path) -> None:
    from arena.schedule.contest import load_config

    path = tmp_path / "contest.toml"
    bench_season.contest_file(path, "full", str(tmp_path / "x.db"), tmp_path / "logs",
                              bench_season.Settings(fit_intervals_s=7.5))
    assert load_config(path).fit_intervals_s == 7.5
    assert bench_season.Settings().fit_intervals_s == 20.0


def test_bad_options_are_one_line_and_status_2(capsys) -> None:
    assert bench_season.main(["--bots", "20", "--season-bots", "10"]) == 2
    assert "cannot exceed --season-bots" in capsys.readouterr().out
    assert bench_season.main(["--db", "arena.db"]) == 2
    capsys.readouterr()
    assert bench_season.main(["--fit-intervals-s", "0"]) == 2
    assert "--fit-intervals-s must be a positive number" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="the instant bot is C")
def test_a_tiny_season_runs_end_to_end(tmp_path) -> None:
    """The whole bench on SQLite at a tiny scale: both runs record matches and every figure the
    table needs is there (the targets may be missed: a shared machine, a branch's server)."""
    out = tmp_path / "figures.json"
    status = bench_season.main(["--only", "sqlite", "--season-bots", "12", "--season-matches", "400", "--bots", "4",
                                "--seconds", "3", "--page-requests", "3", "--welcome-wait-s", "10",
                                "--workdir", str(tmp_path / "work"), "--json", str(out)])
    assert status in (0, 1)
    figures = json.loads(out.read_text())["sqlite"]
    assert figures["seeding"]["rows"]["matches"] == 400
    for label in ("full", "empty"):
        run = figures[label]
        assert run["recorded"] > 0 and run["welcomed"] == 4 and run["db_bytes"] is not None
        for pages in (run["pages"], run["pages_busy"]):
            assert len(pages) == 5 and all(page["requests"] > 0 for page in pages.values())
        each = figures["runs"][label]  # each store ran twice, its own figures kept
        assert [r["label"] for r in each] == [f"sqlite-{label}-1", f"sqlite-{label}-2"]
        assert all(r["recorded"] > 0 for r in each) and run["recorded"] == sum(r["recorded"] for r in each)
        assert run["first_fit_s"] is not None and all(r["first_fit_s"] is not None for r in each)
    work = tmp_path / "work"
    assert not list(work.glob("run-*")) and not list(work.glob("logs-*"))  # the runs' files are removed
    assert len(list(work.glob("season-*.db"))) == 1  # the seed is kept for the next run


def test_the_sqlite_seed_is_cached_and_made_again_when_unusable(tmp_path) -> None:
    """The seeded file is reused by the next run; one made by a newer arena is seeded again."""
    import sqlite3

    settings = bench_season.Settings(spec=SeasonSpec(bots=6, matches=40), workdir=tmp_path)
    path, first = bench_season.cached_seed(settings, lambda _: None)
    assert not first.cached and first.report.rows["matches"] == 40
    _, again = bench_season.cached_seed(settings, lambda _: None)
    assert again.cached and again.report.rows == first.report.rows
    db = sqlite3.connect(path)
    db.execute("UPDATE alembic_version SET version_num='ffff'")  # made by a newer arena: not usable
    db.commit()
    db.close()
    _, remade = bench_season.cached_seed(settings, lambda _: None)
    assert not remade.cached and Store(path).db.execute("SELECT COUNT(*) FROM matches").fetchone()[0] == 40


def test_the_window_waits_for_the_fitters_first_fit(monkeypatch) -> None:
    """The window starts once the server publishes a fit of its own fitter's: the seeded fit (no
    CPU figure) does not count, nor the fit an earlier run left (older than the server's start);
    the wait is bounded, and a run that saw none says so."""
    scrapes = [_fit_scrape(0.0, (0.0, None, None), age=900.0), None, _fit_scrape(0.0, (0.0, None, None), age=900.0),
               _fit_scrape(0.0, (4.0, 1.2, 0), age=30.0), _fit_scrape(0.0, (4.0, 1.2, 0)),
               _fit_scrape(0.0, (4.0, 1.2, 0), age=0.5)]
    clock = iter(range(100))
    monkeypatch.setattr(bench_season, "fetch_metrics", lambda client: scrapes.pop(0))
    monkeypatch.setattr(bench_season.time, "sleep", lambda s: None)
    monkeypatch.setattr(bench_season.time, "perf_counter", lambda: float(next(clock)))
    fig = RunFigures(label="full", bots=10)
    bench_season._settle(None, fig, -1.0, "ecarte", 50.0)  # noqa: SLF001
    assert scrapes == [] and fig.first_fit_s == 1.0 and fig.notes == []  # (the scrape's own t, from t_ready -1)
    late = RunFigures(label="full", bots=10)
    monkeypatch.setattr(bench_season, "fetch_metrics", lambda client: _fit_scrape(0.0, (0.0, None, None)))
    bench_season._settle(None, late, 0.0, "ecarte", 5.0)  # noqa: SLF001
    assert late.first_fit_s is None and any("no fit of the ladder within 5 s" in n for n in late.notes)
    rows = {row[0]: row[1:] for row in report_rows(fig, late, 10)}
    assert rows["fitter's first fit, from the start (s)"] == ("1.0", "-", "")
