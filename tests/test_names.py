"""Names are data, never markup or paths (arena/names.py; docs/protocol.md §4, docs/bots.md).

* Hostile names are refused where they enter, with one line and no traceback: ``arena bots add``,
  ``arena bots submit`` (manifest name and ``--name``), ``arena spectators add``, a manifest in
  ``arena tournament``, and a ``hello`` over TCP (``bad_name``, bots and spectators alike).
* Names already in an older database (registered before the rule) are shown verbatim by
  ``arena bots list``, ``arena spectators list``, ``arena serve`` and its web page: never
  interpreted as rich markup or HTML, never a crash, never launched as a path.
* ``arena watch`` prints a hostile server's names and messages verbatim.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import msgspec
import pytest
import trio
from rich.console import Console

from arena.cli import main
from arena.names import MAX_NAME, BadName, check_name, is_valid_name
from arena.net.server import ArenaServer, ServerConfig
from arena.net.spectate import SpectatorHub
from arena.store.sqlite import Store
from arena.tools.watch import WatchState
from arena.wagers.ledger import BookRecord, LedgerRecord
from tests.conftest import Client, cli_in_process

ROOT = Path(__file__).resolve().parent.parent

HOSTILE = [
    "[/]", "gr[i][/i]eedy", "[bold red]boss[/]", "../../evil", "a/b", "..", ".hidden", "-rf", "", "x" * (MAX_NAME + 1),
    "two words", "<script>alert(1)</script>", "tab\tname", "new\nline", "esc\x1b[31mred", "ünïcode", "a:smile:b",
    "semi;colon", "back\\slash", "nul\x00byte",
]  # fmt: skip
"""Names tried against every way in (markup, paths, options, controls, look-alikes, lengths)."""
VALID = ["greedy", "A", "x" * MAX_NAME, "bot_2.0-beta", "0day", "v1..2"]
OLD_NAMES = ["[/]", "gr[i][/i]eedy", "../../evil", "<b>bold</b>&amp;", "[link=file:///etc]x[/link]"]
"""Names an older version let into a database."""


def arena(*args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=cwd or ROOT, capture_output=True,
                          text=True, timeout=timeout)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The process failed with exit status 2 and one line on stderr (argparse's usage aside)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_the_rule():
    for name in VALID:
        assert check_name(name) == name and is_valid_name(name)
    for name in HOSTILE:
        assert not is_valid_name(name), name
        with pytest.raises(BadName) as err:
            check_name(name, "spectator")
        message = str(err.value)
        assert "\n" not in message and "\x1b" not in message and "bad spectator name" in message
        assert "A-Z a-z 0-9 _ . -" in message
    assert not is_valid_name(None) and not is_valid_name(7)


def test_hostile_names_are_refused_by_every_command_through_the_real_cli(tmp_path, capsys):
    """A few names through the console script (a bot's, and a tournament's manifest), the
    others through ``main`` in this process; every name of HOSTILE through ``main`` below."""
    db = str(tmp_path / "arena.db")
    line = one_error_line(arena("bots", "add", "--db", db, "--", "gr[i][/i]eedy"))
    assert line.startswith("arena: error: bad bot name 'gr[i][/i]eedy'") and "A-Z a-z 0-9 _ . -" in line, line
    line = one_error_line(cli_in_process("spectators", "add", "--db", db, "--", "../../evil", capsys=capsys))
    assert line.startswith("arena: error: bad spectator name '../../evil'"), line
    manifest = tmp_path / "evil.toml"
    manifest.write_text('name = "../../evil"\ncommand = ["{python}", "random_bot.py"]\n')
    line = one_error_line(cli_in_process("bots", "submit", str(manifest), "--db", db, capsys=capsys))
    assert "bad bot manifest: bad bot name '../../evil'" in line, line
    line = one_error_line(cli_in_process("bots", "submit", str(ROOT / "sample_bots" / "random.toml"), "--name", "[/]",
                                         "--db", db, capsys=capsys))
    assert "bad bot name '[/]'" in line
    manifest.write_text('name = "[/]"\ncommand = ["{python}", "random_bot.py"]\n')
    line = one_error_line(arena("tournament", "--bots", str(manifest), str(ROOT / "sample_bots" / "random.toml"),
                                "--db", db, "--logs", str(tmp_path / "logs"), "--quiet"))
    assert "bad bot name '[/]'" in line
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM bots").fetchone()[0] == 0
        assert c.execute("SELECT COUNT(*) FROM spectators").fetchone()[0] == 0
    assert not (tmp_path.parent / "evil.log").exists() and not (tmp_path / "logs").exists()


@pytest.mark.parametrize("command", ["bots", "spectators"])
def test_every_hostile_name_is_refused_and_nothing_is_written(tmp_path, capsys, command):
    db = str(tmp_path / "arena.db")
    for name in HOSTILE:
        assert main([command, "add", "--db", db, "--", name]) == 2, name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"arena: error: bad {command[:-1]} name"), err
    for name in VALID:
        assert main([command, "add", "--db", db, "--", name]) == 0, name
    capsys.readouterr()
    table = "bots" if command == "bots" else "spectators"
    with sqlite3.connect(db) as c:
        assert sorted(r[0] for r in c.execute(f"SELECT name FROM {table}")) == sorted(VALID)


def old_database(path: Path) -> Path:
    """A database as an older version could leave it: hostile names registered, on the ladder,
    submitted, and holding a bankroll."""
    store = Store(path)
    for i, name in enumerate(OLD_NAMES):
        store.db.execute("INSERT INTO bots(name, salt, token_hash, created_at) VALUES (?, x'00', x'00', 0)", (name,))
        store.db.execute("INSERT INTO ladder(game, bot, elo, games, updated_at) VALUES ('ecarte', ?, ?, 3, 0)",
                         (name, 1500 + i))
        store.db.execute("INSERT INTO spectators(name, salt, token_hash, created_at) VALUES (?, x'00', x'00', 0)",
                         (name,))
    store.db.execute("INSERT INTO submissions(name, manifest, sandbox, created_at) VALUES (?, ?, 0, 0)",
                     ("../../evil", str(ROOT / "sample_bots" / "random.toml")))
    record = LedgerRecord(accounts={n: 100 for n in OLD_NAMES}, total_deposited=100 * len(OLD_NAMES),
                          books=[BookRecord(match_id="t0-m0001")])
    store.save_ledger(msgspec.json.encode(record), 0)
    store.close()
    return path


def test_names_in_an_old_database_are_listed_verbatim(tmp_path):
    db = str(old_database(tmp_path / "arena.db"))
    bots = arena("bots", "list", "--db", db)
    spectators = arena("spectators", "list", "--db", db)
    for proc in (bots, spectators):
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        for name in OLD_NAMES:
            assert name in proc.stdout, (name, proc.stdout)


def test_arena_serve_with_hostile_names_in_its_database_and_its_contest_name(tmp_path):
    """The contest's own name and the old names reach the terminal and the web page verbatim
    (escaped as HTML on the page); the bot registered as ``../../evil`` is never launched (no
    log file anywhere), and a hello under a hostile name is refused with ``bad_name``."""
    db = old_database(tmp_path / "arena.db")
    cfg = tmp_path / "contest.toml"
    contest_name = "[bold]Tour[/] <i>&amp; co</i>"
    cfg.write_text(f"name = {json.dumps(contest_name)}\ndb = \"{db}\"\nlogs = \"{tmp_path / 'logs'}\"\n"
                   "http_port = 0\nshutdown_grace_s = 0.2\n[server]\nport = 0\n")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", "--config", str(cfg)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = proc.stdout.readline()
        assert first.startswith(contest_name + ": bots and spectators on tcp://"), first
        port = int(first.split("tcp://", 1)[1].split(",", 1)[0].rsplit(":", 1)[1])
        http_port = int(first.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        page = httpx.get(f"http://127.0.0.1:{http_port}/", timeout=10).text
        assert "<h1 id=\"contest\">[bold]Tour[/] &lt;i&gt;&amp;amp; co&lt;/i&gt;</h1>" in page
        board = httpx.get(f"http://127.0.0.1:{http_port}/api/leaderboard", timeout=10).json()
        assert board["contest"] == contest_name and {r["bot"] for r in board["leaderboard"]} == set(OLD_NAMES)
        for role, name in (("bot", "[/]"), ("spectator", "../../evil"), ("spectator", "gr[i][/i]eedy")):
            refusal = trio.run(hello, port, name, role)
            assert refusal["type"] == "error" and refusal["code"] == "bad_name" and refusal["fatal"], refusal
        time.sleep(1.5)  # the launcher looks at the submissions at once, then every second
        watcher = arena("watch", "--port", str(port), "--once", "--name", "[/]", timeout=90)
        assert watcher.returncode == 1 and "bad_name" in watcher.stdout and "Traceback" not in watcher.stderr
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert "stopped cleanly" in out
    written = {p.name for p in tmp_path.rglob("*")} | {p.name for p in tmp_path.parent.glob("*")}
    assert "evil.log" not in written and "evil" not in written


async def hello(port: int, name: str, role: str, token: str = "x") -> dict:
    c = await Client.connect(port)
    await c.send({"type": "hello", "name": name, "token": token, "role": role, "protocol": 1})
    msg = await c.recv(timeout=30)
    await c.aclose()
    return msg


async def test_hello_with_a_hostile_name_gets_bad_name(tmp_path):
    store = Store(tmp_path / "arena.db")
    srv = ArenaServer(store, ServerConfig(), hub=SpectatorHub())
    async with trio.open_nursery() as nursery:
        port = await nursery.start(srv.serve)
        for name in HOSTILE:
            for role in ("bot", "spectator"):
                msg = await hello(port, name, role)
                assert msg["code"] == "bad_name" and msg["fatal"] is True, (name, role, msg)
        assert (await hello(port, "fan", "spectator", ""))["type"] == "welcome"
        nursery.cancel_scope.cancel()


def test_watch_shows_a_hostile_servers_names_and_messages_verbatim():
    st = WatchState(follow="m1")
    names = ["[/]", "gr[i][/i]eedy"]
    st.apply({"type": "watch", "match": {"match_id": "m1", "game": "ecarte", "bots": names, "scores": [0, 0],
                                         "deal": 0, "pair": None},
              "rules": {"deal_pattern": "3-2", "target": 5, "manches": 1}, "time": {"move_ms": 1, "bank_ms": 0,
                                                                                    "grace_ms": 0}})
    st.apply({"type": "error", "code": "x", "message": "[red]not red[/red]", "fatal": False})
    console = Console(width=130, record=True, file=io.StringIO())
    console.print(st.render())
    out = console.export_text()
    assert "[/]" in out and "gr[i][/i]eedy" in out and "[red]not red[/red]" in out, out


def test_a_tournament_prints_manifest_free_text_verbatim(tmp_path):
    """``language`` and ``description`` are free text: shown as written, never as markup."""
    manifests = []
    for name, bot in (("rnd", "random_bot.py"), ("grd", "greedy_bot.py")):
        path = tmp_path / f"{name}.toml"
        shutil.copy(ROOT / "sample_bots" / bot, tmp_path / bot)  # beside its manifest: all a sandboxed bot sees
        path.write_text(f'name = "{name}"\nlanguage = "[/]py[bold]"\ndescription = "gr[i][/i]eedy"\n'
                        f'command = ["{{python}}", "{bot}"]\n')
        manifests.append(str(path))
    proc = arena("tournament", "--bots", *manifests, "--games", "1", "--no-duplicate", "--db",
                 str(tmp_path / "t.db"), "--logs", str(tmp_path / "logs"), "--quiet", timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "not_connected" not in proc.stdout and "forfeit" not in proc.stdout, proc.stdout  # both bots played
    assert "2 bots: rnd ([/]py[bold]), grd ([/]py[bold])" in proc.stdout, proc.stdout
