"""Test matches on demand (issue 22 item 6; arena/schedule/on_demand.py, arena/store/test_matches.py,
the author pages and ``arena bots test``): the daily quota on an injected clock, the requests'
one-line refusals, the author page's "Test matches" section and replay page (own seat, own
output, escaped; nothing for another author), and, with real bot processes on a real server,
unrated games whose replay shows each decision of the author's bot beside the output it wrote
while deciding, and never the other bot's output or hidden cards."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

import arena.authors.accounts as accounts
import arena.store.sqlite as sqlite
from arena.authors import client as author_client
from arena.authors.pages import MOUNTS as AUTHOR_MOUNTS
from arena.cli import main
from arena.net.server import ServerConfig
from arena.net.web import make_app
from arena.schedule.contest import Contest, ContestConfig
from arena.schedule.gate import UploadConfig
from arena.schedule.on_demand import AuthorsConfig, day_window, seat_view, slices
from arena.store import test_matches as rows
from tests.conftest import TRUST_BOTS

ROOT = Path(__file__).resolve().parent.parent
T0 = (1_800_000_000 // 86400) * 86400 + 21 * 3600 + 1800.0  # 21:30 UTC on some day


@pytest.fixture(autouse=True)
def cheap_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accounts, "sandbox_problem", lambda: None)
    monkeypatch.setattr(sqlite, "SCRYPT", {"n": 16, "r": 1, "p": 1})


def make_contest(tmp_path: Path, **kw: Any) -> Contest:
    return Contest(ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), registration="open",
                                 uploads=UploadConfig(dir=str(tmp_path / "uploads")), **kw))


def client(contest: Contest) -> httpx.AsyncClient:
    app = getattr(contest, "_test_app", None) or make_app(contest, AUTHOR_MOUNTS)
    contest._test_app = app
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=("10.0.0.1", 1234)),
                             base_url="http://arena")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def register(c: httpx.AsyncClient, name: str) -> str:
    r = await c.post("/author/api/register", json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()["token"]


async def ask(c: httpx.AsyncClient, token: str, bot: str, vs: str, games: Any) -> httpx.Response:
    return await c.post("/author/api/tests", json={"bot": bot, "vs": vs, "games": games}, headers=bearer(token))


def own(contest: Contest, author: str, bot: str) -> None:
    contest.store.claim_bot(bot, contest.store.author(author)["id"], "uploaded", 5)


def ladder_tables(store: Any) -> dict[str, list]:
    return {t: [tuple(r) for r in store.db.execute(f"SELECT * FROM {t}")]
            for t in ("matches", "pair_counts", "ladder_units", "ladder", "ladder_state")}


# ------------------------------------------------------------------------------ asking

async def test_quota_per_utc_day_on_an_injected_clock(tmp_path: Path) -> None:
    """50 games a day per author (the default): three requests reach it, the next game is
    refused with 429, one line saying when it resets and Retry-After in seconds; at 00:00 UTC the
    count starts again. Nothing refused is queued."""
    contest = make_contest(tmp_path)
    now = [T0]
    contest.tests.now = lambda: now[0]
    async with client(contest) as c:
        alice = await register(c, "alice")
        await register(c, "bob")
        own(contest, "alice", "mine")
        own(contest, "bob", "rival")
        for games in (20, 20, 10):
            r = await ask(c, alice, "mine", "rival", games)
            assert r.status_code == 202, r.text
        assert r.json()["quota"] == {"per_day": 50, "used": 50, "left": 0, "resets_at": day_window(T0)[1],
                                     "per_request": 20}
        now[0] = T0 + 3600  # 22:30: the same day
        r = await ask(c, alice, "mine", "rival", 1)
        assert r.status_code == 429
        assert int(r.headers["retry-after"]) == int(day_window(T0)[1] - now[0]) + 1 == 5401
        message = r.json()["message"]
        assert "\n" not in message and "at most 50 test games a day" in message
        assert "resets at 00:00 UTC (in 1 h 30 min)" in message
        assert rows.counts(contest.store)["queued"] == 50
        now[0] = day_window(T0)[1] + 5  # 00:00:05 the next day
        r = await ask(c, alice, "mine", "rival", 20)
        assert r.status_code == 202 and r.json()["quota"]["used"] == 20
        # a quota of another size, from the contest file's [authors] section
    small = make_contest(tmp_path / "small", authors=AuthorsConfig(test_games_per_day=3, test_games_per_request=3))
    small.tests.now = lambda: T0
    async with client(small) as c:
        alice = await register(c, "alice")
        own(small, "alice", "mine")
        own(small, "alice", "other")  # an author may test against their own other bot too
        assert (await ask(c, alice, "mine", "other", 2)).status_code == 202
        r = await ask(c, alice, "mine", "other", 2)
        assert r.status_code == 429 and "asked for 2 today and 2 more would pass it" in r.json()["message"]
        assert (await ask(c, alice, "mine", "other", 1)).status_code == 202


async def test_requests_refused_with_one_line(tmp_path: Path) -> None:
    contest = make_contest(tmp_path)
    async with client(contest) as c:
        alice = await register(c, "alice")
        await register(c, "bob")
        own(contest, "alice", "mine")
        own(contest, "bob", "rival")
        cases = [("mine", "rival", 0, 400, "ask for 1 to 20 games"), ("mine", "rival", 21, 400, "ask for 1 to 20"),
                 ("mine", "rival", "two", 400, "whole number"), ("mine", "ghost", 1, 404, "no bot named 'ghost'"),
                 ("rival", "mine", 1, 404, "no bot of yours named 'rival'"), ("mine", "mine", 1, 400, "cannot play")]
        for bot, vs, games, status, words in cases:
            r = await ask(c, alice, bot, vs, games)
            assert r.status_code == status and words in r.json()["message"], (bot, vs, games, r.text)
            assert "\n" not in r.json()["message"]
        assert rows.counts(contest.store)["queued"] == 0
        r = await c.post("/author/api/tests", json={"bot": "mine", "vs": "rival", "games": 1})  # no token
        assert r.status_code in (401, 403)
    off = make_contest(tmp_path / "off", authors=AuthorsConfig(test_games_per_day=0))
    async with client(off) as c:
        alice = await register(c, "alice")
        own(off, "alice", "mine")
        own(off, "alice", "two")
        r = await ask(c, alice, "mine", "two", 1)
        assert r.status_code == 403 and "does not play test matches" in r.json()["message"]


# ------------------------------------------------------------------------------ the pages

async def test_author_page_lists_tests_and_replays_own_seat_only(tmp_path: Path) -> None:
    """The form queues games; the own page lists them (queued, then done with the score from the
    author's side); the replay page shows each own decision beside its output, escaped; another
    author (the opponent's included) sees none of it."""
    contest = make_contest(tmp_path)
    async with client(contest) as c:
        alice = await register(c, "alice")
        own(contest, "alice", "mine")
        r = await c.get("/author/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
        await c.post("/author/login", data={"token": alice, "csrf": csrf})
        page = (await c.get("/author/")).text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        assert 'id="tests-form"' in page and "No test matches yet" in page and "0 of 50 games asked today" in page
    async with client(contest) as b:
        bob = await register(b, "bob")
        own(contest, "bob", "rival")
    async with client(contest) as c:
        c.cookies = {}  # the session of the first client is in its own cookie jar: log in again
        r = await c.get("/author/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
        await c.post("/author/login", data={"token": alice, "csrf": csrf})
        csrf = re.search(r'name="csrf" value="([^"]+)"', (await c.get("/author/")).text).group(1)
        r = await c.post("/author/tests", data={"bot": "mine", "vs": "rival", "games": "2", "csrf": csrf})
        assert r.status_code == 303 and r.headers["location"] == "/author/#tests"
        r = await c.post("/author/tests", data={"bot": "mine", "vs": "rival", "games": "2", "csrf": "forged"})
        assert r.status_code == 403
        page = (await c.get("/author/")).text
        ids = [int(x) for x in re.findall(r'data-test="(\d+)"', page)]
        assert len(ids) == 2 and page.count('class="status queued"') == 2 and "2 of 50 games asked today" in page
        first = min(ids)
        row = rows.get(contest.store, first)
        assert row["seat"] == 0 and rows.get(contest.store, max(ids))["seat"] == 1  # seats alternate
        lines = [{"type": "match", "match_id": f"x{first}", "game": "ecarte", "bots": ["mine", "rival"], "seat": 0},
                 {"type": "event", "seq": 1, "seen_by": [0], "hidden": True,
                  "event": {"kind": "hand", "seat": 0, "cards": ["7S", "8S", "9S", "TS", "JS"]}},
                 {"type": "action", "seat": 0, "decision": "play", "action": "7S", "decision_no": 0},
                 {"type": "incident", "seat": 1, "code": "illegal_action", "detail": "(not shown)"},
                 {"type": "result", "winner": 0, "reason": "target", "scores": [5, 2]}]
        view = seat_view(lines, ["thinking <b>hard</b>\n"], "bye\n")
        rows.finish(contest.store, first, status="done", winner_seat=0, scores=[5, 2], reason="target", detail="",
                    view=view, now=T0)
        page = (await c.get("/author/")).text
        assert 'class="status done"' in page and ">5-2<" in page and "won target" in page
        assert f'href="/author/tests/{first}"' in page
        replay = (await c.get(f"/author/tests/{first}")).text
        assert "thinking &lt;b&gt;hard&lt;/b&gt;" in replay and "<b>hard</b>" not in replay
        assert re.search(r'<tr class="decision"><td>mine -&gt; play: 7S</td><td><pre class="output">', replay)
        assert "mine holds 7S 8S 9S TS JS" in replay and "illegal_action" in replay and "bye" in replay
        api = (await c.get(f"/author/api/tests/{first}", headers=bearer(alice))).json()
        assert api["view"]["lines"][2]["output"] == "thinking <b>hard</b>\n" and api["score"] == [5, 2]
        listed = (await c.get(f"/author/api/tests?ids={first},{max(ids)}", headers=bearer(alice))).json()
        assert [t["status"] for t in listed["tests"]] == ["done", "queued"] and listed["quota"]["used"] == 2
    async with client(contest) as b:  # bob, whose bot was the opponent, sees nothing of it
        assert (await b.get(f"/author/api/tests/{first}", headers=bearer(bob))).status_code == 404
        assert (await b.get(f"/author/api/tests?ids={first}", headers=bearer(bob))).json()["tests"] == []
        me = (await b.get("/author/api/me", headers=bearer(bob))).json()
        assert me["tests"] == [] and me["tests_quota"]["used"] == 0
    assert ladder_tables(contest.store)["matches"] == []  # never a ladder match


def test_output_slices_per_decision() -> None:
    data = b"start\nA1\nA2\nB1\nafter\n"
    start = 100  # the log's bytes from position 100
    marks = [100, 109, 112, 115]  # the start, then one per decision
    per, after = slices(data, start, marks, start + len(data))
    assert per == ["start\nA1\n", "A2\n", "B1\n"] and after == "after\n"
    per, _ = slices(b"x" * 20000, 0, [0, 20000], 20000)
    assert per[0].startswith("[... earlier output cut]") and len(per[0]) < 9000


# ------------------------------------------------------------------------------ real bots

CHATTY = '''"""random_bot that says on stderr what it decides, labelled: chatty.py LABEL."""
import sys
import random_bot as bot

label = sys.argv[1]
_send = bot.send


def send(sock, obj):
    if obj.get("type") == "action":
        print(f"{label} decides {obj.get('id')}", file=sys.stderr, flush=True)
    _send(sock, obj)


bot.send = send
sys.exit(bot.main())
'''


def chatty_bot(root: Path, name: str, label: str) -> Path:
    d = root / name
    d.mkdir(parents=True)
    shutil.copy(ROOT / "sample_bots" / "random_bot.py", d / "random_bot.py")
    (d / "chatty.py").write_text(CHATTY)
    (d / "manifest.toml").write_text(f'name = "{name}"\nlanguage = "python"\n'
                                     f'command = ["{{python}}", "chatty.py", "{label}"]\n')
    return d / "manifest.toml"


async def test_real_bots_unrated_replay_with_own_output_through_the_cli(tmp_path: Path, capsys) -> None:
    """A real server (TCP, HTTP) with two launched bots owned by two authors, the ladder held
    (max_matches = 0) so that only test matches play: ``arena bots test`` asks for two games and
    waits; both are played and listed; nothing of them reaches the ladder's tables; the replay
    of each gives every decision of the author's bot its own output (one 'MINE decides' line,
    in order) and never a line of the other bot, and holds only events the author's seat saw."""
    contest = Contest(ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0,
                                    server=ServerConfig(port=0), seed=7, trust_bots=TRUST_BOTS, max_matches=0,
                                    registration="open", uploads=UploadConfig(dir=str(tmp_path / "uploads"))),
                      web_mounts=AUTHOR_MOUNTS)  # as `arena serve` does
    store = contest.store
    alice_id, alice_secret = store.add_author("alice")
    bob_id, _ = store.add_author("bob")
    store.claim_bot("mine", alice_id, "uploaded", 5)
    store.claim_bot("rival", bob_id, "uploaded", 5)
    store.submit_bot("mine", str(chatty_bot(tmp_path, "mine", "MINE")), sandbox=not TRUST_BOTS)
    store.submit_bot("rival", str(chatty_bot(tmp_path, "rival", "THEIRS")), sandbox=not TRUST_BOTS)
    before = ladder_tables(store)
    async with trio.open_nursery() as nursery:
        _, http_port = await nursery.start(contest.run)
        server = f"http://127.0.0.1:{http_port}"
        try:
            with trio.fail_after(120):
                code = await trio.to_thread.run_sync(lambda: main(
                    ["bots", "test", "mine", "--vs", "rival", "--games", "2", "--server", server,
                     "--token", f"alice:{alice_secret}"]))
            state = await trio.to_thread.run_sync(lambda: author_client.request(
                server, "GET", "/author/api/tests", token=f"alice:{alice_secret}"))
            views = [await trio.to_thread.run_sync(lambda i=t["id"]: author_client.request(
                server, "GET", f"/author/api/tests/{i}", token=f"alice:{alice_secret}")) for t in state["tests"]]
        finally:
            contest.stop()
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "2 played:" in printed and "asked for 2 test matches of mine against rival" in printed
    assert [t["status"] for t in state["tests"]] == ["done", "done"], state
    assert ladder_tables(store) == before  # unrated: no match row, pair count, unit, rating or result count
    for t in views:
        view = t["view"]
        assert view["output_captured"], view
        header = view["lines"][0]
        seat = header["seat"]
        assert header["type"] == "match" and "seed" not in header and header["bots"][seat] == "mine"
        decisions = [line for line in view["lines"] if line["type"] == "action"]
        assert decisions and all(line["seat"] == seat for line in decisions)
        said = [re.findall(r"MINE decides (\S+)", line["output"] or "") for line in decisions
                if not line.get("auto")]
        assert all(len(s) == 1 for s in said), said  # each decision beside exactly its own line
        assert len({s[0] for s in said}) == len(said)
        text = repr(view)
        assert "THEIRS" not in text  # never the other bot's output
        events = [line for line in view["lines"] if line["type"] == "event"]
        assert events and all(seat in line["seen_by"] for line in events)  # never the other seat's hidden cards
        assert not any(line["event"].get("kind") == "hand" and line["event"].get("seat") == 1 - seat
                       for line in events)
    # the organiser keeps each game's full log, outside the ladder's folders
    assert len(list((tmp_path / "logs" / "tests").glob("x*.jsonl.gz"))) == 2
    # the opponent's log holds its own lines (its author reads them there), the replay none of them
    assert "THEIRS decides" in "".join(p.read_text() for p in (tmp_path / "logs" / "bots").glob("*.log"))
    assert sys.executable  # the bots ran under this interpreter ({python})


# ------------------------------------------------------------------------------ scheduling

class Recorder:
    """Stands for a nursery: records what would have been started."""

    def __init__(self) -> None:
        self.started: list[tuple[Any, tuple]] = []

    def start_soon(self, fn: Any, *args: Any) -> None:
        self.started.append((fn, args))


async def test_start_one_takes_free_bots_within_the_slots(tmp_path: Path) -> None:
    """The oldest queued game whose two bots are both ready starts (both then busy); never more
    than test_slots at once; a game waiting longer than test_queue_hours is dropped; games a
    stopped server left playing are queued again at start."""
    contest = make_contest(tmp_path, authors=AuthorsConfig(test_slots=1, test_queue_hours=1))
    now = [T0]
    contest.tests.now = lambda: now[0]
    store = contest.store
    aid, _ = store.add_author("alice")
    for bot in ("a", "b", "c"):
        store.claim_bot(bot, aid, "uploaded", 5)
    ready = ["a", "c"]
    contest.ready_bots = lambda: [r for r in ready if r not in contest.busy]
    author = store.author("alice")
    first = contest.tests.request(author, "a", "b", 1)["tests"]  # b is not ready: it waits
    second = contest.tests.request(author, "a", "c", 1)["tests"]
    nursery = Recorder()
    assert contest.tests.start_one(nursery)
    assert [args[0]["id"] for _, args in nursery.started] == second and contest.busy == {"a", "c"}
    assert rows.get(store, second[0])["status"] == "playing" and rows.get(store, first[0])["status"] == "queued"
    ready.append("b")
    contest.busy.discard("c")
    assert not contest.tests.start_one(nursery)  # the one test slot is taken
    contest.tests.running = 0
    contest.busy.clear()
    now[0] += 3601 + 60  # past test_queue_hours: the first game is dropped, not played
    assert not contest.tests.start_one(nursery)
    dropped = rows.get(store, first[0])
    assert dropped["status"] == "aborted" and dropped["reason"] == "expired" and "not both free" in dropped["detail"]
    contest.tests.recover()  # a restart: the game left playing is queued again
    assert rows.get(store, second[0])["status"] == "queued"


async def test_the_ladder_chooses_first(tmp_path: Path, autojump_clock: Any) -> None:
    """The scheduler starts a test game only when it starts no ladder unit (MockClock: no
    wall-clock wait)."""
    contest = make_contest(tmp_path)
    store = contest.store
    aid, _ = store.add_author("alice")
    for bot in ("a", "b"):
        store.claim_bot(bot, aid, "uploaded", 5)
    contest.tests.request(store.author("alice"), "a", "b", 1)
    contest.ready_bots = lambda: [r for r in ("a", "b") if r not in contest.busy]
    pairs = [("a", "b"), None]
    log: list[str] = []

    def next_pair() -> tuple[str, str] | None:
        return pairs.pop(0) if pairs else None

    async def unit(a: str, b: str) -> None:
        log.append("ladder")
        contest.busy.difference_update((a, b))
        contest.running -= 1

    async def play(row: dict) -> None:
        log.append("test")
        contest.busy.difference_update((row["bot"], row["opponent"]))
        contest.tests.running -= 1
        contest.stop()

    contest.next_pair = next_pair
    contest._play_unit = unit
    contest.tests._play = play
    async with trio.open_nursery() as nursery:
        await contest._scheduler(nursery)
    assert log == ["ladder", "test"]


def test_store_statements_on_both_databases(any_store: Any) -> None:
    """arena/store/test_matches.py on SQLite and PostgreSQL: the quota count, the queue, the
    life of a game and its stored view."""
    store = any_store
    start = day_window(T0)[0]
    ids = rows.add(store, 7, "mine", "rival", "ecarte", [(0, 11), (1, 12)], T0, 3, start)
    assert isinstance(ids, list) and len(ids) == 2
    assert rows.add(store, 7, "mine", "rival", "ecarte", [(0, 13), (1, 14)], T0, 3, start) == 2  # over: nothing
    assert rows.asked_since(store, 7, start, 4) == 2 and rows.asked_since(store, 8, start, 4) == 0
    assert [r["id"] for r in rows.queued(store, 10)] == ids
    assert rows.start(store, ids[0], T0) and not rows.start(store, ids[0], T0)
    rows.finish(store, ids[0], status="done", winner_seat=1, scores=[2, 5], reason="target", detail="",
                view={"lines": [{"type": "result"}], "after": "é"}, now=T0 + 1)
    assert rows.view_of(store, ids[0]) == {"lines": [{"type": "result"}], "after": "é"}
    assert rows.view_of(store, ids[1]) is None
    assert [r["id"] for r in rows.of_author(store, 7)] == ids[::-1]
    assert [r["id"] for r in rows.of_author(store, 7, before=ids[1])] == [ids[0]]
    assert rows.expire(store, T0 + 1, T0 + 2, "not played") == 1 and rows.get(store, ids[1])["status"] == "aborted"
    assert rows.counts(store) == {"queued": 0, "playing": 0, "done": 1, "aborted": 1}
    assert rows.requeue_playing(store) == 0
