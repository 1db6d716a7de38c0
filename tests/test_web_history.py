"""The web page's history (arena/net/history.py, arena/net/web.py, arena/static/index.html): a spectator
who arrives after the matches sees them, replays any one at its own URL in the table view, with
hidden cards only as at the end of each deal, follows a bot from the leaderboard, sees that the
contest is over; and the page fits a 420 px wide screen. In headless Chromium (as test_web.py),
with screenshots left in /tmp for a human to look at."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import trio

from arena.match.log import read_bytes, read_log
from arena.net.history import NotReplayable, feed_from_log, finished_matches, replay_feed
from arena.net.server import ServerConfig
from arena.schedule.contest import Contest, ContestConfig
from arena.schedule.formats import Pairing
from arena.store.sqlite import Store
from protocol.messages import TimeControl
from tests.legacy_db import sql
from tests.test_web import CHROMIUM, ROOT, cards_in, chromium, sync_api

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium browser (Debian: apt-get install chromium)")

SHOTS = {"wide": Path("/tmp/arena_history_1280.png"), "replay": Path("/tmp/arena_replay_1280.png"),
         "narrow": Path("/tmp/arena_replay_420.png"), "narrow_top": Path("/tmp/arena_history_420.png")}
MATCHES = 6


def get_json(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def check_feed_against_log(messages: list[dict[str, Any]], log: list[dict[str, Any]]) -> None:
    """The replay shows a public event only if the log has it public (or as the opponent's
    card-less copy of an exchange), and a deal's hidden cards only after that deal has ended."""
    def public(line: dict[str, Any]) -> bool:
        ev = line["event"]
        return not line["hidden"] or (ev["kind"] == "exchange" and ev.get("discarded") is None)

    public_events = [line["event"] for line in log if line["type"] == "event" and public(line)]
    shown = [m["event"] for m in messages if m["type"] == "spectate"]
    assert shown == public_events
    ended: set[int] = set()
    last_deal = 0
    for m in messages:
        if m["type"] == "spectate" and m["event"]["kind"] == "deal_end":
            ended.add(m["event"]["deal"])
        if m["type"] == "spectate" and m["event"]["kind"] == "deal_start":
            last_deal = m["event"]["deal"]
        if m["type"] == "reveal":
            assert m["deal"] in ended or messages[-1]["type"] == "watch_end" and m["deal"] == last_deal, m["deal"]
    assert messages[0]["type"] == "watch" and messages[-1]["type"] == "watch_end"


def drive(base: str, ids: list[str], bots: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"errors": []}
    with sync_api.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], timeout=30_000)
        except Exception as exc:  # noqa: BLE001 - an unusable browser is an environment problem
            out["skip"] = f"chromium did not start: {exc}"
            return out
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(10_000)
            page.on("pageerror", lambda e: out["errors"].append(str(e)))
            # 1. late arrival: the history has every match, the contest says it is over
            page.goto(base + "/")
            page.wait_for_function(f"document.querySelectorAll('#history a').length === {len(ids)}")
            out["history"] = page.eval_on_selector_all("#history a", "as => as.map(a => a.dataset.match)")
            page.wait_for_function("!document.getElementById('contest-state').hidden")
            out["over_text"] = page.text_content("#contest-state")
            out["live_empty"] = page.text_content("#live-empty")
            out["intervals"] = page.eval_on_selector_all("#leaderboard td[data-col=interval]",
                                                         "t => t.map(x => x.offsetWidth > 0 ? x.textContent : null)")
            page.screenshot(path=str(SHOTS["wide"]), full_page=True)
            # 2. a bot's matches from the leaderboard
            bot = bots[0]
            page.click(f'#leaderboard a.botlink:text-is("{bot}")')
            page.wait_for_function("!document.getElementById('history-filter').hidden")
            out["filter_url"] = page.url
            out["filtered"] = page.eval_on_selector_all(
                "#history a", "as => as.map(a => [...a.querySelectorAll('.vs > span')].map(s => s.textContent))")
            # 3. a match's replay at its own URL, in the table view
            target = out["history"][-1]
            page.click(f'#history a[data-match="{target}"]')
            page.wait_for_function(f'document.getElementById("live").dataset.match === "{target}"')
            out["replay_url"] = page.url
            out["heading"] = page.text_content("#live-heading")
            out["replay_over"] = page.get_attribute("#live", "data-over")
            out["replay_cards"] = page.eval_on_selector_all("#live [data-card]", "cs => cs.map(c => c.dataset.card)")
            out["revealed_boxes"] = page.eval_on_selector_all("#live [data-revealed='1']", "bs => bs.length")
            out["log_lines"] = page.locator("#live-log li").count()
            page.screenshot(path=str(SHOTS["replay"]), full_page=True)
            # paced replay from the first deal, as for a live match
            page.select_option("#pace", "250")
            page.click("#replay")
            page.wait_for_function('document.getElementById("live").dataset.deal === "1"')
            out["paced_from_start"] = page.locator("#live-log li").count()
            # 4. the URL alone opens it, on a 420 px screen
            narrow = browser.new_page(viewport={"width": 420, "height": 900})
            narrow.on("pageerror", lambda e: out["errors"].append(str(e)))
            narrow.goto(base + f"/match/{ids[0]}")
            narrow.wait_for_function(f'document.getElementById("live").dataset.match === "{ids[0]}"')
            narrow.wait_for_function(f"document.querySelectorAll('#history a').length === {len(ids)}")
            out["narrow_width"] = narrow.evaluate("document.documentElement.scrollWidth")
            narrow.screenshot(path=str(SHOTS["narrow_top"]))
            narrow.screenshot(path=str(SHOTS["narrow"]), full_page=True)
            # 5. an unknown match says so
            narrow.goto(base + "/match/t99-m0001")
            narrow.wait_for_function("!document.getElementById('notice').hidden")
            out["unknown"] = narrow.text_content("#notice")
        finally:
            browser.close()
    return out


@pytest.mark.slow  # a contest and a real browser on three screens: about 10 s (make test-slow)
async def test_history_replay_urls_and_narrow_screens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import arena.net.web

    plain_board = arena.net.web.leaderboard_page

    def with_intervals(contest: Contest, **kw: Any) -> dict[str, Any]:  # narrow intervals: not provisional
        board = plain_board(contest, **kw)
        return {**board, "leaderboard": [{**row, "interval": 47.6 + row["rank"], "provisional": False}
                                         for row in board["leaderboard"]]}

    monkeypatch.setattr(arena.net.web, "leaderboard_page", with_intervals)
    db = tmp_path / "arena.db"
    store = Store(db)
    config = ContestConfig(db=str(db), logs=str(tmp_path / "logs"), http_port=0, server=ServerConfig(port=0),
                           seed=5, max_matches=MATCHES, concurrency=1, time=TimeControl(move_ms=1000))
    contest = Contest(config, store)
    bots = ["greedy", "random"]
    for name in bots:
        store.submit_bot(name, str(ROOT / "sample_bots" / f"{name}.toml"))
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            _, http_port = await nursery.start(contest.run)
            base = f"http://127.0.0.1:{http_port}"
            try:
                while True:  # every match played before the spectator arrives
                    status, board = await trio.to_thread.run_sync(get_json, base + "/api/leaderboard")
                    if board["state"] == "over":
                        break
                    await trio.sleep(0.1)
                status, hist = await trio.to_thread.run_sync(get_json, base + "/api/history")
                ids = [m["match_id"] for m in hist["matches"]]
                assert hist["results"] == MATCHES == len(ids) and hist["next"] is None
                replays = {}
                for mid in ids:
                    status, data = await trio.to_thread.run_sync(get_json, base + f"/api/replay/{mid}")
                    assert status == 200
                    replays[mid] = data["messages"]
                status, missing = await trio.to_thread.run_sync(get_json, base + "/api/replay/t99-m0001")
                assert status == 404 and "no match" in missing["error"]
                out = await trio.to_thread.run_sync(drive, base, ids, bots, abandon_on_cancel=True)
            finally:
                contest.stop()
    if "skip" in out:
        pytest.skip(out["skip"])
    assert not out["errors"], out["errors"]
    assert out["history"] == ids
    assert out["over_text"].startswith("contest over")
    assert "contest is over" in out["live_empty"]
    assert out["intervals"] == ["±49", "±50"]
    assert out["filter_url"].endswith("?bot=greedy")
    assert out["filtered"] and all("greedy" in names for names in out["filtered"])
    target = ids[-1]
    assert out["replay_url"].endswith(f"/match/{target}?bot=greedy")  # the filter stays
    assert out["heading"] == "Replay" and out["replay_over"] == "1" and out["log_lines"] >= 8
    assert out["revealed_boxes"] >= 1  # the hands of a finished deal, as revealed after it
    assert set(out["replay_cards"]) <= set().union(*(cards_in(m) for m in replays[target]))
    assert out["paced_from_start"] < 10
    assert out["narrow_width"] <= 420, f"the page is {out['narrow_width']} px wide on a 420 px screen"
    assert "no match t99-m0001" in out["unknown"]
    for shot in SHOTS.values():
        assert shot.stat().st_size > 10_000
    for mid in ids:
        row = sql(store, "SELECT log_path FROM matches WHERE match_key=:k", k=mid).first()
        check_feed_against_log(replays[mid], read_log(row[0]))
    store.close()


def test_a_duplicate_twin_in_play_keeps_the_replay_closed_and_pages(db_target: str) -> None:
    """No replay (so no hidden card) of a match whose duplicate twin is still pending; the
    history pages by key (``before``/``after`` cursors) and filters, newest first by match id,
    listing an aborted match but not counting it as a result (on both backends)."""
    store = Store(db_target)
    pairs = [Pairing(i, "a" if i % 2 == 0 else "b", "b" if i % 2 == 0 else "a", 7, pair=f"p{i // 2}")
             for i in range(5)]
    tid = store.create_tournament("ecarte", "round-robin", 1, {}, ["a", "b"], pairs)
    rows = store.pending_matches(tid)

    class Result:
        winner, reason, scores, manches, detail, faulty, decisions, deals, duration_ms, margin = \
            0, "target", [5, 2], [1, 0], "", None, 10, 3, 100, 0

    for row in rows[:3]:
        store.record_result(row.match_key, Result(), None)
    with pytest.raises(NotReplayable) as err:
        replay_feed(store, rows[2].match_key)  # its twin rows[3] is pending
    assert err.value.status == 409 and "twin" in str(err.value)
    with pytest.raises(NotReplayable) as err:
        replay_feed(store, rows[3].match_key)
    assert err.value.status == 409
    with pytest.raises(NotReplayable) as err:
        replay_feed(store, rows[0].match_key)  # pair over, but no log
    assert err.value.status == 404
    sql(store, "UPDATE matches SET status='aborted', reason='aborted' WHERE match_key=:k", k=rows[4].match_key)
    first = finished_matches(store, "ecarte", per_page=2)
    second = finished_matches(store, "ecarte", before=first["next"], per_page=2)
    keys = [r.match_key for r in rows]
    assert [m["match_id"] for m in first["matches"]] == [keys[4], keys[2]]  # newest first, the pending one not
    assert [m["match_id"] for m in second["matches"]] == [keys[1], keys[0]]
    assert (first["prev"], first["next"], second["next"]) == (None, first["matches"][-1]["id"], None)
    assert first["results"] == 3 and first["matches"][0]["finished_at"] is None  # aborted: listed, not counted
    back = finished_matches(store, "ecarte", after=second["prev"], per_page=2)  # "newer" from the second page
    assert back["matches"] == first["matches"] and back["prev"] is None and back["next"] == first["next"]
    of_a = finished_matches(store, "ecarte", bot="a", per_page=3)
    assert [m["match_id"] for m in of_a["matches"]] == [keys[4], keys[2], keys[1]] and of_a["results"] == 3
    assert finished_matches(store, "ecarte", bot="a", before=of_a["next"])["matches"][0]["match_id"] == keys[0]
    nobody = finished_matches(store, "ecarte", bot="nobody")
    assert (nobody["matches"], nobody["results"], nobody["next"], nobody["prev"]) == ([], 0, None, None)
    store.close()


def test_a_replay_is_the_live_feed_of_its_log() -> None:
    """A log written by a real match (tests/test_matchlog writes them): the replay messages
    keep every hidden card out of the public events."""
    import gzip

    from arena.match.log import MatchLog
    from protocol.messages import CardPlayed, DealEnd, DealStart, HandDealt

    raw_path = Path("/tmp") / f"arena-replay-{time.monotonic_ns()}.jsonl.gz"
    with MatchLog(raw_path) as log:
        log.write({"type": "match", "match_id": "t1-m0001", "game": "ecarte", "seed": 3, "bots": ["x", "y"],
                   "config": {}})
        log.event(DealStart(deal=1, manche=1, dealer=0, elder=1, turn_up="Kh", trump="h", stock=21), (0, 1))
        log.event(HandDealt(seat=0, cards=["7c", "8c", "9c", "Tc", "Jc"]), (0,))
        log.event(CardPlayed(seat=1, card="As", trick=1), (0, 1))
        log.event(DealEnd(deal=1, tricks=[0, 5], points=[0, 2], scores=[0, 2], ended="tricks"), (0, 1))
        log.write({"type": "result", "winner": 1, "reason": "target", "scores": [0, 2]})
    msgs = [json.loads(m) for m in feed_from_log(read_bytes(raw_path))]
    raw_path.unlink()
    kinds = [m["type"] if m["type"] != "spectate" else m["event"]["kind"] for m in msgs]
    assert kinds == ["watch", "deal_start", "play", "deal_end", "reveal", "watch_end"]
    assert msgs[4]["events"][0]["cards"] == ["7c", "8c", "9c", "Tc", "Jc"]
    assert not any("7c" in json.dumps(m) for m in msgs[:4])
    assert gzip  # the log was compressed: read_bytes read it


HOSTILE = "<img src=x onerror=alert(1)>"


def drive_pages(base: str) -> dict[str, Any]:
    """The leaderboard's pages and search, and the history's pages, in the browser."""
    out: dict[str, Any] = {"errors": []}
    ranks = "[...document.querySelectorAll('#leaderboard tbody tr td[data-col=rank]')].map(t => Number(t.textContent))"
    bots = "[...document.querySelectorAll('#leaderboard tbody tr')].map(t => t.dataset.bot)"
    with chromium(out) as browser:
        if browser is None:
            return out
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(10_000)
        page.on("pageerror", lambda e: out["errors"].append(str(e)))
        page.on("dialog", lambda d: out["errors"].append(f"a dialog opened: {d.message}"))
        page.goto(base + "/")
        page.wait_for_function(f"{ranks}.length === 50")
        out["pages"] = [page.evaluate(bots)]
        out["ranks"] = [page.evaluate(ranks)]
        out["age"] = page.text_content("#ratings-age")
        out["range"] = page.text_content("#lb-range")
        out["provisional"] = page.eval_on_selector_all(
            "#leaderboard tbody tr.provisional", "rs => rs.map(r => [r.dataset.bot, r.querySelector("
            "'td[data-col=elo]').title, getComputedStyle(r.querySelector('td[data-col=elo]'), '::after').content])")
        out["hostile_elements"] = page.locator("#leaderboard img").count()
        for button, first in (("#lb-down", 51), ("#lb-down", 101), ("#lb-up", 51)):
            page.click(button)
            page.wait_for_function(f"{ranks}[0] === {first}")
            out["pages"].append(page.evaluate(bots))
            out["ranks"].append(page.evaluate(ranks))
        out["down_disabled_at_end"] = None
        page.click("#lb-down")
        page.wait_for_function(f"{ranks}[0] === 101")
        out["down_disabled_at_end"] = page.is_disabled("#lb-down")
        page.fill("#lb-search", "MIKE")
        page.wait_for_function(f"{bots}.every(b => b.startsWith('Mike'))")
        out["found"] = page.evaluate(bots)
        page.fill("#lb-search", "<b")
        page.wait_for_function("!document.getElementById('leaderboard-empty').hidden")
        out["not_found"] = page.text_content("#leaderboard-empty")
        # the history, 20 a page by match id, the cursor in the URL
        page.wait_for_function("document.querySelectorAll('#history a').length === 20")
        newest = page.eval_on_selector_all("#history a", "as => as.map(a => a.dataset.match)")
        page.click("#history-older")
        page.wait_for_function("location.search.includes('before=')")
        page.wait_for_function(f"document.querySelector('#history a').dataset.match !== '{newest[0]}'")
        out["older"] = page.eval_on_selector_all("#history a", "as => as.map(a => a.dataset.match)")
        out["older_url"] = page.url
        page.click("#history-newer")
        page.wait_for_function("location.search.includes('after=')")
        page.wait_for_function(f"document.querySelector('#history a').dataset.match === '{newest[0]}'")
        out["newest"] = newest
        out["back"] = page.eval_on_selector_all("#history a", "as => as.map(a => a.dataset.match)")
        out["newer_disabled"] = page.is_disabled("#history-newer")
        out["count"] = page.text_content("#history-count")
        fresh = browser.new_page(viewport={"width": 420, "height": 900})  # the URL alone opens that page
        fresh.goto(out["older_url"])
        fresh.wait_for_function("document.querySelectorAll('#history a').length === 20")
        out["older_again"] = fresh.eval_on_selector_all("#history a", "as => as.map(a => a.dataset.match)")
        out["narrow_width"] = fresh.evaluate("document.documentElement.scrollWidth")
    return out


@pytest.mark.slow  # a contest and a real browser: about 5-10 s (make test-slow)
async def test_the_leaderboard_and_history_page_by_key_and_search_in_a_browser(tmp_path: Path, monkeypatch) -> None:
    """130 rated bots and 400 matches (arena/store/seed.py), no bot playing: the page shows the
    leaderboard 50 at a time (lower, higher), finds bots by the start of their name in any case,
    says how old the ratings are, marks the provisional ones, shows a hostile name as text, and
    pages the history with a ``before``/``after`` cursor in its URL."""
    from arena.store.pages import PROVISIONAL_CI95
    from arena.store.seed import season

    db = tmp_path / "arena.db"
    store = Store(db)
    season(store, 130, 400)
    top = store.db.execute("SELECT MAX(elo) FROM ladder").fetchone()[0]
    store.db.execute("UPDATE ladder SET bot=?, elo=?, ci95=NULL WHERE bot='alpha00000'", (HOSTILE, top + 50))
    store.db.execute("UPDATE ladder SET ci95=? WHERE bot='bravo00001'", (PROVISIONAL_CI95 + 20,))
    config = ContestConfig(db=str(db), logs=str(tmp_path / "logs"), http_port=0, server=ServerConfig(port=0),
                           max_matches=0)
    contest = Contest(config, store)
    contest.fitter.run = trio.sleep_forever  # the seeded standings stay still while the pages are compared
    monkeypatch.setattr("arena.schedule.contest.spawn", lambda *args, **kw: None)  # nor a fitter process
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            _, http_port = await nursery.start(contest.run)
            base = f"http://127.0.0.1:{http_port}"
            try:
                api = []
                status, board = await trio.to_thread.run_sync(get_json, base + "/api/leaderboard")
                api.append([r["bot"] for r in board["leaderboard"]])
                while board["next"]:
                    status, board = await trio.to_thread.run_sync(get_json, base + "/api/leaderboard?after="
                                                                  + urllib.parse.quote(board["next"]))
                    api.append([r["bot"] for r in board["leaderboard"]])
                status, hist = await trio.to_thread.run_sync(get_json, base + "/api/history")
                status, older = await trio.to_thread.run_sync(get_json, base + f"/api/history?before={hist['next']}")
                out = await trio.to_thread.run_sync(drive_pages, base, abandon_on_cancel=True)
            finally:
                contest.stop()
    store.close()
    if "skip" in out:
        pytest.skip(out["skip"])
    assert not out["errors"], out["errors"]
    assert [len(b) for b in api] == [50, 50, 30]
    assert out["pages"] == [api[0], api[1], api[2], api[1]]
    assert out["ranks"][0] == list(range(1, 51)) and out["ranks"][2] == list(range(101, 131))
    assert out["down_disabled_at_end"]
    assert api[0][0] == HOSTILE and out["hostile_elements"] == 0  # a name is text, never markup
    assert out["age"].startswith("ratings fitted ") and "37 results since" in out["age"]
    assert "provisional" in out["age"] and out["range"] == "ranks 1–50 of 130"
    marked = {bot: (title, after) for bot, title, after in out["provisional"]}
    assert HOSTILE in marked and "bravo00001" in marked
    assert all("provisional" in title and after == '"?"' for title, after in marked.values())
    assert out["found"] and all(b.startswith("Mike") for b in out["found"])
    assert out["not_found"] == "No bot whose name starts with “<b”."
    assert out["newest"] == [m["match_id"] for m in hist["matches"]]
    assert out["older"] == [m["match_id"] for m in older["matches"]] == out["older_again"]
    assert f"before={hist['next']}" in out["older_url"]
    assert out["back"] == out["newest"] and out["newer_disabled"]
    assert out["count"] == f"{hist['results']} results"
    assert out["narrow_width"] <= 420
