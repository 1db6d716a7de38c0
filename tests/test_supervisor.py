"""Launched bots that keep failing: exponential, capped back-off, then disabled; their state and
last output in ``arena bots list``, /api/leaderboard and /metrics (arena/schedule/supervisor.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import trio

from arena.net.server import ServerConfig
from arena.schedule.contest import Contest, ContestConfig
from arena.schedule.supervisor import CAP_S, MAX_FAILURES, Supervisor
from arena.store.sqlite import Store

ROOT = Path(__file__).resolve().parent.parent


def test_back_off_doubles_is_capped_and_disables() -> None:
    now = [100.0]
    sup = Supervisor(clock=lambda: now[0])
    assert sup.due("b")  # a new bot is launched at once
    waits = []
    for i in range(MAX_FAILURES):
        sup.launched("b")
        now[0] += 0.5  # dies half a second later
        h = sup.failed("b", [f"crash {i}"])
        if h.state == "disabled":
            break
        waits.append(h.next_launch - now[0])
        assert not sup.due("b")
        now[0] = h.next_launch
        assert sup.due("b")
    assert waits == [min(CAP_S, 2.0 ** i) for i in range(MAX_FAILURES - 1)]
    assert h.state == "disabled" and h.failures == MAX_FAILURES and h.last_output == [f"crash {MAX_FAILURES - 1}"]
    now[0] += 10_000
    assert not sup.due("b")  # disabled stays disabled
    sup.reset("b")  # until submitted again
    assert sup.due("b")


def test_a_bot_that_ran_long_enough_starts_a_fresh_count() -> None:
    now = [0.0]
    sup = Supervisor(clock=lambda: now[0], healthy_s=60)
    for _ in range(3):
        sup.launched("b")
        sup.failed("b", [])
        now[0] = sup.health("b").next_launch
    assert sup.health("b").failures == 3
    sup.launched("b")
    now[0] += 61
    assert sup.failed("b", []).failures == 1


def page_problems(base: str) -> list[str] | None:
    """The failing bots' notes under the web page's leaderboard (None without Chromium)."""
    from tests.test_web import CHROMIUM

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if CHROMIUM is None:
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 420, "height": 800})
            page.goto(base + "/")
            page.wait_for_selector("#bot-problems .problem")
            page.screenshot(path="/tmp/arena_bot_problems_420.png")
            return page.eval_on_selector_all("#bot-problems .problem", "ps => ps.map(p => p.innerText)")
        finally:
            browser.close()


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read()


@pytest.mark.slow
async def test_a_crash_looping_bot_is_shown_and_disabled(tmp_path: Path) -> None:
    crasher = tmp_path / "crasher.toml"
    crasher.write_text('name = "crasher"\ncommand = ["{python}", "-c", "import sys; '
                       'print(\'boom: no model file\', file=sys.stderr); sys.exit(3)"]\n')
    db = tmp_path / "c.db"
    store = Store(db)
    store.submit_bot("crasher", str(crasher))
    store.submit_bot("greedy", str(ROOT / "sample_bots" / "greedy.toml"))
    contest = Contest(ContestConfig(db=str(db), logs=str(tmp_path / "logs"), http_port=0, server=ServerConfig(port=0),
                                    seed=1, max_matches=0), store)
    contest.supervisor = Supervisor(base_s=0.01, cap_s=0.05, max_failures=3)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            _, http_port = await nursery.start(contest.run)
            base = f"http://127.0.0.1:{http_port}"
            while not (contest.supervisor.health("crasher").state == "disabled" and "greedy" in contest.server.bots):
                await trio.sleep(0.1)
            await trio.sleep(1.2)  # one more publication
            board = json.loads(await trio.to_thread.run_sync(get, base + "/api/leaderboard"))
            metrics = (await trio.to_thread.run_sync(get, base + "/metrics")).decode()
            listing = await trio.to_thread.run_sync(lambda: subprocess.run(
                [sys.executable, "-m", "arena.cli", "bots", "list", "--db", str(db)],
                capture_output=True, text=True, timeout=30))
            problems = await trio.to_thread.run_sync(page_problems, base)
            contest.stop()
    if problems is not None:
        assert len(problems) == 1 and "crasher" in problems[0] and "disabled after 3 failures" in problems[0]
        assert "boom: no model file" in problems[0]
    launched = {b["bot"]: b for b in board["launched"]}
    assert launched["crasher"]["state"] == "disabled" and launched["crasher"]["failures"] == 3
    assert launched["crasher"]["last_output"] == ["boom: no model file"]
    assert launched["greedy"]["state"] == "running"
    assert 'arena_bot_state{bot="crasher",state="disabled"} 1.0' in metrics
    assert 'arena_bot_failures{bot="crasher"} 3.0' in metrics
    assert 'arena_bot_connected{bot="greedy"} 1.0' in metrics
    assert listing.returncode == 0, listing.stderr
    rows = {line.split("│")[1].strip(): line for line in listing.stdout.splitlines() if line.count("│") > 5}
    assert "disabled" in rows["crasher"] and "running" in rows["greedy"] and "yes" in rows["greedy"]
    assert "last output of crasher:" in listing.stdout and "| boom: no model file" in listing.stdout
    status = Store(db).bot_status()
    assert status["greedy"]["state"] == "stopped" and status["greedy"]["connected"] == 0  # after shutdown
