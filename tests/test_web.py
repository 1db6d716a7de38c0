"""The contest's web page in a real headless browser (Playwright driving Debian's Chromium).

A contest runs in trio; the browser is driven with Playwright's *sync* API in a worker thread
(its async API would need asyncio). A second, plain server-sent-events client reads the same
feed as the page. Every message of the feed reaches both in the same order (one hub pushes to
both; both subscribe before any bot exists), so when the page says it has received ``n``
messages, the first ``n`` messages of the test's own feed are exactly what the page could know.
Every snapshot of the page is checked against that: each card drawn in a player's hand must have
been played or shown by that player in that deal, or revealed for that deal - never earlier.

Skipped when Playwright (``pip install playwright``; no browser download is needed) or Chromium
(Debian: ``apt-get install chromium``) is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from arena.net.server import ServerConfig
from arena.schedule.contest import Contest, ContestConfig
from arena.store.sqlite import Store
from protocol.messages import TimeControl
from tests.conftest import TRUST_BOTS, slow_bots

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)",
                               exc_type=ImportError)


def _chromium() -> str | None:
    path = os.environ.get("ARENA_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return path if Path(path).exists() else None


CHROMIUM = _chromium()


@contextmanager
def chromium(out: dict[str, Any]) -> Iterator[Any]:
    """Debian's Chromium through sync Playwright, for a browser test run in a worker thread:
    yields the browser (closed afterwards), or None with ``out["skip"]`` saying why it did not
    start (an unusable browser is an environment problem, not a failure)."""
    with sync_api.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], timeout=30_000)
        except Exception as exc:  # noqa: BLE001 - whatever Playwright raises for a browser that cannot run
            out["skip"] = f"chromium did not start: {exc}"
            yield None
            return
        try:
            yield browser
        finally:
            browser.close()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium browser (Debian: apt-get install chromium)")

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOT = Path("/tmp/arena_page.png")
MAX_MATCHES = 30
# Four launched bots (two sample bots under two names each): two matches in play at once. Each
# waits PACE_MS before each action (tests/bots/slow/slow.py), so that a match lasts longer than a
# few of the browser's snapshots whatever the machine: sample bots answering at once play the whole
# contest in about a second, before the page has been looked at a dozen times.
BOTS = {"greedy": "greedy_bot", "random": "random_bot", "greedy-2": "greedy_bot", "random-2": "random_bot"}
PACE_MS = 10


def paced_bots(folder: Path) -> dict[str, Path]:
    """The manifests of :data:`BOTS`, each a sample bot paced by ``slow.py``, written in ``folder``."""
    return slow_bots(folder, BOTS, PACE_MS)


SUIT = {"c": "♣", "d": "♦", "h": "♥", "s": "♠"}
CARD_TEXT = re.compile(r"(10|[6-9JQKA])([♣♦♥♠])")
CARD = re.compile(r"^[6789TJQKA][cdhs]$")


def card_text(code: str) -> str:
    return ("10" if code[0] == "T" else code[0]) + SUIT[code[1]]


def cards_in(obj: Any) -> set[str]:
    """Every string in ``obj`` that looks like a card."""
    out, stack = set(), [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, str) and CARD.match(x):
            out.add(x)
    return out


SNAPSHOT_JS = """() => {
  const q = (sel, root = document) => [...root.querySelectorAll(sel)];
  const live = document.getElementById("live"), body = document.getElementById("live-body");
  const seatBoxes = q("#live [data-hand], #live [data-extra]").map((h) => ({
    kind: h.dataset.hand ? "hand:" + h.dataset.hand : "extra:" + h.dataset.extra,
    seat: Number(h.dataset.seat), match: h.dataset.match, deal: Number(h.dataset.deal || 0),
    revealed: h.dataset.revealed === "1", cards: q("[data-card]", h).map((c) => c.dataset.card)}));
  return {
    received: window.arena.received, connects: window.arena.connects,
    match: live.dataset.match || null, deal: Number(live.dataset.deal || 0), over: live.dataset.over === "1",
    scores: document.getElementById("live-scores").textContent,
    names: [0, 1].map((s) => document.getElementById("live-name-" + s).textContent),
    trick: q("#live-trick [data-card]").map((c) => c.dataset.card),
    trickDeal: Number(document.getElementById("live-trick").dataset.deal || 0),
    seatBoxes,
    cardEls: q("#live [data-card]").map((c) => [c.dataset.card, c.textContent]),
    text: body.hidden ? "" : body.innerText,
    logLines: q("#live-log li").length,
    matches: q("#matches li").map((li) => li.dataset.match),
    board: Object.fromEntries(q("#leaderboard tbody tr").map((tr) => [tr.dataset.bot,
      Object.fromEntries(q("td[data-col]", tr).map((td) => [td.dataset.col, td.dataset.points ?? td.textContent]))])),
  };
}"""


def board_numbers(board: dict[str, dict[str, str]]) -> dict[str, tuple[int, float]]:
    return {bot: (int(row["games"]), float(row["score"])) for bot, row in board.items()}  # score: its points


def api_board(base: str) -> dict[str, tuple[int, float]]:
    with urllib.request.urlopen(base + "/api/leaderboard", timeout=30) as r:
        rows = json.load(r)["leaderboard"]
    return {row["bot"]: (row["games"], float(row["points"])) for row in rows}


def drive_browser(base: str, submit_bots, deadline: float) -> dict[str, Any]:
    """The browser part (sync Playwright, in a worker thread): open the page, let the bots in,
    watch, click, wait for the end. Returns the snapshots and what was seen."""
    out: dict[str, Any] = {"snaps": [], "errors": [], "clicked": None, "screenshot": False}
    with sync_api.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], timeout=30_000)
        except Exception as exc:  # noqa: BLE001 - an unusable browser is an environment problem
            out["skip"] = f"chromium did not start: {exc}"
            return out
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1050})
            page.set_default_timeout(10_000)
            page.on("pageerror", lambda e: out["errors"].append(str(e)))
            page.goto(base + "/")
            page.wait_for_function("window.arena && window.arena.connected")
            assert page.locator("#leaderboard").is_visible()
            trio.from_thread.run_sync(submit_bots)  # matches start only now: page and test feed are aligned

            snaps = out["snaps"]

            def snap() -> dict[str, Any]:
                s = page.evaluate(SNAPSHOT_JS)
                snaps.append(s)
                return s

            deals_seen: dict[str, set[int]] = defaultdict(set)
            scores_seen: dict[str, set[str]] = defaultdict(set)
            progressed = played = lb_grew = False
            first_board: dict[str, int] = {}
            while time.monotonic() < deadline:
                s = snap()
                if s["match"]:
                    deals_seen[s["match"]].add(s["deal"])
                    scores_seen[s["match"]].add(s["scores"])
                    progressed = progressed or any(
                        len(deals_seen[m]) >= 2 and len(scores_seen[m]) >= 2 for m in deals_seen)
                    played = played or bool(s["trick"]) or any(
                        b["cards"] for b in s["seatBoxes"] if b["kind"] == "hand:current")
                for bot, row in s["board"].items():
                    first_board.setdefault(bot, int(row["games"]))
                    lb_grew = lb_grew or int(row["games"]) > first_board[bot]
                if not out["screenshot"] and s["trick"] and s["logLines"] >= 8 and any(
                        b["revealed"] for b in s["seatBoxes"]):
                    page.screenshot(path=str(SCREENSHOT), full_page=True)
                    out["screenshot"] = True
                if out["clicked"] is None and len(s["matches"]) >= 2:
                    # Click a match other than the one shown: the live view switches to it.
                    page.uncheck("#follow")
                    target = next(m for m in s["matches"] if m != s["match"])
                    page.locator(f'li[data-match="{target}"]').first.click()
                    page.wait_for_function(f'document.getElementById("live").dataset.match === "{target}"')
                    out["clicked"] = target
                    clicked = snap()
                    assert clicked["match"] == target
                    page.check("#follow")
                if progressed and played and lb_grew and out["clicked"] and out["screenshot"] and len(snaps) >= 40:
                    break
                if sum(int(row["games"]) for row in s["board"].values()) == 2 * MAX_MATCHES:
                    break  # every match is over: what was not seen will not be (the asserts below say what)
                time.sleep(0.01)
            out.update(progressed=progressed, played=played, lb_grew=lb_grew)

            # The end: every match played, and the page's leaderboard refetched after the last one.
            final_api: dict[str, tuple[int, float]] = {}
            while time.monotonic() < deadline:
                s = snap()
                final_api = api_board(base)
                if sum(v[0] for v in final_api.values()) == 2 * MAX_MATCHES and board_numbers(s["board"]) == final_api:
                    break
                time.sleep(0.1)
            out["final_api"], out["final_page"] = final_api, board_numbers(snaps[-1]["board"])

            # Review a finished match at a human pace: the replay starts again from deal 1.
            page.uncheck("#follow")
            page.locator("#finished li").first.click()
            page.select_option("#pace", "250")
            page.click("#replay")
            page.wait_for_function('document.getElementById("live").dataset.deal === "1"')
            lines = page.locator("#live-log li").count()
            assert lines < 10, f"the replay did not start again from the beginning ({lines} log lines)"
            page.wait_for_function(f'document.querySelectorAll("#live-log li").length > {lines}')
            out["replayed"] = True
            if not out["screenshot"]:
                page.screenshot(path=str(SCREENSHOT), full_page=True)
                out["screenshot"] = True
        finally:
            browser.close()
    return out


class Knowledge:
    """What the feed had made public after its first ``n`` messages (built incrementally)."""

    def __init__(self) -> None:
        self.n = 0
        self.public: dict[str, set[str]] = defaultdict(set)  # match -> every card it showed
        self.deal: dict[str, int] = {}
        self.seat_cards: dict[tuple[str, int, int], set[str]] = defaultdict(set)  # played, shown, revealed
        self.plays: dict[tuple[str, int], set[str]] = defaultdict(set)
        self.revealed: set[tuple[str, int]] = set()

    def advance(self, feed: list[dict[str, Any]], n: int) -> None:
        for msg in feed[self.n : n]:
            mid = msg.get("match_id") or msg.get("match", {}).get("match_id")
            if mid is None:
                continue
            self.public[mid] |= cards_in(msg)
            if msg["type"] == "spectate":
                ev = msg["event"]
                if ev["kind"] == "deal_start":
                    self.deal[mid] = ev["deal"]
                d = self.deal.get(mid, 0)
                if ev["kind"] == "play":
                    self.plays[mid, d].add(ev["card"])
                    self.seat_cards[mid, d, ev["seat"]].add(ev["card"])
                elif ev["kind"] in ("king", "carte_blanche"):
                    self.seat_cards[mid, d, ev["seat"]] |= cards_in(ev)
            elif msg["type"] == "reveal":
                self.revealed.add((mid, msg["deal"]))
                for ev in msg["events"]:
                    if ev["kind"] in ("hand", "exchange", "look"):
                        self.seat_cards[mid, msg["deal"], ev["seat"]] |= cards_in(ev)
        self.n = n


def check_snapshot(k: Knowledge, s: dict[str, Any]) -> None:
    """Nothing on the page that the first ``s['received']`` messages of the feed did not show."""
    m = s["match"]
    where = f"snapshot after {s['received']} messages, match {m}"
    for code, text in s["cardEls"]:
        assert text == card_text(code), f"{where}: card {code} drawn as {text!r}"
    if m is None:
        return
    visible = {f"{'T' if r == '10' else r}{next(c for c, v in SUIT.items() if v == su)}"
               for r, su in CARD_TEXT.findall(s["text"])}
    early = (visible | {c for c, _ in s["cardEls"]}) - k.public[m]
    assert not early, f"{where}: the page shows {sorted(early)} before the feed made them public"
    on_table = set(s["trick"]) - k.plays[m, s["trickDeal"]]
    assert not on_table, f"{where}: {sorted(on_table)} on the table, not played in deal {s['trickDeal']}"
    for box in s["seatBoxes"]:
        assert box["match"] == m, f"{where}: a hand of another match ({box['match']}) is shown"
        if not box["deal"]:
            continue
        key = (m, box["deal"], box["seat"])
        extra = set(box["cards"]) - k.seat_cards[key]
        assert not extra, (f"{where}: {box['kind']} of seat {box['seat']}, deal {box['deal']} shows {sorted(extra)}, "
                           "neither played, shown nor revealed for that seat and deal")
        if box["revealed"]:
            assert (m, box["deal"]) in k.revealed, f"{where}: deal {box['deal']} drawn as revealed before its reveal"


async def read_feed(url: str, feed: list[dict[str, Any]], task_status=trio.TASK_STATUS_IGNORED) -> None:
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=None)) as http:
        async with http.stream("GET", url) as response:
            assert response.status_code == 200
            task_status.started()  # subscribed: the server subscribes before it answers
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    feed.append(json.loads(line[6:]))


@pytest.mark.slow  # a whole contest in a real browser: about 20 s (make test-slow, which CI runs)
async def test_the_page_follows_matches_live_and_never_shows_a_card_early(tmp_path):
    store = Store(tmp_path / "arena.db")
    config = ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0,
                           server=ServerConfig(port=0), seed=11, max_matches=MAX_MATCHES, duplicate=False,
                           concurrency=2, time=TimeControl(move_ms=1000), trust_bots=TRUST_BOTS)
    contest = Contest(config, store)
    feed: list[dict[str, Any]] = []
    SCREENSHOT.unlink(missing_ok=True)

    manifests = paced_bots(tmp_path / "bots")

    def submit_bots() -> None:
        for name, manifest in manifests.items():
            store.submit_bot(name, str(manifest))

    with trio.fail_after(100):
        async with trio.open_nursery() as nursery:
            _, http_port = await nursery.start(contest.run)
            base = f"http://127.0.0.1:{http_port}"
            reader = trio.CancelScope()

            async def reader_task(task_status=trio.TASK_STATUS_IGNORED) -> None:
                with reader:
                    await read_feed(base + "/api/events", feed, task_status=task_status)

            await nursery.start(reader_task)
            try:  # the 300 s deadline bounds a hang only
                out = await trio.to_thread.run_sync(drive_browser, base, submit_bots, time.monotonic() + 300,
                                                    abandon_on_cancel=True)
                with trio.fail_after(60):  # the test's feed has everything the page had
                    while out["snaps"] and len(feed) < max(s["received"] for s in out["snaps"]):
                        await trio.sleep(0.05)
            finally:
                reader.cancel()
                contest.stop()
    store.close()
    if "skip" in out:
        pytest.skip(out["skip"])

    snaps = out["snaps"]
    assert not out["errors"], f"JavaScript errors on the page: {out['errors']}"
    assert all(s["connects"] == 1 for s in snaps), "the page reconnected: its feed and the test's are no longer aligned"
    assert out["progressed"], "no match was seen progressing (deal and scores changing) in the live view"
    assert out["played"], "no played card was ever shown"
    assert out["lb_grew"], "the leaderboard never changed as matches ended"
    assert out["clicked"], "never two matches in play to click between"
    assert out["final_page"] == out["final_api"], "the page's leaderboard does not match /api/leaderboard at the end"
    assert sum(v[0] for v in out["final_api"].values()) == 2 * MAX_MATCHES
    assert set(out["final_api"]) == set(BOTS)
    assert out["screenshot"] and SCREENSHOT.stat().st_size > 10_000
    assert out.get("replayed")

    # Never a card before the feed made it public.
    knowledge = Knowledge()
    for s in sorted(snaps, key=lambda s: s["received"]):
        knowledge.advance(feed, s["received"])
        check_snapshot(knowledge, s)
    seen_revealed = sum(any(b["revealed"] for b in s["seatBoxes"]) for s in snaps)
    seen_hidden_kept = sum(any(not b["revealed"] and b["cards"] and b["kind"] == "hand:current" for b in s["seatBoxes"])
                           for s in snaps)
    assert seen_revealed and seen_hidden_kept, (seen_revealed, seen_hidden_kept)  # the check above was not vacuous
    assert len(snaps) >= 40
