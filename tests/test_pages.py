"""The read side of the pages (arena/store/pages.py) and what shows it: keyset pages that together
hold every row once and in order, in both directions, on both backends; the leaderboard's ranks,
games and points (from the units each result keeps), its search by a prefix of the name in any
case; how old the ratings are and which are provisional, in /api, on the author's page and in ``arena bots list``; a bad
cursor is one line; names and details are escaped on the author's pages. The seeded stores come
from arena/store/seed.py (the benchmark's). Query plans: test_query_plans.py."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from arena.net.history import finished_matches
from arena.stats.rating import PROVISIONAL_CI95
from arena.store import pages
from arena.store.seed import season
from arena.store.sqlite import Store
from tests.legacy_db import sql
from tests.test_authors import bearer, client, make_contest, register

GAME = "ecarte"


@pytest.fixture
def seeded(db_target: str) -> Store:
    """A store on each backend with 130 bots and 1,500 matches (seed.season)."""
    store = Store(db_target)
    season(store, 130, 1500, chunk=400)
    yield store
    store.close()


def ranked(store: Store) -> list[tuple[str, float, Any]]:
    """The whole ladder, best first, by brute force: ``(bot, elo, ci95)``."""
    rows = sql(store, "SELECT bot, elo, ci95 FROM ladder WHERE game=:g", g=GAME).all()
    return sorted(((r[0], r[1], r[2]) for r in rows), key=lambda r: (-r[1], r[0]))


def scores(store: Store) -> dict[str, tuple[int, float]]:
    """Games and points of every bot, by brute force over the finished matches."""
    out: dict[str, tuple[int, float]] = {}
    for b0, b1, w in sql(store, "SELECT bot0, bot1, winner_seat FROM matches WHERE status='done'"):
        for seat, bot in ((0, b0), (1, b1)):
            games, points = out.get(bot, (0, 0.0))
            out[bot] = (games + 1, points + (1.0 if w == seat else 0.5 if w is None else 0.0))
    return out


def walk(fetch, start: dict[str, Any], key: str, cursor: str) -> list[dict[str, Any]]:
    """Every page from ``start`` following ``key`` (``next`` or ``prev``) as ``cursor``."""
    got, page = [], start
    while True:
        got.append(page)
        if page[key] is None:
            return got
        page = fetch(**{cursor: page[key]})
        assert len(got) < 1000, "the pages never end"


def test_the_leaderboard_pages_by_rating_in_both_directions(seeded: Store) -> None:
    truth = ranked(seeded)
    truth_scores = scores(seeded)

    def fetch(**kw: Any) -> dict[str, Any]:
        return pages.leaderboard_page(seeded, GAME, limit=50, **kw)

    forward = walk(fetch, fetch(), "next", "after")
    assert [len(p["rows"]) for p in forward] == [50, 50, 30]
    rows = [r for p in forward for r in p["rows"]]
    assert [r["bot"] for r in rows] == [t[0] for t in truth]  # each bot once, in order
    assert [r["rank"] for r in rows] == list(range(1, 131))
    assert all((r["games"], r["points"]) == truth_scores.get(r["bot"], (0, 0.0)) for r in rows)
    assert sum(r["games"] for r in rows) == 2 * sql(seeded, "SELECT COUNT(*) FROM matches WHERE status='done'"
                                                                  ).scalar_one()
    assert all(r["provisional"] == (t[2] is None or t[2] > PROVISIONAL_CI95) for r, t in zip(rows, truth, strict=True))
    assert any(r["provisional"] for r in rows) and not all(r["provisional"] for r in rows)
    assert forward[0]["prev"] is None and forward[0]["bots"] == 130
    backward = walk(fetch, fetch(before=forward[-1]["rows"][0]["bot"]), "prev", "before")
    assert [p["rows"] for p in backward] == [p["rows"] for p in reversed(forward[:-1])]
    assert fetch(after="nobody-of-that-name")["rows"] == forward[0]["rows"]  # a stale cursor: the top
    with pytest.raises(pages.BadCursor):
        pages.leaderboard_page(seeded, GAME, limit=pages.MAX_PAGE + 1)
    assert seeded.create_tournament(GAME, "ladder", 2, {}, [], []) == 2  # the seeded store goes on (ids)


def test_the_leaderboard_finds_a_prefix_of_the_name_in_any_case(seeded: Store) -> None:
    truth = ranked(seeded)
    rank = {bot: i + 1 for i, (bot, _, _) in enumerate(truth)}
    for q in ("MIKE", "mi", "oscar0001", "b"):
        want = sorted((b for b, _, _ in truth if b.lower().startswith(q.lower())), key=lambda b: (b.lower(), b))
        got = walk(lambda q=q, **kw: pages.leaderboard_page(seeded, GAME, q=q, limit=3, **kw),
                   pages.leaderboard_page(seeded, GAME, q=q, limit=3), "next", "after")
        rows = [r for p in got for r in p["rows"]]
        assert [r["bot"] for r in rows] == want, q
        assert all(r["rank"] == rank[r["bot"]] for r in rows)
        if len(got) > 1:  # and back from the last page
            back = walk(lambda q=q, **kw: pages.leaderboard_page(seeded, GAME, q=q, limit=3, **kw),
                        pages.leaderboard_page(seeded, GAME, q=q, limit=3, before=got[-1]["rows"][0]["bot"]),
                        "prev", "before")
            assert [p["rows"] for p in back] == [p["rows"] for p in reversed(got[:-1])]
    assert pages.leaderboard_page(seeded, GAME, q="zz")["rows"] == []


def test_match_lists_page_by_id_in_both_directions(seeded: Store) -> None:
    everything = [r[0] for r in sql(
        seeded, "SELECT id FROM matches WHERE game=:g AND status<>'pending' ORDER BY id DESC", g=GAME)]
    bot = "charlie00002"
    of_bot = [r[0] for r in sql(
        seeded, "SELECT id FROM matches WHERE status<>'pending' AND (bot0=:b OR bot1=:b) ORDER BY id DESC", b=bot)]
    results = sql(seeded, "SELECT COUNT(*) FROM matches WHERE status='done'").scalar_one()
    for who, want, count in ((None, everything, results), (bot, of_bot, None)):
        def fetch(who: str | None = who, **kw: Any) -> dict[str, Any]:
            return finished_matches(seeded, GAME, who, per_page=7, **kw)

        forward = walk(fetch, fetch(), "next", "before")
        assert [m["id"] for p in forward for m in p["matches"]] == want
        assert all(len(p["matches"]) == 7 for p in forward[:-1]) and forward[0]["prev"] is None
        backward = walk(fetch, fetch(after=forward[-1]["matches"][0]["id"]), "prev", "after")
        assert [p["matches"] for p in backward] == [p["matches"] for p in reversed(forward[:-1])]
        if count is not None:
            assert forward[0]["results"] == count
    done_of_bot = sql(seeded, "SELECT COUNT(*) FROM matches WHERE status='done' AND (bot0=:b OR bot1=:b)",
                      b=bot).scalar_one()
    assert finished_matches(seeded, GAME, bot)["results"] == done_of_bot
    faults = [r[0] for r in sql(
        seeded, "SELECT id FROM matches WHERE status='done' AND ((bot0=:b AND faulty_seat=0) OR (bot1=:b AND "
        "faulty_seat=1)) ORDER BY id DESC", b=bot)]
    got = walk(lambda **kw: pages.fault_page(seeded, bot, limit=1, **kw), pages.fault_page(seeded, bot, limit=1),
               "next", "before")
    assert [r["id"] for p in got for r in p["rows"]] == faults


def test_cursors_from_a_url_are_numbers_or_one_line() -> None:
    assert pages.parse_id(None) is None and pages.parse_id("") is None and pages.parse_id("42") == 42
    for bad in ("x", "-1", "1e9", str(2**70)):
        with pytest.raises(pages.BadCursor) as err:
            pages.parse_id(bad)
        assert "\n" not in str(err.value) and "before" in str(err.value)


def test_how_old_the_ratings_are(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.db")
    age = pages.ratings_age(store, GAME)
    assert (age["fitted_at"], age["lag_results"]) == (None, 0)
    assert pages.describe_age(age) == "ratings not fitted yet (0 results so far)"
    sql(store, "INSERT INTO ladder_state(game, results, fitted_results, fitted_at, fit_ms) VALUES (:g, 140, 103, "
        "1000.0, 850)", g=GAME)
    age = pages.ratings_age(store, GAME, now=1012.4)
    assert (age["results"], age["lag_results"], age["age_s"], age["fit_ms"]) == (140, 37, 12.4, 850)
    assert pages.describe_age(age) == "ratings fitted 12 s ago, 37 results since"
    assert pages.describe_age(pages.ratings_age(store, GAME, now=1000 + 3 * 3600)) == \
        "ratings fitted 3.0 h ago, 37 results since"
    assert pages.is_provisional(None) and pages.is_provisional(math.inf) and pages.is_provisional(PROVISIONAL_CI95 + 1)
    assert not pages.is_provisional(PROVISIONAL_CI95) and not pages.is_provisional(35.0)
    store.close()


async def test_the_api_pages_and_refuses_a_bad_cursor_in_one_line(tmp_path: Path) -> None:
    contest = make_contest(tmp_path)
    season(contest.store, 60, 400)
    async with client(contest) as c:
        board = (await c.get("/api/leaderboard?limit=25")).json()
        assert len(board["leaderboard"]) == 25 and board["bots"] == 60 and board["next"] is not None
        assert re.fullmatch(r"ratings fitted \d+ s ago, 37 results since", board["ratings"]["text"])
        assert board["ratings"]["provisional_ci95"] == PROVISIONAL_CI95
        assert {"provisional", "interval", "games", "points", "score", "connected"} <= set(board["leaderboard"][0])
        second = (await c.get(f"/api/leaderboard?limit=25&after={board['next']}")).json()
        assert second["leaderboard"][0]["rank"] == 26 and second["prev"] == second["leaderboard"][0]["bot"]
        found = (await c.get("/api/leaderboard?q=ALP")).json()["leaderboard"]
        assert found and all(r["bot"].startswith("alpha") for r in found)
        history = (await c.get("/api/history")).json()
        older = (await c.get(f"/api/history?before={history['next']}")).json()
        assert older["matches"][0]["id"] < history["matches"][-1]["id"] and older["prev"] == older["matches"][0]["id"]
        for url in ("/api/history?before=abc", "/api/history?after=-3", "/api/leaderboard?limit=0",
                    "/api/leaderboard?limit=x", "/api/history?limit=1000"):
            r = await c.get(url)
            assert r.status_code == 400 and r.json()["error"] == "bad_cursor", url
            assert "\n" not in r.json()["message"] and r.json()["message"], url
        assert (await c.get("/api/leaderboard")).json()["launched_total"] == 0


async def test_an_authors_lists_page_by_key_and_escape_what_bots_wrote(tmp_path: Path) -> None:
    contest = make_contest(tmp_path, registration="open")
    store = contest.store
    async with client(contest) as c:
        alice = await register(c, "alice")
        bob = await register(c, "bob")
        r = await c.post("/author/api/remote", json={"name": "alicebot"}, headers=bearer(alice))
        assert r.status_code == 201, r.text
        store.add_bot("rival")
        tid = store.create_tournament(GAME, "ladder", 1, {}, [], [("alicebot", "rival", i) for i in range(25)])

        class Lost:  # alicebot (seat 0) times out: its fault, with a hostile detail
            winner, reason, scores, manches, detail, faulty, decisions, deals, duration_ms, margin = \
                1, "forfeit_timeout", [0, 5], [0, 1], "<script>alert(1)</script>", 0, 3, 1, 10, 5

        for row in store.pending_matches(tid):
            store.record_result(row.match_key, Lost(), None)
        me = (await c.get("/author/api/me", headers=bearer(alice))).json()
        bot = me["bots"][0]
        assert len(bot["matches"]) == 10 and len(bot["faults"]) == 10 and bot["matches_next"] == bot["faults_next"]
        assert me["ratings"]["text"].startswith("ratings ") and "provisional" in bot
        seen = [m["id"] for m in bot["matches"]]
        cursor = bot["matches_next"]
        while cursor is not None:
            page = (await c.get(f"/author/api/bots/alicebot/matches?before={cursor}", headers=bearer(alice))).json()
            seen += [m["id"] for m in page["matches"]]
            cursor = page["next"]
        assert len(seen) == len(set(seen)) == 25 and seen == sorted(seen, reverse=True)
        failures = (await c.get(f"/author/api/bots/alicebot/failures?before={bot['faults_next']}",
                                headers=bearer(alice))).json()
        assert len(failures["failures"]) == 15 and failures["next"] is None
        for path in ("/author/api/bots/alicebot/matches", "/author/api/bots/alicebot/failures",
                     "/author/api/bots/rival/matches"):
            assert (await c.get(path, headers=bearer(bob))).status_code == 404, path
        r = await c.get("/author/api/bots/alicebot/matches?before=soon", headers=bearer(alice))
        assert r.status_code == 400 and "before" in r.json()["message"]
    # the HTML pages, logged in through the form (tests/test_authors.login)
    from tests.test_authors import login

    async with client(contest) as c:
        await login(c, alice)
        home = (await c.get("/author/")).text
        assert "<script>alert" not in home and "&lt;script&gt;alert(1)&lt;/script&gt;" in home
        assert 'class="older" href="/author/bots/alicebot/matches?before=' in home and "provisional" in home
        assert 'id="ratings-age"' in home
        listing = (await c.get(f"/author/bots/alicebot/failures?before={bot['faults_next']}")).text
        assert listing.count("forfeit_timeout") == 15 and "<script>alert" not in listing


def test_arena_bots_list_says_how_old_the_ratings_are_and_marks_provisional_ones(tmp_path: Path) -> None:
    db = tmp_path / "arena.db"
    store = Store(db)
    season(store, 40, 300)
    sql(store, "UPDATE ladder SET ci95=NULL WHERE bot='alpha00000'")  # not fitted yet
    sql(store, "UPDATE ladder SET ci95=:c WHERE bot='bravo00001'", c=PROVISIONAL_CI95 + 0.5)  # too wide
    sql(store, "UPDATE ladder SET ci95=:c WHERE bot='charlie00002'", c=PROVISIONAL_CI95)  # just narrow enough
    provisional = {b for b, _, ci in ranked(store) if ci is None or ci > PROVISIONAL_CI95}
    assert {"alpha00000", "bravo00001"} <= provisional and "charlie00002" not in provisional
    sql(store, "UPDATE ladder_state SET fitted_at=:t", t=time.time() - 125)
    store.close()
    out = subprocess.run([sys.executable, "-m", "arena.cli", "bots", "list", "--db", str(db)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ratings fitted 2 min ago, 37 results since" in out.stdout and "? marks a provisional Elo" in out.stdout
    rows = {line.split("│")[1].strip(): line.split("│") for line in out.stdout.splitlines() if line.count("│") > 5}
    assert len(rows) == 40
    for name, cells in rows.items():
        assert cells[6].strip().endswith("?") == (name in provisional), (name, cells)


async def test_text_no_name_could_be_is_one_line_too(tmp_path: Path) -> None:
    contest = make_contest(tmp_path)
    season(contest.store, 20, 50)
    async with client(contest) as c:
        for url in ("/api/leaderboard?q=%00", "/api/leaderboard?after=a%0Ab", "/api/leaderboard?q=" + "x" * 65,
                    "/api/history?bot=%00x"):
            r = await c.get(url)
            assert r.status_code == 400 and r.json()["error"] == "bad_cursor" and "\n" not in r.json()["message"], url
        assert (await c.get("/api/leaderboard?q=%C3%89")).json()["leaderboard"] == []  # É: a prefix, no such bot


def test_the_page_benchmark_finds_its_pages_and_gives_a_p99_for_each(tmp_path: Path) -> None:
    """arena/tools/bench_pages.py against a real `arena serve` on a small seeded store (what the
    season benchmark calls): five figures, no timing asserted."""
    from arena.tools.bench_pages import REPRESENTATIVE, page_p99s, serve

    db = tmp_path / "arena.db"
    store = Store(db)
    season(store, 60, 300)
    store.close()
    proc, base = serve(str(db), tmp_path)
    try:
        p99 = page_p99s(base, requests=5)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert set(p99) == set(REPRESENTATIVE) and all(v > 0 for v in p99.values())
