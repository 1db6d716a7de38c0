"""Self-service end to end (issue 15), over real sockets and real processes: authors register
through HTTP, upload a Python bot and a C bot with ``arena bots upload`` (the archive packed by
arena.store.archives), the contest runs ``arena doctor`` on each in bubblewrap, both enter the
ladder and play; a broken bot is refused with the doctor's report; a second author fails every
attempt to reach the first one's bots, uploads, output and tokens; and the author pages work in
headless Chromium (login with the token, own page with ratings and replay links, an upload
through the form, a forged cross-site form refused). Needs bwrap and Chromium (skipped without)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import trio

from arena.authors import client as author_client
from arena.authors.pages import MOUNTS as AUTHOR_MOUNTS
from arena.cli import main
from arena.net.server import ServerConfig
from arena.schedule.contest import Contest, ContestConfig
from arena.schedule.gate import UploadConfig
from arena.store.archives import pack
from protocol.messages import TimeControl
from tests.conftest import needs_bwrap
from tests.test_web import CHROMIUM, sync_api

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"

pytestmark = [needs_bwrap, pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="no Chromium browser (Debian: apt-get install chromium)")]

BROKEN = "import sys\nprint('Traceback: this bot forgot the protocol', file=sys.stderr)\nsys.exit(3)\n"


def bot_dir(root: Path, name: str, files: dict[str, Path | str], command: list[str]) -> Path:
    d = root / name
    d.mkdir(parents=True)
    for rel, src in files.items():
        if isinstance(src, Path):
            shutil.copy2(src, d / rel)
        else:
            (d / rel).write_text(src)
    (d / "manifest.toml").write_text(f'name = "{name}"\ncommand = {json.dumps(command)}\n')
    return d


def http(base: str, path: str, token: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def drive_browser(base: str, token: str, archive: Path, foreign_form: str) -> dict[str, Any]:
    """The browser part (sync Playwright in a worker thread)."""
    out: dict[str, Any] = {"errors": []}
    with sync_api.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], timeout=30_000)
        except Exception as exc:  # noqa: BLE001 - an unusable browser is an environment problem
            out["skip"] = f"chromium did not start: {exc}"
            return out
        try:
            context = browser.new_context(viewport={"width": 1100, "height": 900})
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.on("pageerror", lambda e: out["errors"].append(str(e)))
            page.goto(base + "/author/")  # not logged in: to the login form
            out["login_url"] = page.url
            page.fill("input[name=token]", token.split(":")[0] + ":wrong")
            page.click("#login-button")
            out["bad_login"] = page.text_content("#error")
            page.fill("input[name=token]", token)
            page.click("#login-button")
            page.wait_for_selector("section.bot")
            out["bots"] = page.eval_on_selector_all("section.bot", "s => s.map(x => x.dataset.bot)")
            out["failed_uploads"] = page.inner_text("section.failed-uploads")
            out["ratings"] = page.eval_on_selector_all("section.bot .rating", "s => s.map(x => x.textContent)")
            out["replays"] = page.eval_on_selector_all("a.replay", "a => a.map(x => x.getAttribute('href'))")
            out["cookies"] = [c for c in context.cookies() if c["name"] == "arena_author"]
            page.screenshot(path="/tmp/arena_author_page.png", full_page=True)
            # a replay link opens the match in the spectators' page
            page.click("a.replay >> nth=0")
            page.wait_for_function("document.getElementById('live') && document.getElementById('live').dataset.match")
            out["replay_match"] = page.get_attribute("#live", "data-match")
            # the bot's captured output, its own
            page.goto(base + "/author/")
            page.click("section.bot[data-bot=alicec] a.output")
            out["output"] = page.text_content("body")
            # an upload through the form
            page.goto(base + "/author/")
            page.set_input_files("input[name=archive]", str(archive))
            page.click("#upload-button")
            page.wait_for_selector("#upload-status")
            out["form_upload_url"] = page.url
            for _ in range(60):
                status = page.text_content("#upload-status")
                if status not in ("queued", "checking"):
                    break
                page.wait_for_timeout(500)
                page.reload()
            out["form_upload_status"] = page.text_content("#upload-status")
            out["form_upload_checks"] = page.locator("#doctor-report tr").count()
            # a forged form on another site: the SameSite=Strict cookie is not sent and there is no CSRF token
            evil = context.new_page()
            evil.set_content(foreign_form)
            with evil.expect_navigation():
                evil.click("#go")
            out["forged"] = evil.text_content("body")
            out["forged_url"] = evil.url
        finally:
            browser.close()
    return out


async def test_authors_register_upload_play_and_stay_apart(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    c_bot = SAMPLES / "c_bot"
    if not c_bot.exists():
        subprocess.run(["make", "-s", "sample_bots/c_bot"], cwd=ROOT, check=True)
    bots = tmp_path / "src"
    py = bot_dir(bots, "alicepy", {"random_bot.py": SAMPLES / "random_bot.py"}, ["{python}", "random_bot.py"])
    cb = bot_dir(bots, "alicec", {"c_bot": c_bot}, ["./c_bot"])
    broken = bot_dir(bots, "alicebroken", {"bot.py": BROKEN}, ["{python}", "bot.py"])
    greedy = bot_dir(bots, "alicegreedy", {"greedy_bot.py": SAMPLES / "greedy_bot.py"},
                     ["{python}", "greedy_bot.py"])
    archive = tmp_path / "greedy.tar.gz"
    archive.write_bytes(pack(greedy / "manifest.toml"))

    config = ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0,
                           server=ServerConfig(port=0), seed=11, registration="invite", max_matches=6,
                           time=TimeControl(move_ms=2000), uploads=UploadConfig(dir=str(tmp_path / "uploads")))
    contest = Contest(config, web_mounts=AUTHOR_MOUNTS)  # as `arena serve` does
    store = contest.store
    codes = [store.add_invitation("alice"), store.add_invitation("bob")]
    async with trio.open_nursery() as nursery:
        _, http_port = await nursery.start(contest.run)
        base = f"http://127.0.0.1:{http_port}"
        try:
            # 1. accounts: an invitation each; without one, no account
            with pytest.raises(Exception, match="invitation"):
                await trio.to_thread.run_sync(author_client.register, base, "mallory", None)
            capsys.readouterr()
            status = await trio.to_thread.run_sync(main, ["author", "register", "--server", base, "--name", "alice",
                                                          "--invitation", codes[0]])
            alice = capsys.readouterr().out.strip().splitlines()[-1]
            assert status == 0 and alice.startswith("alice:")
            bob = await trio.to_thread.run_sync(author_client.register, base, "bob", codes[1])

            # 2. uploads through the command's client; the doctor gate decides each
            def up(bot: Path) -> dict[str, Any]:
                return author_client.upload(base, alice, bot, sleep=lambda _: time.sleep(0.2))

            states = {}
            for d in (py, cb):
                states[d.name] = await trio.to_thread.run_sync(up, d)
            # the broken one with the command itself: the doctor's table and a refusal, status 1
            capsys.readouterr()
            status = await trio.to_thread.run_sync(main, ["bots", "upload", "--server", base, "--token", alice,
                                                          str(broken)])
            printed = capsys.readouterr().out
            assert status == 1 and "launch and connect" in printed and "FAIL" in printed, printed
            assert "refused: 27 checks" in printed and "forgot the protocol" in printed
            last = store.uploads_of("alicebroken", 1)[0]
            states["alicebroken"] = await trio.to_thread.run_sync(
                lambda: author_client.request(base, "GET", f"/author/api/uploads/{last['id']}", token=alice))
            assert states["alicepy"]["status"] == "passed", states["alicepy"]
            assert states["alicec"]["status"] == "passed", states["alicec"]
            refused = states["alicebroken"]
            assert refused["status"] == "failed"
            failed = [c for c in refused["report"]["checks"] if c["status"] == "FAIL"]
            assert failed and failed[0]["key"] == "connects"
            assert "forgot the protocol" in refused["report"]["log_tail"]
            assert {r[0] for r in store.submissions()} == {"alicepy", "alicec"}
            assert all(r[2] == 1 for r in store.submissions())  # launched sandboxed, always

            # 3. both play in the ladder
            with trio.fail_after(90):
                while store.db.execute("SELECT COUNT(*) FROM matches WHERE status='done' AND bot0 IN "
                                       "('alicepy','alicec') AND bot1 IN ('alicepy','alicec')").fetchone()[0] < 2:
                    await trio.sleep(0.2)
            status, me = await trio.to_thread.run_sync(http, base, "/author/api/me", alice)
            me = json.loads(me)
            by = {b["bot"]: b for b in me["bots"]}
            assert set(by) == {"alicepy", "alicec"}  # a refused first upload holds no bot and no name
            assert by["alicepy"]["games"] >= 2
            assert by["alicec"]["matches"] and by["alicec"]["versions"][0]["version"] == 1
            assert [u["bot"] for u in me["failed_uploads"]] == ["alicebroken"]  # its report stays visible
            assert "alicebroken" not in store.bot_names()

            # a new version replaces the old one in the ladder (between matches); its results stay
            (py / "notes.txt").write_text("version 2\n")
            played_v1 = store.db.execute("SELECT COUNT(*) FROM matches WHERE status='done' AND "
                                         "'alicepy' IN (bot0, bot1)").fetchone()[0]
            v2 = await trio.to_thread.run_sync(up, py)
            assert v2["status"] == "passed" and v2["version"] == 2
            new_dir = str(Path(config.uploads.dir, f"u{v2['id']}").resolve())
            with trio.fail_after(30):
                while not all((p := contest.procs.get(("alicepy", k))) is not None and p.running
                              and p.manifest.directory == new_dir for k in range(contest.copies)):
                    await trio.sleep(0.2)
            assert store.db.execute("SELECT COUNT(*) FROM matches WHERE status='done' AND "
                                    "'alicepy' IN (bot0, bot1)").fetchone()[0] >= played_v1
            _, body = await trio.to_thread.run_sync(http, base, "/author/api/me", alice)
            [mine] = [b for b in json.loads(body)["bots"] if b["bot"] == "alicepy"]
            assert [v["version"] for v in mine["versions"]] == [1, 2] and len(mine["matches"]) >= 2

            # 4. bob tries to reach alice's things
            attempts = {
                "upload": f"/author/api/uploads/{refused['id']}",
                "output": "/author/api/bots/alicepy/output",
                "output (C)": "/author/api/bots/alicec/output",
                "upload page": f"/author/uploads/{states['alicepy']['id']}",
                "traversal": "/author/api/bots/..%2F..%2Fetc%2Fpasswd/output",
            }
            for what, path in attempts.items():
                code, body = await trio.to_thread.run_sync(http, base, path, bob)
                assert code == 404 and "alice" not in body and "random_bot" not in body, (what, code, body)
            code, body = await trio.to_thread.run_sync(http, base, "/author/api/me", bob)
            assert code == 200 and json.loads(body)["bots"] == []
            for forged in (alice.split(":")[0] + ":" + bob.split(":")[1], "alice", alice + "x"):
                code, _ = await trio.to_thread.run_sync(http, base, "/author/api/me", forged)
                assert code in (401, 429), forged
            with pytest.raises(Exception, match="taken"):  # bob cannot replace alice's bot with his own
                await trio.to_thread.run_sync(lambda: author_client.upload(base, bob, py, wait=False))
            with pytest.raises(Exception, match="taken"):  # nor take its name for a remote bot's token
                await trio.to_thread.run_sync(author_client.remote, base, bob, "alicepy")
            # no token anywhere in what alice or bob can read back
            for token in (alice, bob):
                for path in ("/author/api/me", f"/author/api/uploads/{states['alicepy']['id']}"):
                    _, body = await trio.to_thread.run_sync(http, base, path, alice)
                    assert token.split(":")[1] not in body

            # 5. the pages in Chromium
            foreign = (f'<form method="post" action="{base}/author/remote"><input name="name" value="evilbot">'
                       '<button id="go">win a prize</button></form>')
            seen = await trio.to_thread.run_sync(drive_browser, base, alice, archive, foreign)
            if "skip" in seen:
                pytest.skip(seen["skip"])
        finally:
            contest.stop()
    assert seen["errors"] == []
    assert seen["login_url"].endswith("/author/login")
    assert "unknown, suspended or mistyped" in seen["bad_login"]
    assert set(seen["bots"]) >= {"alicepy", "alicec"} and "alicebroken" in seen["failed_uploads"]
    assert any("±" in r for r in seen["ratings"])
    assert seen["replays"] and all(r.startswith("/match/") for r in seen["replays"])
    assert seen["replay_match"] == seen["replays"][0].removeprefix("/match/")
    [cookie] = seen["cookies"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/author"
    assert "===== copy 0 =====" in seen["output"]
    assert "/author/uploads/" in seen["form_upload_url"] and seen["form_upload_status"] == "passed"
    assert seen["form_upload_checks"] > 10
    assert store.bot_owner("evilbot") is None, "the forged cross-site form did nothing"
    assert "log in" in seen["forged"].lower() or "stale" in seen["forged"]
    assert {r[0] for r in store.submissions()} == {"alicepy", "alicec", "alicegreedy"}
