"""No page scrolls sideways on a 420 px phone or a 1366 px laptop: the leaderboard (with long
names and every column), the history, a replay, the author's page and an upload report with
long lines, in Chromium at both widths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from arena.authors.accounts import TOKEN_SEPARATOR
from arena.authors.pages import MOUNTS as AUTHOR_MOUNTS
from arena.net.server import ServerConfig
from arena.schedule.contest import Contest, ContestConfig
from arena.schedule.gate import UploadConfig
from arena.store.seed import season
from arena.store.sqlite import Store
from tests.test_web import CHROMIUM, chromium

pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no Chromium browser (Debian: apt-get install chromium)"),
              pytest.mark.slow]  # a contest and a real browser at two widths: about 15 s (make test-slow)

WIDTHS = (420, 1366)
LONG = "x" * 32  # the longest bot name there can be


def measure(base: str, token: str, paths: list[str]) -> dict[str, Any]:
    """For each width and path: how far the page is wider than the window (0 when it fits)."""
    out: dict[str, Any] = {"errors": [], "over": {}}
    with chromium(out) as browser:
        if browser is None:
            return out
        for width in WIDTHS:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.set_default_timeout(15_000)
            page.on("pageerror", lambda e: out["errors"].append(str(e)))
            page.goto(base + "/author/login")
            page.fill("input[name=token]", token)
            page.click("form button")
            page.wait_for_url(base + "/author/")
            for path in paths:
                page.goto(base + path)
                page.wait_for_load_state("networkidle")
                page.wait_for_timeout(300)  # the leaderboard's first fetch drawn
                out["over"][(width, path)] = page.evaluate(
                    "document.documentElement.scrollWidth - window.innerWidth")
            page.close()
    return out


async def test_no_page_scrolls_sideways_at_420_or_1366_px(tmp_path: Path, monkeypatch) -> None:
    store = Store(tmp_path / "arena.db")
    season(store, 60, 300)
    store.db.execute("UPDATE ladder SET bot=? WHERE bot=(SELECT bot FROM ladder ORDER BY elo DESC LIMIT 1)", (LONG,))
    author_id, secret = store.add_author("ada")
    upload = store.add_upload("wide", author_id, b"x")
    store.refuse_upload(upload, {"ok": False, "summary": "y" * 300, "seconds": 1.0,
                                 "checks": [{"key": "k", "title": "a check", "status": "FAIL", "details": "z" * 400}],
                                 "log_tail": "\n".join(["w" * 250] * 5)})
    match = store.db.execute("SELECT match_key FROM matches WHERE status='done' ORDER BY id LIMIT 1").fetchone()[0]
    config = ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0,
                           server=ServerConfig(port=0), max_matches=0, uploads=UploadConfig(dir=str(tmp_path / "up")))
    contest = Contest(config, store, web_mounts=AUTHOR_MOUNTS)  # as `arena serve` mounts the author pages
    contest.fitter.run = trio.sleep_forever  # the seeded standings stay as they are
    monkeypatch.setattr("arena.schedule.contest.spawn", lambda *args, **kw: None)  # nor a fitter process
    paths = ["/", f"/?bot={LONG}", "/author/", f"/author/uploads/{upload}", f"/match/{match}"]
    with trio.fail_after(180):
        async with trio.open_nursery() as nursery:
            _, http_port = await nursery.start(contest.run)
            try:
                out = await trio.to_thread.run_sync(measure, f"http://127.0.0.1:{http_port}",
                                                    f"ada{TOKEN_SEPARATOR}{secret}", paths, abandon_on_cancel=True)
            finally:
                contest.stop()
    if "skip" in out:
        pytest.skip(out["skip"])
    assert not out["errors"], out["errors"]
    wide = {key: px for key, px in out["over"].items() if px > 0}
    assert wide == {}, f"pages wider than the window (width, path): px too wide: {wide}"
