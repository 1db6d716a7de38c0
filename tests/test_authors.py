"""Self-service for bot authors (arena/authors/accounts.py, pages.py, arena/schedule/gate.py),
through HTTP against the ASGI app (httpx's ASGI transport, no sockets, no bot process): the
registration policies, tokens, sessions and CSRF, rate limits, archive and manifest checks, the
doctor gate's bookkeeping (with a scripted doctor), and every attempt of one author to reach
another's upload, output, bot or token. The real doctor and real bots: test_authors_e2e.py."""

from __future__ import annotations

import io
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio

import arena.authors.accounts as accounts
import arena.store.sqlite as sqlite
from arena.authors.pages import MOUNTS as AUTHOR_MOUNTS
from arena.net.web import make_app
from arena.schedule.contest import Contest, ContestConfig
from arena.schedule.gate import UploadConfig
from arena.store.archives import pack

MANIFEST = b'name = "{name}"\nlanguage = "python"\ncommand = ["{{python}}", "bot.py"]\n'


@pytest.fixture(autouse=True)
def sandbox_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The policy does not depend on this host's bwrap (the real sandbox: test_authors_e2e.py)."""
    monkeypatch.setattr(accounts, "sandbox_problem", lambda: None)
    monkeypatch.setattr(sqlite, "SCRYPT", {"n": 16, "r": 1, "p": 1})  # still scrypt, at a test's cost


def make_contest(tmp_path: Path, **kw: Any) -> Contest:
    uploads = kw.pop("uploads", UploadConfig(dir=str(tmp_path / "uploads")))
    return Contest(ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), uploads=uploads, **kw))


def client(contest: Contest, addr: str = "10.0.0.1") -> httpx.AsyncClient:
    app = getattr(contest, "_test_app", None) or make_app(contest, AUTHOR_MOUNTS)
    contest._test_app = app  # one app: its sessions and rate limits are shared by every client
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=(addr, 1234)), base_url="http://arena")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def bot_archive(tmp_path: Path, name: str = "mybot", extra: dict[str, bytes] | None = None) -> bytes:
    d = tmp_path / f"src-{name}"
    d.mkdir(exist_ok=True)
    (d / "manifest.toml").write_bytes(MANIFEST.replace(b"{name}", name.encode()))
    (d / "bot.py").write_text("print('hello')\n")
    for rel, body in (extra or {}).items():
        (d / rel).write_bytes(body)
    return pack(d / "manifest.toml")


def tar_of(members: list[tuple[str, bytes | None, int, bytes]]) -> bytes:
    """A hand-made archive: ``(path, body or None, mode, type)`` members."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, body, mode, kind in members:
            info = tarfile.TarInfo(path)
            info.mode, info.type = mode, kind
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            info.size = len(body or b"")
            tar.addfile(info, io.BytesIO(body) if body else None)
    return buf.getvalue()


async def register(c: httpx.AsyncClient, name: str, **extra: str) -> str:
    r = await c.post("/author/api/register", json={"name": name, **extra})
    assert r.status_code == 201, r.text
    return r.json()["token"]


async def upload(c: httpx.AsyncClient, token: str, data: bytes) -> httpx.Response:
    headers = {**bearer(token), "Content-Type": "application/gzip"}
    return await c.post("/author/api/upload", content=data, headers=headers)


async def login(c: httpx.AsyncClient, token: str) -> str:
    """Log in through the form; returns the session's CSRF token."""
    r = await c.get("/author/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
    r = await c.post("/author/login", data={"token": token, "csrf": csrf})
    assert r.status_code == 303 and r.headers["location"] == "/author/", r.text
    r = await c.get("/author/")
    return re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)


# ------------------------------------------------------------------------------ accounts


async def test_registration_follows_the_contest_policy(tmp_path: Path) -> None:
    closed = make_contest(tmp_path / "a")
    async with client(closed) as c:
        r = await c.post("/author/api/register", json={"name": "alice"})
        assert r.status_code == 403 and r.json()["error"] == "registration_closed"
        assert (await c.get("/author/register")).status_code == 403
    assert closed.store.authors() == []

    invite = make_contest(tmp_path / "b", registration="invite")
    code = invite.store.add_invitation("for alice")
    async with client(invite) as c:
        r = await c.post("/author/api/register", json={"name": "alice"})
        assert r.status_code == 403 and r.json()["error"] == "invitation_required"
        r = await c.post("/author/api/register", json={"name": "alice", "invitation": "guessed"})
        assert r.status_code == 403 and "invitation" in r.json()["message"]
        assert invite.store.author("alice") is None  # the failed attempt left nothing behind
        token = await register(c, "alice", invitation=code)
        r = await c.post("/author/api/register", json={"name": "bob", "invitation": code})
        assert r.status_code == 403, "a code is spent once"
        assert (await c.get("/author/api/me", headers=bearer(token))).json()["author"] == "alice"

    open_ = make_contest(tmp_path / "c", registration="open")
    async with client(open_) as c:
        token = await register(c, "alice")
        assert token.startswith("alice:") and len(token) > 30
        r = await c.post("/author/api/register", json={"name": "alice"})
        assert r.status_code == 409 and "taken" in r.json()["message"]
        for bad in ("<script>", "../x", "", "a" * 40, "-x"):
            r = await c.post("/author/api/register", json={"name": bad})
            assert r.status_code == 400 and r.json()["error"] == "bad_name", bad
    secret = token.split(":", 1)[1]
    raw = open_.store.db.execute("SELECT * FROM authors").fetchone()
    assert secret.encode() not in b"".join(v if isinstance(v, bytes) else str(v).encode() for v in raw)


async def test_tokens_and_rate_limits(tmp_path: Path) -> None:
    contest = make_contest(tmp_path, registration="open",  # overall: a burst of 100 registrations
                           uploads=UploadConfig(dir=str(tmp_path / "up"), registrations_per_hour=600))
    async with client(contest) as c:
        token = await register(c, "alice")
        assert (await c.get("/author/api/me", headers=bearer(token))).status_code == 200  # verified once: cached
        assert (await c.get("/author/api/me")).status_code == 401
        for header in ("Basic YWxpY2U6eA==", "Bearer alice", "Bearer alice:", "Bearer <b>:x", "Bearer bob:x"):
            r = await c.get("/author/api/me", headers={"Authorization": header})
            assert r.status_code == 401 and r.json()["error"] == "bad_token", header
        codes = [(await c.get("/author/api/me", headers=bearer("alice:wrong"))).status_code for _ in range(20)]
        assert 429 in codes and set(codes) <= {401, 429}, codes  # failures use up the buckets
        assert contest.server.auth.scrypt_checks < 20  # a refused check costs no scrypt
    async with client(contest, addr="10.0.0.2") as c:
        # the right token, once verified, is never locked out by someone failing under its name
        assert (await c.get("/author/api/me", headers=bearer(token))).status_code == 200
        assert contest.store.set_author_status("alice", "suspended")  # refused (alice's name bucket is empty: 429)
        assert (await c.get("/author/api/me", headers=bearer(token))).status_code in (401, 429)
        contest.store.set_author_status("alice", "active")
        assert (await c.get("/author/api/me", headers=bearer(token))).status_code == 200
        contest.store.delete_author("alice")
        assert (await c.get("/author/api/me", headers=bearer(token))).status_code in (401, 429)
    async with client(contest, addr="10.0.0.3") as c:  # registrations per address are rate limited
        codes = [(await c.post("/author/api/register", json={"name": f"n{i}"})).status_code for i in range(15)]
        assert codes[:10] == [201] * 10 and 429 in codes[10:], codes  # a burst of 10, then one per 6 s
    async with client(contest, addr="10.0.0.4") as c:  # every request, per address
        codes = [(await c.get("/author/login")).status_code for _ in range(200)]
        assert codes[:120] == [200] * 120 and 429 in codes[120:]  # a burst of 120, then 2 a second


async def test_sessions_and_csrf(tmp_path: Path) -> None:
    contest = make_contest(tmp_path, registration="open")
    async with client(contest) as c:
        token = await register(c, "alice")
        r = await c.get("/author/login")
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/author" in cookie
        for form in ({"token": token}, {"token": token, "csrf": "forged"}):
            r = await c.post("/author/login", data=form)
            assert r.status_code == 403 and "stale or came from another site" in r.text
        r = await c.get("/author/")
        assert r.status_code == 303 and r.headers["location"] == "/author/login"
        csrf = await login(c, token)
        page = await c.get("/author/")
        assert page.status_code == 200 and "<h1>alice</h1>" in page.text
        assert "script-src" not in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
        # a logged-in session still needs the CSRF token on every POST
        r = await c.post("/author/remote", data={"name": "rbot"})
        assert r.status_code == 403 and contest.store.bot_owner("rbot") is None
        r = await c.post("/author/remote", data={"name": "rbot", "csrf": csrf})
        assert r.status_code == 200 and contest.store.bot_owner("rbot") is not None
        # API POSTs are for the Authorization header only: a session (a cookie a browser adds) is not enough
        r = await c.post("/author/api/remote", json={"name": "rbot2"})
        assert r.status_code == 403 and contest.store.bot_owner("rbot2") is None
        contest.store.set_author_status("alice", "suspended")  # a suspension ends the session at once
        r = await c.get("/author/")
        assert r.status_code == 303
        contest.store.set_author_status("alice", "active")
        csrf = await login(c, token)
        r = await c.post("/author/logout", data={"csrf": csrf})
        assert r.status_code == 303 and (await c.get("/author/")).status_code == 303


# ------------------------------------------------------------------------------ uploads


async def test_bad_archives_and_manifests_are_refused_with_one_line(tmp_path: Path) -> None:
    contest = make_contest(tmp_path, registration="open", uploads=UploadConfig(dir=str(tmp_path / "up"),
                                                                                packed_bytes=64 * 1024))
    good_manifest = MANIFEST.replace(b"{name}", b"evil")
    cases = {
        "archive_corrupt": b"this is not a tar archive",
        "archive_bad_member": tar_of([("manifest.toml", good_manifest, 0o644, tarfile.REGTYPE),
                                      ("../../escape.py", b"x", 0o644, tarfile.REGTYPE)]),
        "link": tar_of([("manifest.toml", good_manifest, 0o644, tarfile.REGTYPE),
                        ("passwd", None, 0o644, tarfile.SYMTYPE)]),
        "absolute": tar_of([("manifest.toml", good_manifest, 0o644, tarfile.REGTYPE),
                            ("/tmp/owned", b"x", 0o644, tarfile.REGTYPE)]),
        "archive_no_manifest": tar_of([("bot.py", b"x", 0o644, tarfile.REGTYPE)]),
        "unknown key": tar_of([("manifest.toml", good_manifest + b'comand = ["x"]\n', 0o644, tarfile.REGTYPE)]),
        "bad name": tar_of([("manifest.toml", good_manifest.replace(b'"evil"', b'"<img src=x>"'), 0o644,
                             tarfile.REGTYPE)]),
        "missing program": tar_of([("manifest.toml", b'name = "cbot"\ncommand = ["./cbot"]\n', 0o644,
                                    tarfile.REGTYPE)]),
        "not executable": tar_of([("manifest.toml", b'name = "cbot"\ncommand = ["./cbot"]\n', 0o644, tarfile.REGTYPE),
                                  ("cbot", b"\x7fELF", 0o644, tarfile.REGTYPE)]),
    }
    async with client(contest) as c:
        token = await register(c, "alice")
        answers = {}
        for what, data in cases.items():
            r = await upload(c, token, data)
            assert r.status_code == 400, (what, r.text)
            answers[what] = r.json()
        r = await upload(c, token, b"\x1f\x8b" + b"\0" * (70 * 1024))
        assert r.status_code == 413, "a body over the cap is refused from its Content-Length"
    assert answers["archive_corrupt"]["error"] == "archive_corrupt"
    assert "'..' is refused" in answers["archive_bad_member"]["message"]
    assert "is a link" in answers["link"]["message"]
    assert "absolute paths are refused" in answers["absolute"]["message"]
    assert answers["archive_no_manifest"]["error"] == "archive_no_manifest"
    assert "comand" in answers["unknown key"]["message"] and "command" in answers["unknown key"]["message"]
    assert answers["bad name"]["error"] == "bad_manifest" and "bad bot name" in answers["bad name"]["message"]
    assert "not in the archive" in answers["missing program"]["message"]
    assert "chmod +x" in answers["not executable"]["message"]
    for a in answers.values():
        assert "\n" not in a["message"] and "arena-manifest-" not in a["message"]  # one line, no server path
        assert a["message"].startswith("manifest.toml") or a["error"].startswith("archive")
    assert contest.store.db.execute("SELECT COUNT(*) FROM uploads").fetchone()[0] == 0
    assert not (tmp_path / "escape.py").exists() and not Path("/tmp/owned").exists()


async def test_uploads_through_the_gate(tmp_path: Path) -> None:
    """A passing upload becomes the bot's newest version and is submitted from its unpacked
    directory; a failing one keeps only the report; the author's page shows both, escaped."""
    reports: list[dict[str, Any]] = []

    async def doctor(manifest: str) -> dict[str, Any]:
        assert Path(manifest).read_text().startswith('name = "mybot"')
        reports.append({"ok": len(reports) != 1, "summary": "scripted", "seconds": 0.1,
                        "checks": [{"key": "k", "title": "t", "status": "PASS" if len(reports) != 1 else "FAIL",
                                    "details": "<script>alert(1)</script>"}], "log_tail": "<b>out</b>"})
        return reports[-1]

    contest = make_contest(tmp_path, registration="open")
    contest.gate.run_doctor = doctor
    async with client(contest) as c:
        token = await register(c, "alice")
        r = await upload(c, token, bot_archive(tmp_path))
        assert r.status_code == 202 and r.json()["status"] == "queued", r.text
        first = r.json()["upload"]
        assert contest.store.submissions() == []  # nothing enters the ladder before the doctor
        assert await contest.gate.check(first) == "passed"
        st = (await c.get(f"/author/api/uploads/{first}", headers=bearer(token))).json()
        assert st["status"] == "passed" and st["version"] == 1
        [(name, manifest, sandboxed)] = contest.store.submissions()
        assert name == "mybot" and sandboxed == 1 and Path(manifest).parent == tmp_path / "uploads" / f"u{first}"
        # a second version that fails: the first stays in the ladder, its files stay
        r = await upload(c, token, bot_archive(tmp_path, extra={"book.txt": b"v2"}))
        second = r.json()["upload"]
        assert await contest.gate.check(second) == "failed"
        assert contest.store.submissions()[0][1] == manifest and Path(manifest).exists()
        assert not (tmp_path / "uploads" / f"u{second}").exists()
        assert contest.store.upload_data(second) is None  # the refused code is not kept
        assert [v[0] for v in contest.store.archive_versions("mybot")] == [1]
        # a third that passes replaces it
        r = await upload(c, token, bot_archive(tmp_path, extra={"book.txt": b"v3"}))
        third = r.json()["upload"]
        assert await contest.gate.check(third) == "passed"
        assert [v[0] for v in contest.store.archive_versions("mybot")] == [1, 2]
        assert contest.store.submissions()[0][1].endswith(f"u{third}/manifest.toml")
        await login(c, token)
        page = (await c.get(f"/author/uploads/{second}")).text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page
        assert "&lt;b&gt;out&lt;/b&gt;" in page
        contest.supervisor.failed("mybot", ["<i>Traceback</i>: boom"])  # a crash in the ladder
        from arena.match.referee import MatchResult
        from arena.schedule.formats import Pairing

        tid = contest.store.create_tournament("ecarte", "ladder", 1, {}, [], [Pairing(0, "mybot", "other", 1)])
        contest.store.record_result(f"t{tid}-m0001", MatchResult(
            match_id=f"t{tid}-m0001", winner=1, reason="forfeit_timeout", scores=[0, 5], manches=[0, 1],
            detail="mybot: timeout: no answer in 2000 ms <b>", faulty=0), None)
        home = (await c.get("/author/")).text
        assert 'data-bot="mybot"' in home and home.count('href="/author/uploads/') == 3
        assert "backoff" in home and "&lt;i&gt;Traceback&lt;/i&gt;: boom" in home  # failures, escaped
        assert "forfeit_timeout" in home and "no answer in 2000 ms &lt;b&gt;" in home
        assert f'href="/match/t{tid}-m0001"' in home  # a replay link
        me = (await c.get("/author/api/me", headers=bearer(token))).json()
        assert [u["status"] for u in me["bots"][0]["uploads"]] == ["passed", "failed", "passed"]
        assert [v["version"] for v in me["bots"][0]["versions"]] == [1, 2]


async def test_a_failed_first_upload_frees_its_name_and_shows_no_server_path(tmp_path: Path) -> None:
    """Two failed uploads of "badbot" leave no bot and no name behind (another author may take
    it), the failure stays on its author's page, and the report names paths relative to the
    bot's folder, never the server's unpack folder or its Python."""
    import sys

    async def doctor(manifest: str) -> dict[str, Any]:
        folder = str(Path(manifest).parent)
        return {"ok": False, "summary": f"{sys.executable}: can't open file '{folder}/bad.py'", "seconds": 0.1,
                "checks": [], "log_tail": f"{folder}/bad.py crashed in {sys.prefix}/lib"}

    contest = make_contest(tmp_path, registration="open")
    contest.gate.run_doctor = doctor
    async with client(contest) as c:
        alice, bob = await register(c, "alice"), await register(c, "bob")
        for _ in range(2):
            r = await upload(c, alice, bot_archive(tmp_path, "badbot"))
            assert r.status_code == 202, r.text
            assert await contest.gate.check(r.json()["upload"]) == "failed"
        assert "badbot" not in contest.store.bot_names() and contest.store.bot_owner("badbot") is None
        me = (await c.get("/author/api/me", headers=bearer(alice))).json()
        assert me["bots"] == [] and [u["bot"] for u in me["failed_uploads"]] == ["badbot", "badbot"]
        report = (await c.get(f"/author/api/uploads/{me['failed_uploads'][0]['id']}", headers=bearer(alice))).json()
        shown = str(report)
        assert "'bad.py'" in shown and "uploads" not in shown and sys.prefix not in shown, shown
        r = await upload(c, bob, bot_archive(tmp_path, "badbot"))  # the name is free for anyone
        assert r.status_code == 202, r.text


async def test_upload_limits(tmp_path: Path) -> None:
    contest = make_contest(tmp_path, registration="open",
                           uploads=UploadConfig(dir=str(tmp_path / "up"), uploads_per_hour=3, bots_per_author=2,
                                                queue=4))
    async with client(contest) as c:
        alice, bob = await register(c, "alice"), await register(c, "bob")
        codes = [(await upload(c, alice, bot_archive(tmp_path, f"a{i}"))).status_code for i in range(4)]
        assert codes == [202, 202, 409, 429], codes  # a third bot is over the cap; a fourth upload over the rate
        assert (await upload(c, bob, bot_archive(tmp_path, "b0"))).status_code == 202
        assert (await upload(c, bob, bot_archive(tmp_path, "b0"))).status_code == 202
        r = await upload(c, bob, bot_archive(tmp_path, "b1"))
        assert r.status_code == 503 and r.json()["error"] == "queue_full"  # 4 wait for the doctor
        assert contest.gate.waiting == 4


async def test_no_author_reaches_another_authors_things(tmp_path: Path) -> None:
    async def doctor(manifest: str) -> dict[str, Any]:
        return {"ok": True, "summary": "ok", "seconds": 0, "checks": [], "log_tail": "alice's secret output"}

    contest = make_contest(tmp_path, registration="open")
    contest.gate.run_doctor = doctor
    async with client(contest) as c:
        alice, bob = await register(c, "alice"), await register(c, "bob")
        up = (await upload(c, alice, bot_archive(tmp_path, "alicebot"))).json()["upload"]
        await contest.gate.check(up)
        r = await c.post("/author/api/remote", json={"name": "aliceremote"}, headers=bearer(alice))
        assert r.status_code == 201
        log = tmp_path / "logs" / "bots" / f"b{contest.store.bot_id('alicebot')}-c0.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("alice's private output\n")
        assert "alice's private output" in (await c.get("/author/api/bots/alicebot/output", headers=bearer(alice))).text
        # while the bot plays, what it writes (maybe its hand) is held back until the match is over
        contest.busy.add("alicebot")
        with log.open("a") as fh:
            fh.write("my hand: Ks Qs\n")
        text = (await c.get("/author/api/bots/alicebot/output", headers=bearer(alice))).text
        assert "alice's private output" in text and "Ks Qs" not in text and "once the match is over" in text
        contest.busy.discard("alicebot")
        assert "Ks Qs" in (await c.get("/author/api/bots/alicebot/output", headers=bearer(alice))).text
        contest.supervisor.failed("alicebot", ["alice's crash output"])
        contest.supervisor.failed("organisers_bot", ["organiser's bot output"])
        board = (await c.get("/api/leaderboard")).text  # the public page: an author's output is not there
        assert "alice's crash output" not in board and "organiser's bot output" in board
        # bob tries everything he can name
        for path in (f"/author/api/uploads/{up}", "/author/api/bots/alicebot/output",
                     "/author/api/bots/aliceremote/output", "/author/api/bots/..%2F..%2Farena.db/output",
                     f"/author/uploads/{up}"):
            r = await c.get(path, headers=bearer(bob))
            assert r.status_code in (404, 303) and "alice" not in r.text, (path, r.status_code, r.text)
        me = (await c.get("/author/api/me", headers=bearer(bob))).json()
        assert me["bots"] == [] and "alice" not in str(me)
        # bob cannot take over alice's bots: not by upload, not by asking for a remote token
        r = await upload(c, bob, bot_archive(tmp_path, "alicebot"))
        assert r.status_code == 409 and "taken" in r.json()["message"]
        for name in ("alicebot", "aliceremote"):
            r = await c.post("/author/api/remote", json={"name": name}, headers=bearer(bob))
            assert r.status_code == 409
        assert contest.store.bot_owner("alicebot")[0] == contest.store.author("alice")["id"]
        # nor take an organiser's bot
        contest.store.add_bot("house")
        r = await c.post("/author/api/remote", json={"name": "house"}, headers=bearer(bob))
        assert r.status_code == 409
        # bob's session sees only bob
        await login(c, bob)
        home = (await c.get("/author/")).text
        assert "alicebot" not in home and "aliceremote" not in home
        assert (await c.get(f"/author/uploads/{up}")).status_code == 404
        assert (await c.get("/author/bots/alicebot/output")).status_code == 404


async def test_suspended_authors_bots_are_withdrawn(tmp_path: Path) -> None:
    contest = make_contest(tmp_path, registration="open")
    store = contest.store
    author_id, _ = store.add_author("carol")
    store.claim_bot("cbot", author_id, "remote", 5)
    token = store.add_bot("cbot")
    store.submit_bot("sbot", "/nowhere/manifest.toml", sandbox=True)
    store.db.execute("INSERT INTO bot_owners(bot, author_id, kind, created_at) VALUES ('sbot', ?, 'uploaded', 0)",
                     (author_id,))
    assert store.bot_secret("cbot") is not None and [r[0] for r in store.submissions()] == ["sbot"]
    assert await contest.server.auth.check("bots", "cbot", token, "1.2.3.4") == "ok"
    store.set_author_status("carol", "suspended")
    assert store.bot_secret("cbot") is None and store.submissions() == []
    assert await contest.server.auth.check("bots", "cbot", token, "1.2.3.4") == "failed"
    store.set_author_status("carol", "active")
    assert store.delete_author("carol") == ["cbot", "sbot"]
    assert store.bot_names() == [] and store.owned_bots(author_id) == []


async def test_gate_stops_a_doctor_that_hangs(tmp_path: Path) -> None:
    """The doctor's process is killed after doctor_timeout_s and the upload refused (a stand-in
    process that would sleep a minute; the bound is 0.3 s)."""
    contest = make_contest(tmp_path, registration="open",
                           uploads=UploadConfig(dir=str(tmp_path / "up"), doctor_timeout_s=0.3))
    gate = contest.gate
    aid, _ = contest.store.add_author("dave")
    contest.store.claim_bot("mybot", aid, "uploaded", 5)
    up = contest.store.add_upload("mybot", aid, bot_archive(tmp_path))
    gate.command = lambda manifest: [sys.executable, "-c", "import time; time.sleep(60)"]
    with trio.fail_after(30):
        assert await gate.check(up) == "failed"
    assert "did not finish within 0.3 s" in contest.store.upload(up)["report"]["summary"]
    assert not (tmp_path / "up" / f"u{up}").exists() and contest.store.submissions() == []
    gate.config = msgspec.structs.replace(gate.config, doctor_timeout_s=120)
    gate.command = lambda manifest: [sys.executable, "-c", "import sys; sys.exit('boom')"]
    up = contest.store.add_upload("mybot", aid, bot_archive(tmp_path))
    assert await gate.check(up) == "failed"
    assert "could not run" in contest.store.upload(up)["report"]["summary"]
    assert "boom" not in str(contest.store.upload(up)["report"])  # the server's own errors stay in its log


async def test_gate_restores_and_tidies_the_uploads_directory(tmp_path: Path) -> None:
    """At start, a passing bot whose unpacked files are gone is unpacked again from its stored
    archive; directories of replaced or refused versions are removed."""
    async def doctor(manifest: str) -> dict[str, Any]:
        return {"ok": True, "summary": "ok", "seconds": 0, "checks": [], "log_tail": ""}

    contest = make_contest(tmp_path, registration="open")
    contest.gate.run_doctor = doctor
    store, root = contest.store, tmp_path / "uploads"
    aid, _ = store.add_author("erin")
    store.claim_bot("mybot", aid, "uploaded", 5)
    first = store.add_upload("mybot", aid, bot_archive(tmp_path))
    assert await contest.gate.check(first) == "passed"
    second = store.add_upload("mybot", aid, bot_archive(tmp_path, extra={"v": b"2"}))
    assert await contest.gate.check(second) == "passed"
    assert (root / f"u{first}").exists() and (root / f"u{second}").exists()
    contest.gate.tidy()
    assert not (root / f"u{first}").exists() and (root / f"u{second}").exists()
    import shutil

    shutil.rmtree(root / f"u{second}")
    contest.gate.tidy()
    [(_, manifest, sandboxed)] = store.submissions()
    assert manifest == str(root.resolve() / f"b{store.bot_id('mybot')}-v2" / "manifest.toml") and sandboxed == 1
    assert (Path(manifest).parent / "v").read_bytes() == b"2"


async def test_gate_runs_at_most_doctor_concurrency_at_once(tmp_path: Path) -> None:
    """Five uploads queued at once with doctor_concurrency = 2: two doctor runs start, a third
    only once one of them has ended; all are decided in the server's background."""
    running, most, started = 0, 0, []
    release = trio.Event()

    async def doctor(manifest: str) -> dict[str, Any]:
        nonlocal running, most
        running += 1
        most = max(most, running)
        started.append(Path(manifest).parent.name)
        await release.wait()
        running -= 1
        return {"ok": True, "summary": "ok", "seconds": 1, "checks": [], "log_tail": ""}

    contest = make_contest(tmp_path, registration="open",
                           uploads=UploadConfig(dir=str(tmp_path / "up"), doctor_concurrency=2))
    contest.gate.run_doctor = doctor
    store = contest.store
    aid, _ = store.add_author("fay")
    ids = []
    for i in range(5):
        store.claim_bot(f"bot{i}", aid, "uploaded", 5)
        ids.append(store.add_upload(f"bot{i}", aid, bot_archive(tmp_path, f"bot{i}")))
    async with trio.open_nursery() as nursery:
        contest.gate.submit(ids[0])  # queued before the gate starts: requeued from the database once only
        await nursery.start(contest.gate.run)
        for upload_id in ids[1:]:
            contest.gate.submit(upload_id)
        with trio.fail_after(20):
            while len(started) < 2:
                await trio.sleep(0.01)
            await trio.sleep(0.3)  # time for a third to start, were it allowed to
            assert len(started) == 2 and contest.gate.waiting == 5
            release.set()
            await contest.gate.idle.wait()
        nursery.cancel_scope.cancel()
    assert most == 2 and sorted(started) == [f"u{i}" for i in ids]
    assert [store.upload(i)["status"] for i in ids] == ["passed"] * 5


async def test_remote_bot_tokens_and_withdrawal(tmp_path: Path) -> None:
    """An author's remote bot token lets the bot in over TCP's authenticator; an author withdraws
    their own bot (the name is free again, its matches stay) and nobody else's."""
    contest = make_contest(tmp_path, registration="open")
    store = contest.store
    async with client(contest) as c:
        alice, bob = await register(c, "alice"), await register(c, "bob")
        r = await c.post("/author/api/remote", json={"name": "rover"}, headers=bearer(alice))
        token = r.json()["token"]
        assert await contest.server.auth.check("bots", "rover", token, "10.9.9.9") == "ok"
        from arena.schedule.formats import Pairing

        store.create_tournament("ecarte", "ladder", 1, {}, [], [Pairing(index=0, bot0="rover", bot1="x", seed=1)])
        r = await c.post("/author/api/bots/rover/withdraw", headers=bearer(bob))  # not bob's
        assert r.status_code == 404 and store.bot_owner("rover") is not None
        csrf = await login(c, alice)
        r = await c.post("/author/bots/rover/withdraw", data={})
        assert r.status_code == 403 and store.bot_owner("rover") is not None  # no CSRF token, nothing done
        r = await c.post("/author/bots/rover/withdraw", data={"csrf": csrf})
        assert r.status_code == 303 and store.bot_owner("rover") is None and store.bot_secret("rover") is None
        assert [m["bot0"] for m in store.matches(1)] == ["rover"]  # its matches stay
        r = await c.post("/author/api/remote", json={"name": "rover"}, headers=bearer(bob))
        assert r.status_code == 201  # the name is free again


def test_organiser_commands(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from arena.cli import main

    db = str(tmp_path / "arena.db")
    assert main(["authors", "add", "gus", "--db", db]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    assert token.startswith("gus:")
    assert main(["authors", "add", "gus", "--db", db]) == 2
    assert "taken" in capsys.readouterr().err
    assert main(["authors", "invite", "--note", "for hal", "--db", db]) == 0
    code = capsys.readouterr().out.strip().splitlines()[-1]
    from arena.store.sqlite import Store

    store = Store(db)
    store.add_author("hal", code)
    assert main(["authors", "suspend", "hal", "--db", db]) == 0 and store.author_secret("hal") is None
    assert main(["authors", "resume", "hal", "--db", db]) == 0 and store.author_secret("hal") is not None
    capsys.readouterr()
    assert main(["authors", "list", "--db", db]) == 0
    listed = capsys.readouterr().out
    assert "gus" in listed and "hal" in listed and "active" in listed
    assert main(["authors", "delete", "hal", "--db", db]) == 0 and store.author("hal") is None
    assert main(["authors", "delete", "hal", "--db", db]) == 1
    assert "no author 'hal'" in capsys.readouterr().err
